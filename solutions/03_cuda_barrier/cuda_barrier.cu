// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
//
// Lesson 03: cuda::barrier and cuda::memcpy_async. A copy bound to a barrier counts towards
// the barrier's current phase, and the phase completes only when every expected thread has
// arrived AND every copy bound to it has landed: one wait means both "the data is here" and
// "everybody got this far". What a copy compiles to depends on what the library can prove
// about alignment (the copies, TODO 1-4). With one buffer nothing overlaps inside a block
// (TODO 5-6). With several, a buffer may be read only once its batch has landed and refilled
// only once every thread has let go of it; two barriers per buffer say when (TODO 7-8).
#include "cuda_barrier.cuh"

#include <cooperative_groups.h>
#include <cuda/barrier>

#include "course/batches.cuh"
#include "given/cuda_barrier_device.cuh"

// A __shared__ barrier is never constructed (one thread calls init()): silence warning 20054.
#pragma nv_diag_suppress static_var_with_dynamic_init

namespace cuda_barrier {
namespace {

namespace cg = cooperative_groups;
using course::batches::Batch;
using course::batches::batch_of_block;
using course::batches::compute_batch;
using namespace cuda_barrier::device;  // BlockBarrier and the helpers of cuda_barrier_device.cuh

// ---- The copies (TODO 1-4): every thread of `group` calls them with the same arguments --

/// Starts copying `count` uint32, promising nothing the types do not prove: CCCL then knows
/// only alignof(uint32_t) = 4, so every thread issues 4-byte cp.async, on sm_80 and sm_90
/// alike. Works for any count.
template <class Group, class Barrier>
__device__ cuda::async_contract_fulfillment copy_words(const Group& group, std::uint32_t* dst,
                                                       const std::uint32_t* src, std::size_t count,
                                                       Barrier& barrier) {
  // TODO 1: start an asynchronous copy (cuda::memcpy_async bound to a barrier) of the `count`
  //         elements at `src` to `dst`, whose completion counts towards `barrier`'s current
  //         phase, promising no alignment beyond the element type's; return the contract the
  //         copy reports. Every thread of `group` runs it with the same arguments. One
  //         statement.
  // BEGIN SOLUTION
  return cuda::memcpy_async(group, dst, src, count * sizeof(std::uint32_t), barrier);
  // STARTER: (void)group; (void)dst; (void)src; (void)count; (void)barrier;
  // STARTER: return cuda::async_contract_fulfillment::none;
  // END SOLUTION
}

/// Starts copying `count` uint32 (a multiple of 4), promising 16-byte aligned pointers and a
/// size that is a multiple of 16 bytes: on sm_90 ONE cp.async.bulk by thread_rank() 0, on
/// sm_80 16-byte cp.async by every thread. A broken promise is undefined behaviour, not a
/// slower copy.
template <class Group, class Barrier>
__device__ cuda::async_contract_fulfillment copy_aligned(const Group& group, std::uint32_t* dst,
                                                         const std::uint32_t* src,
                                                         std::size_t count, Barrier& barrier) {
  // TODO 2: the copy of TODO 1, but the library must learn what the caller guarantees: both
  //         pointers 16-byte aligned and the size a whole number of 16-byte chunks, so that
  //         sm_90 can issue one bulk copy. Return the contract the copy reports. One statement.
  // BEGIN SOLUTION
  return cuda::memcpy_async(group, dst, src,
                            cuda::aligned_size_t<16>(count * sizeof(std::uint32_t)), barrier);
  // STARTER: (void)group; (void)dst; (void)src; (void)count; (void)barrier;
  // STARTER: return cuda::async_contract_fulfillment::none;
  // END SOLUTION
}

/// The partial last batch, `count` elements (any number below a batch), bound to one phase
/// of `barrier`: as much of it as possible on the aligned path, no promise broken.
template <class Group, class Barrier>
__device__ void copy_partial_batch(const Group& group, std::uint32_t* dst, const std::uint32_t* src,
                                   std::size_t count, Barrier& barrier, std::uint32_t* report) {
  // TODO 3: copy all `count` elements of `src` to `dst`, bound to `barrier`. Every element
  //         that can be covered by a copy keeping the 16-byte promise (pointers and size) must
  //         be; only the elements that cannot may go the other way. Start no copy of 0 bytes (a
  //         bulk copy of 0 bytes is not a copy). Write the contract of the copy of the elements
  //         past the last whole 16-byte chunk into its slot (ReportSlot, cuda_barrier.cuh).
  // BEGIN SOLUTION
  const std::size_t chunked = count / 4 * 4;  // elements in whole 16-byte chunks
  if (chunked > 0) copy_aligned(group, dst, src, chunked, barrier);
  if (chunked < count) {
    record(report, kTailCopy,
           copy_words(group, dst + chunked, src + chunked, count - chunked, barrier));
  }
  // STARTER: (void)group; (void)dst; (void)src; (void)count; (void)barrier; (void)report;
  // END SOLUTION
}

/// two_buffers: a full batch as two buffers of different element types, uint4 and uint32,
/// bound to one barrier (the phase completes when both have landed). Both take the aligned
/// path.
template <class Group, class Barrier>
__device__ void copy_two_buffers(const Group& group, std::uint32_t* dst, const std::uint32_t* src,
                                 std::size_t batch, Barrier& barrier, std::uint32_t* report) {
  const std::size_t half = batch / 2;  // elements; a multiple of 16 (batch = 16 x threads)
  uint4* vectors = reinterpret_cast<uint4*>(dst);  // buffer 1: half / 4 uint4
  const uint4* vectors_src = reinterpret_cast<const uint4*>(src);
  std::uint32_t* words = dst + half;  // buffer 2: half uint32; dst : (2, half) uint32
  const std::uint32_t* words_src = src + half;
  // TODO 4: copy buffer 1 (`vectors`) and buffer 2 (`words`), both bound to `barrier`, both on
  //         the aligned path (one bulk copy each on sm_90). Buffer 1 must get there through its
  //         element type alone: no alignment promise in its call. Write each copy's contract
  //         into its slot (ReportSlot: buffer 1 as the full batch's copy, buffer 2 as the second).
  // BEGIN SOLUTION
  record(report, kBatchCopy,
         cuda::memcpy_async(group, vectors, vectors_src, half * sizeof(std::uint32_t), barrier));
  record(report, kSecondCopy, copy_aligned(group, words, words_src, half, barrier));
  // STARTER: (void)group; (void)barrier; (void)report;
  // STARTER: (void)vectors; (void)vectors_src; (void)words; (void)words_src;
  // END SOLUTION
}

/// Starts the copy of batch `b` of `in` into `staged`, bound to `barrier`.
template <Copy C, class Group, class Barrier>
__device__ void copy_batch(const Group& group, std::uint32_t* staged, const std::uint32_t* in,
                           Batch b, std::size_t batch, Barrier& barrier, std::uint32_t* report) {
  const std::uint32_t* src = in + b.first;  // src[i] = in[b.first + i] : (b.count)
  if constexpr (C == Copy::words) {  // the word copy works for any count
    const auto promised = copy_words(group, staged, src, b.count, barrier);
    if (b.count == batch) record(report, kBatchCopy, promised);
    if (b.count < batch && b.count % 4 != 0) record(report, kTailCopy, promised);
  } else if (b.count < batch) {
    copy_partial_batch(group, staged, src, b.count, barrier, report);
  } else if constexpr (C == Copy::aligned) {
    record(report, kBatchCopy, copy_aligned(group, staged, src, batch, barrier));
  } else {
    copy_two_buffers(group, staged, src, batch, barrier, report);
  }
}

// ---- One stage: one buffer, one barrier (TODO 5-6) --------------------------------------

/// One buffer and one barrier: every batch of this block is staged in `staged` and computed
/// from there. Nothing overlaps inside the block (other resident blocks hide the latency, as
/// in lesson 01); no registers stage the data, and on sm_90 one thread issues the whole
/// aligned batch as one bulk copy.
/// `hold_ns` is for tests only (0 otherwise): course::batches::TestHooks.
template <Copy C, class Group>
__device__ void one_stage(const Group& group, const std::uint32_t* __restrict__ in,
                          std::uint32_t* __restrict__ out, std::size_t n, std::uint32_t* report,
                          unsigned hold_ns) {
  const course::batches::TestHooks hooks{hold_ns};  // nothing outside the tests
  extern __shared__ uint4 shared_storage[];  // uint4: 16-byte aligned, for bulk copies
  std::uint32_t* staged = reinterpret_cast<std::uint32_t*>(shared_storage);
  __shared__ BlockBarrier landed;
  init_block_barriers(group, &landed, 1);

  const std::size_t batch = batch_elements(blockDim.x);
  hooks.poison(staged, batch * sizeof(std::uint32_t));
  const std::size_t batches = course::batches::batch_count(n, batch);
  for (std::size_t k = 0; k < course::batches::batches_of_block(batches, blockIdx.x, gridDim.x);
       ++k) {
    const Batch b = batch_of_block(k, batch, n);
    hooks.before_copy();
    // TODO 5: stage batch `b` of `in` in `staged`, bound to `landed`, the way this kernel's
    //         `C` says (a helper above does it; the report pointer comes from the device
    //         helpers). Then no thread may go on before the whole batch has landed and every
    //         thread has issued its part of the copy: one wait covers both. 2 statements.
    // BEGIN SOLUTION
    copy_batch<C>(group, staged, in, b, batch, landed, report_for(report, b, batch));
    landed.arrive_and_wait();
    // STARTER: (void)b; (void)staged; (void)report;
    // END SOLUTION
    hooks.before_read();
    // TODO 6: compute batch `b` from `staged` into `out` (the course's batch helper). Then no
    //         thread's next copy may overwrite `staged` while a slower thread still reads its
    //         partner's elements there. 2 statements, one block-wide wait.
    // BEGIN SOLUTION
    compute_batch(staged, out, b, batch, n);
    group.sync();
    // END SOLUTION
  }
}

// ---- Several stages: a full and an empty barrier per stage (TODO 7-8) --------------------
//
// Stages buffers of one batch each. This block's local batches (local batch j is global
// batch blockIdx.x + j * gridDim.x) take the stages in turn, so each stage is used again and
// again. Two barriers per stage, each expecting every thread of the block and completing
// exactly one phase per use of the stage:
//   full[s]   a use's phase completes when its batch has landed and every thread has arrived;
//   empty[s]  a use's phase completes when every thread has finished reading its batch.
// Iteration j first refills the stage batch j - 1 used (once every thread has released it),
// then consumes batch j. The refill comes BEFORE the wait for batch j: a thread done with
// batch j - 1 (on sm_90, thread 0, which issues the whole bulk copy) refills while slower
// threads may still read batch j - 1. Only the empty barrier keeps the copy off their data.
// Which phase a wait names, and why this can neither hang nor race: the README.
// The last phases of each empty barrier are never waited for.

template <int Stages, bool WaitForRelease>
__global__ void __launch_bounds__(kMaxThreads)
    multi_stage_kernel(const std::uint32_t* __restrict__ in, std::uint32_t* __restrict__ out,
                       std::size_t n, std::uint32_t* report, unsigned delay_ns) {
  static_assert(kMinStages <= Stages && Stages <= kMaxStages, "2..4 stages");
  extern __shared__ uint4 shared_storage[];  // Stages buffers of one batch each
  __shared__ BlockBarrier barriers[2 * Stages];
  BlockBarrier* full = barriers;            // barriers[0, s] : (2, Stages)
  BlockBarrier* empty = barriers + Stages;  // barriers[1, s]
  const auto block = cg::this_thread_block();
  init_block_barriers(block, barriers, 2 * Stages);

  const std::size_t batch = batch_elements(blockDim.x);
  const std::size_t my_batches = course::batches::batches_of_block(
      course::batches::batch_count(n, batch), blockIdx.x, gridDim.x);
  const auto buffer = [&](std::size_t j) {
    // shared_storage as (Stages, batch) uint32: buffer(j) = [the stage of local batch j, :]
    return reinterpret_cast<std::uint32_t*>(shared_storage) + (j % Stages) * batch;
  };
  const auto fill = [&](std::size_t j) {
    // TODO 7: the producer, part 1 of 2: start the copy of this block's local batch j into
    //         the buffer of its stage, with aligned copies, bound to that stage's full barrier,
    //         reporting as the one-stage kernel does. Issue only: nothing here waits.
    // BEGIN SOLUTION
    const Batch b = batch_of_block(j, batch, n);
    copy_batch<Copy::aligned>(block, buffer(j), in, b, batch, full[j % Stages],
                              report_for(report, b, batch));
    // STARTER: (void)j; (void)full;
    // END SOLUTION
  };

  for (std::size_t j = 0; j < Stages && j < my_batches; ++j) fill(j);  // every stage is empty

  for (std::size_t j = 0; j < my_batches; ++j) {
    if (j >= 1 && j - 1 + Stages < my_batches) {
      if constexpr (WaitForRelease) {  // (false only in the deliberately broken variant)
        // TODO 7: the producer, part 2 of 2: the copy below overwrites the stage batch j - 1
        //         used. No thread may start it before every thread has finished reading batch
        //         j - 1, and none may wait for a later release (that would hang). One statement,
        //         no arrival of its own: this thread's release of batch j - 1 is already counted.
        // BEGIN SOLUTION
        empty[(j - 1) % Stages].wait_parity((j - 1) / Stages % 2 == 1);
        // END SOLUTION
      }
      fill(j - 1 + Stages);
    }
    // TODO 8: consume batch j, in two places. Before the hold_back_readers line: nobody reads
    //         batch j's buffer before batch j has landed there, and every thread counts towards the
    //         phase that says so. After it: compute batch j into `out`, then tell the refill of
    //         this stage that this thread is done with it, without waiting for anybody. The only
    //         wait of this kernel that may name its phase by parity is TODO 7's.
    // BEGIN SOLUTION
    const std::size_t s = j % Stages;
    full[s].arrive_and_wait();
    // STARTER: (void)empty;
    // END SOLUTION
    hold_back_readers(buffer(j), delay_ns);  // tests only: delays every warp but the first
    // BEGIN SOLUTION
    compute_batch(buffer(j), out, batch_of_block(j, batch, n), batch, n);
    (void)empty[s].arrive();  // no token kept: the refill waits for the phase by its parity
    // END SOLUTION
  }
}

}  // namespace
}  // namespace cuda_barrier
