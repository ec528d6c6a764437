/// \file model.h
/// \brief Lesson 08: the CPU model of a warp's shared batch sequence (plain C++, no CUDA).
///
/// The pipeline primitives of lesson 06 (`__pipeline_memcpy_async`, `__pipeline_commit`,
/// `__pipeline_wait_prior`) and the arrive-on (`cp.async.mbarrier.arrive`, behind lesson 03's
/// `cuda::memcpy_async` with a barrier, and `__pipeline_arrive_on`) are per-thread operations
/// in the programming model. The Programming Guide says that on compute capability 8.x the
/// hardware keeps **one** batch sequence per warp instead:
///  - a commit executed by a group of converged threads appends **one** batch to the
///    warp-shared sequence PB; executed by 32 diverged threads, it appends 32;
///  - each thread only counts its own commits (its *perceived* sequence TB), so its
///    `wait_prior<N>` may wait for newer batches, other threads' included (over-waiting);
///  - an arrive-on executed by diverged threads updates the barrier once per converged
///    group instead of once per warp.
/// The two rules the model is built on, WarpSequence::commit() and WarpSequence::wait_prior(),
/// are the student's (warp_entanglement.cu); the rest of the model is in model.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace warp_entanglement {

inline constexpr int kWarpSize = 32;

/// Batches the lesson's kernel starts ahead of the one it computes: each step k starts
/// batch k + 1, then waits for batch k.
inline constexpr int kBatchesAhead = 1;
/// The argument of `__pipeline_wait_prior` before computing batch k: this thread has just
/// committed batch k + 1, which may stay pending; batch k must have landed.
inline constexpr int kAllowedPending = 1;
/// `__pipeline_wait_prior(n)` waits with `cp.async.wait_group min(n, 8)`.
inline constexpr int kWaitPriorClamp = 8;

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
  /// (The student's TODO 1, in warp_entanglement.cu.)
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
  /// for PB up to PL - min(N, 8). (The student's TODO 2, in warp_entanglement.cu.)
  Wait wait_prior(int lane, int n) const;
  /// A thread-scope `pipeline::consumer_wait()` by `lane` after it released `consumed` of its
  /// batches: `wait_prior(TL - consumed)`, i.e. it needs its oldest unreleased batch.
  Wait consumer_wait(int lane, int consumed) const;

 private:
  std::vector<LaneMask> actual_;
  std::array<std::vector<int>, kWarpSize> perceived_;
};

/// Throws std::invalid_argument unless `lane` is in [0, 32); `what` names the caller.
void require_lane(int lane, const char* what);

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

/// "{0..31}" or "{0}" or "{0, 2, 5}": a sorted list of batch indices, runs shortened.
std::string batches_text(const std::vector<int>& batches);

/// Prints the Programming Guide's example as the model computes it: a fully diverged warp
/// in which every lane commits once (PB, every TB, what lane 0's wait_prior<0> covers, and
/// the arrive-on's barrier updates).
void print_fully_diverged_example(std::ostream& out);

}  // namespace model
}  // namespace warp_entanglement
