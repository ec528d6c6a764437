// Lesson 14's driver, what its parts share: the plan (every size and count of the run, resolved
// from the flags before the device is opened), the experiment (the data, the harness, the
// streams, the job) and the parts that live in their own files (parts_sweep.cu,
// parts_timeline.cu). main.cu reads the flags, makes the plan and runs the parts in the order
// of the output. Read-only.
#pragma once

#include <cuda_runtime.h>
#include <cuda/std/span>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "course/buffers.h"
#include "course/check.h"
#include "course/data.h"
#include "course/device.h"
#include "course/flags.h"
#include "course/harness.h"
#include "course/launch.h"
#include "course/timing.h"
#include "engine_model.h"
#include "overlap_transfers.cuh"

namespace overlap_transfers::driver {

namespace ot = overlap_transfers;

constexpr int kThreads = 256;  // the blog post's block size
constexpr std::uint32_t kSeed = 1;
const std::vector<Order> kAsyncOrders = {Order::per_chunk, Order::by_operation};

/// Every size and count of the run, resolved from the flags (main.cu's plan_of) before the
/// device is opened: nothing below it asks whether --quick was given.
struct Plan {
  course::CommonOptions options;  ///< the common flags, as the harness reads them
  std::uint64_t bytes = 0;        ///< of float data, each way
  int chunks = 0;                 ///< of async-v1/v2 in the main table and of the timeline
  std::vector<int> sweep;         ///< the sweep's chunk counts: sorted, unique, `chunks` included
  int rounds = 0;                 ///< trig rounds per element; 0: balance them (below)
  int balance_percent = 0;        ///< rounds == 0: the kernel's time in % of the copy in
  std::string rounds_origin;      ///< where `rounds` came from, as the kernel line says it
};

/// What every part of the run shares: the data in pinned host memory (the only kind a copy
/// can overlap anything from), its device copy, the harness, one stream per chunk, the job.
struct Experiment {
  Experiment(const Plan& p, const course::DeviceSummary& device, const model::Gpu& model)
      : plan(p),
        gpu(device),
        this_gpu(model),
        n(p.bytes / 4),
        host_in(n),
        host_out(n),
        device_data(n),
        scratch(n),
        harness("14_overlap_transfers", p.options, device),
        streams(std::max(2, p.sweep.back())),
        job{host_in.data(), device_data.data(), host_out.data(), n, 1, kThreads} {
    for (std::size_t i = 0; i < n; ++i) host_in[i] = ot::input_value(i, kSeed);
    std::memset(host_out.data(), 0, host_out.bytes());
    COURSE_CHECK(cudaMemset(scratch.data(), 0, scratch.bytes()));
    COURSE_CHECK(cudaDeviceSynchronize());            // the harness's stream does not wait for it
    ot::prepare_stage(Stage::h2d, job, 1)(stream());  // fill the device copy before any timing
    COURSE_CHECK(cudaStreamSynchronize(stream()));
  }

  cudaStream_t stream() const { return harness.stream(); }
  double time_ms(const course::Launch& launch) {
    return course::time_stream_work(launch, stream(), harness.warmup(), harness.iters()).median_ms;
  }
  /// One chunk's operation in steady state: all chunks of the stage back to back, / chunks.
  double stage_ms(Stage stage, int c) { return time_ms(ot::prepare_stage(stage, job, c)) / c; }
  cuda::std::span<const float> actual() const { return {host_out.data(), n}; }
  /// Poisons both ends, so an element that never made the round trip is caught.
  void poison(cudaStream_t st) {
    COURSE_CHECK(cudaStreamSynchronize(st));
    std::memset(host_out.data(), course::kPoisonByte, host_out.bytes());
    course::poison(device_data.data(), device_data.bytes(), st);
  }
  course::Comparison compare() const {
    return course::compare_close<float>(expected, actual(), ot::relative_tolerance(job.rounds),
                                        0.0);
  }
  /// One checked run outside the harness (the sweep, the timeline): "PASS" or "FAIL".
  std::string checked_run(const std::string& what, const course::Launch& launch) {
    poison(stream());
    launch(stream());
    COURSE_CHECK(cudaStreamSynchronize(stream()));
    const course::Comparison c = compare();
    if (!c.ok()) std::cerr << what << ": " << c.summary() << "\n";
    return std::string(c.ok() ? "PASS" : "FAIL");
  }
  double bytes_both_ways() const { return 2.0 * plan.bytes; }

  const Plan& plan;
  const course::DeviceSummary& gpu;
  const model::Gpu this_gpu;
  const std::size_t n;
  course::PinnedBuffer<float> host_in, host_out;
  course::DeviceBuffer<float> device_data, scratch;
  course::Harness harness;
  const ot::StreamSet streams;
  ot::Job job;                  ///< job.rounds is final once main.cu's choose_rounds has run
  std::vector<float> expected;  ///< the CPU reference, computed once job.rounds is final
};

/// What the sweep found: the stage times at the plan's chunk count, the bound at every chunk
/// count, and the fastest async run of 2 or more chunks.
struct SweepResult {
  model::StageTimes at_chunks;
  std::map<int, double> bound_of;
  double best_ms = std::numeric_limits<double>::infinity();
  int best_chunks = 0;
  std::string best_name;
};

// ---- The parts in their own files ----------------------------------------------------------

/// parts_sweep.cu: the sweep, measured ("chunks") against the model ("model": this GPU's
/// engine queues fed with one chunk's stage times, and the bound no order can beat).
SweepResult run_sweep(Experiment& x);

/// parts_sweep.cu: the lesson's two targets: the best async run of the sweep against
/// sequential, and against the model's bound at its chunk count.
void add_targets(Experiment& x, const SweepResult& sweep);

/// parts_timeline.cu: an event before and after every operation of one V1 and one V2 run at
/// the plan's chunk count, beside the model's schedule of the same order (FILE_timeline.csv
/// with --csv).
void run_timeline(Experiment& x, const model::StageTimes& at_chunks);

}  // namespace overlap_transfers::driver
