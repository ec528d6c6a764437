// Lesson 08: warp entanglement of commit, wait and arrive-on.
//
// What this file adds over lesson 06: lesson 06's primitives kernel committed from code every
// thread of a warp ran together. Here a copy-and-compute schedule with the same primitives
// (3 buffers of 16 KB at 256 threads; each step starts batch k + 1, then waits with
// `__pipeline_wait_prior(1)` for batch k and computes it) commits and arrives on from four
// places, and measures what that does to the waiting:
//
//   converged              copy; commit; arrive-on                       (no branch)
//   diverged               for each path p: if (my path == p) { copy; commit; arrive-on }
//   diverged_syncwarp      for each path p: if (my path == p) { copy }
//                          __syncwarp(); commit; arrive-on               (the rule)
//   diverged_no_syncwarp   for each path p: if (my path == p) { copy }
//                          commit; arrive-on                             (converged? maybe)
//
// The model (namespace model, first half of this file) says what the Programming Guide says
// about compute capability 8.x: the warp keeps ONE batch sequence, PB. A commit executed by
// a group of converged lanes appends one batch to it; each lane only counts its own commits
// (its perceived sequence TB). With 32 paths a round of commits appends 32 batches to PB
// while every lane's TB grows by one, so a lane's wait_prior(1) ("all but my newest batch")
// becomes "all but the warp's newest batch": it also waits for the batch k + 1 it has just
// started, and for those of 30 other lanes.
//
// The kernel (second half) measures, per lane: the clock64() cycles each wait took; whether
// its own batch k had landed when the wait returned (it must have: the cp.async contract);
// whether its own batch k + 1, which it allowed to stay pending, had ALREADY landed (the
// evidence of over-waiting); how many times the commit and the arrive-on instructions ran
// (__activemask() at each); and, through one mbarrier per warp, how many arrivals the
// arrive-ons delivered. The values computed are the same in every mode: only time moves.
#include "warp_entanglement.cuh"

#include <cuda_awbarrier_primitives.h>
#include <cuda_pipeline_primitives.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "course/buffers.h"
#include "course/check.h"
#include "course/workload.h"

