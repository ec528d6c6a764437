// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
//
// Lesson 08: warp entanglement of commit, wait and arrive-on.
//
// Lesson 06's primitives in a copy-and-compute schedule (3 buffers of 16 KB at 256 threads;
// each step starts batch k + 1, then waits for batch k and computes it) whose commit and
// arrive-on run from one of four places:
//
//   converged              copy; commit; arrive-on                       (no branch)
//   diverged               for each path p: if (my path == p) { copy; commit; arrive-on }
//   diverged_syncwarp      for each path p: if (my path == p) { copy }
//                          __syncwarp(); commit; arrive-on               (the rule)
//   diverged_no_syncwarp   for each path p: if (my path == p) { copy }
//                          commit; arrive-on                             (converged? maybe)
//
// First the model's two rules (TODOs 1-2: how commits build the warp's batch sequence PB and
// each lane's perceived sequence TB, and what a wait really covers), then the kernel
// (TODOs 3-6). The values computed are the same in every mode: only time moves.
#include <cuda_pipeline_primitives.h>

#include <algorithm>
#include <stdexcept>

#include "course/batches.cuh"
#include "given/evidence.cuh"
#include "warp_entanglement.cuh"

namespace warp_entanglement {

// ---- The model's two rules (CPU) -----------------------------------------------------------

void model::WarpSequence::commit(LaneMask lanes) {
  if (lanes == 0) throw std::invalid_argument("warp_entanglement::model::commit: no lane commits");
  // TODO 1: the commit merging rule. The lanes in `lanes` executed ONE commit instruction
  //         together (converged). Afterwards the warp's sequence PB (actual_) has one more
  //         batch, holding the copies of all of them, and the perceived sequence TB
  //         (perceived_[lane]) of each of those lanes, and only those, has one more entry: the
  //         PB index of that batch.
  // BEGIN SOLUTION
  const int batch = static_cast<int>(actual_.size());
  actual_.push_back(lanes);
  for (int lane = 0; lane < kWarpSize; ++lane) {
    if (lanes & (LaneMask{1} << lane)) perceived_[lane].push_back(batch);
  }
  // STARTER: (void)lanes;
  // END SOLUTION
}

model::Wait model::WarpSequence::wait_prior(int lane, int n) const {
  require_lane(lane, "wait_prior");
  if (n < 0) throw std::invalid_argument("warp_entanglement::model::wait_prior: n must be >= 0");
  Wait wait;
  wait.lane = lane;
  wait.n = n;
  // TODO 2: the wait rule. The thread asked for "all but my N newest batches" and needs its
  //         own batch TL - N: needed_through is that batch's PB index, or -1 when TL < N.
  //         The hardware applies N clamped to kWaitPriorClamp (n_applied), and counts the
  //         warp's sequence, not the thread's: waited_through is the last PB index it waits
  //         for, or -1 when it waits for none.
  // BEGIN SOLUTION
  wait.n_applied = std::min(n, kWaitPriorClamp);
  const int own = perceived_last(lane) - n;
  wait.needed_through = own >= 0 ? perceived_[lane][own] : -1;
  wait.waited_through = std::max(actual_last() - wait.n_applied, -1);
  // END SOLUTION
  return wait;
}

// ---- The kernel ------------------------------------------------------------------------------

using course::batches::Batch;
using course::batches::batch_of_block;
using evidence::one_per_converged_group;
using evidence::ThreadEvidence;

/// The arrive-on without the increment: once every cp.async this thread issued so far has
/// landed, one arrival on `barrier`. `__pipeline_arrive_on` is the same instruction without
/// `.noinc`: it first raises the pending count by as much as it later lowers it, so a program
/// cannot count its arrivals. Without the raise, the barrier's expected count must include
/// them, and whether a phase completes shows how many there were.
__device__ __forceinline__ void arrive_on_noinc(std::uint64_t* barrier) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];" ::"r"(
                   static_cast<unsigned>(__cvta_generic_to_shared(barrier)))
               : "memory");
}

