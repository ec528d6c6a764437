// Lesson 05's launchers: argument checks, the shared-memory opt-in, the choice of kernel and
// the occupancy query. Read-only: the build compiles this file in one unit with
// pipeline_single_stage.cu (yours, and separately the solution's), which defines the
// kernels; pipeline_single_stage.cuh declares them.
#include <cstdint>
#include <string>

#include "course/check.h"
#include "course/launch.h"
#include "pipeline_single_stage.cuh"

namespace pipeline_single_stage {
namespace {

using Kernel = void (*)(const std::uint32_t*, std::uint32_t*, std::size_t, unsigned);

/// The kernel of `scope`; throws std::invalid_argument for a value that is not a Scope.
Kernel kernel_for(Scope scope, const std::string& where) {
  course::require(scope == Scope::thread || scope == Scope::block, where,
                  "unknown scope " + std::to_string(static_cast<int>(scope)));
  return scope == Scope::thread ? thread_scope_kernel : block_scope_kernel;
}

void require_block_size(int threads_per_block, const std::string& where) {
  course::require(
      threads_per_block >= 32 && threads_per_block <= kMaxThreads && threads_per_block % 32 == 0,
      where,
      "threads_per_block must be a multiple of 32 in [32, 1024], got " +
          std::to_string(threads_per_block));
}

/// Lets `kernel` use `shared` bytes of dynamic shared memory (beyond 48 KB a kernel must opt
/// in: 1024 threads stage 64 KB).
void allow_shared(Kernel kernel, std::size_t shared) {
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(shared)));
}

}  // namespace

course::Launch prepare_copy_and_compute(cuda::std::span<const std::uint32_t> in,
                                        cuda::std::span<std::uint32_t> out, Scope scope,
                                        LaunchShape shape, HoldBack hold) {
  const std::string where = "pipeline_single_stage::copy_and_compute";
  course::require_copy_launch(where, in.size(), out.size(), shape.blocks, shape.threads_per_block);
  const Kernel kernel = kernel_for(scope, where);
  course::require_16_byte_aligned(where, in.data(), out.data(),
                                  "16-byte copies (uint4, aligned_size_t<16>)");
  if (in.empty()) return [](cudaStream_t) {};

  const std::size_t shared = shared_bytes(shape.threads_per_block);
  allow_shared(kernel, shared);
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
                      Scope scope, LaunchShape shape, cudaStream_t stream) {
  prepare_copy_and_compute(in, out, scope, shape)(stream);
}

int max_blocks_per_sm(Scope scope, int threads_per_block) {
  const std::string where = "pipeline_single_stage::max_blocks_per_sm";
  const Kernel kernel = kernel_for(scope, where);
  require_block_size(threads_per_block, where);
  const std::size_t shared = shared_bytes(threads_per_block);
  allow_shared(kernel, shared);  // the occupancy calculator honours the opt-in
  int blocks = 0;
  COURSE_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads_per_block, shared));
  return blocks;
}

}  // namespace pipeline_single_stage