namespace warp_entanglement {

const char* name(CommitMode mode) {
  switch (mode) {
    case CommitMode::converged:
      return "converged";
    case CommitMode::diverged:
      return "diverged";
    case CommitMode::diverged_syncwarp:
      return "diverged+syncwarp";
    case CommitMode::diverged_no_syncwarp:
      return "diverged, no syncwarp";
  }
  return "?";
}

LanePaths one_path() { return LanePaths{}; }

LanePaths fully_diverged() {
  LanePaths paths;
  for (int lane = 0; lane < kWarpSize; ++lane) paths.path[lane] = lane;
  return paths;
}

LanePaths split_paths(int paths) {
  if (paths < 1 || paths > kWarpSize) {
    throw std::invalid_argument("warp_entanglement::split_paths: paths must be in [1, 32], got " +
                                std::to_string(paths));
  }
  LanePaths split;
  for (int lane = 0; lane < kWarpSize; ++lane) split.path[lane] = lane % paths;
  return split;
}

int path_count(const LanePaths& paths) {
  return *std::max_element(paths.path, paths.path + kWarpSize) + 1;
}

bool valid(const LanePaths& paths) {
  bool used[kWarpSize] = {};
  for (int lane = 0; lane < kWarpSize; ++lane) {
    const int p = paths.path[lane];
    if (p < 0 || p >= kWarpSize) return false;
    used[p] = true;
  }
  return std::all_of(used, used + path_count(paths), [](bool u) { return u; });
}

// ============================================================================================
// The CPU model of the warp-shared batch sequence
// ============================================================================================

namespace model {
namespace {

int lanes_in(LaneMask mask) { return __builtin_popcount(mask); }

void require_lane(int lane, const char* what) {
  if (lane < 0 || lane >= kWarpSize) {
    throw std::invalid_argument(std::string("warp_entanglement::model::") + what +
                                ": lane must be in [0, 32), got " + std::to_string(lane));
  }
}

}  // namespace

void WarpSequence::commit(LaneMask lanes) {
  if (lanes == 0) throw std::invalid_argument("warp_entanglement::model::commit: no lane commits");
  // TODO 1: the commit merging rule. The lanes in `lanes` executed ONE commit instruction
  //         together (converged). That appends one batch to the warp-shared sequence PB
  //         (actual_), holding the copies of all of them; and each of those lanes counts it as
  //         its own next batch: its perceived sequence TB (perceived_[lane]) grows by one
  //         entry, the PB index of the new batch. Lanes outside `lanes` see nothing.
  // BEGIN SOLUTION
  const int batch = static_cast<int>(actual_.size());
  actual_.push_back(lanes);
  for (int lane = 0; lane < kWarpSize; ++lane) {
    if (lanes & (LaneMask{1} << lane)) perceived_[lane].push_back(batch);
  }
  // STARTER: (void)lanes;
  // END SOLUTION
}

Wait WarpSequence::wait_prior(int lane, int n) const {
  require_lane(lane, "wait_prior");
  if (n < 0) throw std::invalid_argument("warp_entanglement::model::wait_prior: n must be >= 0");
  Wait wait;
  wait.lane = lane;
  wait.n = n;
  // TODO 2: the wait rule. The thread asked for "all but my N newest batches": it needs its
  //         own batch TL - N, so needed_through is that batch's PB index (perceived_[lane]
  //         maps it), or -1 when TL < N. The hardware applies N clamped to kWaitPriorClamp
  //         (n_applied) and counts the warp's sequence, not the thread's: it waits for every
  //         batch of PB up to PL - n_applied (waited_through), or none (-1) when that is < 0.
  // BEGIN SOLUTION
  wait.n_applied = std::min(n, kWaitPriorClamp);
  const int own = perceived_last(lane) - n;
  wait.needed_through = own >= 0 ? perceived_[lane][own] : -1;
  wait.waited_through = std::max(actual_last() - wait.n_applied, -1);
  // END SOLUTION
  return wait;
}

Wait WarpSequence::consumer_wait(int lane, int consumed) const {
  require_lane(lane, "consumer_wait");
  if (consumed < 0 || consumed > perceived_last(lane)) {
    throw std::invalid_argument(
        "warp_entanglement::model::consumer_wait: the lane has no unreleased batch");
  }
  // A thread-scope pipeline waits for its oldest unreleased batch: with TL + 1 committed and
  // `consumed` released, wait_group(TL + 1 - consumed - 1), clamped like wait_prior.
  return wait_prior(lane, perceived_last(lane) - consumed);
}

ArriveOn arrive_on(const std::vector<LaneMask>& groups) {
  ArriveOn result;
  for (LaneMask group : groups) {
    ++result.updates;
    result.arrivals += lanes_in(group);
  }
  return result;
}

std::vector<LaneMask> groups_of(const LanePaths& paths) {
  if (!valid(paths)) throw std::invalid_argument("warp_entanglement::model::groups_of: bad paths");
  std::vector<LaneMask> groups(path_count(paths), 0);
  for (int lane = 0; lane < kWarpSize; ++lane) groups[paths.path[lane]] |= LaneMask{1} << lane;
  return groups;
}

std::string Range::str() const {
  return min == max ? std::to_string(min) : std::to_string(min) + "-" + std::to_string(max);
}

namespace {

/// The lanes whose wait before batch 0 (after the prologue's kBatchesAhead rounds and step
/// 0's round of commits by `groups`) also covers their own batch 1, which they allowed to stay
/// pending. Every round commits the same groups, so every later step repeats this pattern.
std::vector<bool> lanes_waiting_for_their_next_batch(const std::vector<LaneMask>& groups) {
  WarpSequence sequence;
  for (int round = 0; round < kBatchesAhead + 1; ++round) {
    for (LaneMask group : groups) sequence.commit(group);
  }
  std::vector<bool> over(kWarpSize, false);
  for (int lane = 0; lane < kWarpSize; ++lane) {
    const Wait wait = sequence.wait_prior(lane, kAllowedPending);
    const std::vector<int>& mine = sequence.perceived(lane);
    over[lane] = mine.size() > 1 && wait.waited_through >= mine[1];
  }
  return over;
}

}  // namespace

Prediction predict(CommitMode mode, const LanePaths& paths) {
  const std::vector<LaneMask> converged = {kFullWarp};
  const std::vector<LaneMask> diverged = groups_of(paths);
  // The best and the worst case: they differ only where convergence is not guaranteed.
  const std::vector<LaneMask>* best = &converged;
  const std::vector<LaneMask>* worst = &converged;
  if (mode == CommitMode::diverged) best = worst = &diverged;
  if (mode == CommitMode::diverged_no_syncwarp) worst = &diverged;

  Prediction p;
  p.commit_groups = {static_cast<int>(best->size()), static_cast<int>(worst->size())};
  p.arrive_on_updates = {arrive_on(*best).updates, arrive_on(*worst).updates};
  p.arrivals = arrive_on(*worst).arrivals;
  const std::vector<bool> surely = lanes_waiting_for_their_next_batch(*best);
  const std::vector<bool> maybe = lanes_waiting_for_their_next_batch(*worst);
  for (int lane = 0; lane < kWarpSize; ++lane) {
    p.lanes_over_waiting += surely[lane] ? 'W' : (maybe[lane] ? '?' : '.');
  }
  p.over_waiting_lanes = {static_cast<int>(std::count(surely.begin(), surely.end(), true)),
                          static_cast<int>(std::count(maybe.begin(), maybe.end(), true))};
  return p;
}

}  // namespace model

// ============================================================================================
// What the GPU measured, as rates
// ============================================================================================

Summary summarise(const Evidence& e) {
  auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  Summary s;
  s.commit_executions_per_round = ratio(e.commit_executions, e.commit_rounds);
  s.arrive_executions_per_round = ratio(e.arrive_executions, e.arrive_rounds);
  s.arrivals_per_round = ratio(e.arrivals_measured, e.arrive_rounds);
  unsigned long long cycles = 0, waits = 0, checked = 0, landed = 0, own_checked = 0,
                     own_landed = 0;
  for (int lane = 0; lane < kWarpSize; ++lane) {
    const LaneEvidence& l = e.lanes[lane];
    cycles += l.wait_cycles;
    waits += l.waits;
    checked += l.newer_checked;
    landed += l.newer_landed;
    own_checked += l.own_checked;
    own_landed += l.own_landed;
    s.lane_newer_landed_fraction[lane] = ratio(l.newer_landed, l.newer_checked);
  }
  s.mean_wait_cycles = ratio(cycles, waits);
  s.newer_landed_fraction = ratio(landed, checked);
  s.own_batches_landed = own_landed == own_checked;
  return s;
}

std::string lane_digits(const std::array<double, kWarpSize>& fractions) {
  std::string digits;
  for (double f : fractions) {
    const int d = std::clamp(static_cast<int>(f * 10), 0, 9);
    digits += static_cast<char>('0' + d);
  }
  return digits;
}

bool over_waiting_observed(double newer_landed_fraction, double control_fraction) {
  return newer_landed_fraction - control_fraction >= 0.25;
}

// ============================================================================================
// The kernel
// ============================================================================================

/// The arrive-on without the increment: once every cp.async this thread issued so far has
/// landed, one arrival on `barrier`. `__pipeline_arrive_on` is the same instruction without
/// `.noinc`: it first raises the pending count by as much as it later lowers it, so a program
/// cannot count its arrivals. Without the raise, the barrier's expected count must include
/// them, and whether a phase completes shows how many there were. (Outside the anonymous
/// namespace: a starter that does not call it yet compiles without an unused-function error.)
__device__ __forceinline__ void arrive_on_noinc(std::uint64_t* barrier) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];" ::"r"(
                   static_cast<unsigned>(__cvta_generic_to_shared(barrier)))
               : "memory");
}

