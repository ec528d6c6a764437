// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
//
// Lesson 03: cuda::barrier and cuda::memcpy_async. `cuda::memcpy_async(group, dst, src, size,
// barrier)` starts a copy and binds it to the current phase of a cuda::barrier, which completes
// when every expected thread has arrived AND every copy bound to the phase has landed. In
// order: the copies (TODO 1-4), one stage (TODO 5-6), several stages with a full and an empty
// barrier per stage (TODO 7-8).
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
using namespace cuda_barrier::device;  // BlockBarrier, report_for, record, init_block_barriers...

// ---- The copies (TODO 1-4): every thread of `group` calls them with the same arguments --

/// `count` uint32 with a plain byte count: CCCL knows only alignof(uint32_t) = 4, so every
/// thread issues 4-byte cp.async, on sm_80 and sm_90 alike. Works for any count.
template <class Group, class Barrier>
__device__ cuda::async_contract_fulfillment copy_words(const Group& group, std::uint32_t* dst,
                                                       const std::uint32_t* src, std::size_t count,
                                                       Barrier& barrier) {
  // TODO 1: start copying `count` uint32 from `src` to `dst`, bound to `barrier`, with the
  //         size as a plain byte count; return what cuda::memcpy_async returned.
  // BEGIN SOLUTION
  return cuda::memcpy_async(group, dst, src, count * sizeof(std::uint32_t), barrier);
  // STARTER: (void)group; (void)dst; (void)src; (void)count; (void)barrier;
  // STARTER: return cuda::async_contract_fulfillment::none;
  // END SOLUTION
}

/// `count` uint32 (a multiple of 4), promising 16-byte aligned pointers and a size that is a
/// multiple of 16 bytes: on sm_90 ONE cp.async.bulk by thread_rank() 0, on sm_80 16-byte
/// cp.async by every thread. A broken promise is undefined behaviour, not a slower copy.
template <class Group, class Barrier>
__device__ cuda::async_contract_fulfillment copy_aligned(const Group& group, std::uint32_t* dst,
                                                         const std::uint32_t* src,
                                                         std::size_t count, Barrier& barrier) {
  // TODO 2: the same copy, with the size given as cuda::aligned_size_t<16>.
  // BEGIN SOLUTION
  return cuda::memcpy_async(group, dst, src,
                            cuda::aligned_size_t<16>(count * sizeof(std::uint32_t)), barrier);
  // STARTER: (void)group; (void)dst; (void)src; (void)count; (void)barrier;
  // STARTER: return cuda::async_contract_fulfillment::none;
  // END SOLUTION
}

