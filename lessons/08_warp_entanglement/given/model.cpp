// Lesson 08: the CPU model of a warp's shared batch sequence. Read-only: compiled once and
// linked into the lesson's executables and tests. The two rules it is built on, the commit
// merging rule (WarpSequence::commit) and the wait rule (WarpSequence::wait_prior), are the
// exercise's TODOs 1 and 2 in warp_entanglement.cu; everything here follows from them.
#include "model.h"

#include <algorithm>
#include <ostream>
#include <sstream>
#include <stdexcept>

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

namespace model {

void require_lane(int lane, const char* what) {
  if (lane < 0 || lane >= kWarpSize) {
    throw std::invalid_argument(std::string("warp_entanglement::model::") + what +
                                ": lane must be in [0, 32), got " + std::to_string(lane));
  }
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
    result.arrivals += __builtin_popcount(group);
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

std::string batches_text(const std::vector<int>& batches) {
  std::ostringstream text;
  text << "{";
  for (std::size_t i = 0; i < batches.size();) {
    std::size_t j = i;
    while (j + 1 < batches.size() && batches[j + 1] == batches[j] + 1) ++j;
    if (i > 0) text << ", ";
    text << batches[i];
    if (j > i + 1) text << ".." << batches[j];
    if (j == i + 1) text << ", " << batches[j];
    i = j + 1;
  }
  text << "}";
  return text.str();
}

void print_fully_diverged_example(std::ostream& out) {
  WarpSequence sequence;
  for (int lane = 0; lane < kWarpSize; ++lane) sequence.commit(LaneMask{1} << lane);
  std::vector<int> actual;
  for (int b = 0; b <= sequence.actual_last(); ++b) actual.push_back(b);
  const Wait wait = sequence.wait_prior(0, 0);
  out << "\nThe model: a fully diverged warp in which every lane commits once\n"
      << "  actual, warp-shared sequence PB = " << batches_text(actual)
      << " (PL = " << sequence.actual_last() << ")\n"
      << "  perceived sequence of every lane TB = " << batches_text(sequence.perceived(0))
      << " (TL = " << sequence.perceived_last(0) << "); lane t's batch 0 is PB batch t\n"
      << "  wait_prior<0> in lane 0 needs PB batch " << wait.needed_through
      << " but waits for PB 0.." << wait.waited_through << ": " << wait.batches_waited()
      << " batches, " << wait.over_waited() << " of them newer than its own\n"
      << "  arrive-on by the 32 diverged lanes: " << arrive_on(groups_of(fully_diverged())).updates
      << " barrier updates (converged: " << arrive_on({kFullWarp}).updates << ")\n";
}

}  // namespace model
}  // namespace warp_entanglement
