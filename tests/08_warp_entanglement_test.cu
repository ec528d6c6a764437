// Lesson 08 tests: built twice, against the starter (label `lesson`) and against the
// solution (label `solution`). GPU suites are named Gpu...; they skip without a GPU.
//
// What the tests assert, and what they leave to the driver's table: the model is checked
// exactly on the CPU; on the GPU every output element is checked, and so is everything that
// holds WHETHER OR NOT the hardware entangles (a wait never returns before the thread's own
// batch landed, counts of waits and rounds, arrivals between one per execution and one per
// thread). How much the GPU over-waits is measured and reported, never asserted.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "course/buffers.h"
#include "course/data.h"
#include "course/inspect.h"
#include "course/workload.h"
#include "gpu_test.h"
#include "warp_entanglement.cuh"

// Readable parameter values in failure messages.
namespace warp_entanglement {
void PrintTo(CommitMode mode, std::ostream* os) { *os << name(mode); }
void PrintTo(LaunchShape s, std::ostream* os) { *os << s.blocks << "x" << s.threads_per_block; }
}  // namespace warp_entanglement

namespace {

namespace we = warp_entanglement;
using we::CommitMode;
using we::LaunchShape;
using we::model::kFullWarp;
using we::model::LaneMask;
using we::model::WarpSequence;

LaneMask bit(int lane) { return LaneMask{1} << lane; }

using course::testing::concerns_todo;
using course::testing::concerns_todos;

// The student's TODOs (warp_entanglement.cu): 1 the model's commit rule (PB and every TB),
// 2 its wait rule; 3 commit and arrive-on, 4 the converged round, 5 the diverged rounds,
// 6 the kernel's wait. What a model wait reports on a sequence built by commits depends on
// both rules.
const std::string kRules = concerns_todos({1, 2});

/// The TODO that places the round's copies, commit and arrive-on for `mode`.
int round_todo(CommitMode mode) { return mode == CommitMode::converged ? 4 : 5; }

const CommitMode kModes[] = {CommitMode::converged, CommitMode::diverged,
                             CommitMode::diverged_syncwarp, CommitMode::diverged_no_syncwarp};

// ---- CPU tests: the model of the warp-shared batch sequence -----------------------------

TEST(WarpEntanglementModel, FullyDivergedWarpFromTheProgrammingGuide) {
  // Every lane commits once, alone: PB = {0, 1, ..., 31} (PL = 31), every TB = {0} (TL = 0).
  WarpSequence s;
  for (int lane = 0; lane < 32; ++lane) s.commit(bit(lane));
  ASSERT_EQ(s.actual().size(), 32u) << concerns_todo(1);
  EXPECT_EQ(s.actual_last(), 31) << concerns_todo(1);
  for (int b = 0; b < 32; ++b) {
    EXPECT_EQ(s.actual()[b], bit(b)) << "PB batch " << b << concerns_todo(1);
  }
  for (int lane = 0; lane < 32; ++lane) {
    EXPECT_EQ(s.perceived_last(lane), 0) << "lane " << lane << concerns_todo(1);
    // BT0 of lane t is BP_t: a perceived index n aligns with an actual index m >= n.
    EXPECT_EQ(s.perceived(lane), std::vector<int>{lane}) << "lane " << lane << concerns_todo(1);
    // Every thread may wait for all 32 batches: wait_prior<0> covers PB 0..31.
    const we::model::Wait w = s.wait_prior(lane, 0);
    EXPECT_EQ(w.needed_through, lane) << kRules;
    EXPECT_EQ(w.waited_through, 31) << kRules;
    EXPECT_EQ(w.batches_waited(), 32) << kRules;
    EXPECT_EQ(w.over_waited(), 31 - lane) << kRules;
    const we::model::Wait c = s.consumer_wait(lane, 0);
    EXPECT_EQ(c.n, 0) << concerns_todo(1);  // consumer_wait asks for TL - consumed
    EXPECT_EQ(c.waited_through, 31) << kRules;
  }
}

TEST(WarpEntanglementModel, ConvergedWarpPerceivesTheActualSequence) {
  WarpSequence s;
  for (int round = 0; round < 3; ++round) s.commit(kFullWarp);
  EXPECT_EQ(s.actual(), (std::vector<LaneMask>{kFullWarp, kFullWarp, kFullWarp}))
      << concerns_todo(1);
  for (int lane = 0; lane < 32; ++lane) {
    EXPECT_EQ(s.perceived(lane), (std::vector<int>{0, 1, 2})) << concerns_todo(1);
    for (int n = 0; n <= 2; ++n) {
      const we::model::Wait w = s.wait_prior(lane, n);
      EXPECT_EQ(w.needed_through, 2 - n) << kRules;
      EXPECT_EQ(w.waited_through, 2 - n) << kRules;
      EXPECT_EQ(w.over_waited(), 0) << "a converged warp never over-waits, n=" << n << kRules;
    }
  }
}

TEST(WarpEntanglementModel, PartlyDivergedWarpWaitsForTheOtherHalf) {
  // Two halves commit in turn, twice: PB = {lo, hi, lo, hi}.
  const LaneMask lo = 0x0000ffffu, hi = 0xffff0000u;
  WarpSequence s;
  for (int round = 0; round < 2; ++round) {
    s.commit(lo);
    s.commit(hi);
  }
  EXPECT_EQ(s.actual(), (std::vector<LaneMask>{lo, hi, lo, hi})) << concerns_todo(1);
  EXPECT_EQ(s.perceived(0), (std::vector<int>{0, 2})) << concerns_todo(1);
  EXPECT_EQ(s.perceived(31), (std::vector<int>{1, 3})) << concerns_todo(1);
  // wait_prior<1>: lane 0 needs PB 0 but waits through PL - 1 = 2, its own newer batch too.
  const we::model::Wait low = s.wait_prior(0, 1);
  EXPECT_EQ(low.needed_through, 0) << kRules;
  EXPECT_EQ(low.waited_through, 2) << kRules;
  EXPECT_EQ(low.over_waited(), 2) << kRules;
  // Lane 31 needs PB 1 and waits through 2: one batch (lane 0's newer one) more.
  const we::model::Wait high = s.wait_prior(31, 1);
  EXPECT_EQ(high.needed_through, 1) << kRules;
  EXPECT_EQ(high.waited_through, 2) << kRules;
  EXPECT_EQ(high.over_waited(), 1) << kRules;
  // wait_prior<0> waits for everything in both halves.
  EXPECT_EQ(s.wait_prior(0, 0).waited_through, 3) << kRules;
  EXPECT_EQ(s.wait_prior(0, 0).needed_through, 2) << kRules;
}

TEST(WarpEntanglementModel, WaitPriorIsClampedAtEight) {
  WarpSequence s;
  for (int round = 0; round < 10; ++round) s.commit(kFullWarp);
  const we::model::Wait nine = s.wait_prior(5, 9);
  EXPECT_EQ(nine.n_applied, 8) << concerns_todo(2);
  EXPECT_EQ(nine.needed_through, 0) << kRules;
  EXPECT_EQ(nine.waited_through, 1) << kRules;  // 9 - 8: the clamp over-waits even converged
  EXPECT_EQ(nine.over_waited(), 1) << kRules;
  EXPECT_EQ(s.wait_prior(5, 8).waited_through, 1) << kRules;
  EXPECT_EQ(s.wait_prior(5, 8).over_waited(), 0) << kRules;
  EXPECT_EQ(s.wait_prior(5, 100).waited_through, 1) << kRules;
  EXPECT_EQ(s.wait_prior(5, 100).needed_through, -1) << kRules;
}

TEST(WarpEntanglementModel, WaitsWithNothingToWaitFor) {
  WarpSequence empty;
  EXPECT_EQ(empty.actual_last(), -1);
  EXPECT_EQ(empty.perceived_last(0), -1);
  // Nothing committed: only the wait rule (TODO 2) is at work.
  EXPECT_EQ(empty.wait_prior(0, 0).waited_through, -1) << concerns_todo(2);
  EXPECT_EQ(empty.wait_prior(0, 0).needed_through, -1) << concerns_todo(2);
  EXPECT_EQ(empty.wait_prior(0, 0).batches_waited(), 0) << concerns_todo(2);

  WarpSequence two;
  two.commit(kFullWarp);
  two.commit(kFullWarp);
  EXPECT_EQ(two.wait_prior(3, 2).waited_through, -1) << kRules;
  EXPECT_EQ(two.wait_prior(3, 3).waited_through, -1) << kRules;

  // A lane that committed once asks wait_prior<1>: it needs nothing, but the warp's other
  // 31 batches make the hardware wait through PB 30.
  WarpSequence diverged;
  for (int lane = 0; lane < 32; ++lane) diverged.commit(bit(lane));
  const we::model::Wait w = diverged.wait_prior(0, 1);
  EXPECT_EQ(w.needed_through, -1) << kRules;
  EXPECT_EQ(w.waited_through, 30) << kRules;
  EXPECT_EQ(w.over_waited(), 31) << kRules;
}

TEST(WarpEntanglementModel, ConsumerWaitWaitsForTheOldestUnreleasedBatch) {
  WarpSequence s;
  for (int round = 0; round < 3; ++round) s.commit(kFullWarp);
  // consumer_wait (read-only) asks for TL - consumed: TL comes from the commit rule.
  EXPECT_EQ(s.consumer_wait(7, 0).n, 2) << concerns_todo(1);
  EXPECT_EQ(s.consumer_wait(7, 0).waited_through, 0) << kRules;
  EXPECT_EQ(s.consumer_wait(7, 2).n, 0) << concerns_todo(1);
  EXPECT_EQ(s.consumer_wait(7, 2).waited_through, 2) << kRules;
  EXPECT_THROW(s.consumer_wait(7, 3), std::invalid_argument) << concerns_todo(1);

  const LaneMask lo = 0x0000ffffu, hi = 0xffff0000u;
  WarpSequence halves;
  for (int round = 0; round < 2; ++round) {
    halves.commit(lo);
    halves.commit(hi);
  }
  const we::model::Wait w = halves.consumer_wait(0, 0);  // lane 0 needs its batch 0 = PB 0
  EXPECT_EQ(w.n, 1) << concerns_todo(1);
  EXPECT_EQ(w.needed_through, 0) << kRules;
  EXPECT_EQ(w.waited_through, 2) << kRules;
}

TEST(WarpEntanglementModel, RejectsImpossibleCalls) {
  WarpSequence s;
  EXPECT_THROW(s.commit(0), std::invalid_argument);
  EXPECT_THROW(s.wait_prior(32, 0), std::invalid_argument);
  EXPECT_THROW(s.wait_prior(-1, 0), std::invalid_argument);
  EXPECT_THROW(s.wait_prior(0, -1), std::invalid_argument);
  EXPECT_THROW(s.consumer_wait(0, 0), std::invalid_argument);  // nothing committed
}

TEST(WarpEntanglementModel, ArriveOnUpdatesOncePerConvergedGroup) {
  const we::model::ArriveOn converged = we::model::arrive_on({kFullWarp});
  EXPECT_EQ(converged.updates, 1);
  EXPECT_EQ(converged.arrivals, 32);
  const we::model::ArriveOn diverged =
      we::model::arrive_on(we::model::groups_of(we::fully_diverged()));
  EXPECT_EQ(diverged.updates, 32);
  EXPECT_EQ(diverged.arrivals, 32);
  const we::model::ArriveOn four = we::model::arrive_on(we::model::groups_of(we::split_paths(4)));
  EXPECT_EQ(four.updates, 4);
  EXPECT_EQ(four.arrivals, 32);
  const we::model::ArriveOn some = we::model::arrive_on({0x1u, 0x6u});
  EXPECT_EQ(some.updates, 2);
  EXPECT_EQ(some.arrivals, 3);
}

TEST(WarpEntanglementModel, GroupsOfPathsInPathOrder) {
  EXPECT_EQ(we::model::groups_of(we::one_path()), std::vector<LaneMask>{kFullWarp});
  const auto four = we::model::groups_of(we::split_paths(4));
  ASSERT_EQ(four.size(), 4u);
  for (int p = 0; p < 4; ++p) EXPECT_EQ(four[p], 0x11111111u << p);
  const auto all = we::model::groups_of(we::fully_diverged());
  ASSERT_EQ(all.size(), 32u);
  for (int lane = 0; lane < 32; ++lane) EXPECT_EQ(all[lane], bit(lane));
  we::LanePaths gap = we::one_path();
  gap.path[3] = 2;  // path 1 has no lane
  EXPECT_THROW(we::model::groups_of(gap), std::invalid_argument);
}

TEST(WarpEntanglementModel, PredictionsForTheKernel) {
  const std::string none(32, '.');
  const auto converged = we::model::predict(CommitMode::converged, we::fully_diverged());
  EXPECT_EQ(converged.commit_groups.str(), "1");  // no branch: the paths play no part
  EXPECT_EQ(converged.arrive_on_updates.str(), "1");
  EXPECT_EQ(converged.arrivals, 32);
  EXPECT_EQ(converged.lanes_over_waiting, none) << kRules;
  EXPECT_EQ(converged.over_waiting_lanes.str(), "0") << kRules;

  // 32 paths: wait_prior<1> covers every batch but the warp's newest, lane 31's.
  const auto diverged = we::model::predict(CommitMode::diverged, we::fully_diverged());
  EXPECT_EQ(diverged.commit_groups.str(), "32");
  EXPECT_EQ(diverged.arrive_on_updates.str(), "32");
  EXPECT_EQ(diverged.arrivals, 32);
  EXPECT_EQ(diverged.lanes_over_waiting, std::string(31, 'W') + ".") << kRules;
  EXPECT_EQ(diverged.over_waiting_lanes.str(), "31") << kRules;

  // 4 paths: the lanes of the last path (lane % 4 == 3) do not over-wait, the others do.
  const auto four = we::model::predict(CommitMode::diverged, we::split_paths(4));
  EXPECT_EQ(four.commit_groups.str(), "4");
  std::string pattern;
  for (int i = 0; i < 8; ++i) pattern += "WWW.";
  EXPECT_EQ(four.lanes_over_waiting, pattern) << kRules;
  EXPECT_EQ(four.over_waiting_lanes.str(), "24") << kRules;

  // A branch every lane takes the same way does not diverge.
  EXPECT_EQ(we::model::predict(CommitMode::diverged, we::one_path()).commit_groups.str(), "1");

  const auto fixed = we::model::predict(CommitMode::diverged_syncwarp, we::fully_diverged());
  EXPECT_EQ(fixed.commit_groups.str(), "1");
  EXPECT_EQ(fixed.arrive_on_updates.str(), "1");
  EXPECT_EQ(fixed.lanes_over_waiting, none) << kRules;

  // Without __syncwarp() nothing is guaranteed: from converged to fully diverged.
  const auto maybe = we::model::predict(CommitMode::diverged_no_syncwarp, we::fully_diverged());
  EXPECT_EQ(maybe.commit_groups.str(), "1-32");
  EXPECT_EQ(maybe.arrive_on_updates.str(), "1-32");
  EXPECT_EQ(maybe.lanes_over_waiting, std::string(31, '?') + ".") << kRules;
  EXPECT_EQ(maybe.over_waiting_lanes.str(), "0-31") << kRules;
}

// ---- CPU tests: reading the evidence ---------------------------------------------------

TEST(WarpEntanglementEvidence, SummaryRates) {
  we::Evidence e;
  e.commit_rounds = 10;
  e.commit_executions = 320;
  e.arrive_rounds = 10;
  e.arrive_executions = 40;
  e.arrivals_expected = 320;
  e.arrivals_measured = 320;
  for (int lane = 0; lane < 32; ++lane) {
    e.lanes[lane].wait_cycles = 1000 * (lane + 1);
    e.lanes[lane].waits = 10;
    e.lanes[lane].own_checked = 10;
    e.lanes[lane].own_landed = 10;
    e.lanes[lane].newer_checked = 8;
    e.lanes[lane].newer_landed = lane < 16 ? 8 : 2;
  }
  const we::Summary s = we::summarise(e);
  EXPECT_DOUBLE_EQ(s.commit_executions_per_round, 32.0);
  EXPECT_DOUBLE_EQ(s.arrive_executions_per_round, 4.0);
  EXPECT_DOUBLE_EQ(s.arrivals_per_round, 32.0);
  EXPECT_DOUBLE_EQ(s.mean_wait_cycles, 1000.0 * 528 / 320);  // (1 + ... + 32) x 1000 / 320
  EXPECT_DOUBLE_EQ(s.newer_landed_fraction, (16 * 8 + 16 * 2) / 256.0);
  EXPECT_DOUBLE_EQ(s.lane_newer_landed_fraction[0], 1.0);
  EXPECT_DOUBLE_EQ(s.lane_newer_landed_fraction[31], 0.25);
  EXPECT_TRUE(s.own_batches_landed);
  EXPECT_EQ(we::lane_digits(s.lane_newer_landed_fraction),
            std::string(16, '9') + std::string(16, '2'));

  e.lanes[3].own_landed = 9;
  EXPECT_FALSE(we::summarise(e).own_batches_landed);

  const we::Summary zero = we::summarise(we::Evidence{});  // no division by zero
  EXPECT_EQ(zero.mean_wait_cycles, 0.0);
  EXPECT_EQ(zero.newer_landed_fraction, 0.0);
  EXPECT_EQ(zero.commit_executions_per_round, 0.0);
}

TEST(WarpEntanglementEvidence, LaneDigitsAndOverWaiting) {
  std::array<double, 32> f{};
  f[0] = 0.05;
  f[1] = 0.1;
  f[2] = 0.99;
  f[3] = 1.0;
  EXPECT_EQ(we::lane_digits(f).substr(0, 5), "01990");
  EXPECT_EQ(we::lane_digits(f).size(), 32u);
  EXPECT_TRUE(we::over_waiting_observed(0.97, 0.12));
  EXPECT_TRUE(we::over_waiting_observed(0.40, 0.10));
  EXPECT_FALSE(we::over_waiting_observed(0.30, 0.10));
  EXPECT_FALSE(we::over_waiting_observed(0.05, 0.12));
}

// ---- CPU tests: paths, shapes and preconditions ----------------------------------------

TEST(WarpEntanglementShape, LanePaths) {
  EXPECT_EQ(we::path_count(we::one_path()), 1);
  EXPECT_TRUE(we::valid(we::one_path()));
  EXPECT_EQ(we::path_count(we::fully_diverged()), 32);
  EXPECT_TRUE(we::valid(we::fully_diverged()));
  for (int lane = 0; lane < 32; ++lane) EXPECT_EQ(we::fully_diverged().path[lane], lane);
  EXPECT_EQ(we::path_count(we::split_paths(4)), 4);
  EXPECT_EQ(we::split_paths(4).path[13], 1);
  EXPECT_THROW(we::split_paths(0), std::invalid_argument);
  EXPECT_THROW(we::split_paths(33), std::invalid_argument);
  we::LanePaths bad = we::one_path();
  bad.path[5] = -1;
  EXPECT_FALSE(we::valid(bad));
  bad.path[5] = 32;
  EXPECT_FALSE(we::valid(bad));
  bad.path[5] = 2;  // path 1 has no lane
  EXPECT_FALSE(we::valid(bad));
}

TEST(WarpEntanglementShape, BatchesRoundsAndZeroFill) {
  EXPECT_EQ(we::batch_elements(256), 4096u);
  EXPECT_EQ(we::shared_bytes(256), 49152u);  // 3 x 16 KB
  EXPECT_EQ(we::batch_elements(32) % 32, 0u);
  EXPECT_EQ(we::kAllowedPending, 1);
  EXPECT_EQ(we::batch_count(4097, 4096), 2u);
  EXPECT_EQ(we::batches_of_block(10, 3, 4), 2u);  // batches 3 and 7
  EXPECT_EQ(we::batches_of_block(2, 5, 8), 0u);
  EXPECT_EQ(we::commit_rounds(0), 1u);  // the prologue's round, an empty batch
  EXPECT_EQ(we::commit_rounds(7), 8u);
  EXPECT_EQ(we::zero_fill_bytes(10, 0), 0u);
  EXPECT_EQ(we::zero_fill_bytes(10, 2), 8u);   // elements 8 and 9 valid
  EXPECT_EQ(we::zero_fill_bytes(10, 3), 16u);  // past the end
}

TEST(WarpEntanglementShape, Names) {
  EXPECT_STREQ(we::name(CommitMode::converged), "converged");
  EXPECT_STREQ(we::name(CommitMode::diverged), "diverged");
  EXPECT_STREQ(we::name(CommitMode::diverged_syncwarp), "diverged+syncwarp");
  EXPECT_STREQ(we::name(CommitMode::diverged_no_syncwarp), "diverged, no syncwarp");
}

TEST(WarpEntanglementShape, RejectsBadLaunchesBeforeTouchingTheDevice) {
  // Fake device pointers: the launchers must throw before they could dereference them.
  const auto* in = reinterpret_cast<const std::uint32_t*>(std::uintptr_t{1} << 20);
  auto* out = reinterpret_cast<std::uint32_t*>(std::uintptr_t{2} << 20);
  const cuda::std::span<const std::uint32_t> src(in, 1000);
  const cuda::std::span<std::uint32_t> dst(out, 1000);
  const we::LanePaths paths = we::fully_diverged();
  we::LanePaths bad_paths = paths;
  bad_paths.path[0] = -1;
  const auto bad_mode = static_cast<CommitMode>(7);
  enum class Entry { launch, prepare, evidence };
  for (Entry entry : {Entry::launch, Entry::prepare, Entry::evidence}) {
    auto launch = [&](cuda::std::span<const std::uint32_t> i, cuda::std::span<std::uint32_t> o,
                      CommitMode m, const we::LanePaths& p, LaunchShape s) {
      if (entry == Entry::evidence) {
        (void)we::copy_and_compute_with_evidence(i, o, m, p, s, 0);
      } else if (entry == Entry::prepare) {
        (void)we::prepare_copy_and_compute(i, o, m, p, s);  // the checks, before any launch
      } else {
        we::copy_and_compute(i, o, m, p, s, 0);
      }
    };
    EXPECT_THROW(launch(src, dst.first(999), CommitMode::diverged, paths, {1, 256}),
                 std::invalid_argument);
    EXPECT_THROW(launch(src, dst, CommitMode::diverged, paths, {0, 256}), std::invalid_argument);
    EXPECT_THROW(launch(src, dst, CommitMode::diverged, paths, {1, 0}), std::invalid_argument);
    EXPECT_THROW(launch(src, dst, CommitMode::diverged, paths, {1, 100}), std::invalid_argument);
    EXPECT_THROW(launch(src, dst, CommitMode::diverged, paths, {1, 2048}), std::invalid_argument);
    EXPECT_THROW(launch(src.subspan(1), dst.subspan(1), CommitMode::diverged, paths, {1, 256}),
                 std::invalid_argument);
    EXPECT_THROW(launch(src, dst, CommitMode::diverged, bad_paths, {1, 256}),
                 std::invalid_argument);
    EXPECT_THROW(launch(src, dst, bad_mode, paths, {1, 256}), std::invalid_argument);
  }
  EXPECT_THROW(we::max_blocks_per_sm(CommitMode::converged, 100), std::invalid_argument);
}

TEST(WarpEntanglementShape, EmptyInputLaunchesNothing) {
  EXPECT_NO_THROW(
      we::copy_and_compute({}, {}, CommitMode::diverged, we::fully_diverged(), {1, 256}, 0));
  EXPECT_NO_THROW(
      we::prepare_copy_and_compute({}, {}, CommitMode::converged, we::one_path(), {1, 256})(0));
  const we::Evidence e = we::copy_and_compute_with_evidence({}, {}, CommitMode::diverged,
                                                            we::fully_diverged(), {1, 256}, 0);
  EXPECT_EQ(e.warps, 0u);
  EXPECT_EQ(e.commit_rounds, 0u);
}

// ---- CPU tests: what the compiler emitted -----------------------------------------------

/// The kernel compiled for `mode`, by its mangled template argument.
course::inspect::Function kernel_for(const course::inspect::PtxModule& module, CommitMode mode) {
  return course::inspect::kernel(module, "entanglement_kernelILNS_10CommitModeE" +
                                             std::to_string(static_cast<int>(mode)) + "E");
}

/// The lines of a PTX body with their positions, and where each label is.
struct PtxLines {
  std::vector<std::string> lines;
  std::map<std::string, std::size_t> labels;
  explicit PtxLines(const std::string& body) {
    std::size_t begin = 0;
    while (begin < body.size()) {
      std::size_t end = body.find('\n', begin);
      if (end == std::string::npos) end = body.size();
      lines.push_back(body.substr(begin, end - begin));
      begin = end + 1;
    }
    static const std::regex label(R"(^\s*(\$L__\w+):)");
    for (std::size_t i = 0; i < lines.size(); ++i) {
      std::smatch m;
      if (std::regex_search(lines[i], m, label)) labels[m[1]] = i;
    }
  }
};

using Loop = std::pair<std::size_t, std::size_t>;  // [label line, backward branch line]

/// Every loop of a PTX body: a label and a later branch back to it.
std::vector<Loop> loops_of(const PtxLines& ptx) {
  static const std::regex any_branch(R"(\bbra(\.uni)?\s+(\$L__\w+);)");
  std::vector<Loop> loops;
  for (std::size_t i = 0; i < ptx.lines.size(); ++i) {
    std::smatch m;
    if (std::regex_search(ptx.lines[i], m, any_branch)) {
      const auto target = ptx.labels.find(m[2]);
      if (target != ptx.labels.end() && target->second < i) loops.emplace_back(target->second, i);
    }
  }
  return loops;
}

/// The innermost loop around line `i`, or {0, number of lines} when none is.
Loop innermost_loop(const PtxLines& ptx, const std::vector<Loop>& loops, std::size_t i) {
  Loop innermost{0, ptx.lines.size()};
  for (const Loop& loop : loops) {
    if (loop.first <= i && i <= loop.second &&
        loop.second - loop.first < innermost.second - innermost.first) {
      innermost = loop;
    }
  }
  return innermost;
}

/// For every line holding `instruction`: whether it sits inside a branch of the innermost
/// loop around it, i.e. a conditional branch earlier in that loop jumps over it to a label
/// still inside the loop. That is `for (p ...) if (my_path == p) { ...; instruction; }`: the
/// instruction runs once per path, by that path's lanes only.
std::vector<bool> inside_a_branch_of_its_loop(const std::string& body,
                                              const std::string& instruction) {
  const PtxLines ptx(body);
  const std::vector<Loop> loops = loops_of(ptx);
  static const std::regex conditional(R"(@!?%p\d+\s+bra(\.uni)?\s+(\$L__\w+);)");
  std::vector<bool> result;
  for (std::size_t i = 0; i < ptx.lines.size(); ++i) {
    if (!course::inspect::uses(ptx.lines[i], instruction)) continue;
    const Loop loop = innermost_loop(ptx, loops, i);
    bool skipped = false;
    for (std::size_t j = loop.first; loop.second < ptx.lines.size() && j < i; ++j) {
      std::smatch m;
      if (std::regex_search(ptx.lines[j], m, conditional)) {
        const auto target = ptx.labels.find(m[2]);
        skipped = skipped || (target != ptx.labels.end() && target->second > i &&
                              target->second <= loop.second);
      }
    }
    result.push_back(skipped);
  }
  return result;
}

/// Whether every arrive-on stands with the commit before it: in the same innermost loop, with
/// no copy in between (so it is inside the per-path branch exactly when that commit is).
bool arrive_ons_follow_their_commits(const std::string& body, std::string& why) {
  const PtxLines ptx(body);
  const std::vector<Loop> loops = loops_of(ptx);
  std::size_t arrive_ons = 0;
  std::optional<std::size_t> last_commit;
  for (std::size_t i = 0; i < ptx.lines.size(); ++i) {
    const std::string& line = ptx.lines[i];
    if (course::inspect::uses(line, "cp.async.commit_group")) last_commit = i;
    if (course::inspect::uses(line, "cp.async.cg.shared.global")) last_commit.reset();
    if (!course::inspect::uses(line, "cp.async.mbarrier.arrive")) continue;
    ++arrive_ons;
    if (!last_commit) {
      why = "an arrive-on at PTX line " + std::to_string(i) + " follows a copy, not a commit";
      return false;
    }
    if (innermost_loop(ptx, loops, i) != innermost_loop(ptx, loops, *last_commit)) {
      why =
          "the arrive-on at PTX line " + std::to_string(i) + " is in another loop than its commit";
      return false;
    }
  }
  if (arrive_ons == 0) why = "no arrive-on";
  return arrive_ons > 0;
}

TEST(WarpEntanglementPtx, EveryKernelCopiesCommitsWaitsAndArrivesOn) {
  const auto modules = course::inspect::read_ptx_modules(course::testing::kernels_object_path());
  const auto targets = course::testing::ptx_targets();
  ASSERT_FALSE(targets.empty());
  for (const std::string& target : targets) {
    const auto& module = course::inspect::module_for(modules, target);
    ASSERT_EQ(course::inspect::ptx_kernels(module).size(), 4u) << "one kernel per mode, " << target;
    for (CommitMode mode : kModes) {
      const auto k = kernel_for(module, mode);
      const std::string where = std::string(we::name(mode)) + " in " + target;
      // The round (TODO 4 or 5) starts the copies; commit and arrive-on are TODO 3's, run
      // by the round.
      const std::string round = concerns_todo(round_todo(mode));
      const std::string commit = concerns_todos({3, round_todo(mode)});
      EXPECT_TRUE(course::inspect::uses(k.body, "cp.async.cg.shared.global")) << where << round;
      EXPECT_TRUE(course::inspect::uses(k.body, "cp.async.commit_group")) << where << commit;
      // wait_prior(1) before each batch (TODO 6), wait_prior(0) at the end.
      EXPECT_NE(k.body.find("cp.async.wait_group 1;"), std::string::npos)
          << where << concerns_todo(6);
      EXPECT_NE(k.body.find("cp.async.wait_group 0;"), std::string::npos) << where;
      EXPECT_TRUE(course::inspect::uses(k.body, "cp.async.mbarrier.arrive.noinc"))
          << where << commit;
      EXPECT_TRUE(course::inspect::uses(k.body, "mbarrier.init")) << where;
      // Inside braces in the PTX ({ .reg .pred ...; mbarrier.test_wait.parity ...}).
      EXPECT_NE(k.body.find("mbarrier.test_wait.parity.shared.b64"), std::string::npos) << where;
      // one_per_converged_group(), counted by TODO 3 right before the commit and arrive-on.
      EXPECT_TRUE(course::inspect::uses(k.body, "activemask")) << where << commit;
      EXPECT_TRUE(course::inspect::uses(k.body, "bar.sync")) << where << ": no __syncthreads";
      EXPECT_FALSE(course::inspect::uses(k.body, "cp.async.bulk")) << where << round;
    }
  }
}

TEST(WarpEntanglementPtx, OnlyTheDivergedKernelCommitsAndArrivesInsideTheBranch) {
  const auto modules = course::inspect::read_ptx_modules(course::testing::kernels_object_path());
  for (const std::string& target : course::testing::ptx_targets()) {
    const auto& module = course::inspect::module_for(modules, target);
    for (CommitMode mode : kModes) {
      const std::string body = kernel_for(module, mode).body;
      const std::string where = std::string(we::name(mode)) + " in " + target;
      const std::string commit = concerns_todos({3, round_todo(mode)});
      const std::vector<bool> inside = inside_a_branch_of_its_loop(body, "cp.async.commit_group");
      ASSERT_FALSE(inside.empty()) << where << ": no commit" << commit;
      const bool expected = mode == CommitMode::diverged;
      for (bool in : inside) {
        EXPECT_EQ(in, expected) << where
                                << (expected ? ": the commit should sit inside the per-path branch"
                                             : ": the commit should sit outside every branch")
                                << concerns_todo(round_todo(mode));
      }
      std::string why;
      EXPECT_TRUE(arrive_ons_follow_their_commits(body, why)) << where << ": " << why << commit;
    }
  }
}

TEST(WarpEntanglementPtx, SyncwarpStandsBetweenTheBranchAndTheCommit) {
  const auto modules = course::inspect::read_ptx_modules(course::testing::kernels_object_path());
  for (const std::string& target : course::testing::ptx_targets()) {
    const auto& module = course::inspect::module_for(modules, target);
    for (CommitMode mode : kModes) {
      const std::string body = kernel_for(module, mode).body;
      const std::string where = std::string(we::name(mode)) + " in " + target;
      if (mode != CommitMode::diverged_syncwarp) {
        EXPECT_FALSE(course::inspect::uses(body, "bar.warp.sync"))
            << where << concerns_todo(round_todo(mode));
        continue;
      }
      // Every commit: the last copy before it is followed by a __syncwarp() before it.
      const PtxLines ptx(body);
      std::size_t last_copy = 0, last_syncwarp = 0, commits = 0;
      for (std::size_t i = 0; i < ptx.lines.size(); ++i) {
        if (course::inspect::uses(ptx.lines[i], "cp.async.cg.shared.global")) last_copy = i;
        if (course::inspect::uses(ptx.lines[i], "bar.warp.sync")) last_syncwarp = i;
        if (course::inspect::uses(ptx.lines[i], "cp.async.commit_group")) {
          ++commits;
          EXPECT_GT(last_syncwarp, last_copy)
              << where << ": no __syncwarp() between the copies and the commit at PTX line " << i
              << concerns_todo(5);
        }
      }
      EXPECT_GT(commits, 0u) << where << concerns_todos({3, 5});
    }
  }
}

TEST(WarpEntanglementSass, LdgstsGroupsAndArriveOnInMachineCode) {
  const std::string cuobjdump = course::testing::cuobjdump_path();
  if (cuobjdump.empty()) GTEST_SKIP() << "cuobjdump not found: SASS checks need it";
  const std::string listing = course::inspect::run_command(
      "'" + cuobjdump + "' -sass -arch sm_90 '" + course::testing::kernels_object_path() + "'");
  const auto functions = course::inspect::sass_functions(listing);
  ASSERT_EQ(functions.size(), 4u) << listing.substr(0, 2000);
  for (const auto& f : functions) {
    // The converged kernel (CommitMode 0) runs TODO 4's round, the others TODO 5's.
    const int round = f.name.find("CommitModeE0E") != std::string::npos ? 4 : 5;
    // cp.async -> LDGSTS (the round's copies), commit_group -> LDGDEPBAR and
    // cp.async.mbarrier.arrive -> ARRIVES (TODO 3, run by the round), wait_group -> DEPBAR
    // (TODO 6).
    const std::pair<const char*, std::string> expected_ops[] = {
        {"LDGSTS", concerns_todo(round)},
        {"LDGDEPBAR", concerns_todos({3, round})},
        {"DEPBAR", concerns_todo(6)},
        {"ARRIVES", concerns_todos({3, round})}};
    for (const auto& [op, todos] : expected_ops) {
      EXPECT_TRUE(course::inspect::uses(f.body, op)) << f.name << " lacks " << op << todos;
    }
    for (const char* op : {"UBLKCP", "UTMALDG"}) {
      EXPECT_FALSE(course::inspect::uses(f.body, op))
          << f.name << " uses " << op << concerns_todo(round);
    }
  }
}

// ---- GPU tests: every element, and what holds whether or not the hardware entangles -----

const std::vector<std::size_t> kAwkwardSizes = {1, 31, 33, 4095, 4096, 4097, 16385, 65537, 1000003};

/// What the counters of one instrumented launch must add up to, from the launch alone.
struct ExpectedCounts {
  unsigned long long waits = 0;          // one per thread per owned batch
  unsigned long long own_checked = 0;    // threads whose first element lies in the batch
  unsigned long long newer_checked = 0;  // waits followed by a full batch k + 1 of the block
  unsigned long long warps = 0;
  unsigned long long commit_rounds = 0;
  unsigned long long arrive_rounds = 0;
};

ExpectedCounts expected_counts(std::size_t n, LaunchShape shape) {
  const std::size_t batch = we::batch_elements(shape.threads_per_block);
  const std::size_t batches = we::batch_count(n, batch);
  const unsigned long long threads = shape.threads_per_block;
  const unsigned long long warps = threads / 32;
  ExpectedCounts e;
  e.warps = warps * shape.blocks;
  for (int b = 0; b < shape.blocks; ++b) {
    const std::size_t mine = we::batches_of_block(batches, b, shape.blocks);
    e.commit_rounds += warps * we::commit_rounds(mine);
    e.arrive_rounds +=
        warps * std::min<std::size_t>(we::commit_rounds(mine), we::kMaxCountedRounds);
    for (std::size_t k = 0; k < mine; ++k) {
      const std::size_t global = b + k * shape.blocks;
      const std::size_t count = std::min(batch, n - global * batch);
      e.waits += threads;
      e.own_checked += std::min<unsigned long long>(threads, (count + 3) / 4);
      if (k + 1 < mine && n - (global + shape.blocks) * batch >= batch) e.newer_checked += threads;
    }
  }
  return e;
}

/// Runs `mode` uninstrumented and instrumented on hash-filled input of `n` elements into a
/// poisoned output, compares every element each time, and checks every invariant. A failure
/// names the TODOs of the kernel it concerns: the values and the waits depend on the commit
/// (TODO 3), the mode's round (TODO 4 or 5) and the wait (TODO 6); the counts of commit and
/// arrive-on executions and of arrivals on TODO 3 and the round.
::testing::AssertionResult runs_correctly(CommitMode mode, const we::LanePaths& paths,
                                          LaunchShape shape, std::size_t n) {
  const std::string what = std::string(we::name(mode)) + ", " +
                           std::to_string(we::path_count(paths)) + " paths, " +
                           std::to_string(shape.blocks) + "x" +
                           std::to_string(shape.threads_per_block) + ", n=" + std::to_string(n);
  const std::string kernel_todos = concerns_todos({3, round_todo(mode), 6});
  const std::string commit_todos = concerns_todos({3, round_todo(mode)});
  course::DeviceBuffer<std::uint32_t> in(n), out(n);
  const auto seed = static_cast<std::uint32_t>(n * 4 + static_cast<int>(mode));
  course::fill_hash(in.span(), seed);
  const auto host_in = course::to_host(in.cspan());
  std::vector<std::uint32_t> expected(n);
  course::workload::reference(host_in, expected);

  course::poison(out.data(), out.bytes());
  we::copy_and_compute(in.cspan(), out.span(), mode, paths, shape, 0);
  COURSE_CHECK(cudaDeviceSynchronize());
  auto c = course::compare_exact<std::uint32_t>(expected, course::to_host(out.cspan()));
  if (!c.ok()) return ::testing::AssertionFailure() << what << ": " << c.summary() << kernel_todos;

  course::poison(out.data(), out.bytes());
  COURSE_CHECK(cudaDeviceSynchronize());
  const we::Evidence e =
      we::copy_and_compute_with_evidence(in.cspan(), out.span(), mode, paths, shape, 0);
  c = course::compare_exact<std::uint32_t>(expected, course::to_host(out.cspan()));
  if (!c.ok()) {
    return ::testing::AssertionFailure()
           << what << ", instrumented: " << c.summary() << kernel_todos;
  }
  std::vector<std::uint32_t> original(n);
  course::fill_hash_host(original, seed);
  if (course::to_host(in.cspan()) != original) {
    return ::testing::AssertionFailure() << what << ": the input changed" << kernel_todos;
  }

  const ExpectedCounts x = expected_counts(n, shape);
  unsigned long long waits = 0, own_checked = 0, own_landed = 0, newer_checked = 0;
  for (int lane = 0; lane < 32; ++lane) {
    const we::LaneEvidence& l = e.lanes[lane];
    if (l.waits != x.waits / 32) {
      return ::testing::AssertionFailure() << what << ": lane " << lane << " waited " << l.waits
                                           << " times, not " << x.waits / 32 << kernel_todos;
    }
    if (l.newer_landed > l.newer_checked) {
      return ::testing::AssertionFailure() << what << ": more landed than checked" << kernel_todos;
    }
    waits += l.waits;
    own_checked += l.own_checked;
    own_landed += l.own_landed;
    newer_checked += l.newer_checked;
  }
  // The cp.async contract: wait_prior(N) returns only after all but this thread's N newest
  // batches landed, entangled or not.
  if (own_checked != x.own_checked || own_landed != own_checked) {
    return ::testing::AssertionFailure()
           << what << ": " << own_landed << " of " << own_checked << " waits (expected "
           << x.own_checked << ") returned after the thread's own batch had landed" << kernel_todos;
  }
  if (newer_checked != x.newer_checked) {
    return ::testing::AssertionFailure()
           << what << ": " << newer_checked << " next batches checked, expected " << x.newer_checked
           << kernel_todos;
  }
  if (e.warps != x.warps || e.commit_rounds != x.commit_rounds ||
      e.arrive_rounds != x.arrive_rounds || e.arrivals_expected != 32 * x.arrive_rounds) {
    return ::testing::AssertionFailure()
           << what << ": warps " << e.warps << "/" << x.warps << ", commit rounds "
           << e.commit_rounds << "/" << x.commit_rounds << ", arrive rounds " << e.arrive_rounds
           << "/" << x.arrive_rounds << kernel_todos;
  }
  // Each round runs the commit and the arrive-on at least once and at most 32 times per
  // warp, whatever the convergence.
  if (e.commit_executions < e.commit_rounds || e.commit_executions > 32 * e.commit_rounds ||
      e.arrive_executions < e.arrive_rounds || e.arrive_executions > 32 * e.arrive_rounds) {
    return ::testing::AssertionFailure()
           << what << ": " << e.commit_executions << " commit and " << e.arrive_executions
           << " arrive-on executions for " << e.commit_rounds << " rounds" << commit_todos;
  }
  // Every executed arrive-on delivers at least one arrival, and no thread more than one.
  if (e.arrivals_measured < e.arrive_executions || e.arrivals_measured > e.arrivals_expected) {
    return ::testing::AssertionFailure()
           << what << ": the counting barriers received " << e.arrivals_measured
           << " arrivals from " << e.arrive_executions << " arrive-on executions (at most "
           << e.arrivals_expected << ")" << commit_todos;
  }
  return ::testing::AssertionSuccess();
}

using Case = std::tuple<CommitMode, int, LaunchShape>;  // mode, paths (lane % paths), shape

class GpuWarpEntanglement : public course::testing::GpuTestWithParam<Case> {};

we::LanePaths paths_of(int paths) {
  return paths == 32 ? we::fully_diverged() : we::split_paths(paths);
}

TEST_P(GpuWarpEntanglement, EveryElementAndEveryInvariant) {
  const auto [mode, paths, shape] = GetParam();
  for (std::size_t n : kAwkwardSizes) {
    ASSERT_TRUE(runs_correctly(mode, paths_of(paths), shape, n));
  }
}

std::string mode_tag(CommitMode mode) {
  switch (mode) {
    case CommitMode::converged:
      return "converged";
    case CommitMode::diverged:
      return "diverged";
    case CommitMode::diverged_syncwarp:
      return "syncwarp";
    case CommitMode::diverged_no_syncwarp:
      return "no_syncwarp";
  }
  return "unknown";
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const auto [mode, paths, shape] = info.param;
  return mode_tag(mode) + "_" + std::to_string(paths) + "paths_" + std::to_string(shape.blocks) +
         "x" + std::to_string(shape.threads_per_block);
}

const auto kShapes = ::testing::Values(LaunchShape{1, 32}, LaunchShape{3, 96}, LaunchShape{7, 256},
                                       LaunchShape{132, 256}, LaunchShape{2, 512});

INSTANTIATE_TEST_SUITE_P(Converged, GpuWarpEntanglement,
                         ::testing::Combine(::testing::Values(CommitMode::converged),
                                            ::testing::Values(32), kShapes),
                         case_name);
INSTANTIATE_TEST_SUITE_P(Diverged, GpuWarpEntanglement,
                         ::testing::Combine(::testing::Values(CommitMode::diverged),
                                            ::testing::Values(1, 4, 32), kShapes),
                         case_name);
INSTANTIATE_TEST_SUITE_P(AfterTheBranch, GpuWarpEntanglement,
                         ::testing::Combine(::testing::Values(CommitMode::diverged_syncwarp,
                                                              CommitMode::diverged_no_syncwarp),
                                            ::testing::Values(4, 32), kShapes),
                         case_name);

class GpuWarpEntanglementLimits : public course::testing::GpuTest {};

TEST_F(GpuWarpEntanglementLimits, MoreRoundsThanTheCounterCounts) {
  // One warp, 512-element batches: 5000 batches, so 5001 rounds, of which the counting
  // barrier counts kMaxCountedRounds (its expected count must stay below 2^20).
  const std::size_t n = 5000 * we::batch_elements(32) - 7;
  ASSERT_GT(we::commit_rounds(we::batch_count(n, we::batch_elements(32))),
            static_cast<std::size_t>(we::kMaxCountedRounds));
  EXPECT_TRUE(runs_correctly(CommitMode::diverged, we::split_paths(4), {1, 32}, n));
  EXPECT_TRUE(runs_correctly(CommitMode::converged, we::one_path(), {1, 32}, n));
}

TEST_F(GpuWarpEntanglementLimits, ArbitraryPathsPerLane) {
  // Paths in an order unrelated to the lanes, some paths with one lane, some with many.
  we::LanePaths paths;
  for (int lane = 0; lane < 32; ++lane) paths.path[lane] = (lane * 7 + 3) % 5;
  ASSERT_TRUE(we::valid(paths));
  for (CommitMode mode : kModes) EXPECT_TRUE(runs_correctly(mode, paths, {5, 64}, 65537));
}

TEST_F(GpuWarpEntanglementLimits, TheConvergedRoundClosesOneBatchEveryRound) {
  // TODO 4, the bug hunt. A converged warp executes the commit and the arrive-on once per
  // round, the rounds past a block's last batch included (they close empty batches), and its
  // counting barrier receives one arrival per thread and counted round. A round that closes
  // no batch leaves the wait before the block's last batch one batch short, and the barrier
  // short of 32 arrivals: lane 0's bounded wait (evidence::count_arrivals) gives up after
  // about 2.5 ms and counts the shortfall, so the kernel ends and the test reports it.
  for (const LaunchShape shape : {LaunchShape{1, 32}, LaunchShape{3, 96}, LaunchShape{7, 256}}) {
    for (std::size_t n : {std::size_t{1}, std::size_t{4097}, std::size_t{65537}}) {
      const std::string what = "converged, " + std::to_string(shape.blocks) + "x" +
                               std::to_string(shape.threads_per_block) +
                               ", n=" + std::to_string(n);
      course::DeviceBuffer<std::uint32_t> in(n), out(n);
      course::fill_hash(in.span(), static_cast<std::uint32_t>(n));
      const we::Evidence e = we::copy_and_compute_with_evidence(
          in.cspan(), out.span(), CommitMode::converged, we::one_path(), shape, 0);
      EXPECT_GE(e.commit_executions, e.commit_rounds)
          << what << ": the warps executed the commit " << e.commit_executions << " times in "
          << e.commit_rounds << " (warp, round) pairs: some round closed no batch"
          << concerns_todo(4);
      EXPECT_EQ(e.arrivals_measured, e.arrivals_expected)
          << what << ": the counting barriers received " << e.arrivals_measured << " of "
          << e.arrivals_expected << " arrivals, one per thread and counted round (lane 0's "
          << "bounded wait ran out and counted the shortfall)" << concerns_todo(4);
      unsigned long long own_checked = 0, own_landed = 0;
      for (const we::LaneEvidence& l : e.lanes) {
        own_checked += l.own_checked;
        own_landed += l.own_landed;
      }
      EXPECT_EQ(own_landed, own_checked)
          << what << ": " << own_checked - own_landed << " of " << own_checked
          << " waits returned before the thread's own batch had landed" << concerns_todo(4);
    }
  }
}

TEST_F(GpuWarpEntanglementLimits, EveryModeFitsOnAnSm) {
  for (CommitMode mode : kModes) {
    EXPECT_GE(we::max_blocks_per_sm(mode, 256), 1) << we::name(mode);
    EXPECT_GE(we::max_blocks_per_sm(mode, 32), we::max_blocks_per_sm(mode, 256)) << we::name(mode);
  }
}

}  // namespace
