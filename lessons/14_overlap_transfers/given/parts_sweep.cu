// Lesson 14's driver, the sweep and the targets judged on it (overlap_driver.h): every chunk
// count of the plan, both async orders checked and timed beside the engine-queue model's
// prediction from stage times measured in the same run, and the bound no order can beat.
// Read-only.
#include <string>

#include "course/harness.h"
#include "course/table.h"
#include "overlap_driver.h"

namespace overlap_transfers::driver {
namespace {

// The lesson's two targets: the best async run of the sweep against sequential, and
// against the model's bound computed from the same run's stage times.
constexpr double kMinSpeedup = 1.8;
constexpr double kMaxOfBound = 1.10;

}  // namespace

SweepResult run_sweep(Experiment& x) {
  SweepResult r;
  for (int c : x.plan.sweep) {
    const model::StageTimes t{x.stage_ms(Stage::h2d, c), x.stage_ms(Stage::kernel, c),
                              x.stage_ms(Stage::d2h, c)};
    if (c == x.plan.chunks) r.at_chunks = t;
    r.bound_of[c] = model::pipeline_bound(c, t);
    // The model's input rides along in the sweep CSV: one chunk's stage times.
    const auto params = [&](const std::string& order) {
      return course::SweepParams{{"chunks", std::to_string(c)},
                                 {"order", order},
                                 {"h2d_ms", course::fixed(t.h2d, 6)},
                                 {"kernel_ms", course::fixed(t.kernel, 6)},
                                 {"d2h_ms", course::fixed(t.d2h, 6)}};
    };
    for (Order order : kAsyncOrders) {
      const std::string name =
          std::string(ot::order_name(order)) + ", " + course::counted(c, "chunk");
      const course::Launch launch = ot::prepare_transfer_and_compute(order, x.job, c, x.streams);
      const std::string check = x.checked_run(name, launch);
      const double ms = x.time_ms(launch);
      x.harness.record_sweep("chunks", params(ot::order_name(order)), name, ms, x.bytes_both_ways(),
                             check);
      x.harness.record_sweep("model", params(ot::order_name(order)), "model " + name,
                             model::predict(x.this_gpu, order, c, t), x.bytes_both_ways(), "-");
      if (c >= 2 && ms < r.best_ms) {
        r.best_ms = ms;
        r.best_chunks = c;
        r.best_name = name;
      }
    }
    x.harness.record_sweep("model", params("bound"),
                           "bound (any order), " + course::counted(c, "chunk"), r.bound_of[c],
                           x.bytes_both_ways(), "-");
  }
  return r;
}

void add_targets(Experiment& x, const SweepResult& sweep) {
  const double sequential_rate = x.harness.rate_of("sequential");
  if (sweep.best_chunks >= 2 && sweep.bound_of.at(sweep.best_chunks) > 0 && sequential_rate > 0) {
    const double speedup =
        course::gigabytes_per_second(x.bytes_both_ways(), sweep.best_ms) / sequential_rate;
    const double of_bound = sweep.best_ms / sweep.bound_of.at(sweep.best_chunks);
    const std::string who = "best async (" + sweep.best_name + ")";
    x.harness.judged_target(
        who + " >= " + course::fixed(kMinSpeedup, 2) + " x faster than sequential",
        speedup >= kMinSpeedup, speedup);
    x.harness.judged_target(who + " <= " + course::fixed(kMaxOfBound, 2) + " x the model's bound",
                            of_bound <= kMaxOfBound, of_bound);
  }
}

}  // namespace overlap_transfers::driver
