/// \file timing.h
/// \brief Event timing of stream work: warm-up runs, then the median of timed runs.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <vector>

namespace course {

/// The timed runs of one piece of work, in milliseconds.
struct Timing {
  std::vector<double> samples_ms;
  double median_ms = 0;
};

/// Enqueues `work` on `stream` `warmup` times untimed, then `iters` times, each between
/// two events, and returns the event times. Before each timed run a tiny kernel holds the
/// stream for 50 microseconds while the host enqueues the events and `work`, so the
/// start event fires only when the work is already queued behind it: a sample is device
/// time alone, never the host's launch latency or argument checks.
Timing time_stream_work(const std::function<void(cudaStream_t)>& work, cudaStream_t stream,
                        int warmup, int iters);

}  // namespace course
