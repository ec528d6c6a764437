// Lesson 14's driver, the timeline (overlap_driver.h): one V1 and one V2 run at the plan's
// chunk count with an event before and after every operation, beside the engine-queue
// model's schedule of the same order; FILE_timeline.csv with --csv (tools/plot_timeline.py).
// Read-only.
#include <iostream>
#include <string>
#include <vector>

#include "course/table.h"
#include "overlap_driver.h"

namespace overlap_transfers::driver {

void run_timeline(Experiment& x, const model::StageTimes& at_chunks) {
  const int chunks = x.plan.chunks;
  std::vector<ot::TimelineRun> runs;
  for (Order order : kAsyncOrders) {
    const std::string name =
        std::string(ot::order_name(order)) + ", " + course::counted(chunks, "chunk");
    ot::Timeline timeline;
    const std::string check = x.checked_run(
        name, ot::prepare_transfer_and_compute(order, x.job, chunks, x.streams, &timeline));
    runs.push_back({ot::order_name(order), timeline.read(),
                    model::simulate(model::issue_order(order, chunks, at_chunks), x.this_gpu)});
    x.harness.record_sweep("timeline",
                           {{"chunks", std::to_string(chunks)}, {"order", ot::order_name(order)}},
                           name + ", events around every operation",
                           ot::last_end_ms(runs.back().measured), x.bytes_both_ways(), check);
  }
  if (!x.plan.options.csv.empty()) {
    const std::string path = ot::timeline_csv_path(x.plan.options.csv);
    ot::write_timeline_csv(path, "14_overlap_transfers", x.gpu.name, chunks, runs);
    std::cout << "  wrote " << path << " (tools/plot_timeline.py)\n";
  }
}

}  // namespace overlap_transfers::driver
