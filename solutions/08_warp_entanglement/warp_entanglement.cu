// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
//
// Lesson 08: warp entanglement of commit, wait and arrive-on.
//
// Each thread believes it owns its sequence of copy batches; the hardware keeps one sequence
// per warp, and every execution of a commit appends one batch to it, whichever lanes run
// it. Converged lanes commit together and share one batch; diverged lanes each append
// their own, so a thread's wait, which counts only its own commits, can end up waiting for
// other lanes' batches and its own newer ones too (over-waiting). Nothing computed changes:
// only time does.
//
// This file holds both halves of that idea. First a CPU model of one warp's sequences
// (TODOs 1-2: what a commit does to the warp's sequence PB and to each lane's perceived
// sequence TB, and what a wait really covers). Then a kernel that measures it (TODOs 3-6):
// lesson 06's copy-and-compute schedule (3 buffers of 16 KB at 256 threads; each step starts
// batch k + 1, then waits for batch k and computes it) whose copies, commit and arrive-on
// are placed in four ways (CommitMode): with no branch at all; inside a data-dependent
// branch per path; after that branch with the warp guaranteed reconverged; and after it
// with no such guarantee. The README's table of variants says what each should do.
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
  //         together (converged). Afterwards the warp's sequence PB has exactly one more
  //         batch, holding the copies of all of those lanes, and the perceived sequence TB of
  //         each of those lanes, and of no other lane, has one more entry that says where in
  //         PB that batch is. (model.h declares where PB and every TB are kept.)
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
  // TODO 2: the wait rule. `lane` asked for "all but my n newest batches". Fill the rest of
  //         `wait`: n_applied, the n the hardware really uses; needed_through, the PB index
  //         of the newest own batch this wait must cover, or -1 when it need cover none;
  //         waited_through, the last PB index the hardware's wait covers, counting the
  //         warp's sequence, or -1 when it covers none. Constant time: no loops.
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
  //         pipeline, and, only in a counted round, they will deliver exactly one arrival on
  //         `counter` once every copy this thread has issued has landed, an arrival the
  //         barrier's expected count already includes. Right before each of the two
  //         instructions, record one execution per converged group of lanes in the matching
  //         counter of `ev` (given/evidence.cuh): that is how the report sees how many times
  //         the warp executed it.
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
/// says (CommitMode in model.h, the README's table of variants). This lane takes path
/// `my_path` of `paths`.
template <CommitMode Mode>
__device__ void start_round(uint4* buffer, const std::uint32_t* in, std::size_t k, std::size_t mine,
                            std::size_t batch, std::size_t n, int my_path, int paths,
                            std::uint64_t* counter, ThreadEvidence& ev) {
  const bool counted = k < static_cast<std::size_t>(kMaxCountedRounds);
  if constexpr (Mode == CommitMode::converged) {
    // TODO 4 (bug hunt): the converged round below is complete and has one bug. With
    //         TODOs 3 and 6 done, `./course check 08` still fails for the converged kernel.
    //         On the CPU its PTX test objects to where the commit sits. On a GPU the warps
    //         executed the commit fewer times than there were rounds, the counting barriers
    //         got fewer than 32 arrivals per warp and counted round (lane 0's bounded wait
    //         ran out and counted the shortfall: nothing hangs), and waits may return
    //         before the thread's own batch has landed. Find the line that lets the wait
    //         before a block's last batch return too early. The fix stays in this region,
    //         keeps the round's copies and their order, and makes every wait of every
    //         thread cover its own batch k, the block's last batch included.
    // BEGIN SOLUTION
    copy_my_chunks(buffer, in, k, mine, batch, n);
    commit_and_arrive_on(counter, counted, ev);
    // STARTER: if (k >= mine) return;  // this block has no batch k
    // STARTER: copy_my_chunks(buffer, in, k, mine, batch, n);
    // STARTER: commit_and_arrive_on(counter, counted, ev);
    // END SOLUTION
  } else {
    // TODO 5: the three diverged rounds. The copies run from a data-dependent branch: the
    //         paths one after another, in path order, and in each only the lanes on that
    //         path start their copies of batch k; the loop over the paths must stay a loop
    //         in the compiled code (the PTX test looks for the branch inside it). Then,
    //         whatever the mode, every thread closes its round with exactly one commit and
    //         one arrive-on, as in TODO 4 once fixed, placed
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
    // TODO 6: afterwards this thread's copies of batch k have landed, while the batch it
    //         started after batch k may still be in flight: waiting for that one too would
    //         throw away the overlap. One line (model.h names the count). The block barrier
    //         below then makes every thread's copies of batch k visible to all.
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
