/// \file warp_entanglement.cuh
/// \brief Lesson 08: warp entanglement of commit, wait and arrive-on.
///
/// The API the driver (main.cu) and the tests call. The model and the kernels live in
/// warp_entanglement.cu: the starter in lessons/, the complete version in solutions/.
///
/// The pipeline primitives of lesson 06 (`__pipeline_memcpy_async`, `__pipeline_commit`,
/// `__pipeline_wait_prior`) and the arrive-on (`cp.async.mbarrier.arrive`, behind lesson 03's
/// `cuda::memcpy_async` with a barrier, and `__pipeline_arrive_on`) are
/// per-thread operations in the programming model. The Programming Guide says that on
/// compute capability 8.x the hardware keeps **one** batch sequence per warp instead:
///  - a commit executed by a group of converged threads appends **one** batch to the
///    warp-shared sequence PB; executed by 32 diverged threads, it appends 32;
///  - each thread only counts its own commits (its *perceived* sequence TB), so its
///    `wait_prior<N>` may wait for newer batches, other threads' included (over-waiting);
///  - an arrive-on executed by diverged threads updates the barrier once per converged
///    group instead of once per warp.
/// This file has two halves: a CPU model of that warp-shared sequence (namespace `model`),
/// and a copy-and-compute kernel whose commits and arrive-ons run converged or from a
/// data-dependent branch, instrumented to measure what the GPU really does.
#pragma once

#include <cuda_runtime.h>
#include <cuda/std/span>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace warp_entanglement {

inline constexpr int kWarpSize = 32;

// ---- The schedule of the kernel -----------------------------------------------------------

/// Shared-memory buffers of a block. Each step k starts batch k + 1, waits for batch k and
/// computes it: batch k + 1 lands while batch k is computed. With 3 buffers the one that
/// batch k + 1 refills held batch k - 2, which every thread finished before the previous
/// step's block barrier, so one barrier per batch is enough.
inline constexpr int kStages = 3;
/// Batches started ahead of the one being computed.
inline constexpr int kBatchesAhead = 1;
/// The argument of `__pipeline_wait_prior` before computing batch k: this thread has just
/// committed batch k + 1, which may stay pending; batch k must have landed.
inline constexpr int kAllowedPending = 1;
/// 16-byte vectors each thread copies per batch (256 threads: 16 KB batches, as in lesson 06).
inline constexpr int kVectorsPerThread = 4;
/// `__pipeline_wait_prior(n)` waits with `cp.async.wait_group min(n, 8)`.
inline constexpr int kWaitPriorClamp = 8;
/// Each warp arrives on its counting barrier in at most this many rounds: the barrier's
/// expected count, 32 x rounds + 1, must stay below an mbarrier's limit of 2^20 - 1.
inline constexpr int kMaxCountedRounds = 4096;

/// Grid and block size of a launch.
struct LaunchShape {
  int blocks = 0;
  int threads_per_block = 0;
};

/// Elements of one batch: threads x kVectorsPerThread vectors x 4 uint32 (a multiple of 128,
/// so a batch holds whole 32-element groups).
__host__ __device__ constexpr std::size_t batch_elements(int threads_per_block) {
  return static_cast<std::size_t>(threads_per_block) * kVectorsPerThread * 4;
}

/// Dynamic shared memory of one block: kStages batches of uint32 (256 threads: 48 KB).
__host__ __device__ constexpr std::size_t shared_bytes(int threads_per_block) {
  return kStages * batch_elements(threads_per_block) * sizeof(std::uint32_t);
}

/// Batches of `batch` elements in an input of `n` elements (the last may be partial).
__host__ __device__ constexpr std::size_t batch_count(std::size_t n, std::size_t batch) {
  return (n + batch - 1) / batch;
}

