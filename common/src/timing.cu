#include "course/timing.h"

#include <stdexcept>

#include "course/check.h"
#include "course/stats.h"

namespace course {

namespace {

/// Holds the stream for `ns` nanoseconds of device time (one thread spinning on the
/// global timer), so that the host has enqueued the timed work before the start event
/// fires: a timed sample then measures device work only, never the host's launch latency.
__global__ void hold_stream_kernel(unsigned long long ns) {
  unsigned long long start = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (;;) {
    unsigned long long now = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start >= ns) break;
  }
}

/// How long the stream is held before each timed sample: far longer than enqueueing a few
/// launches takes on the host, far shorter than any sample the course times is long.
constexpr unsigned long long kHoldNanoseconds = 50'000;

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
    hold_stream_kernel<<<1, 1, 0, stream>>>(kHoldNanoseconds);
    COURSE_CHECK(cudaGetLastError());
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
