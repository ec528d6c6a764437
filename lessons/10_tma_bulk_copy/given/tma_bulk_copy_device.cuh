// Lesson 10: the small device helpers the exercise (tma_bulk_copy.cu) calls: bounded waits,
// the error word they set, and the plain copies of a batch's last 0-3 elements. Read-only:
// you do not need to change anything here.
#pragma once

#include <cuda/barrier>
#include <cuda/ptx>
#include <cuda/std/chrono>
#include <nv/target>

#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "course/batches.cuh"
#include "course/mbarrier.cuh"
#include "tma_bulk_copy.cuh"

namespace tma_bulk_copy::device {

using BlockBarrier = cuda::barrier<cuda::thread_scope_block>;  // an 8-byte mbarrier

/// The error word of this unit's kernels (WaitError bits). `static`: the launchers, compiled
/// in the same unit, read it back (take_wait_errors()).
static __device__ unsigned g_wait_errors = 0;

/// Sets `bit` in the error word; the first thread to set it prints why.
__device__ inline void record_wait_error(unsigned bit, const char* what) {
  const unsigned before = atomicOr(&g_wait_errors, bit);
  if ((before & bit) == 0) {
    printf("tma_bulk_copy: block %u thread %u: %s\n", blockIdx.x, threadIdx.x, what);
  }
}

/// What a kernel does below sm_90 (its body is compiled for sm_90 only): records kNotSm90.
/// The launchers never launch there; this only keeps the 80;90 build honest.
__device__ inline void not_sm90(const std::uint32_t*, std::uint32_t*, std::size_t, int) {
  if (threadIdx.x == 0) record_wait_error(kNotSm90, "this kernel needs compute capability 9.0");
}

/// Waits until the phase of `bar` with parity `parity` has completed, with the course's
/// bounded wait (course/mbarrier.cuh: mbarrier.try_wait.parity in a loop, each try suspending
/// the thread in hardware for a while, for at most kWaitLimitNs). Returns true when it
/// completed; otherwise records `error` and returns false, and the caller must leave its
/// loop. Why bounded: a phase that never completes (an expect_tx count the copies never
/// reach, a lost arrival) would otherwise hang the GPU and every test after it.
__device__ inline bool wait_parity_bounded(std::uint64_t* bar, std::uint32_t parity,
                                           unsigned error) {
  NV_IF_ELSE_TARGET(
      NV_PROVIDES_SM_90,
      (if (course::mbarrier::wait_parity(bar, parity)) return true;
       record_wait_error(error, error == kDataNeverArrived
                                    ? "a batch never arrived: the bounded wait on its full "
                                      "barrier timed out (was the expect_tx count right?)"
                                    : "a buffer was never released: the bounded wait on its "
                                      "empty barrier timed out");
       return false;),
      ((void)bar; (void)parity; (void)error; record_wait_error(kNotSm90, "needs sm_90");
       return false;))
}

/// The same for a cuda::barrier and the token of this thread's arrival (try_wait_for).
__device__ inline bool wait_token_bounded(BlockBarrier& bar, BlockBarrier::arrival_token&& token) {
  if (bar.try_wait_for(static_cast<BlockBarrier::arrival_token&&>(token),
                       cuda::std::chrono::nanoseconds(course::mbarrier::kWaitLimitNs))) {
    return true;
  }
  record_wait_error(kDataNeverArrived,
                    "a batch never arrived: the bounded wait on the cuda::barrier timed out");
  return false;
}

/// Copies the elements of batch `b` that lie past its last whole 16-byte chunk (0-3 of them,
/// only in the input's last batch) with plain loads and stores: a bulk copy moves multiples
/// of 16 bytes only. Called by the thread that issues the batch, before its arrival, so the
/// arrival's release publishes these stores with the rest of the batch.
__device__ inline void copy_leftover_in(std::uint32_t* staged, const std::uint32_t* in,
                                        course::batches::Batch b) {
  for (std::size_t i = bulk_bytes(b.count) / sizeof(std::uint32_t); i < b.count; ++i) {
    staged[i] = in[b.first + i];
  }
}

/// The same on the way out: results[i] -> out[b.first + i] past the last whole chunk.
__device__ inline void copy_leftover_out(std::uint32_t* out, const std::uint32_t* results,
                                         course::batches::Batch b) {
  for (std::size_t i = bulk_bytes(b.count) / sizeof(std::uint32_t); i < b.count; ++i) {
    out[b.first + i] = results[i];
  }
}

/// Tests only (TestHooks::poison_after_store_wait, `on`): called by the issuing thread right
/// after its wait_stores_read(), it overwrites the `bytes` bytes at `buffer`, the buffer the
/// bulk stores read, with course::batches::kSharedPoison, the last 16-byte chunk first, then
/// orders those writes before any later bulk copy into the buffer (fence.proxy.async).
/// Why: the wait must let no store still *read* shared memory, because the next round writes
/// the buffer again. A wait that leaves a store still reading is a race racecheck cannot
/// see (the store reads through the async proxy, outside its view), and the values rarely
/// show it: the next round's writes come long after the store has read its 16 KB. Here
/// they come at once, from the end of the buffer, which a store reading from the start
/// reaches last: a store that still reads copies poison to global memory. After a correct
/// wait no store reads the buffer any more, and the round overwrites the poison before
/// anyone reads it.
/// (Out of line, as course::batches' hooks: its proxy fence stays out of the kernels' PTX,
/// where the checks look for the fence TODO 5 writes.)
__device__ __noinline__ inline void poison_store_source_now(std::uint32_t* buffer,
                                                            std::size_t bytes) {
  uint4* chunks = reinterpret_cast<uint4*>(buffer);
  const std::uint32_t p = course::batches::kSharedPoison;
  for (std::size_t c = bytes / 16; c-- > 0;) chunks[c] = make_uint4(p, p, p, p);
  NV_IF_TARGET(NV_PROVIDES_SM_90, (cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);));
}
__device__ inline void poison_store_source(std::uint32_t* buffer, std::size_t bytes, bool on) {
  if (on) poison_store_source_now(buffer, bytes);
}

