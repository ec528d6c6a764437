// Lesson 07, the sweeps of the driver (read-only; producer_consumer_parts.h says what each
// does). Rows go to the harness, which prints them and writes the sweep CSV.
#include <iostream>
#include <string>

#include "producer_consumer_parts.h"

namespace producer_consumer::parts {

std::string batch_kilobytes() { return std::to_string(kBatchBytes / 1024) + " KB"; }

void run_warp_sweep(course::Harness& harness, course::workload::Problem& w, Partition partition,
                    int stages, const course::DeviceSummary& gpu) {
  const int blocks = gpu.sm_count;
  for (int producers : kSweepProducerWarps) {
    for (int consumers : kSweepConsumerWarps) {
      const Config config{partition, stages, producers, consumers, kDefaultBatchVectors};
      const std::string label = std::to_string(producers) + "p" + std::to_string(consumers) + "c";
      if (max_blocks_per_sm(config) < 1) {
        std::cout << "  warp sweep, " << label << ": skipped, one block does not fit\n";
        continue;
      }
      harness.sweep(
          "warps",
          {{"partition", name(partition)},
           {"stages", std::to_string(stages)},
           {"producer_warps", std::to_string(producers)},
           {"consumer_warps", std::to_string(consumers)},
           {"threads_per_block", std::to_string(threads_per_block(config))},
           {"copies_per_producer_thread", std::to_string(copies_per_producer_thread(config))},
           {"blocks", std::to_string(blocks)}},
          w.checked(label, prepare_copy_and_compute(w.in.cspan(), w.out.span(), config, blocks)));
    }
  }
  std::cout << "Warp sweep: Pp Cc = P producer warps + C consumer warps, " << stages
            << " stages of " << batch_kilobytes() << ", " << name(partition)
            << " partition, one block per SM (" << blocks << " blocks)\n";
}

void run_every_stage_count(course::Harness& harness, course::workload::Problem& w,
                           Partition table_partition, int table_stages,
                           const course::DeviceSummary& gpu) {
  for (Partition p : {Partition::role, Partition::producer_count}) {
    for (int stages = kMinStages; stages <= kMaxStages; ++stages) {
      if (p == table_partition && stages == table_stages) continue;  // the main table ran it
      const Config config{p, stages, 1, 8, kDefaultBatchVectors};    // 1p8c
      const std::string label = std::string(name(p)) + ", " + std::to_string(stages) + " stages";
      if (max_blocks_per_sm(config) < 1) {
        std::cout << "  stages (--quick), " << label << ": skipped, one block does not fit\n";
        continue;
      }
      harness.sweep(
          "stages (--quick)", {{"partition", name(p)}, {"stages", std::to_string(stages)}},
          w.checked(label,
                    prepare_copy_and_compute(w.in.cspan(), w.out.span(), config, gpu.sm_count)));
    }
  }
}

}  // namespace producer_consumer::parts
