// Lesson 10's launchers: argument checks (sizes and alignment a bulk copy needs, before any
// launch), the choice of kernel for a variant and a stage count, the shared-memory opt-in,
// the occupancy query and the error word of the bounded waits. Read-only: the build compiles
// this file in one unit with tma_bulk_copy.cu (yours, and separately the solution's), which
// defines the kernels; tma_bulk_copy_device.cuh declares them.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "course/check.h"
#include "course/device.h"
#include "course/launch.h"
#include "tma_bulk_copy.cuh"
#include "tma_bulk_copy_device.cuh"

namespace tma_bulk_copy {
namespace {

using Kernel = void (*)(const std::uint32_t*, std::uint32_t*, std::size_t, int, TestHooks);

constexpr const char* kWhere = "tma_bulk_copy::copy_and_compute";
constexpr const char* kWhereCopy = "tma_bulk_copy::bulk_copy";

/// The kernel instantiation for a config (the pipeline's stage count is a template argument).
Kernel kernel_for(const Config& config) {
  switch (config.variant) {
    case Variant::pipeline:
      return course::with_stage_count<kMinStages, kMaxStages>(
          config.stages, [](auto s) -> Kernel { return pipeline_kernel<decltype(s)::value>; });
    case Variant::single_ptx:
      return single_ptx_kernel<Variant::single_ptx, true>;
    case Variant::single_barrier:
      return single_barrier_kernel<true>;
    case Variant::broken_wrong_expect_tx:
      return single_ptx_kernel<Variant::broken_wrong_expect_tx, true>;
    case Variant::broken_parity_not_flipped:
      return single_ptx_kernel<Variant::broken_parity_not_flipped, true>;
    case Variant::broken_missing_proxy_fence:
      return single_ptx_kernel<Variant::broken_missing_proxy_fence, true>;
  }
  throw std::invalid_argument(std::string(kWhere) + ": unknown variant");
}

void require_threads(int threads_per_block, const char* where) {
  course::require(
      threads_per_block >= 32 && threads_per_block <= 1024 - 32 && threads_per_block % 32 == 0,
      where,
      "threads_per_block must be a multiple of 32 in [32, 992] (the pipeline adds a producer "
      "warp), got " +
          std::to_string(threads_per_block));
}

void require_valid_config(const Config& config, int threads_per_block) {
  course::require(config.variant == Variant::pipeline || config.variant == Variant::single_ptx ||
                      config.variant == Variant::single_barrier || is_broken(config.variant),
                  kWhere, "unknown variant");
  course::require(config.stages >= kMinStages && config.stages <= kMaxStages, kWhere,
                  "stages must be in [" + std::to_string(kMinStages) + ", " +
                      std::to_string(kMaxStages) + "], got " + std::to_string(config.stages));
  course::require(
      valid_vectors_per_thread(config.vectors_per_thread), kWhere,
      "vectors_per_thread must be 1, 2, 4 or 8, got " + std::to_string(config.vectors_per_thread));
  require_threads(threads_per_block, kWhere);
}

/// Opts the kernel in to `shared` bytes of dynamic shared memory and returns the launch.
course::Launch launch_of(Kernel kernel, const std::uint32_t* src, std::uint32_t* dst, std::size_t n,
                         int vectors, LaunchShape shape, int threads, std::size_t shared,
                         TestHooks hooks) {
  course::batches::hold_back_nanoseconds(hooks.hold_back);  // throws where the hooks are missing
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(shared)));
  return [=](cudaStream_t stream) {
    kernel<<<shape.blocks, threads, shared, stream>>>(src, dst, n, vectors, hooks);
    COURSE_CHECK_LAUNCH();
  };
}

}  // namespace

unsigned take_wait_errors() {
  COURSE_CHECK(cudaDeviceSynchronize());
  unsigned errors = 0;
  COURSE_CHECK(cudaMemcpyFromSymbol(&errors, device::g_wait_errors, sizeof(errors)));
  const unsigned none = 0;
  COURSE_CHECK(cudaMemcpyToSymbol(device::g_wait_errors, &none, sizeof(none)));
  (void)course::mbarrier::take_wait_timeouts();  // the bounded waits' own count, reset too
  return errors;
}