/// Starts this thread's 16-byte copies of the block's batch k into `buffer`, if it has one.
/// Chunk v of thread t is chunk v * blockDim.x + t; a partial last batch is zero-filled.
__device__ inline void copy_my_chunks(uint4* buffer, const std::uint32_t* in, std::size_t k,
                                      std::size_t mine, std::size_t batch, std::size_t n) {
  if (k >= mine) return;
  const Batch b = batch_of_block(k, batch, n);
  const uint4* src = reinterpret_cast<const uint4*>(in + b.first);
  if (b.count == batch) {
#pragma unroll
    for (int v = 0; v < kVectorsPerThread; ++v) {
      const unsigned chunk = v * blockDim.x + threadIdx.x;  // (V, T) -> buffer, src : (V * T)
      __pipeline_memcpy_async(buffer + chunk, src + chunk, sizeof(uint4));
    }
  } else {
#pragma unroll
    for (int v = 0; v < kVectorsPerThread; ++v) {
      course::batches::copy_tail_chunk_zero_fill(buffer, src, v * blockDim.x + threadIdx.x,
                                                 b.count);
    }
  }
}

/// Closes this thread's copies of the round as one batch and, in counted rounds, makes them
/// one arrival on the warp's counting barrier `counter` when they land.
__device__ inline void commit_and_arrive_on(std::uint64_t* counter, bool counted,
                                            ThreadEvidence& ev) {
  // TODO 3: afterwards this thread's copies of the round form one closed batch of its
  //         pipeline, and, only if `counted`, they will deliver one arrival on `counter` once
  //         every copy it has issued has landed (the arrive-on whose arrivals can be counted).
  //         Right before each of the two instructions, add one_per_converged_group() to
  //         ev.commit_executions or ev.arrive_executions: that is how the report sees how
  //         many times the warp executed it.
  // BEGIN SOLUTION
  ev.commit_executions += one_per_converged_group();
  __pipeline_commit();
  if (counted) {
    ev.arrive_executions += one_per_converged_group();
    arrive_on_noinc(counter);
  }
  // STARTER: (void)counter;
  // STARTER: (void)counted;
  // STARTER: (void)ev;
  // END SOLUTION
}

/// One round: this thread's copies of batch k, its commit and its arrive-on, placed as `Mode`
/// says (the table at the top of this file). Lane l takes path `my_path` of `paths`.
template <CommitMode Mode>
__device__ void start_round(uint4* buffer, const std::uint32_t* in, std::size_t k, std::size_t mine,
                            std::size_t batch, std::size_t n, int my_path, int paths,
                            std::uint64_t* counter, ThreadEvidence& ev) {
  const bool counted = k < static_cast<std::size_t>(kMaxCountedRounds);
  if constexpr (Mode == CommitMode::converged) {
    // TODO 4: the converged round, with no branch: afterwards this thread has started its
    //         copies of batch k (copy_my_chunks) and closed them with its commit and
    //         arrive-on. Every thread must commit exactly once per round, even with no batch
    //         k (an empty batch), so that every thread's wait_prior counts the same batches.
    // BEGIN SOLUTION
    copy_my_chunks(buffer, in, k, mine, batch, n);
    commit_and_arrive_on(counter, counted, ev);
    // STARTER: (void)buffer, (void)in, (void)k, (void)mine, (void)batch, (void)n;
    // STARTER: (void)counter, (void)counted, (void)ev;
    // END SOLUTION
  } else {
    // TODO 5: the three diverged rounds. The copies run from a data-dependent branch: one
    //         path at a time, in path order p = 0 .. paths - 1, the lanes with my_path == p
    //         start theirs (a loop the compiler cannot unroll: `#pragma unroll 1`). Then, as
    //         for TODO 4, exactly one commit and arrive-on per thread and round:
    //           diverged:             inside the branch, right after the lane's copies;
    //           diverged_syncwarp:    after the branch, the whole warp guaranteed converged
    //                                 first, so that it executes them ONCE for 32 lanes;
    //           diverged_no_syncwarp: after the branch, with no such guarantee.
    // BEGIN SOLUTION
#pragma unroll 1
    for (int p = 0; p < paths; ++p) {
      if (my_path == p) {
        copy_my_chunks(buffer, in, k, mine, batch, n);
        if constexpr (Mode == CommitMode::diverged) commit_and_arrive_on(counter, counted, ev);
      }
    }
    if constexpr (Mode == CommitMode::diverged_syncwarp) {
      __syncwarp();
      commit_and_arrive_on(counter, counted, ev);
    }
    if constexpr (Mode == CommitMode::diverged_no_syncwarp) {
      commit_and_arrive_on(counter, counted, ev);
    }
    // STARTER: (void)buffer, (void)in, (void)k, (void)mine, (void)batch, (void)n;
    // STARTER: (void)my_path, (void)paths, (void)counter, (void)counted, (void)ev;
    // END SOLUTION
  }
}