/// Whether the phase of `barrier` with parity `parity` has completed, without waiting
/// (`mbarrier.test_wait.parity`, sm_80 and later; the awbarrier primitive of the same name
/// compiles to a trap below sm_90).
__device__ __forceinline__ bool phase_completed(std::uint64_t* barrier, unsigned parity) {
  unsigned completed = 0;
  asm volatile(
      "{\n\t.reg .pred done;\n\t"
      "mbarrier.test_wait.parity.shared.b64 done, [%1], %2;\n\t"
      "selp.b32 %0, 1, 0, done;\n\t}"
      : "=r"(completed)
      : "r"(static_cast<unsigned>(__cvta_generic_to_shared(barrier))), "r"(parity)
      : "memory");
  return completed != 0;
}

namespace {

using course::workload::combine_elements;
using course::workload::combine_vectors;
using course::workload::mirror_vector;

/// How long (clock64 cycles, about 2.5 ms) lane 0 watches its warp's counting barrier before
/// it concludes that the arrive-ons delivered fewer arrivals than one per thread.
constexpr long long kPatienceCycles = 1ll << 22;

/// Where one of the block's batches lies in the input.
struct Batch {
  std::size_t first;  ///< global index of its first element
  std::size_t count;  ///< valid elements: the batch size, or fewer for the input's last batch
};

/// The block's k-th batch (block b owns b, b + grid, ...).
__device__ Batch batch_of_block(std::size_t k, std::size_t batch, std::size_t n) {
  const std::size_t first = (blockIdx.x + k * gridDim.x) * batch;
  return {first, n - first < batch ? n - first : batch};
}

/// What one thread counts during an instrumented launch (in registers until the end).
struct ThreadEvidence {
  unsigned long long wait_cycles = 0;
  unsigned waits = 0;
  unsigned own_checked = 0;
  unsigned own_landed = 0;
  unsigned newer_checked = 0;
  unsigned newer_landed = 0;
  unsigned commit_executions = 0;
  unsigned arrive_executions = 0;
};

/// 1 in the lowest active lane of the group of lanes running this together, else 0: summed
/// over a warp, the number of times the next instruction is executed.
__device__ __forceinline__ unsigned one_per_converged_group() {
  const unsigned active = __activemask();
  return (threadIdx.x % kWarpSize) == static_cast<unsigned>(__ffs(active) - 1) ? 1u : 0u;
}

/// Starts this thread's 16-byte copies of the block's batch k into `buffer`, if it has one.
/// Chunk v of thread t is chunk v * blockDim.x + t; a partial last batch is zero-filled.
__device__ void copy_my_chunks(uint4* buffer, const std::uint32_t* in, std::size_t k,
                               std::size_t mine, std::size_t batch, std::size_t n) {
  if (k >= mine) return;
  const Batch b = batch_of_block(k, batch, n);
  const uint4* src = reinterpret_cast<const uint4*>(in + b.first);
  if (b.count == batch) {
#pragma unroll
    for (int v = 0; v < kVectorsPerThread; ++v) {
      const unsigned chunk = v * blockDim.x + threadIdx.x;
      __pipeline_memcpy_async(buffer + chunk, src + chunk, sizeof(uint4));
    }
  } else {
#pragma unroll
    for (int v = 0; v < kVectorsPerThread; ++v) {
      const unsigned chunk = v * blockDim.x + threadIdx.x;
      const std::size_t zfill = zero_fill_bytes(b.count, chunk);
      if (zfill == 0 || zfill == sizeof(uint4)) {
        // A whole chunk: all valid, or all past the end (then it copies nothing and zero-fills
        // 16 bytes; its source only has to be a valid address: the batch's first chunk).
        __pipeline_memcpy_async(buffer + chunk, zfill == 0 ? src + chunk : src, sizeof(uint4),
                                zfill);
      } else {
        // The chunk the input ends in: its valid words one by one, the others zero-filled
        // from a valid address. A 16-byte copy with zfill is legal PTX (only the valid bytes
        // are read), but compute-sanitizer's memcheck counts all 16 bytes as read past the
        // end of the allocation, so the course keeps every access inside it.
        std::uint32_t* words = reinterpret_cast<std::uint32_t*>(buffer + chunk);
        const std::uint32_t* src_words = reinterpret_cast<const std::uint32_t*>(src + chunk);
        const std::size_t valid = (sizeof(uint4) - zfill) / sizeof(std::uint32_t);
        for (std::size_t w = 0; w < sizeof(uint4) / sizeof(std::uint32_t); ++w) {
          const bool inside = w < valid;
          __pipeline_memcpy_async(words + w, inside ? src_words + w : src_words,
                                  sizeof(std::uint32_t), inside ? 0 : sizeof(std::uint32_t));
        }
      }
    }
  }
}

/// Closes this thread's copies of the round as one batch, and (in counted rounds) makes them
/// one arrival on the warp's counter when they land. Counts how often each instruction runs.
__device__ __forceinline__ void commit_and_arrive_on(std::uint64_t* counter, bool counted,
                                                     ThreadEvidence& ev) {
  ev.commit_executions += one_per_converged_group();
  __pipeline_commit();
  if (counted) {
    ev.arrive_executions += one_per_converged_group();
    // TODO 3: the arrive-on. When every copy this thread issued so far has landed, one arrival
    //         on `counter`, this warp's counting barrier: arrive_on_noinc(counter).
    // BEGIN SOLUTION
    arrive_on_noinc(counter);
    // STARTER: (void)counter;
    // END SOLUTION
  }
}

/// One round: this thread's copies of batch k, its commit and its arrive-on, placed as `Mode`
/// says. Every thread commits exactly once per round in every mode (an empty batch when the
/// block has no batch k), so every thread's wait_prior counts the same batches.
template <CommitMode Mode>
__device__ void start_round(uint4* buffer, const std::uint32_t* in, std::size_t k, std::size_t mine,
                            std::size_t batch, std::size_t n, int my_path, int paths,
                            std::uint64_t* counter, ThreadEvidence& ev) {
  const bool counted = k < static_cast<std::size_t>(kMaxCountedRounds);
  if constexpr (Mode == CommitMode::converged) {
    copy_my_chunks(buffer, in, k, mine, batch, n);
    commit_and_arrive_on(counter, counted, ev);
  } else {
    // The data-dependent branch: one path at a time, in path order. With 32 paths each lane
    // runs its copies alone; the other 31 wait at the end of the `if`.
#pragma unroll 1
    for (int p = 0; p < paths; ++p) {
      if (my_path == p) {
        copy_my_chunks(buffer, in, k, mine, batch, n);
        if constexpr (Mode == CommitMode::diverged) commit_and_arrive_on(counter, counted, ev);
      }
    }
    if constexpr (Mode == CommitMode::diverged_syncwarp) {
      // TODO 4: keep the commit and the arrive-on converged: reconverge the whole warp before
      //         them, so that the warp runs each ONCE for all 32 lanes.
      // BEGIN SOLUTION
      __syncwarp();
      // END SOLUTION
      commit_and_arrive_on(counter, counted, ev);
    }
    if constexpr (Mode == CommitMode::diverged_no_syncwarp) {
      commit_and_arrive_on(counter, counted, ev);
    }
  }
}

/// Reads one word of shared memory now, even if a copy to it may still be in flight.
__device__ __forceinline__ std::uint32_t read_now(const uint4* buffer, std::size_t element) {
  return reinterpret_cast<const volatile std::uint32_t*>(buffer)[element];
}

/// Right after the wait before batch k: has this thread's own batch k landed (it must have),
/// and has its own batch k + 1, which it allowed to stay pending, landed already? Looks at
/// the first element of the thread's first chunk of each, which only this thread copies.
__device__ void look_at_my_batches(const uint4* now_buffer, const uint4* next_buffer,
                                   const std::uint32_t* __restrict__ in, std::size_t k,
                                   std::size_t mine, std::size_t batch, std::size_t n,
                                   ThreadEvidence& ev) {
  const std::size_t element = 4 * static_cast<std::size_t>(threadIdx.x);  // chunk v = 0
  const Batch now = batch_of_block(k, batch, n);
  const bool has_next = k + 1 < mine && batch_of_block(k + 1, batch, n).count == batch;
  // Both reads first, the comparisons with the input after: the next batch keeps landing.
  const std::uint32_t next_seen = has_next ? read_now(next_buffer, element) : 0;
  const std::uint32_t now_seen = element < now.count ? read_now(now_buffer, element) : 0;
  if (has_next) {
    ++ev.newer_checked;
    ev.newer_landed += next_seen == in[batch_of_block(k + 1, batch, n).first + element];
  }
  if (element < now.count) {
    ++ev.own_checked;
    ev.own_landed += now_seen == in[now.first + element];
  }
}

/// Computes the outputs of one staged batch (lesson 06's compute step). A full batch is read
/// as 16-byte vectors; a partial batch element by element, only its `count` valid elements.
__device__ void compute_batch(const std::uint32_t* staged, std::uint32_t* __restrict__ out, Batch b,
                              std::size_t batch, std::size_t n) {
  if (b.count == batch) {
    const uint4* staged4 = reinterpret_cast<const uint4*>(staged);
    uint4* out4 = reinterpret_cast<uint4*>(out + b.first);
#pragma unroll
    for (int v = 0; v < kVectorsPerThread; ++v) {
      const unsigned vector = v * blockDim.x + threadIdx.x;
      // The partners of this vector's four elements fill one other vector, in reverse
      // order (course/workload.h); another thread staged it.
      out4[vector] = combine_vectors(staged4[vector], staged4[mirror_vector(vector)]);
    }
  } else {
    combine_elements(staged, out + b.first, b.first, b.count, n, threadIdx.x, blockDim.x);
  }
}

/// Lane 0's last look at its warp's counting barrier, whose expected count is one arrival
/// per thread per counted round plus one for lane 0 itself. Every copy has landed by now, so
/// every arrive-on has been triggered: lane 0 arrives once and watches the phase complete.
/// If it does not within kPatienceCycles, the arrive-ons delivered fewer arrivals: lane 0
/// adds them one by one until the phase completes, and so learns how many there were.
/// Returns the arrivals the arrive-ons delivered. Never waits for ever.
__device__ unsigned count_arrivals(std::uint64_t* counter, unsigned expected) {
  (void)__mbarrier_arrive(counter);
  const long long start = clock64();
  while (!phase_completed(counter, 0)) {
    if (clock64() - start > kPatienceCycles) {
      unsigned extra = 0;
      do {
        (void)__mbarrier_arrive(counter);
        ++extra;
      } while (!phase_completed(counter, 0) && extra < expected);
      return extra + 1 >= expected ? 0 : expected - 1 - extra;
    }
  }
  return expected - 1;
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
  const std::size_t vectors_per_batch = batch / 4;
  const std::size_t mine = batches_of_block(batch_count(n, batch), blockIdx.x, gridDim.x);
  const std::size_t rounds = commit_rounds(mine);
  const std::size_t counted_rounds =
      rounds < static_cast<std::size_t>(kMaxCountedRounds) ? rounds : kMaxCountedRounds;
  const unsigned expected_arrivals = static_cast<unsigned>(kWarpSize * counted_rounds + 1);
  auto buffer = [&](std::size_t k) { return shared_storage + (k % kStages) * vectors_per_batch; };
  const bool probing = evidence != nullptr;

  // Zeroed buffers: the probes read a buffer whose copy may not have landed yet.
  for (std::size_t i = threadIdx.x; i < kStages * vectors_per_batch; i += blockDim.x) {
    shared_storage[i] = make_uint4(0, 0, 0, 0);
  }
  std::uint64_t* counter = &counters[threadIdx.x / kWarpSize];
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

    const long long before = probing ? clock64() : 0;
    // TODO 5: wait until this thread's copies of batch k have landed. It has just committed
    //         batch k + 1, which may stay in flight: __pipeline_wait_prior(kAllowedPending).
    //         The block barrier below then makes every thread's copies of batch k visible.
    // BEGIN SOLUTION
    __pipeline_wait_prior(kAllowedPending);
    // END SOLUTION
    if (probing) {
      ev.wait_cycles += clock64() - before;
      ++ev.waits;
      look_at_my_batches(buffer(k), buffer(k + 1), in, k, mine, batch, n, ev);
    }
    __syncthreads();

    compute_batch(reinterpret_cast<const std::uint32_t*>(buffer(k)), out,
                  batch_of_block(k, batch, n), batch, n);
  }

