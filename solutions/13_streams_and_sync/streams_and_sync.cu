// Lesson 13: streams and synchronisation.
//
// Every operation a CUDA program enqueues goes into a stream, and a stream runs its work
// in order. What differs between kinds of stream is how they wait for *each other*:
//
//   the legacy default stream   waits for every blocking stream, and every blocking
//   (cudaStreamLegacy, "0")     stream waits for it: one legacy operation between two
//                               streams' work serialises them;
//   the per-thread default      an ordinary stream of this host thread, except that it
//   stream (cudaStreamPerThread) still synchronises with the legacy stream;
//   a blocking stream           created by cudaStreamCreate: ordinary with respect to
//                               other created streams, but synchronises with legacy;
//   a non-blocking stream       cudaStreamCreateWithFlags(cudaStreamNonBlocking): never
//                               waits implicitly for anything.
//
// The host waits for the GPU with the synchronisation calls (cudaDeviceSynchronize,
// cudaStreamSynchronize, cudaEventSynchronize) or asks without blocking (cudaStreamQuery,
// cudaEventQuery); one stream waits for another on the GPU, without the host, with an event
// and cudaStreamWaitEvent. This file holds those pieces, the two kernels the lesson
// measures with, and the overlap arithmetic; main.cu runs the experiments.
#include "streams_and_sync.cuh"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <string>

#include "course/check.h"
#include "course/data.h"