/// How many of `batches` batches block `block` of `grid` owns (block b owns b, b + grid, ...).
__host__ __device__ constexpr std::size_t batches_of_block(std::size_t batches, unsigned block,
                                                           unsigned grid) {
  return block < batches ? (batches - 1 - block) / grid + 1 : 0;
}

/// Commit (and arrive-on) rounds of a block that owns `mine` batches: the prologue starts
/// kBatchesAhead batches, then every step starts one more, each with one commit, empty or not.
/// (The rounds past the block's last batch commit empty batches.)
__host__ __device__ constexpr std::size_t commit_rounds(std::size_t mine) {
  return mine + kBatchesAhead;
}

/// Zero-fill of 16-byte chunk `chunk` of a batch holding `count` valid elements (as in lesson
/// 06): 0 for a whole chunk, 16 for a chunk entirely past the end.
__host__ __device__ constexpr std::size_t zero_fill_bytes(std::size_t count, std::size_t chunk) {
  const std::size_t first_element = chunk * 4;
  if (first_element >= count) return 16;
  const std::size_t valid = count - first_element;
  return valid >= 4 ? 0 : 16 - valid * sizeof(std::uint32_t);
}

// ---- Convergence ---------------------------------------------------------------------------

/// Where the commit and the arrive-on of every round run.
enum class CommitMode {
  /// No branch: the warp copies, commits and arrives on, converged.
  converged,
  /// A data-dependent branch per path: each path's lanes copy, commit and arrive on inside
  /// their own branch, so a warp with k paths executes each instruction k times.
  diverged,
  /// The copies stay in the branch, then `__syncwarp()` reconverges the warp, and the commit
  /// and the arrive-on run after it, converged: the rule of the Programming Guide.
  diverged_syncwarp,
  /// The copies stay in the branch; the commit and arrive-on follow the branch without a
  /// `__syncwarp()`. Whether the warp has reconverged there is not guaranteed.
  diverged_no_syncwarp,
};

/// "converged", "diverged", "diverged+syncwarp" or "diverged, no syncwarp".
const char* name(CommitMode mode);

/// Which branch (path) each lane of a warp takes, the same in every warp. A kernel argument,
/// so the branch depends on data the compiler cannot see: lane l runs path path[l]. Paths are
/// numbered 0, 1, ... in the order the kernel runs them.
struct LanePaths {
  int path[kWarpSize] = {};  // a plain array: kernels index it too
};

/// Every lane on path 0: no divergence.
LanePaths one_path();
/// Lane l on path l: 32 paths, a fully diverged warp (the Programming Guide's example).
LanePaths fully_diverged();
/// Lane l on path l % paths: `paths` groups of 32 / paths lanes (paths in [1, 32]).
LanePaths split_paths(int paths);
/// How many paths the kernel runs: the largest path + 1.
int path_count(const LanePaths& paths);
/// Whether every path lies in [0, 32) and every path below path_count() has a lane: the
/// launcher's precondition (a path without lanes would be harmless, a negative one would
/// never commit).
bool valid(const LanePaths& paths);

// ---- The CPU model of the warp-shared batch sequence -------------------------------------

namespace model {

/// A set of lanes of one warp: bit l is lane l.
using LaneMask = std::uint32_t;
inline constexpr LaneMask kFullWarp = 0xffffffffu;

/// What one `wait_prior<N>` (or `consumer_wait`) of one thread really waits for. Batches are
/// indices into the warp-shared sequence PB; -1 means "none".
struct Wait {
  int lane = 0;
  int n = 0;                ///< the N the thread asked for
  int n_applied = 0;        ///< the N the hardware uses: min(N, kWaitPriorClamp)
  int needed_through = -1;  ///< PB index of the thread's own batch TL - N: what it needs
  int waited_through = -1;  ///< PL - N: the hardware waits for PB[0 .. waited_through]
  /// Batches of PB the wait covers.
  int batches_waited() const { return waited_through + 1; }
  /// Batches waited for beyond the one this thread needed (newer batches, its own included).
  int over_waited() const { return waited_through - needed_through; }
};

/// The warp-shared batch sequence of one warp, built commit by commit.
class WarpSequence {
 public:
  /// One execution of the commit instruction by the converged lanes `lanes` (not 0).
  void commit(LaneMask lanes);