  // Every copy of every thread has landed after these two lines, so every arrive-on has been
  // triggered; lane 0 counts what they delivered (also uninstrumented: no arrive-on may still
  // be on its way to shared memory when the block exits).
  __pipeline_wait_prior(0);
  __syncthreads();
  const unsigned arrivals = lane == 0 ? count_arrivals(counter, expected_arrivals) : 0;

  if (probing) {
    LaneEvidence& mine_lane = evidence->lanes[lane];
    atomicAdd(&mine_lane.wait_cycles, ev.wait_cycles);
    atomicAdd(&mine_lane.waits, static_cast<unsigned long long>(ev.waits));
    atomicAdd(&mine_lane.own_checked, static_cast<unsigned long long>(ev.own_checked));
    atomicAdd(&mine_lane.own_landed, static_cast<unsigned long long>(ev.own_landed));
    atomicAdd(&mine_lane.newer_checked, static_cast<unsigned long long>(ev.newer_checked));
    atomicAdd(&mine_lane.newer_landed, static_cast<unsigned long long>(ev.newer_landed));
    atomicAdd(&evidence->commit_executions, static_cast<unsigned long long>(ev.commit_executions));
    atomicAdd(&evidence->arrive_executions, static_cast<unsigned long long>(ev.arrive_executions));
    if (lane == 0) {
      atomicAdd(&evidence->warps, 1ull);
      atomicAdd(&evidence->commit_rounds, static_cast<unsigned long long>(rounds));
      atomicAdd(&evidence->arrive_rounds, static_cast<unsigned long long>(counted_rounds));
      atomicAdd(&evidence->arrivals_expected,
                static_cast<unsigned long long>(kWarpSize * counted_rounds));
      atomicAdd(&evidence->arrivals_measured, static_cast<unsigned long long>(arrivals));
    }
  }
}