std::string describe_wait_errors(unsigned errors) {
  if (errors == kNoWaitError) return "no wait error";
  const std::string bound = std::to_string(course::mbarrier::kWaitLimitNs / 1000000) + " ms";
  std::string text;
  auto add = [&](const std::string& s) { text += (text.empty() ? "" : "; ") + s; };
  if (errors & kDataNeverArrived) {
    add("a batch never arrived (a bounded wait on its full barrier timed out after " + bound +
        ": was the expect_tx byte count right?)");
  }
  if (errors & kBufferNeverFreed) {
    add("a buffer was never released (the producer's bounded wait on an empty barrier timed "
        "out after " +
        bound + ")");
  }
  if (errors & kNotSm90) add("a kernel ran on a GPU below compute capability 9.0");
  return text;
}

course::Launch prepare_copy_and_compute(cuda::std::span<const std::uint32_t> in,
                                        cuda::std::span<std::uint32_t> out, const Config& config,
                                        LaunchShape shape, TestHooks hooks) {
  course::require(
      in.size() == out.size(), kWhere,
      "in has " + std::to_string(in.size()) + " elements, out " + std::to_string(out.size()));
  require_valid_config(config, shape.threads_per_block);
  course::require(shape.blocks >= 1, kWhere,
                  "blocks must be >= 1, got " + std::to_string(shape.blocks));
  course::require_16_byte_aligned(kWhere, in.data(), out.data(),
                                  "cp.async.bulk reads and writes 16-byte aligned addresses");
  if (in.empty()) return [](cudaStream_t) {};
  course::require_current_device({9, 0}, kWhere, "cp.async.bulk and mbarrier transaction counts");
  return launch_of(kernel_for(config), in.data(), out.data(), in.size(), config.vectors_per_thread,
                   shape, block_threads(config, shape.threads_per_block),
                   shared_bytes(config, shape.threads_per_block), hooks);
}

void copy_and_compute(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out,
                      const Config& config, LaunchShape shape, cudaStream_t stream) {
  prepare_copy_and_compute(in, out, config, shape)(stream);
}

int max_blocks_per_sm(const Config& config, int threads_per_block) {
  require_valid_config(config, threads_per_block);
  const Kernel kernel = kernel_for(config);
  const std::size_t shared = shared_bytes(config, threads_per_block);
  const int threads = block_threads(config, threads_per_block);
  return course::max_resident_blocks(reinterpret_cast<const void*>(kernel), threads, shared);
}

course::Launch prepare_bulk_copy(const void* src, void* dst, std::size_t bytes, Barrier barrier,
                                 LaunchShape shape, int vectors_per_thread, TestHooks hooks) {
  course::require(bytes % 16 == 0, kWhereCopy,
                  "bytes must be a multiple of 16 (a bulk copy moves whole 16-byte chunks), got " +
                      std::to_string(bytes));
  course::require_16_byte_aligned(kWhereCopy, src, dst,
                                  "cp.async.bulk reads and writes 16-byte aligned addresses");
  course::require(barrier == Barrier::ptx || barrier == Barrier::cuda_barrier, kWhereCopy,
                  "unknown barrier flavour");
  require_threads(shape.threads_per_block, kWhereCopy);
  course::require(shape.blocks >= 1, kWhereCopy,
                  "blocks must be >= 1, got " + std::to_string(shape.blocks));
  course::require(
      valid_vectors_per_thread(vectors_per_thread), kWhereCopy,
      "vectors_per_thread must be 1, 2, 4 or 8, got " + std::to_string(vectors_per_thread));
  if (bytes == 0) return [](cudaStream_t) {};
  course::require_current_device({9, 0}, kWhereCopy,
                                 "cp.async.bulk and mbarrier transaction counts");
  const Kernel kernel = barrier == Barrier::ptx ? single_ptx_kernel<Variant::single_ptx, false>
                                                : single_barrier_kernel<false>;
  // One buffer: the chunk is stored from where it landed.
  const std::size_t shared =
      batch_elements(shape.threads_per_block, vectors_per_thread) * sizeof(std::uint32_t);
  return launch_of(kernel, static_cast<const std::uint32_t*>(src), static_cast<std::uint32_t*>(dst),
                   bytes / sizeof(std::uint32_t), vectors_per_thread, shape,
                   shape.threads_per_block, shared, hooks);
}

}  // namespace tma_bulk_copy
