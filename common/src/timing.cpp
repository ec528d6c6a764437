#include "course/timing.h"

#include <stdexcept>

#include "course/check.h"
#include "course/stats.h"

namespace course {

namespace {
/// Two events, destroyed with their owner even when a check throws.
struct EventPair {
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  EventPair() {
    COURSE_CHECK(cudaEventCreate(&start));
    COURSE_CHECK(cudaEventCreate(&stop));
  }
  ~EventPair() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
};
}  // namespace

Timing time_stream_work(const std::function<void(cudaStream_t)>& work, cudaStream_t stream,
                        int warmup, int iters) {
  if (iters < 1) throw std::invalid_argument("time_stream_work: iters must be >= 1");
  for (int i = 0; i < warmup; ++i) work(stream);
  COURSE_CHECK(cudaStreamSynchronize(stream));

  EventPair events;
  Timing timing;
  for (int i = 0; i < iters; ++i) {
    COURSE_CHECK(cudaEventRecord(events.start, stream));
    work(stream);
    COURSE_CHECK(cudaEventRecord(events.stop, stream));
    COURSE_CHECK(cudaEventSynchronize(events.stop));
    float ms = 0;
    COURSE_CHECK(cudaEventElapsedTime(&ms, events.start, events.stop));
    timing.samples_ms.push_back(ms);
  }
  timing.median_ms = median(timing.samples_ms);
  return timing;
}

}  // namespace course
