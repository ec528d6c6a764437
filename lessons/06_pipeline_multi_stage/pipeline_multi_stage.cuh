/// \file pipeline_multi_stage.cuh
/// \brief Lesson 06: multi-stage pipelines, with cuda::pipeline and with the primitives.
///
/// The API the driver (main.cu), the tests and lesson 07 call. The kernels live in
/// pipeline_multi_stage.cu (the student's file: the starter in lessons/, the complete
/// version in solutions/); the launchers in pipeline_multi_stage_launch.cu (read-only).
///
/// A block keeps `stages` batches of shared memory. While it computes batch k, the copies
/// of the next batches are already in flight, so one block overlaps its own copies with
/// its own compute, and the memory system stays busy even at one block per SM (lesson 01's
/// kernel cannot do that). The same kernel is written twice:
///  - with a block-scope `cuda::pipeline`, which tracks the buffers for the whole block
///    with two mbarriers per stage;
///  - with the pipeline primitives, which only count each thread's own groups of copies,
///    so that the block's view of a batch and the safety of each refill are yours to
///    prove, and the last, partial batch is zero-filled.
#pragma once

#include <cuda_runtime.h>
#include <cuda/std/span>

#include <cstddef>
#include <cstdint>

#include "course/batches.cuh"
#include "course/launch.h"
#include "register_staged.cuh"

