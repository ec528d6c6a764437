// Lesson 01's launchers: argument checks, the shared-memory opt-in, the choice of kernel
// and the occupancy query. Read-only: the build compiles this file in one unit with
// register_staged.cu (yours, and separately the solution's), which defines the kernel it
// launches; register_staged.cuh declares it.
#include <cstdint>
#include <string>

#include "course/check.h"
#include "course/launch.h"
#include "register_staged.cuh"

namespace register_staged {
namespace {

using Kernel = void (*)(const std::uint32_t*, std::uint32_t*, std::size_t, unsigned);

/// The kernel for `granularity`, allowed `shared` bytes of dynamic shared memory (beyond
/// 48 KB a kernel must opt in, also for the occupancy query).
Kernel opted_in_kernel(Granularity granularity, std::size_t shared) {
  const Kernel kernel = granularity == Granularity::fine
                            ? register_staged_kernel<Granularity::fine>
                            : register_staged_kernel<Granularity::coarse>;
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(shared)));
  return kernel;
}

}  // namespace

course::Launch prepare_copy_and_compute(cuda::std::span<const std::uint32_t> in,
                                        cuda::std::span<std::uint32_t> out, Granularity granularity,
                                        LaunchShape shape, HoldBack hold) {
  const std::string where = "register_staged::copy_and_compute";
  course::require_copy_launch(where, in.size(), out.size(), shape.blocks, shape.threads_per_block);
  if (granularity == Granularity::coarse) {
    course::require_16_byte_aligned(where, in.data(), out.data(),
                                    "coarse granularity moves 16-byte vectors");
  }
  if (in.empty()) return [](cudaStream_t) {};

  const std::size_t shared = shared_bytes(granularity, shape.threads_per_block);
  const Kernel kernel = opted_in_kernel(granularity, shared);
  const std::uint32_t* src = in.data();
  std::uint32_t* dst = out.data();
  const std::size_t n = in.size();
  const unsigned hold_ns = course::batches::hold_back_nanoseconds(hold);
  return [=](cudaStream_t stream) {
    kernel<<<shape.blocks, shape.threads_per_block, shared, stream>>>(src, dst, n, hold_ns);
    COURSE_CHECK_LAUNCH();
  };
}

void copy_and_compute(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out,
                      Granularity granularity, LaunchShape shape, cudaStream_t stream) {
  prepare_copy_and_compute(in, out, granularity, shape)(stream);
}

int max_blocks_per_sm(Granularity granularity, int threads_per_block) {
  const std::size_t shared = shared_bytes(granularity, threads_per_block);
  const Kernel kernel = opted_in_kernel(granularity, shared);
  int blocks = 0;
  COURSE_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads_per_block, shared));
  return blocks;
}

}  // namespace register_staged
