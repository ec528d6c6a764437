// Lesson 17's driver, the timeline (read-only): both layers, sequential and overlapped at the
// plan's timeline chunk count, with events around every operation (lesson 14's Timeline) beside
// the engine model's schedule of the same stage times; rank 0 writes them to FILE_timeline.csv
// with --csv (tools/plot_timeline.py draws it).
#include <iostream>
#include <string>
#include <vector>

#include "course/device.h"
#include "nccl_overlap_driver.h"

namespace nccl_overlap::driver {

void write_timeline(Part2& p2, const course::DeviceSummary& gpu, const Plan& plan,
                    const LayerResults& results) {
  const model::Gpu engines = model::current_gpu(gpu.name + " (collective + SM engines)", 2, 8);
  const Layers& layers = p2.layers;
  const int tc = plan.timeline_chunks;
  std::vector<ot::TimelineRun> runs;
  for (const bool gather_layer : {true, false}) {
    for (const bool overlapped : {false, true}) {
      Timeline timeline;
      const auto& list = overlapped ? p2.chunks(gather_layer, tc) : p2.whole(gather_layer);
      const std::string order = std::string(gather_layer ? "all-gather" : "reduce-scatter") +
                                (overlapped ? " overlapped" : " sequential");
      p2.checked(gather_layer, order + " (timeline)", [&](cudaStream_t st) {
        timeline.start(st);
        if (gather_layer) {
          overlapped ? issue_allgather_overlapped(layers, list, p2.ovl, st, &timeline)
                     : issue_allgather_sequential(layers, list, st, &timeline);
        } else {
          overlapped ? issue_reduce_scatter_overlapped(layers, list, p2.ovl, st, &timeline)
                     : issue_reduce_scatter_sequential(layers, list, st, &timeline);
        }
      });
      const model::StageTimes& t = results.at(gather_layer).times.at(tc);
      runs.push_back(
          {order, timeline.read(),
           model::simulate(
               model::issue_order(overlapped ? ot::Order::per_chunk : ot::Order::sequential, tc, t),
               engines)});
    }
  }
  if (!plan.options.csv.empty() && plan.rank == 0) {
    const std::string path = ot::timeline_csv_path(plan.options.csv);
    ot::write_timeline_csv(path, kLesson, gpu.name, tc, runs);
    std::cout << "  wrote " << path
              << " (tools/plot_timeline.py; the all-gather is drawn as "
                 "H2D, the reduce-scatter as D2H)\n";
  }
}

}  // namespace nccl_overlap::driver