namespace pipeline_multi_stage {

/// Grid and block size of a launch (lesson 01's type).
using register_staged::LaunchShape;

/// Which interface drives the pipeline.
enum class Interface {
  /// `cuda::pipeline<cuda::thread_scope_block>` with `Stages` stages in shared state; the
  /// copies are 16-byte cp.async, completed through mbarriers.
  pipeline,
  /// The pipeline primitives: 16-byte cp.async in per-thread groups (zero-filled in the
  /// tail), a wait that leaves the later batches in flight and a block-wide barrier.
  primitives,
  /// DELIBERATELY BROKEN, never run by default: the primitives kernel prefetching one
  /// batch more than it has buffers, so a copy overwrites the buffer the block is still
  /// computing from. It passes a value check whenever no block owns more batches than
  /// there are stages; `compute-sanitizer --tool racecheck` reports it at any size where
  /// the extra copy is issued.
  broken_one_stage_too_many,
};

/// "pipeline", "primitives" or "broken-one-stage-too-many".
inline const char* name(Interface interface) {
  switch (interface) {
    case Interface::pipeline:
      return "pipeline";
    case Interface::primitives:
      return "primitives";
    case Interface::broken_one_stage_too_many:
      return "broken-one-stage-too-many";
  }
  return "?";
}

/// Stage counts the kernels are compiled for (a template parameter: cuda::pipeline's
/// shared state is `pipeline_shared_state<scope, uint8_t Stages>`).
inline constexpr int kMinStages = 2;
inline constexpr int kMaxStages = 8;
static_assert(kMinStages >= 2,
              "one stage is lesson 05: with fewer than 2 no copy overlaps the compute");
static_assert(kMaxStages <= 255, "pipeline_shared_state's stage count is a uint8_t");

/// What one launch does: the interface, the number of stages (shared buffers) and the
/// batch granularity, in 16-byte vectors each thread copies per batch (1, 2, 4 or 8).
struct Config {
  Interface interface = Interface::primitives;
  int stages = 4;
  int vectors_per_thread = 4;
};

/// Whether `vectors_per_thread` is one the launcher accepts: 1, 2, 4 or 8.
using course::batches::valid_vectors_per_thread;

/// How the input is cut into batches and a block's batches found: lesson 01's scheme,
/// from course/batches.cuh. batch_elements(threads, vectors) is threads x vectors x 4
/// uint32 (256 threads x 4 vectors: 4096 elements, 16 KB), always a multiple of 128, so a
/// batch holds whole 32-element groups; batch_count(n, batch) counts the batches (the last
/// may be partial); batches_of_block(batches, block, grid) is how many a block owns
/// (block b owns b, b + grid, ...: the same count in every thread of the block).
using course::batches::batch_count;
using course::batches::batch_elements;
using course::batches::batches_of_block;

/// Dynamic shared memory of one block: `stages` batches of uint32_t.
__host__ __device__ constexpr std::size_t shared_bytes(const Config& config,
                                                       int threads_per_block) {
  return static_cast<std::size_t>(config.stages) *
         batch_elements(threads_per_block, config.vectors_per_thread) * sizeof(std::uint32_t);
}
static_assert(batch_elements(1, 1) * sizeof(std::uint32_t) % 16 == 0,
              "a thread's share of a batch must be whole 16-byte vectors, or buffer k of a "
              "Stages-deep ring is not 16-byte aligned for the 16-byte cp.async");
static_assert(shared_bytes(Config{}, 256) <= 163 * 1024,
              "the default configuration at 256 threads must fit the 163 KB a block may opt "
              "in to on sm_80 (larger ones are checked against the device at run time)");

/// How many batches the correct kernels keep in flight ahead of the one being computed:
/// stages - 1, because the batch being computed occupies the last buffer.
__host__ __device__ constexpr int batches_ahead(int stages) { return stages - 1; }

/// The argument of `__pipeline_wait_prior` in the primitives kernel when it keeps `ahead`
/// batches in flight: just before computing batch k this thread has committed ahead + k
/// groups (one per batch, empty ones included); batch k is group k, so ahead - 1 newer
/// groups may still be pending. (Values above 8 would be clamped to 8 by the primitives.)
__host__ __device__ constexpr int groups_allowed_pending(int ahead) { return ahead - 1; }
static_assert(groups_allowed_pending(kMaxStages) <= 8,
              "__pipeline_wait_prior clamps its argument to 8: a deeper schedule (the broken "
              "kernel's Ahead = Stages included) would wait for a newer batch than it means");

/// Zero-fill of one 16-byte chunk of a batch that holds `count` valid elements: how many of
/// the chunk's 16 bytes lie past the data (0 for a whole chunk, 16 for a chunk entirely
/// past the end; course/batches.cuh). `__pipeline_memcpy_async(dst, src, 16, zfill)`
/// copies 16 - zfill bytes and writes zeros over the rest, so shared memory is fully
/// initialised; course::batches::copy_tail_chunk_zero_fill() uses it.
using course::batches::zero_fill_bytes;

/// Tests only: every warp of a block but one waits before it copies a batch and before it
/// reads one (course::batches::hold_back), so that a wait or a sync that covers only its own
/// warp shows in the values. 0, the default, holds nobody back.
using course::batches::HoldBack;

/// Validates the arguments, sets the kernel's shared-memory attribute and picks the kernel
/// instantiation, then returns the launch: calling it with a stream runs the
/// copy-and-compute workload (course/workload.h) on that stream,
/// out[i] = combine(in[i], in[partner_index(i, n)]) for every i, with a `config.stages`
/// stage pipeline of batches of batch_elements(threads, config.vectors_per_thread).
///
/// Preconditions, checked before any CUDA call (std::invalid_argument otherwise):
/// `in` and `out` have the same size; 32 <= threads_per_block <= 1024 and a multiple of 32;
/// blocks >= 1; kMinStages <= stages <= kMaxStages; vectors_per_thread is 1, 2, 4 or 8;
/// both pointers are 16-byte aligned (the 16-byte copies and aligned_size_t<16> promise
/// it). The block's shared memory (shared_bytes()) must fit the device, or the attribute
/// call throws course::CudaError. For an empty input the launch does nothing.
course::Launch prepare_copy_and_compute(cuda::std::span<const std::uint32_t> in,
                                        cuda::std::span<std::uint32_t> out, const Config& config,
                                        LaunchShape shape, HoldBack hold = {});

/// prepare_copy_and_compute(in, out, config, shape), launched at once on `stream`.
void copy_and_compute(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out,
                      const Config& config, LaunchShape shape, cudaStream_t stream);

/// Tests only: how many steps of the cuda::pipeline kernels (one count per thread and step)
/// began computing with fewer batches issued than the pipeline holds, since the last call
/// (after the device finished its work); the count is reset to 0. A pipeline that keeps
/// only one batch in flight computes the right values: this is what tells it from a full
/// one (given/stages_in_flight.cuh). Throws std::logic_error in a program whose kernels were
/// compiled without COURSE_TEST_HOOKS (only the test programs count).
unsigned long long take_prefetch_shortfalls();

/// The most blocks of `threads_per_block` threads one SM holds at once for this kernel
/// (cudaOccupancyMaxActiveBlocksPerMultiprocessor), given its shared memory; 0 when one
/// block does not fit. Throws std::invalid_argument for a config copy_and_compute rejects.
int max_blocks_per_sm(const Config& config, int threads_per_block);

// ---- Defined in pipeline_multi_stage.cu (your file) ----------------------------------------
// Declared here for pipeline_multi_stage_launch.cu, so that it compiles on its own
// (tools/compile_alone.py checks that it does); the build compiles your file and
// pipeline_multi_stage_launch.cu as one unit, where the definitions are.
namespace {

/// The Stages-stage schedule with cuda::pipeline. `hold_ns` (every kernel here) is for tests
/// only, 0 otherwise: course::batches::hold_back.
template <int Stages>
__global__ void pipeline_kernel(const std::uint32_t* __restrict__ in,
                                std::uint32_t* __restrict__ out, std::size_t n,
                                int vectors_per_thread, unsigned hold_ns);
/// The same schedule with the __pipeline_* primitives.
template <int Stages>
__global__ void primitives_kernel(const std::uint32_t* __restrict__ in,
                                  std::uint32_t* __restrict__ out, std::size_t n,
                                  int vectors_per_thread, unsigned hold_ns);
/// The primitives schedule of primitives_kernel, keeping `Ahead` batches in flight in
/// `Stages` buffers (Ahead = Stages - 1); the launch file's deliberately broken kernel runs it
/// with Ahead = Stages.
template <int Stages, int Ahead>
__device__ void primitives_schedule(const std::uint32_t* __restrict__ in,
                                    std::uint32_t* __restrict__ out, std::size_t n,
                                    int vectors_per_thread, unsigned hold_ns);

}  // namespace

}  // namespace pipeline_multi_stage