// ---- launching ----------------------------------------------------------------------------

using Kernel = void (*)(const std::uint32_t*, std::uint32_t*, std::size_t, LanePaths, int,
                        Evidence*);

Kernel kernel_for(CommitMode mode) {
  switch (mode) {
    case CommitMode::converged:
      return entanglement_kernel<CommitMode::converged>;
    case CommitMode::diverged:
      return entanglement_kernel<CommitMode::diverged>;
    case CommitMode::diverged_syncwarp:
      return entanglement_kernel<CommitMode::diverged_syncwarp>;
    case CommitMode::diverged_no_syncwarp:
      return entanglement_kernel<CommitMode::diverged_no_syncwarp>;
  }
  throw std::invalid_argument("warp_entanglement: unknown commit mode");
}

void require(bool condition, const std::string& message) {
  if (!condition) throw std::invalid_argument("warp_entanglement: " + message);
}

void require_valid_threads(int threads_per_block) {
  require(threads_per_block >= 32 && threads_per_block <= 1024 && threads_per_block % 32 == 0,
          "threads_per_block must be a multiple of 32 in [32, 1024], got " +
              std::to_string(threads_per_block));
}

void require_valid_launch(cuda::std::span<const std::uint32_t> in,
                          cuda::std::span<std::uint32_t> out, CommitMode mode,
                          const LanePaths& paths, LaunchShape shape) {
  require(in.size() == out.size(),
          "in has " + std::to_string(in.size()) + " elements, out " + std::to_string(out.size()));
  (void)kernel_for(mode);  // throws for a mode that is not one of the four
  require_valid_threads(shape.threads_per_block);
  require(shape.blocks >= 1, "blocks must be >= 1, got " + std::to_string(shape.blocks));
  require(reinterpret_cast<std::uintptr_t>(in.data()) % 16 == 0 &&
              reinterpret_cast<std::uintptr_t>(out.data()) % 16 == 0,
          "16-byte copies need both arrays 16-byte aligned");
  require(valid(paths),
          "every lane's path must be in [0, 32), and every path below the "
          "largest must have a lane");
}