  /// PB: batch i holds the copies of the lanes actual()[i] committed.
  const std::vector<LaneMask>& actual() const { return actual_; }
  /// TB of `lane`: entry n is the PB index its n-th own batch landed in (BTn == BPm).
  const std::vector<int>& perceived(int lane) const { return perceived_.at(lane); }
  /// PL: the index of the last batch of PB, or -1 when nothing was committed.
  int actual_last() const { return static_cast<int>(actual_.size()) - 1; }
  /// TL of `lane`: the index of its last own batch, or -1.
  int perceived_last(int lane) const { return static_cast<int>(perceived(lane).size()) - 1; }

  /// `__pipeline_wait_prior(n)` by `lane`: it needs its own batch TL - N, the hardware waits
  /// for PB up to PL - min(N, 8).
  Wait wait_prior(int lane, int n) const;
  /// A thread-scope `pipeline::consumer_wait()` by `lane` after it released `consumed` of its
  /// batches: `wait_prior(TL - consumed)`, i.e. it needs its oldest unreleased batch.
  Wait consumer_wait(int lane, int consumed) const;

 private:
  std::vector<LaneMask> actual_;
  std::array<std::vector<int>, kWarpSize> perceived_;
};

/// What one round of arrive-on operations does to the barrier.
struct ArriveOn {
  int updates = 0;   ///< barrier updates: one per converged group that executes it
  int arrivals = 0;  ///< arrivals it counts in the end: one per thread (the PTX semantics)
};
/// An arrive-on executed once by each group of converged lanes in `groups`.
ArriveOn arrive_on(const std::vector<LaneMask>& groups);

/// The converged groups of a branch on `paths`: one mask per path, in path order.
std::vector<LaneMask> groups_of(const LanePaths& paths);

/// A count the model predicts: exact (min == max) or a range when convergence is not
/// guaranteed (the warp may or may not have reconverged).
struct Range {
  int min = 0;
  int max = 0;
  /// "4" or "1-32".
  std::string str() const;
};

/// What the model predicts for the lesson's kernel, per warp and per round.
struct Prediction {
  Range commit_groups;       ///< executions of the commit: batches PB grows by per round
  Range arrive_on_updates;   ///< barrier updates per round of arrive-ons
  int arrivals = kWarpSize;  ///< arrivals per round (always one per thread)
  /// For each lane, whether the hardware's wait_prior<kAllowedPending> before batch k also
  /// covers this lane's own batch k + 1 (which it allowed to stay pending): 'W' yes, '.' no,
  /// '?' only if the warp did not reconverge.
  std::string lanes_over_waiting;
  Range over_waiting_lanes;  ///< how many lanes that is
};

/// The model run over the kernel's schedule (kBatchesAhead rounds, then per batch one round
/// and a wait) with the commit groups of `mode` and `paths`, read at a steady-state wait.
Prediction predict(CommitMode mode, const LanePaths& paths);

}  // namespace model

// ---- What the GPU measured -----------------------------------------------------------------

/// Counters one instrumented launch adds up (all threads, all batches), per lane.
struct LaneEvidence {
  unsigned long long wait_cycles = 0;    ///< clock64() cycles spent in wait_prior
  unsigned long long waits = 0;          ///< wait_prior calls measured (one per owned batch)
  unsigned long long own_checked = 0;    ///< waits after which the thread's own batch k was read
  unsigned long long own_landed = 0;     ///< ... and had landed (must equal own_checked)
  unsigned long long newer_checked = 0;  ///< waits after which its own batch k + 1 was read
  unsigned long long newer_landed = 0;   ///< ... and had already landed, though allowed pending
};

