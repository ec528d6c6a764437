// Lesson 10, the sweeps of the driver (read-only; tma_bulk_copy_parts.h says what they do).
// Rows go to the harness, which prints them and writes the sweep CSV.
#include <iostream>
#include <string>
#include <utility>

#include "course/launch.h"
#include "pipeline_multi_stage.cuh"
#include "tma_bulk_copy_parts.h"

namespace tma_bulk_copy::parts {
namespace {

/// One point of a sweep, at one block per SM: the TMA pipeline or lesson 06's primitives at
/// `s` stages of `vectors` vectors per thread (skipped, and said so, when it does not fit).
void sweep_point(course::Harness& harness, Workload& w, const course::DeviceSummary& gpu,
                 const std::string& sweep, bool tma, int s, int vectors) {
  const register_staged::LaunchShape one_per_sm{gpu.sm_count, kThreads};
  const std::string interface = tma ? "pipeline" : "primitives";
  const std::string label = std::string(tma ? "tma-pipeline" : "06-primitives") + ", " +
                            std::to_string(s) + " stages, " + kilobytes(batch_bytes(vectors));
  const Config c{Variant::pipeline, s, vectors};
  const pipeline_multi_stage::Config c06{pipeline_multi_stage::Interface::primitives, s, vectors};
  const int fits =
      tma ? max_blocks_per_sm(c, kThreads) : pipeline_multi_stage::max_blocks_per_sm(c06, kThreads);
  if (fits < 1) {
    std::cout << "  " << sweep << " sweep, " << label << ": skipped, does not fit one SM\n";
    return;
  }
  course::Launch launch = tma ? prepare_copy_and_compute(w.in.cspan(), w.out.span(), c, one_per_sm)
                              : pipeline_multi_stage::prepare_copy_and_compute(
                                    w.in.cspan(), w.out.span(), c06, one_per_sm);
  harness.sweep(sweep,
                {{"interface", interface},
                 {"stages", std::to_string(s)},
                 {"vectors_per_thread", std::to_string(vectors)},
                 {"batch_bytes", std::to_string(batch_bytes(vectors))},
                 {"threads_per_block", std::to_string(kThreads)},
                 {"blocks", std::to_string(one_per_sm.blocks)}},
                w.checked(label, std::move(launch)));
}

}  // namespace

void run_sweeps(course::Harness& harness, Workload& w, const course::DeviceSummary& gpu,
                int stages) {
  for (bool tma : {true, false}) {
    for (int s = kMinStages; s <= kMaxStages; ++s) {
      sweep_point(harness, w, gpu, "stages", tma, s, kVectorsPerThread);
    }
  }
  for (bool tma : {true, false}) {
    for (int vectors : kSweepVectors) {
      sweep_point(harness, w, gpu, "granularity", tma, stages, vectors);
    }
  }
  std::cout << "Sweeps: one block per SM (" << gpu.sm_count << " blocks of " << kThreads
            << " consumer threads; the TMA pipeline adds a producer warp); interface "
               "'pipeline' is this lesson's TMA pipeline, 'primitives' lesson 06's kernel\n";
}

}  // namespace tma_bulk_copy::parts