namespace streams_and_sync {
namespace {

void require(bool condition, const char* function, const std::string& message) {
  if (!condition) throw std::invalid_argument(std::string(function) + ": " + message);
}

/// cudaErrorNotReady is an answer ("not yet"), not a failure, but some runtime versions
/// also leave it behind as the thread's last error. Forget it, so that the next launch
/// check (cudaGetLastError) does not report it as a failed launch.
[[maybe_unused]] void forget_not_ready() {
  if (cudaPeekAtLastError() == cudaErrorNotReady) (void)cudaGetLastError();
}

}  // namespace

// ---- Kinds of stream ------------------------------------------------------------------

const char* stream_kind_name(StreamKind kind) {
  switch (kind) {
    case StreamKind::legacy_default:
      return "legacy";
    case StreamKind::per_thread_default:
      return "per-thread";
    case StreamKind::blocking:
      return "blocking";
    case StreamKind::non_blocking:
      return "non-blocking";
  }
  return "?";
}

cudaStream_t make_stream(StreamKind kind) {
  // TODO 1: return a stream of `kind`. The two default streams already exist: name them
  //         with their special handles, cudaStreamLegacy and cudaStreamPerThread (they mean
  //         the same whatever --default-stream this file was compiled with, unlike 0).
  //         Create the other two: cudaStreamCreate makes a blocking stream,
  //         cudaStreamCreateWithFlags(..., cudaStreamNonBlocking) a non-blocking one.
  // BEGIN SOLUTION
  cudaStream_t stream = nullptr;
  switch (kind) {
    case StreamKind::legacy_default:
      return cudaStreamLegacy;
    case StreamKind::per_thread_default:
      return cudaStreamPerThread;
    case StreamKind::blocking:
      COURSE_CHECK(cudaStreamCreate(&stream));
      return stream;
    case StreamKind::non_blocking:
      COURSE_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      return stream;
  }
  throw std::invalid_argument("make_stream: unknown stream kind");
  // STARTER: (void)kind;
  // STARTER: return cudaStreamLegacy;  // for now every kind is the legacy default stream
  // END SOLUTION
}

void destroy_stream(StreamKind kind, cudaStream_t stream) {
  // The default streams are handles to streams this program never created: never destroy
  // them. Whatever make_stream() returned for a created kind is destroyed, unless it is
  // one of those handles.
  const bool created = kind == StreamKind::blocking || kind == StreamKind::non_blocking;
  if (!created || stream == nullptr || stream == cudaStreamLegacy ||
      stream == cudaStreamPerThread) {
    return;
  }
  cudaStreamDestroy(stream);  // no throw: this runs in destructors
}

bool implicitly_serialised(StreamKind first, StreamKind second) {
  // TODO 2: say which pairs the CUDA programming model serialises on its own.
  //         - One stream runs its work in order, and two legacy (or two per-thread) kinds
  //           are one and the same stream.
  //         - The legacy stream waits for all work already in blocking streams, and
  //           blocking streams wait for work already in the legacy stream. The per-thread
  //           default stream is a blocking stream in this sense.
  //         - Non-blocking streams never wait implicitly, and two different streams that
  //           are not legacy do not wait for each other either.
  // BEGIN SOLUTION
  const auto is_legacy = [](StreamKind k) { return k == StreamKind::legacy_default; };
  // A stream that synchronises with the legacy stream: every kind except non-blocking.
  const auto blocks_on_legacy = [](StreamKind k) { return k != StreamKind::non_blocking; };
  if (first == second &&
      (first == StreamKind::legacy_default || first == StreamKind::per_thread_default)) {
    return true;  // the same stream
  }
  if (is_legacy(first)) return blocks_on_legacy(second);
  if (is_legacy(second)) return blocks_on_legacy(first);
  return false;  // two different streams, neither of them legacy
  // STARTER: (void)first;
  // STARTER: (void)second;
  // STARTER: return false;
  // END SOLUTION
}

// ---- Waiting without blocking: the queries --------------------------------------------

bool stream_is_idle(cudaStream_t stream) {
  // TODO 3: ask cudaStreamQuery whether `stream` has finished, without blocking. It answers
  //         cudaSuccess (everything done) or cudaErrorNotReady (still working), which is
  //         NOT an error: return false for it, after forget_not_ready(). Anything else is
  //         a real error: check it with COURSE_CHECK.
  // BEGIN SOLUTION
  const cudaError_t status = cudaStreamQuery(stream);
  if (status == cudaErrorNotReady) {
    forget_not_ready();
    return false;
  }
  COURSE_CHECK(status);
  return true;
  // STARTER: (void)stream;
  // STARTER: return true;
  // END SOLUTION
}

bool event_has_completed(cudaEvent_t event) {
  // TODO 4: the same for an event, with cudaEventQuery: cudaSuccess once the work the event
  //         was recorded after has completed (or if it was never recorded),
  //         cudaErrorNotReady while that work is pending.
  // BEGIN SOLUTION
  const cudaError_t status = cudaEventQuery(event);
  if (status == cudaErrorNotReady) {
    forget_not_ready();
    return false;
  }
  COURSE_CHECK(status);
  return true;
  // STARTER: (void)event;
  // STARTER: return true;
  // END SOLUTION
}

// ---- The instruments: spin kernels and a delayed producer -----------------------------

namespace {

/// The GPU's global nanosecond timer. Unlike clock64() (cycles of one SM, whose rate moves
/// with the clock frequency), it counts real time and agrees across SMs, so intervals
/// recorded by different kernels can be compared.
__device__ __forceinline__ std::uint64_t global_timer_ns() {
  std::uint64_t now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

/// Spins for `duration_ns` of GPU time (or until `max_iterations` timer reads, whichever
/// comes first), then records when it started and stopped. One block of kSpinThreads.
__global__ void spin_kernel(SpinRecord* record, std::uint64_t duration_ns,
                            std::uint64_t max_iterations, std::uint32_t token) {
  const std::uint64_t start = global_timer_ns();
  std::uint64_t now = start;
  std::uint64_t iterations = 0;
  // Two bounds: time, and a count that ends the loop even if the timer did not advance.
  while (now - start < duration_ns && iterations < max_iterations) {
    ++iterations;
    now = global_timer_ns();
  }
  if (threadIdx.x == 0) {
    record->start_ns = start;
    record->end_ns = now;
    record->iterations = iterations;
    record->token = token;
    record->stopped_by = now - start >= duration_ns ? kStoppedByTime : kStoppedByCap;
  }
}

/// A producer that is late on purpose: each thread waits `delay_ns` of GPU time from its
/// own start, then writes its share of data[i] = hash32(i, seed). Nothing is written before
/// the delay, so a consumer that does not wait for this kernel reads the old contents.
__global__ void delayed_fill_kernel(std::uint32_t* data, std::size_t n, std::uint32_t seed,
                                    std::uint64_t delay_ns, std::uint64_t max_iterations) {
  const std::uint64_t start = global_timer_ns();
  for (std::uint64_t i = 0; global_timer_ns() - start < delay_ns && i < max_iterations; ++i) {
  }
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    data[i] = course::hash32(i, seed);
  }
}

/// The producer's launch shape: 256 threads per block, at most 128 blocks (a grid-stride
/// loop covers any size), so that on an A100 or H100 every block is resident at once and
/// they all wait out the delay together. A block that has to wait for a free SM only
/// starts, and so writes, later: never earlier than the delay.
constexpr int kFillThreads = 256;
constexpr std::size_t kMaxFillBlocks = 128;

}  // namespace

void launch_spin(SpinRecord* record, std::uint64_t duration_ns, std::uint32_t token,
                 cudaStream_t stream) {
  require(record != nullptr, "launch_spin", "record is null");
  require(duration_ns <= kMaxSpinNs, "launch_spin",
          "duration " + std::to_string(duration_ns) + " ns is above kMaxSpinNs");
  spin_kernel<<<1, kSpinThreads, 0, stream>>>(record, duration_ns, spin_iteration_cap(duration_ns),
                                              token);
  COURSE_CHECK_LAUNCH();
}

void launch_delayed_fill(cuda::std::span<std::uint32_t> data, std::uint32_t seed,
                         std::uint64_t delay_ns, cudaStream_t stream) {
  require(delay_ns <= kMaxSpinNs, "launch_delayed_fill",
          "delay " + std::to_string(delay_ns) + " ns is above kMaxSpinNs");
  if (data.empty()) return;
  const std::size_t blocks =
      std::min(kMaxFillBlocks, (data.size() + kFillThreads - 1) / kFillThreads);
  delayed_fill_kernel<<<static_cast<unsigned>(blocks), kFillThreads, 0, stream>>>(
      data.data(), data.size(), seed, delay_ns, spin_iteration_cap(delay_ns));
  COURSE_CHECK_LAUNCH();
}

void copy_after_producer(cuda::std::span<const std::uint32_t> src,
                         cuda::std::span<std::uint32_t> dst, cudaStream_t producer,
                         cudaStream_t consumer, cudaEvent_t produced) {
  require(src.size() == dst.size(), "copy_after_producer",
          "src has " + std::to_string(src.size()) + " elements, dst " + std::to_string(dst.size()));
  if (src.empty()) return;

  // TODO 5: make `consumer` wait for everything enqueued on `producer` so far, on the GPU,
  //         without blocking the host: record the event `produced` on the producer's
  //         stream, then make the consumer's stream wait for it (cudaStreamWaitEvent).
  //         Work enqueued on `consumer` after that starts only once the event has completed.
  // BEGIN SOLUTION
  COURSE_CHECK(cudaEventRecord(produced, producer));
  COURSE_CHECK(cudaStreamWaitEvent(consumer, produced, cudaEventWaitDefault));
  // STARTER: (void)producer;
  // STARTER: (void)produced;
  // END SOLUTION

  COURSE_CHECK(cudaMemcpyAsync(dst.data(), src.data(), src.size_bytes(), cudaMemcpyDeviceToDevice,
                               consumer));
}

// ---- Measuring overlap ----------------------------------------------------------------

double overlap_ratio(double t1_ms, double t2_ms, double pair_ms) {
  require(
      t1_ms > 0 && t2_ms > 0, "overlap_ratio",
      "t1 and t2 must be positive, got " + std::to_string(t1_ms) + " and " + std::to_string(t2_ms));
  // TODO 6: the overlap ratio. Run one after the other, the pair takes t1 + t2; fully
  //         overlapped, it takes max(t1, t2). So t1 + t2 - t_pair is the time both ran at
  //         once; divide it by the shorter time, min(t1, t2), so that 1 means "the shorter
  //         one ran entirely alongside the other" and 0 "one after the other".
  // BEGIN SOLUTION
  return (t1_ms + t2_ms - pair_ms) / std::min(t1_ms, t2_ms);
  // STARTER: (void)pair_ms;
  // STARTER: return 0.0;
  // END SOLUTION
}

Concurrency classify(double overlap) {
  if (overlap < kSerialisedBelow) return Concurrency::serialised;
  if (overlap > kConcurrentAbove) return Concurrency::concurrent;
  return Concurrency::partial;
}

const char* concurrency_name(Concurrency c) {
  switch (c) {
    case Concurrency::serialised:
      return "serialised";
    case Concurrency::partial:
      return "partial";
    case Concurrency::concurrent:
      return "concurrent";
  }
  return "?";
}

PairTiming pair_timing(Interval first, Interval second) {
  require(first.end_ns > first.start_ns && second.end_ns > second.start_ns, "pair_timing",
          "an interval must end after it starts");
  const auto ms = [](std::uint64_t ns) { return static_cast<double>(ns) * 1e-6; };
  PairTiming t;
  t.t1_ms = ms(first.end_ns - first.start_ns);
  t.t2_ms = ms(second.end_ns - second.start_ns);
  t.pair_ms = ms(std::max(first.end_ns, second.end_ns) - std::min(first.start_ns, second.start_ns));
  t.overlap = overlap_ratio(t.t1_ms, t.t2_ms, t.pair_ms);
  return t;
}

// ---- The CUDA_LAUNCH_BLOCKING child process --------------------------------------------

namespace {
constexpr const char* kChildTag = "CHILD-REPORT";
}  // namespace

std::string format_child_report(const ChildReport& r) {
  char line[256];
  std::snprintf(line, sizeof line,
                "%s launch_blocking=%d t1_ms=%.6f t2_ms=%.6f pair_ms=%.6f overlap=%.6f values=%s",
                kChildTag, r.launch_blocking ? 1 : 0, r.timing.t1_ms, r.timing.t2_ms,
                r.timing.pair_ms, r.timing.overlap, r.values_ok ? "ok" : "FAIL");
  return line;
}

std::optional<ChildReport> parse_child_report(const std::string& output) {
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string tag;
    if (!(fields >> tag) || tag != kChildTag) continue;
    ChildReport r;
    int found = 0;  // one bit per key, so a line missing a key is rejected
    std::string field;
    try {
      while (fields >> field) {
        const std::size_t eq = field.find('=');
        if (eq == std::string::npos) return std::nullopt;
        const std::string key = field.substr(0, eq);
        const std::string value = field.substr(eq + 1);
        std::size_t used = 0;
        const auto number = [&] {
          const double v = std::stod(value, &used);
          if (used != value.size()) throw std::invalid_argument(value);
          return v;
        };
        if (key == "launch_blocking" && (value == "0" || value == "1")) {
          r.launch_blocking = value == "1";
          found |= 1;
        } else if (key == "t1_ms") {
          r.timing.t1_ms = number();
          found |= 2;
        } else if (key == "t2_ms") {
          r.timing.t2_ms = number();
          found |= 4;
        } else if (key == "pair_ms") {
          r.timing.pair_ms = number();
          found |= 8;
        } else if (key == "overlap") {
          r.timing.overlap = number();
          found |= 16;
        } else if (key == "values" && (value == "ok" || value == "FAIL")) {
          r.values_ok = value == "ok";
          found |= 32;
        } else {
          return std::nullopt;
        }
      }
    } catch (const std::exception&) {  // std::stod: not a number, or out of range
      return std::nullopt;
    }
    if (found == 63) return r;
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace streams_and_sync