/// Everything one instrumented launch measured.
struct Evidence {
  LaneEvidence lanes[kWarpSize] = {};  // a plain array: kernels index it too
  unsigned long long warps = 0;
  unsigned long long commit_rounds = 0;      ///< (warp, round) pairs that committed
  unsigned long long commit_executions = 0;  ///< executions of the commit instruction
  unsigned long long arrive_rounds = 0;      ///< (warp, round) pairs that arrived on
  unsigned long long arrive_executions = 0;  ///< executions of the arrive-on instruction
  unsigned long long arrivals_expected = 0;  ///< 32 per arrive round: one per thread
  unsigned long long arrivals_measured = 0;  ///< arrivals the counting barriers received
};

/// The evidence as rates.
struct Summary {
  double commit_executions_per_round = 0;
  double arrive_executions_per_round = 0;
  double arrivals_per_round = 0;
  double mean_wait_cycles = 0;
  /// Of the waits where batch k + 1 was checked, the fraction after which it had landed.
  double newer_landed_fraction = 0;
  std::array<double, kWarpSize> lane_newer_landed_fraction{};
  /// Every wait returned after the thread's own batch had landed (the cp.async contract).
  bool own_batches_landed = false;
};
Summary summarise(const Evidence& evidence);

/// A lane-by-lane picture of fractions: one digit per lane, floor(10 x fraction) capped at 9.
std::string lane_digits(const std::array<double, kWarpSize>& fractions);

/// Whether a variant over-waited: its newer-batch-landed fraction is at least 0.25 above that
/// of its control (the same copies with a converged commit) measured in the same run.
bool over_waiting_observed(double newer_landed_fraction, double control_fraction);

// ---- Launching -----------------------------------------------------------------------------

/// Runs the copy-and-compute workload (course/workload.h) on `stream`:
/// out[i] = combine(in[i], in[partner_index(i, n)]) for every i, with the primitives and a
/// schedule of 3 buffers (batch k + 1 started before the wait for batch k), committing and
/// arriving on as `mode` says, branching on `paths`.
/// The result does not depend on `mode` or `paths`: only the waiting does.
///
/// Preconditions, checked before any CUDA call (std::invalid_argument otherwise):
/// `in` and `out` have the same size; 32 <= threads_per_block <= 1024 and a multiple of 32;
/// blocks >= 1; both pointers 16-byte aligned; valid(paths). An empty input launches
/// nothing.
void copy_and_compute(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out,
                      CommitMode mode, const LanePaths& paths, LaunchShape shape,
                      cudaStream_t stream);

/// The same launch, instrumented: clock64() around every wait, a look at the thread's own
/// batches k and k + 1 after it, the convergence of every commit and arrive-on
/// (`__activemask()`), and per-warp mbarriers that count the arrive-on arrivals. Synchronises
/// `stream` and returns what was measured (all zero for an empty input).
Evidence copy_and_compute_with_evidence(cuda::std::span<const std::uint32_t> in,
                                        cuda::std::span<std::uint32_t> out, CommitMode mode,
                                        const LanePaths& paths, LaunchShape shape,
                                        cudaStream_t stream);

/// The most blocks of `threads_per_block` threads one SM holds at once for the `mode` kernel
/// (cudaOccupancyMaxActiveBlocksPerMultiprocessor after opting in to its shared memory).
int max_blocks_per_sm(CommitMode mode, int threads_per_block);

/// Where the driver writes the entanglement table next to the main CSV:
/// "dir/08_warp_entanglement.csv" -> "dir/08_warp_entanglement_entanglement.csv".
inline std::string entanglement_csv_path(const std::string& main_csv) {
  const std::string suffix = ".csv";
  if (main_csv.size() > suffix.size() &&
      main_csv.compare(main_csv.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return main_csv.substr(0, main_csv.size() - suffix.size()) + "_entanglement.csv";
  }
  return main_csv + "_entanglement.csv";
}

}  // namespace warp_entanglement
