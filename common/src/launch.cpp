#include "course/launch.h"

#include <cuda_runtime_api.h>

#include "course/check.h"

namespace course {

int max_resident_blocks(const void* kernel, int threads_per_block, std::size_t dynamic_shared) {
  int device = 0;
  int max_shared = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(
      cudaDeviceGetAttribute(&max_shared, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  cudaFuncAttributes attributes{};
  COURSE_CHECK(cudaFuncGetAttributes(&attributes, kernel));
  if (dynamic_shared + attributes.sharedSizeBytes > static_cast<std::size_t>(max_shared)) return 0;
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(dynamic_shared)));
  int blocks = 0;
  COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads_per_block,
                                                             dynamic_shared));
  return blocks;
}

}  // namespace course
