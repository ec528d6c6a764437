// Lesson 17's driver, what overlap costs (read-only): the reduce-scatter layer's GEMM alone,
// then beside back-to-back all-gathers with each maxCTAs of the plan. The collective's blocks
// take SMs the GEMM would have used; the slowdown measured here also feeds the targets' bound.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "course/check.h"
#include "course/harness.h"
#include "course/table.h"
#include "nccl_overlap_driver.h"

namespace nccl_overlap::driver {
namespace {

/// A timing event (RAII).
class Event {
 public:
  Event() { COURSE_CHECK(cudaEventCreate(&event_)); }
  ~Event() { cudaEventDestroy(event_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

/// The GEMM's median time while `repeats` all-gathers run beside it on the overlap stream.
double gemm_beside_all_gathers(course::Harness& harness, Part2& p2, const Layers& l,
                               const LayerChunk& gather, const Gemm& gemm, int repeats) {
  const cudaStream_t stream = harness.stream();
  Event e0, g0, g1;
  std::vector<double> samples;
  for (int it = 0; it < harness.warmup() + harness.iters(); ++it) {
    COURSE_CHECK(cudaEventRecord(e0.get(), stream));
    COURSE_CHECK(cudaStreamWaitEvent(p2.ovl.comm, e0.get(), 0));
    for (int i = 0; i < repeats; ++i) all_gather(l, gather, p2.ovl.comm);
    COURSE_CHECK(cudaEventRecord(g0.get(), stream));
    gemm(stream);
    COURSE_CHECK(cudaEventRecord(g1.get(), stream));
    COURSE_CHECK(cudaEventRecord(p2.ovl.comm_done, p2.ovl.comm));
    COURSE_CHECK(cudaStreamWaitEvent(stream, p2.ovl.comm_done, 0));
    COURSE_CHECK(cudaStreamSynchronize(stream));
    float ms = 0;
    COURSE_CHECK(cudaEventElapsedTime(&ms, g0.get(), g1.get()));
    if (it >= harness.warmup()) samples.push_back(ms);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

}  // namespace

double measure_sm_contention(course::Harness& harness, Part2& p2, const Plan& plan,
                             ncclComm_t comm) {
  double default_slowdown = 0;
  const Gemm& gemm = p2.rs_whole.front().gemm;     // the reduce-scatter layer's whole GEMM
  const LayerChunk& gather = p2.ag_whole.front();  // the all-gather layer's whole all-gather
  const double gemm_alone = time_ms(harness, gemm);
  const double flops = reduce_scatter_layer_flops(p2.shape);
  std::cout << "\nSM contention: the " << p2.m << " x " << p2.shape.n_out << " x "
            << p2.shape.k_local << " GEMM alone " << course::fixed(gemm_alone, 4) << " ms ("
            << course::fixed(flops / (gemm_alone * 1e9), 1)
            << " TFLOP/s), beside back-to-back all-gathers of X:\n";
  const double bus_bytes = collective_bytes(Collective::all_gather, gather.recv_count, plan.ranks) *
                           bus_factor(Collective::all_gather, plan.ranks);
  for (int ctas : plan.max_ctas) {
    ncclComm_t raw = comm;
    Comm split = own(nullptr);
    if (ctas > 0) {
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.maxCTAs = ctas;
      config.minCTAs = std::min(ctas, 1);
      COURSE_NCCL_CHECK(ncclCommSplit(comm, 0, plan.rank, &raw, &config));
      split = own(raw);
    }
    Layers l = p2.layers;
    l.comm = raw;
    const double coll_alone = time_ms(harness, [&](cudaStream_t st) { all_gather(l, gather, st); });
    // Enough all-gathers to cover the GEMM, the same count on every rank.
    const int repeats = static_cast<int>(
        agree_max(raw, harness.stream(), std::lround(std::ceil(gemm_alone / coll_alone)) + 1));
    const double beside = gemm_beside_all_gathers(harness, p2, l, gather, gemm, repeats);
    const std::string who =
        ctas == 0 ? std::string("NCCL's default CTAs") : "maxCTAs " + std::to_string(ctas);
    const course::SweepParams params{{"max_ctas", std::to_string(ctas)},
                                     {"gemm_alone_ms", course::fixed(gemm_alone, 6)},
                                     {"gemm_beside_ms", course::fixed(beside, 6)}};
    harness.record_sweep("SM contention", params, "all-gather alone, " + who, coll_alone, bus_bytes,
                         "-");
    if (ctas == 0) default_slowdown = beside / gemm_alone;
    std::cout << "  " << who << ": all-gather alone " << course::fixed(coll_alone, 4) << " ms ("
              << course::fixed(algbw_gbps(bus_bytes, coll_alone), 1)
              << " GB/s bus); the GEMM beside it " << course::fixed(beside, 4)
              << " ms = " << course::fixed(beside / gemm_alone, 2) << " x alone\n";
  }
  return default_slowdown;
}

}  // namespace nccl_overlap::driver
