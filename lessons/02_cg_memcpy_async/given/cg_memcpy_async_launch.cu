// Lesson 02's launchers: argument checks, the shared-memory opt-in, the choice of kernel
// and the occupancy query. Read-only: the build compiles this file in one unit with
// cg_memcpy_async.cu (yours, and separately the solution's), which defines the kernels it
// launches; cg_memcpy_async.cuh declares them.
#include <cstdint>
#include <string>

#include "cg_memcpy_async.cuh"
#include "course/check.h"
#include "course/launch.h"

namespace cg_memcpy_async {
namespace {

using Kernel = void (*)(const std::uint32_t*, std::uint32_t*, std::size_t, unsigned, unsigned);

Kernel kernel_for(Granularity granularity, Buffering buffering) {
  const bool single = buffering == Buffering::single;
  if (granularity == Granularity::fine) {
    return single ? single_buffer_kernel<Granularity::fine>
                  : double_buffered_kernel<Granularity::fine>;
  }
  return single ? single_buffer_kernel<Granularity::coarse>
                : double_buffered_kernel<Granularity::coarse>;
}

/// The kernel for `granularity` and `buffering`, allowed `shared` bytes of dynamic shared
/// memory (beyond 48 KB a kernel must opt in, also for the occupancy query).
Kernel opted_in_kernel(Granularity granularity, Buffering buffering, std::size_t shared) {
  const Kernel kernel = kernel_for(granularity, buffering);
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(shared)));
  return kernel;
}

}  // namespace

course::Launch prepare_copy_and_compute(cuda::std::span<const std::uint32_t> in,
                                        cuda::std::span<std::uint32_t> out, Granularity granularity,
                                        Buffering buffering, LaunchShape shape, ReaderDelay delay,
                                        HoldBack hold) {
  const std::string where = "cg_memcpy_async::copy_and_compute";
  course::require_copy_launch(where, in.size(), out.size(), shape.blocks, shape.threads_per_block);
  if (granularity == Granularity::coarse) {
    course::require_16_byte_aligned(where, in.data(), out.data(),
                                    "coarse granularity promises aligned_size_t<16>");
  }
  if (in.empty()) return [](cudaStream_t) {};

  const std::size_t shared = shared_bytes(granularity, buffering, shape.threads_per_block);
  const Kernel kernel = opted_in_kernel(granularity, buffering, shared);
  const std::uint32_t* src = in.data();
  std::uint32_t* dst = out.data();
  const std::size_t n = in.size();
  const unsigned delay_ns = delay.nanoseconds;
  const unsigned hold_ns = course::batches::hold_back_nanoseconds(hold);
  return [=](cudaStream_t stream) {
    kernel<<<shape.blocks, shape.threads_per_block, shared, stream>>>(src, dst, n, delay_ns,
                                                                      hold_ns);
    COURSE_CHECK_LAUNCH();
  };
}

void copy_and_compute(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out,
                      Granularity granularity, Buffering buffering, LaunchShape shape,
                      cudaStream_t stream) {
  prepare_copy_and_compute(in, out, granularity, buffering, shape)(stream);
}

int max_blocks_per_sm(Granularity granularity, Buffering buffering, int threads_per_block) {
  const std::size_t shared = shared_bytes(granularity, buffering, threads_per_block);
  const Kernel kernel = opted_in_kernel(granularity, buffering, shared);
  int blocks = 0;
  COURSE_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads_per_block, shared));
  return blocks;
}

}  // namespace cg_memcpy_async
