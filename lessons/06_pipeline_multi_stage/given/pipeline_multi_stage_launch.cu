// Lesson 06's launchers: argument checks, the choice of kernel for an interface and a stage
// count, the shared-memory opt-in, the occupancy query and, for the test programs, the count
// of pipeline steps that began short of a full pipeline. Read-only: the build compiles
// this file in one unit with pipeline_multi_stage.cu (yours, and separately the
// solution's), which defines the kernels; pipeline_multi_stage.cuh declares them.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "course/batches.cuh"
#include "course/check.h"
#include "course/device_counter.cuh"
#include "course/launch.h"
#include "pipeline_multi_stage.cuh"
#include "stages_in_flight.cuh"

namespace pipeline_multi_stage {
namespace {

using Kernel = void (*)(const std::uint32_t*, std::uint32_t*, std::size_t, int, unsigned);

// ---- DELIBERATELY BROKEN: one stage too many -------------------------------------------------

/// Prefetches Stages batches with Stages buffers: a batch Stages ahead in a ring of Stages
/// buffers lands in the very buffer the block is about to compute from, so a copy
/// overwrites data that other threads are still reading. Nothing stops it: the
/// primitives do not know about buffers (a cuda::pipeline would have blocked instead, until
/// the buffer was released). The values are right whenever no block owns more batches
/// than there are stages (the extra copy is never issued), and often right even when it
/// is (the copy may arrive after the reads): a value check cannot be trusted to catch this.
/// compute-sanitizer --tool racecheck reports it. Never run by default.
template <int Stages>
__global__ void one_stage_too_many_kernel(const std::uint32_t* __restrict__ in,
                                          std::uint32_t* __restrict__ out, std::size_t n,
                                          int vectors_per_thread, unsigned hold_ns) {
  primitives_schedule<Stages, Stages>(in, out, n, vectors_per_thread, hold_ns);
}

constexpr const char* kWhere = "pipeline_multi_stage::copy_and_compute";

/// The kernel instantiation for a config: the stage count is a template parameter (the
/// pipeline's shared state and the primitives' wait depth are compile-time values).
Kernel kernel_for(const Config& config) {
  return course::with_stage_count<kMinStages, kMaxStages>(config.stages, [&](auto s) -> Kernel {
    constexpr int stages = decltype(s)::value;
    switch (config.interface) {
      case Interface::pipeline:
        return pipeline_kernel<stages>;
      case Interface::primitives:
        return primitives_kernel<stages>;
      case Interface::broken_one_stage_too_many:
        return one_stage_too_many_kernel<stages>;
    }
    throw std::invalid_argument(std::string(kWhere) + ": unknown interface");
  });
}

void require_valid_config(const Config& config, int threads_per_block) {
  course::require(config.interface == Interface::pipeline ||
                      config.interface == Interface::primitives ||
                      config.interface == Interface::broken_one_stage_too_many,
                  kWhere, "unknown interface");
  course::require(config.stages >= kMinStages && config.stages <= kMaxStages, kWhere,
                  "stages must be in [" + std::to_string(kMinStages) + ", " +
                      std::to_string(kMaxStages) + "], got " + std::to_string(config.stages));
  course::require(
      valid_vectors_per_thread(config.vectors_per_thread), kWhere,
      "vectors_per_thread must be 1, 2, 4 or 8, got " + std::to_string(config.vectors_per_thread));
  course::require(
      threads_per_block >= 32 && threads_per_block <= 1024 && threads_per_block % 32 == 0, kWhere,
      "threads_per_block must be a multiple of 32 in [32, 1024], got " +
          std::to_string(threads_per_block));
}

}  // namespace

course::Launch prepare_copy_and_compute(cuda::std::span<const std::uint32_t> in,
                                        cuda::std::span<std::uint32_t> out, const Config& config,
                                        LaunchShape shape, HoldBack hold) {
  course::require_copy_launch(kWhere, in.size(), out.size(), shape.blocks, shape.threads_per_block);
  require_valid_config(config, shape.threads_per_block);
  course::require_16_byte_aligned(
      kWhere, in.data(), out.data(),
      "16-byte copies");
  if (in.empty()) return [](cudaStream_t) {};

  const Kernel kernel = kernel_for(config);
  const std::size_t shared = shared_bytes(config, shape.threads_per_block);
  // Beyond 48 KB a kernel must opt in to more dynamic shared memory.
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(shared)));
  const std::uint32_t* src = in.data();
  std::uint32_t* dst = out.data();
  const std::size_t n = in.size();
  const int vectors = config.vectors_per_thread;
  const unsigned hold_ns = course::batches::hold_back_nanoseconds(hold);
  return [=](cudaStream_t stream) {
    kernel<<<shape.blocks, shape.threads_per_block, shared, stream>>>(src, dst, n, vectors,
                                                                      hold_ns);
    COURSE_CHECK_LAUNCH();
  };
}

void copy_and_compute(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out,
                      const Config& config, LaunchShape shape, cudaStream_t stream) {
  prepare_copy_and_compute(in, out, config, shape)(stream);
}

unsigned long long take_prefetch_shortfalls() {
  if (!course::batches::kTestHooks) {
    throw std::logic_error("take_prefetch_shortfalls is for the test programs: these kernels "
                           "were compiled without COURSE_TEST_HOOKS");
  }
#if defined(COURSE_TEST_HOOKS)
  return course::take_device_count(stages_in_flight::g_short_prefetches);
#else
  return 0;
#endif
}

int max_blocks_per_sm(const Config& config, int threads_per_block) {
  require_valid_config(config, threads_per_block);
  const Kernel kernel = kernel_for(config);
  return course::max_resident_blocks(reinterpret_cast<const void*>(kernel), threads_per_block,
                                     shared_bytes(config, threads_per_block));
}

}  // namespace pipeline_multi_stage
