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
/// two events, and returns the event times. Events measure device time, so host launch
/// overhead outside the stream's gaps does not count.
Timing time_stream_work(const std::function<void(cudaStream_t)>& work, cudaStream_t stream,
                        int warmup, int iters);

}  // namespace course