void launch(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out,
            CommitMode mode, const LanePaths& paths, LaunchShape shape, cudaStream_t stream,
            Evidence* evidence) {
  const Kernel kernel = kernel_for(mode);
  const std::size_t shared = shared_bytes(shape.threads_per_block);
  // 256 threads need exactly 48 KB; more threads need the opt-in beyond 48 KB.
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(shared)));
  kernel<<<shape.blocks, shape.threads_per_block, shared, stream>>>(
      in.data(), out.data(), in.size(), paths, path_count(paths), evidence);
  COURSE_CHECK_LAUNCH();
}

}  // namespace

void copy_and_compute(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out,
                      CommitMode mode, const LanePaths& paths, LaunchShape shape,
                      cudaStream_t stream) {
  require_valid_launch(in, out, mode, paths, shape);
  if (in.empty()) return;
  launch(in, out, mode, paths, shape, stream, nullptr);
}

Evidence copy_and_compute_with_evidence(cuda::std::span<const std::uint32_t> in,
                                        cuda::std::span<std::uint32_t> out, CommitMode mode,
                                        const LanePaths& paths, LaunchShape shape,
                                        cudaStream_t stream) {
  require_valid_launch(in, out, mode, paths, shape);
  Evidence evidence;
  if (in.empty()) return evidence;
  course::DeviceBuffer<Evidence> counters(1);
  COURSE_CHECK(cudaMemsetAsync(counters.data(), 0, sizeof(Evidence), stream));
  launch(in, out, mode, paths, shape, stream, counters.data());
  COURSE_CHECK(cudaMemcpyAsync(&evidence, counters.data(), sizeof(Evidence), cudaMemcpyDeviceToHost,
                               stream));
  COURSE_CHECK(cudaStreamSynchronize(stream));
  return evidence;
}

int max_blocks_per_sm(CommitMode mode, int threads_per_block) {
  require_valid_threads(threads_per_block);
  const Kernel kernel = kernel_for(mode);
  const std::size_t shared = shared_bytes(threads_per_block);
  int device = 0;
  int max_shared = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(
      cudaDeviceGetAttribute(&max_shared, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (shared > static_cast<std::size_t>(max_shared)) return 0;
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(shared)));
  int blocks = 0;
  COURSE_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads_per_block, shared));
  return blocks;
}

}  // namespace warp_entanglement