template <CommitMode Mode>
__global__ void entanglement_kernel(const std::uint32_t* __restrict__ in,
                                    std::uint32_t* __restrict__ out, std::size_t n,
                                    LanePaths lane_paths, int paths, Evidence* evidence) {
  extern __shared__ uint4 shared_storage[];             // kStages batches of uint4
  __shared__ std::uint64_t counters[1024 / kWarpSize];  // one counting mbarrier per warp
  const unsigned lane = threadIdx.x % kWarpSize;
  const int my_path = lane_paths.path[lane];  // a kernel argument: data, not a constant
  const std::size_t batch = batch_elements(blockDim.x);
  const std::size_t mine = batches_of_block(batch_count(n, batch), blockIdx.x, gridDim.x);
  const std::size_t rounds = commit_rounds(mine);
  const std::size_t counted_rounds =
      rounds < static_cast<std::size_t>(kMaxCountedRounds) ? rounds : kMaxCountedRounds;
  const unsigned expected_arrivals = static_cast<unsigned>(kWarpSize * counted_rounds + 1);
  // buffer(k) = shared_storage[k % kStages, :] of (kStages, batch / 4) uint4
  auto buffer = [&](std::size_t k) { return shared_storage + (k % kStages) * (batch / 4); };
  const bool measuring = evidence != nullptr;

  // Zeroed buffers: the measurements read a buffer whose copy may not have landed yet.
  for (std::size_t i = threadIdx.x; i < kStages * (batch / 4); i += blockDim.x) {
    shared_storage[i] = make_uint4(0, 0, 0, 0);
  }
  std::uint64_t* counter = &counters[threadIdx.x / kWarpSize];  // counters[warp] : (32)
  if (lane == 0) __mbarrier_init(counter, expected_arrivals);
  __syncthreads();

  ThreadEvidence ev;
  for (int k = 0; k < kBatchesAhead; ++k) {
    start_round<Mode>(buffer(k), in, k, mine, batch, n, my_path, paths, counter, ev);
  }
  for (std::size_t k = 0; k < mine; ++k) {
    // Start batch k + 1 first: it lands while batch k is computed. Its buffer held batch
    // k - 2, which every thread finished before the previous step's barrier.
    start_round<Mode>(buffer(k + kBatchesAhead), in, k + kBatchesAhead, mine, batch, n, my_path,
                      paths, counter, ev);

    const long long before = measuring ? clock64() : 0;
    // TODO 6: afterwards this thread's copies of batch k have landed, while the batches it
    //         started after batch k (kAllowedPending of them) may still be in flight. The
    //         block barrier below then makes every thread's copies of batch k visible.
    // BEGIN SOLUTION
    __pipeline_wait_prior(kAllowedPending);
    // END SOLUTION
    if (measuring) {
      ev.wait_cycles += clock64() - before;
      ++ev.waits;
      evidence::look_at_my_batches(buffer(k), buffer(k + 1), in, k, mine, batch, n, ev);
    }
    __syncthreads();
    course::batches::compute_batch(reinterpret_cast<const std::uint32_t*>(buffer(k)), out,
                                   batch_of_block(k, batch, n), batch, n);
  }

  // Every copy of every thread has landed after these two lines, so every arrive-on has been
  // triggered; lane 0 counts what they delivered (also unmeasured: no arrive-on may still be
  // on its way to shared memory when the block exits).
  __pipeline_wait_prior(0);
  __syncthreads();
  const unsigned arrivals = lane == 0 ? evidence::count_arrivals(counter, expected_arrivals) : 0;
  if (measuring) evidence::add_to(evidence, ev, rounds, counted_rounds, arrivals);
}

}  // namespace warp_entanglement
