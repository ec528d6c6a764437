/// \file cuda_barrier.cuh
/// \brief Lesson 03: `cuda::barrier` and `cuda::memcpy_async`.
///
/// The API the driver (main.cu) and the tests call. The exercise's kernels live in
/// cuda_barrier.cu (the starter in lessons/, the complete version in solutions/); their entry
/// points and launchers in cuda_barrier_launch.cu.
///
/// Every kernel runs the course's copy-and-compute workload (course/workload.h) in batches
/// of kElementsPerThread uint32 per thread, the batch size of lesson 01's coarse kernel, so
/// the table compares copy mechanisms and nothing else.
#pragma once

#include <cuda_runtime.h>
#include <cuda/std/span>

#include <cstddef>
#include <cstdint>

#include "course/batches.cuh"
#include "course/launch.h"

namespace cuda_barrier {

/// The lesson's kernels, one idea each.
enum class Kernel {
  /// One shared buffer and one block-scope barrier; each batch is one
  /// `cuda::memcpy_async(block, dst, src, bytes, barrier)` with a plain byte count of
  /// uint32: 4-byte `cp.async` on sm_80 and sm_90 alike.
  one_stage_words,
  /// The same with `cuda::aligned_size_t<16>`: one bulk (TMA) copy per batch on sm_90,
  /// 16-byte `cp.async` on sm_80.
  one_stage,
  /// `one_stage` with a hand-written 1-D group type instead of `this_thread_block()`.
  custom_group,
  /// Each batch as two copies of different element types (uint4 and uint32) bound to one
  /// barrier: the barrier's phase completes only when both have landed.
  two_buffers,
  /// A `cuda::barrier<cuda::thread_scope_system>`; each batch is copied inside global
  /// memory (input -> output array) and computed in place. No asynchronous path exists for
  /// that: every call returns `async_contract_fulfillment::none`.
  system_scope,
  /// One buffer and two barriers per stage (LaunchShape::stages, 2..4), aligned copies: a
  /// `full` barrier (the batch has landed) and an `empty` one (every thread has finished
  /// reading it). While the block computes one batch, the next stages - 1 are in flight, and
  /// a stage is refilled as soon as its empty barrier says so. The fast path.
  multi_stage,
  /// DELIBERATELY BROKEN, never run by default: multi_stage without the wait on the empty
  /// barrier, so a refill can overwrite a batch that slower threads still read. The tests
  /// (with a ReaderDelay) and racecheck show why that wait is needed.
  multi_stage_no_release,
};

/// Whether `kernel` is one of the multi-stage kernels (stages 2..4, a ReaderDelay allowed).
__host__ __device__ constexpr bool is_multi_stage(Kernel kernel) {
  return kernel == Kernel::multi_stage || kernel == Kernel::multi_stage_no_release;
}

/// uint32 elements each thread's share of a batch holds: 64 bytes, as lesson 01's coarse kernel.
inline constexpr int kElementsPerThread = 16;
/// Stage counts multi_stage accepts.
inline constexpr int kMinStages = 2;
inline constexpr int kMaxStages = 4;
static_assert(kElementsPerThread % 8 == 0,
              "two_buffers splits a batch in halves of whole 16-byte chunks: a thread's share "
              "must be a multiple of 8 uint32, or the second half's start is misaligned");
static_assert(kMinStages >= 2, "with fewer than 2 stages no refill overlaps the compute");
static_assert(kMaxStages * 512 * kElementsPerThread * sizeof(std::uint32_t) <= 163 * 1024,
              "kMaxStages batches of a 512-thread block must fit the 163 KB a block may opt in "
              "to on sm_80 (the launcher checks larger blocks against the device)");

/// Grid, block and pipeline depth of a launch.
struct LaunchShape {
  int blocks = 0;
  int threads_per_block = 0;
  int stages = 1;  ///< 1, or kMinStages..kMaxStages for the multi-stage kernels
};

/// Tests only: how long the multi-stage kernels hold back every warp but the first before it
/// reads a staged batch (until the first word it reads changes, or this many nanoseconds
/// have passed). Warp 0 runs ahead and starts the refills; in a correct kernel the empty
/// barrier keeps them off the batch being read, so the values stay right; in
/// multi_stage_no_release a refill lands while the batch is read (sm_90: thread 0's bulk
/// copy refills the whole stage). 0, the default, holds nobody back.
using course::batches::ReaderDelay;

/// Tests only: the one-stage kernels hold back every warp of a block but one before it copies
/// a batch and before it reads one (course::batches::hold_back), so that a wait or sync that
/// covers only its own warp shows in the values. 0, the default, holds nobody back.
using course::batches::HoldBack;

/// Elements one block stages per batch: threads x kElementsPerThread (whole groups of 32).
__host__ __device__ constexpr std::size_t batch_elements(int threads_per_block) {
  return static_cast<std::size_t>(threads_per_block) * kElementsPerThread;
}

/// Dynamic shared memory of one block: one batch per stage (none for system_scope, which
/// stages its batches in global memory).
__host__ __device__ constexpr std::size_t shared_bytes(Kernel kernel, int threads_per_block,
                                                       int stages = 1) {
  const std::size_t batch = batch_elements(threads_per_block) * sizeof(std::uint32_t);
  if (kernel == Kernel::system_scope) return 0;
  return is_multi_stage(kernel) ? batch * static_cast<std::size_t>(stages) : batch;
}

/// Slots of the report array a kernel fills with what its `cuda::memcpy_async` calls
/// returned: the value of `cuda::async_contract_fulfillment` (none = 0, async = 1), or
/// kNotCalled where that call never happened.
enum ReportSlot : int {
  kBatchCopy = 0,   ///< the copy of a full batch (batch 0's, when it is full)
  kSecondCopy = 1,  ///< two_buffers only: the second copy of a full batch
  kTailCopy = 2,    ///< the copy of the partial last batch's bytes past its last 16-byte chunk
};
/// Elements of a report array.
inline constexpr int kReportSlots = 3;
/// What a report slot holds when its call did not happen (prepare a report with 0xFF bytes).
inline constexpr std::uint32_t kNotCalled = 0xFFFFFFFFu;

/// "none", "async" or "not called", for a report slot's value.
const char* contract_name(std::uint32_t value);
/// The kernel's name as the tests print it, e.g. "multi_stage".
const char* kernel_name(Kernel kernel);

/// Prepares a run of the copy-and-compute workload: out[i] = combine(in[i],
/// in[partner_index(i, n)]), with `kernel`. The returned launch only enqueues the kernel on
/// the stream it is given. When `report` is not empty, the kernel writes what its
/// `memcpy_async` calls returned into it (ReportSlot; slots whose call did not happen are
/// left alone).
///
/// Preconditions, checked before any CUDA call (std::invalid_argument otherwise): `in` and
/// `out` have the same size; 32 <= threads_per_block <= 1024 and a multiple of 32;
/// blocks >= 1; stages is 1, or kMinStages..kMaxStages for the multi-stage kernels; both
/// arrays are 16-byte aligned (the aligned copies promise it); `report` is empty or holds
/// kReportSlots elements; a non-zero `delay` only for the multi-stage kernels, a non-zero
/// `hold` only for the one-stage ones (one_stage_words, one_stage, custom_group,
/// two_buffers). Then: the
/// shared memory fits the device (std::invalid_argument otherwise), and the kernel may use
/// it (cudaFuncSetAttribute). An empty input prepares a launch that enqueues nothing.
course::Launch prepare_copy_and_compute(cuda::std::span<const std::uint32_t> in,
                                        cuda::std::span<std::uint32_t> out, Kernel kernel,
                                        LaunchShape shape,
                                        cuda::std::span<std::uint32_t> report = {},
                                        ReaderDelay delay = {}, HoldBack hold = {});

/// prepare_copy_and_compute(in, out, kernel, shape, report) run at once on `stream`.
void copy_and_compute(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out,
                      Kernel kernel, LaunchShape shape, cudaStream_t stream,
                      cuda::std::span<std::uint32_t> report = {});

/// The most blocks of `threads_per_block` threads one SM holds at once for `kernel`
/// (cudaOccupancyMaxActiveBlocksPerMultiprocessor), given its shared memory.
int max_blocks_per_sm(Kernel kernel, int threads_per_block, int stages = 1);

}  // namespace cuda_barrier