/// The compute step of one staged batch into shared memory (results[i] for the batch's
/// element i), the block's `threads` threads sharing the work like compute_batch() does.
__device__ inline void compute_into(std::uint32_t* results, const std::uint32_t* staged,
                                    course::batches::Batch b, std::size_t batch, std::size_t n,
                                    unsigned rank, unsigned threads) {
  namespace workload = course::workload;
  if (b.count == batch) {
    const uint4* staged4 = reinterpret_cast<const uint4*>(staged);
    uint4* results4 = reinterpret_cast<uint4*>(results);
    for (std::size_t v = rank; v < batch / 4; v += threads) {
      results4[v] = workload::combine_vectors(staged4[v], staged4[workload::mirror_vector(v)]);
    }
  } else {
    workload::combine_elements(staged, results, b.first, b.count, n, rank, threads);
  }
}

}  // namespace tma_bulk_copy::device

namespace tma_bulk_copy {

// ---- Defined in tma_bulk_copy.cu (your file) -----------------------------------------------
// Declared here for tma_bulk_copy_launch.cu, so that it compiles on its own (tools/compile_alone.py
// checks that it does); the build compiles your file and tma_bulk_copy_launch.cu as one unit, where
// the definitions are.
namespace {

/// 1. One buffer, cuda::ptx: the bulk copy in, the compute (when Compute), the bulk copy
/// out. V is Variant::single_ptx or one of its deliberately broken variants.
template <Variant V, bool Compute>
__global__ void single_ptx_kernel(const std::uint32_t* __restrict__ in,
                                  std::uint32_t* __restrict__ out, std::size_t n,
                                  int vectors_per_thread, TestHooks hooks);
/// 2. One buffer, cuda::barrier: the same steps with the libcu++ barrier.
template <bool Compute>
__global__ void single_barrier_kernel(const std::uint32_t* __restrict__ in,
                                      std::uint32_t* __restrict__ out, std::size_t n,
                                      int vectors_per_thread, TestHooks hooks);
/// 3. The multi-stage TMA pipeline.
template <int Stages>
__global__ void pipeline_kernel(const std::uint32_t* __restrict__ in,
                                std::uint32_t* __restrict__ out, std::size_t n,
                                int vectors_per_thread, TestHooks hooks);

}  // namespace

}  // namespace tma_bulk_copy
