// Lesson 13, read-only: what each synchronisation call waits for, shown on real work.
//
// Each block below runs one call (or one query and its wait) on a spin kernel, says what it
// answered, times how long it held the host, and checks what CUDA guarantees: after a wait
// the work is done and its values are there. What a query answers *while* work runs depends
// on timing (a sanitizer slows everything down), so it is reported, never checked.
#include <cuda_runtime.h>

#include <chrono>

#include "course/buffers.h"
#include "course/check.h"
#include "course/data.h"
#include "course/table.h"
#include "measure.h"

namespace streams_and_sync {
namespace {

constexpr std::size_t kProducerElements = 1u << 20;

/// Runs `call` and returns how long it held the host, in milliseconds.
template <class F>
double held_ms(F&& call) {
  const auto start = std::chrono::steady_clock::now();
  call();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

std::string answer(bool done) { return done ? "cudaSuccess" : "cudaErrorNotReady"; }
std::string verdict(bool passed) { return passed ? "PASS" : "FAIL"; }

/// Whether record `i` holds the values of the spin kernel of `token` that ran >= min_ns.
bool valid(PairBench& bench, int i, std::uint32_t token, std::uint64_t min_ns) {
  return PairBench::check(bench.read_records()[static_cast<std::size_t>(i)], token, min_ns).empty();
}

/// "5 ms spin": how the rows name the spin kernel.
std::string spin_text(std::uint64_t spin_ns) {
  return course::fixed(static_cast<double>(spin_ns) * 1e-6, 0) + " ms spin";
}

// Each function below is one row: one call (or a query and its wait) on real work.

/// Asking a busy stream never blocks; waiting for the stream returns once its work is done.
SyncRow stream_query_and_synchronize(PairBench& bench, cudaStream_t s1) {
  const std::uint64_t spin_ns = bench.spin_ns();
  const std::uint32_t t = bench.next_token();
  launch_spin(bench.record(0), spin_ns, t, s1);
  const bool during = stream_is_idle(s1);
  const double ms = held_ms([&] { COURSE_CHECK(cudaStreamSynchronize(s1)); });
  const bool after = stream_is_idle(s1);
  return {"cudaStreamQuery, cudaStreamSynchronize",
          "during a " + spin_text(spin_ns) + ": " + answer(during) +
              "; after cudaStreamSynchronize: " + answer(after),
          ms, verdict(after && valid(bench, 0, t, spin_ns))};
}

/// The same for an event, which marks one point in a stream.
SyncRow event_query_and_synchronize(PairBench& bench, cudaStream_t s1) {
  const std::uint64_t spin_ns = bench.spin_ns();
  cudaEvent_t event = nullptr;
  COURSE_CHECK(cudaEventCreate(&event));
  const bool never_recorded = event_has_completed(event);
  const std::uint32_t t = bench.next_token();
  launch_spin(bench.record(0), spin_ns, t, s1);
  COURSE_CHECK(cudaEventRecord(event, s1));
  const bool during = event_has_completed(event);
  const double ms = held_ms([&] { COURSE_CHECK(cudaEventSynchronize(event)); });
  const bool after = event_has_completed(event);
  COURSE_CHECK(cudaEventDestroy(event));
  return {"cudaEventQuery, cudaEventSynchronize",
          "never recorded: " + answer(never_recorded) + "; recorded after a " + spin_text(spin_ns) +
              ": " + answer(during) + "; after cudaEventSynchronize: " + answer(after),
          ms, verdict(never_recorded && after && valid(bench, 0, t, spin_ns))};
}

/// cudaStreamSynchronize waits for its own stream only (s2 is empty).
SyncRow synchronize_other_stream(PairBench& bench, cudaStream_t s1, cudaStream_t s2) {
  const std::uint64_t spin_ns = bench.spin_ns();
  const std::uint32_t t = bench.next_token();
  launch_spin(bench.record(0), spin_ns, t, s1);
  const double ms = held_ms([&] { COURSE_CHECK(cudaStreamSynchronize(s2)); });
  const bool s1_done = stream_is_idle(s1);
  COURSE_CHECK(cudaStreamSynchronize(s1));
  return {"cudaStreamSynchronize(other stream)",
          "returned while the " + spin_text(spin_ns) + " in the first stream was " +
              (s1_done ? "already done" : "still running"),
          ms, verdict(stream_is_idle(s1) && valid(bench, 0, t, spin_ns))};
}

/// cudaDeviceSynchronize waits for every stream.
SyncRow device_synchronize(PairBench& bench, cudaStream_t s1) {
  const std::uint64_t spin_ns = bench.spin_ns();
  KindStream blocking(StreamKind::blocking);
  const std::uint32_t a = bench.next_token();
  const std::uint32_t b = bench.next_token();
  launch_spin(bench.record(0), spin_ns, a, s1);
  launch_spin(bench.record(1), spin_ns, b, blocking);
  const double ms = held_ms([] { COURSE_CHECK(cudaDeviceSynchronize()); });
  const bool idle =
      stream_is_idle(s1) && stream_is_idle(blocking) && stream_is_idle(cudaStreamLegacy);
  return {"cudaDeviceSynchronize",
          std::string("after it, a non-blocking, a blocking and the legacy stream ") +
              (idle ? "were all idle" : "were NOT all idle"),
          ms, verdict(idle && valid(bench, 0, a, spin_ns) && valid(bench, 1, b, spin_ns))};
}

/// A consumer ordered after a producer in another stream, on the GPU (copy_after_producer).
SyncRow wait_event_between_streams(PairBench& bench, cudaStream_t s1, cudaStream_t s2) {
  course::DeviceBuffer<std::uint32_t> produced(kProducerElements), consumed(kProducerElements);
  course::poison(produced.data(), produced.bytes(), cudaStreamLegacy);
  course::poison(consumed.data(), consumed.bytes(), cudaStreamLegacy);
  COURSE_CHECK(cudaDeviceSynchronize());
  cudaEvent_t event = nullptr;
  COURSE_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  launch_delayed_fill(produced.span(), /*seed=*/99, bench.spin_ns(), s1);
  const double ms =
      held_ms([&] { copy_after_producer(produced.cspan(), consumed.span(), s1, s2, event); });
  const bool producer_done = stream_is_idle(s1);
  COURSE_CHECK(cudaStreamSynchronize(s2));  // only the consumer's stream
  std::vector<std::uint32_t> expected(kProducerElements);
  course::fill_hash_host(expected, 99);
  const auto c = course::compare_exact<std::uint32_t>(expected, course::to_host(consumed.cspan()));
  COURSE_CHECK(cudaEventDestroy(event));
  COURSE_CHECK(cudaDeviceSynchronize());
  return {"cudaEventRecord + cudaStreamWaitEvent",
          std::string("copy_after_producer returned while the producer was ") +
              (producer_done ? "already done" : "still running") +
              "; the consumer's copy, waited for with its own stream only: " + c.summary(),
          ms, verdict(c.ok())};
}

/// cudaStreamWaitEvent on an event never recorded is a no-op.
SyncRow wait_never_recorded_event(PairBench& bench, cudaStream_t s1) {
  cudaEvent_t event = nullptr;
  COURSE_CHECK(cudaEventCreate(&event));
  const double ms =
      held_ms([&] { COURSE_CHECK(cudaStreamWaitEvent(s1, event, cudaEventWaitDefault)); });
  const std::uint32_t t = bench.next_token();
  launch_spin(bench.record(0), 0, t, s1);
  COURSE_CHECK(cudaStreamSynchronize(s1));
  COURSE_CHECK(cudaEventDestroy(event));
  return {"cudaStreamWaitEvent(never-recorded event)",
          "a no-op: the stream's next kernel ran without waiting", ms,
          verdict(valid(bench, 0, t, 0))};
}

}  // namespace

std::vector<SyncRow> run_sync_calls(PairBench& bench) {
  course::Stream s1, s2;  // non-blocking
  std::vector<SyncRow> rows;
  rows.push_back(stream_query_and_synchronize(bench, s1));
  rows.push_back(event_query_and_synchronize(bench, s1));
  rows.push_back(synchronize_other_stream(bench, s1, s2));
  rows.push_back(device_synchronize(bench, s1));
  rows.push_back(wait_event_between_streams(bench, s1, s2));
  rows.push_back(wait_never_recorded_event(bench, s1));
  return rows;
}

}  // namespace streams_and_sync
