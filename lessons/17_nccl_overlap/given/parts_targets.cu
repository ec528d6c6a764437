// Lesson 17's driver, the targets (read-only): each layer's best overlapped run (of 2 or more
// chunks, checked) against its sequential run and against lesson 14's engine bound, and the
// bound again with the GEMM as slow as it was measured beside a collective.
#include <iostream>
#include <string>

#include "course/harness.h"
#include "course/table.h"
#include "nccl_overlap_driver.h"

namespace nccl_overlap::driver {
namespace {

constexpr double kMinSpeedup = 1.25;  // overlapped vs sequential
constexpr double kMaxOfBound = 1.15;  // overlapped vs the engine bound

}  // namespace

void add_layer_targets(course::Harness& harness, const LayerResults& results,
                       double default_slowdown) {
  for (const bool gather_layer : {true, false}) {
    const LayerResult& r = results.at(gather_layer);
    const std::string layer = layer_name(gather_layer);
    if (r.best == 0) {
      std::cout << "  (no " << layer
                << " target: the sequential run and an overlapped run of 2 "
                   "or more chunks must pass their checks)\n";
      continue;
    }
    const double ms = r.ms.at(r.best), bound = r.bound.at(r.best);
    if (default_slowdown > 0) {  // the model with the GEMM as slow as it is beside a collective
      model::StageTimes slowed = r.times.at(r.best);
      slowed.kernel *= default_slowdown;
      std::cout << "  " << layer << ", " << course::counted(r.best, "chunk") << ": engine bound "
                << course::fixed(bound, 4) << " ms; with the GEMM "
                << course::fixed(default_slowdown, 2) << " x slower (as beside a collective) "
                << course::fixed(model::pipeline_bound(r.best, slowed), 4) << " ms; measured "
                << course::fixed(ms, 4) << " ms\n";
    }
    const std::string who = layer + " overlapped (" + course::counted(r.best, "chunk") + ")";
    harness.judged_target(who + " >= " + course::fixed(kMinSpeedup, 2) +
                              " x sequential (sequential time / overlapped time)",
                          r.sequential_ms / ms >= kMinSpeedup, r.sequential_ms / ms);
    harness.judged_target(who + " <= " + course::fixed(kMaxOfBound, 2) +
                              " x the engine bound (overlapped time / bound)",
                          ms / bound <= kMaxOfBound, ms / bound);
  }
}

}  // namespace nccl_overlap::driver