/// The partial last batch, `count` elements (any number below a batch): its whole 16-byte
/// chunks as one aligned copy, the 1-3 elements after them as a word copy, one barrier phase.
template <class Group, class Barrier>
__device__ void copy_partial_batch(const Group& group, std::uint32_t* dst, const std::uint32_t* src,
                                   std::size_t count, Barrier& barrier, std::uint32_t* report) {
  // TODO 3: copy the first count / 4 * 4 elements with copy_aligned (only if there are any: a
  //         bulk copy of 0 bytes is not a copy), then the count % 4 elements left with
  //         copy_words (only if there are any), recording that call's result in kTailCopy.
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

/// two_buffers: a full batch as two buffers of different types bound to one barrier (the
/// phase completes when both have landed). Buffer 1 is uint4, so alignof proves 16 bytes and a
/// plain byte count gets the aligned path; buffer 2 is uint32 with aligned_size_t<16>.
template <class Group, class Barrier>
__device__ void copy_two_buffers(const Group& group, std::uint32_t* dst, const std::uint32_t* src,
                                 std::size_t batch, Barrier& barrier, std::uint32_t* report) {
  const std::size_t half = batch / 2;  // elements; a multiple of 16 (batch = 16 x threads)
  uint4* vectors = reinterpret_cast<uint4*>(dst);  // buffer 1: half / 4 uint4
  const uint4* vectors_src = reinterpret_cast<const uint4*>(src);
  std::uint32_t* words = dst + half;  // buffer 2: half uint32; dst : (2, half) uint32
  const std::uint32_t* words_src = src + half;
  // TODO 4: copy buffer 1 with cuda::memcpy_async and a plain byte count (record the result in
  //         kBatchCopy), then buffer 2 with copy_aligned (record it in kSecondCopy).
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
  if constexpr (C == Copy::words) {  // a plain byte count works for any count
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

/// Per batch: copy, wait, compute, sync. Nothing overlaps inside the block (other resident
/// blocks hide the latency, as in lesson 01); no registers stage the data, and on sm_90 one
/// thread issues the whole aligned batch as one bulk copy.
/// `hold_ns` is for tests only (0 otherwise): course::batches::hold_back.
template <Copy C, class Group>
__device__ void one_stage(const Group& group, const std::uint32_t* __restrict__ in,
                          std::uint32_t* __restrict__ out, std::size_t n, std::uint32_t* report,
                          unsigned hold_ns) {
  extern __shared__ uint4 shared_storage[];  // uint4: 16-byte aligned, for bulk copies
  std::uint32_t* staged = reinterpret_cast<std::uint32_t*>(shared_storage);
  __shared__ BlockBarrier landed;
  init_block_barriers(group, &landed, 1);

  const std::size_t batch = batch_elements(blockDim.x);
  course::batches::poison_shared(staged, batch * sizeof(std::uint32_t), hold_ns);  // tests only
  const std::size_t batches = course::batches::batch_count(n, batch);
  for (std::size_t k = 0; k < course::batches::batches_of_block(batches, blockIdx.x, gridDim.x);
       ++k) {
    const Batch b = batch_of_block(k, batch, n);
    course::batches::hold_back(hold_ns);  // tests only: every warp but one copies late
    // TODO 5: start the copy of batch `b` into `staged`, bound to `landed` (copy_batch<C>; the
    //         report pointer is report_for(report, b, batch)), then wait until it has landed
    //         and every thread has issued its part.
    // BEGIN SOLUTION
    copy_batch<C>(group, staged, in, b, batch, landed, report_for(report, b, batch));
    landed.arrive_and_wait();
    // STARTER: (void)b; (void)staged; (void)report;
    // END SOLUTION
    course::batches::hold_back(hold_ns);  // tests only: every warp but one reads late
    // TODO 6: compute the batch into `out`, then make sure the next iteration's copy cannot
    //         overwrite `staged` while a slower thread still reads its partner's elements.
    // BEGIN SOLUTION
    compute_batch(staged, out, b, batch, n);
    group.sync();
    // END SOLUTION
  }
}

// ---- Several stages: a full and an empty barrier per stage (TODO 7-8) --------------------
//
// Stages buffers of one batch each. Local batch j (global batch blockIdx.x + j * gridDim.x)
// lives in stage s = j % Stages and is that stage's use u = j / Stages. Two barriers per
// stage, each expecting every thread of the block and completing one phase per use:
//   full[s]   phase u completes when batch j has landed and every thread has arrived
//             (each thread arrives and waits just before reading batch j);
//   empty[s]  phase u completes when every thread has finished reading batch j
//             (each thread arrives right after computing it).
// Phases alternate parity 0, 1, 0, ...: the phase of use u has parity u % 2. Iteration j:
//   1. producer: refill the stage batch j - 1 used with batch j - 1 + Stages: wait for phase
//      (j - 1) / Stages of empty[(j - 1) % Stages], then start the copy, bound to full[...];
//   2. consumer: wait for full[s] (batch j), compute batch j, arrive on empty[s].
// The refill comes BEFORE the wait for batch j: a thread done with batch j - 1 (on sm_90,
// thread 0, which issues the whole bulk copy) refills while slower threads may still read
// batch j - 1. Only the empty barrier keeps the copy off their data.
// Why this can neither hang nor race (each wait's phase needs only arrivals made before it,
// and each copy counts towards exactly the phase of the batch it carries): the README.
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
    // shared_storage as (Stages, batch) uint32: buffer(j) = [j % Stages, :]
    return reinterpret_cast<std::uint32_t*>(shared_storage) + (j % Stages) * batch;
  };
  const auto fill = [&](std::size_t j) {
    // TODO 7 (producer), part 1: start the copy of local batch j into buffer(j), bound to its
    //         stage's full barrier (copy_batch<Copy::aligned>; report_for gives the report).
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
        // TODO 7 (producer), part 2: the copy below overwrites the stage batch j - 1 used.
        //         Wait until every thread has released batch j - 1: until the phase of that
        //         stage's empty barrier which belongs to batch j - 1 has completed.
        // BEGIN SOLUTION
        empty[(j - 1) % Stages].wait_parity((j - 1) / Stages % 2 == 1);
        // END SOLUTION
      }
      fill(j - 1 + Stages);
    }
    // TODO 8: consume batch j. Before the hold_back_readers line: wait until batch j has landed
    //         in buffer(j) (its stage's full barrier). After it: compute batch j into `out`
    //         (compute_batch), then release the stage (its empty barrier).
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
