// Lesson 13's instruments, read-only: the two kernels the lesson measures with, their
// launchers, and the small helpers of the API that are not the exercise (names, releasing a
// stream, the classification of an overlap, the times of a pair of GPU intervals).
//
// The build compiles this file in one unit with the student's streams_and_sync.cu (and,
// separately, with the solution's), so it sees everything that file defines.
#include <algorithm>
#include <cstdint>
#include <string>

#include "course/check.h"
#include "course/data.h"
#include "course/launch.h"
#include "streams_and_sync.cuh"

namespace streams_and_sync {

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
  course::require(record != nullptr, "launch_spin", "record is null");
  course::require(duration_ns <= kMaxSpinNs, "launch_spin",
                  "duration " + std::to_string(duration_ns) + " ns is above kMaxSpinNs");
  spin_kernel<<<1, kSpinThreads, 0, stream>>>(record, duration_ns, spin_iteration_cap(duration_ns),
                                              token);
  COURSE_CHECK_LAUNCH();
}

void launch_delayed_fill(cuda::std::span<std::uint32_t> data, std::uint32_t seed,
                         std::uint64_t delay_ns, cudaStream_t stream) {
  course::require(delay_ns <= kMaxSpinNs, "launch_delayed_fill",
                  "delay " + std::to_string(delay_ns) + " ns is above kMaxSpinNs");
  if (data.empty()) return;
  const std::size_t blocks =
      std::min(kMaxFillBlocks, (data.size() + kFillThreads - 1) / kFillThreads);
  delayed_fill_kernel<<<static_cast<unsigned>(blocks), kFillThreads, 0, stream>>>(
      data.data(), data.size(), seed, delay_ns, spin_iteration_cap(delay_ns));
  COURSE_CHECK_LAUNCH();
}

// ---- Measuring overlap ----------------------------------------------------------------

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
  course::require(first.end_ns > first.start_ns && second.end_ns > second.start_ns, "pair_timing",
                  "an interval must end after it starts");
  const auto ms = [](std::uint64_t ns) { return static_cast<double>(ns) * 1e-6; };
  PairTiming t;
  t.t1_ms = ms(first.end_ns - first.start_ns);
  t.t2_ms = ms(second.end_ns - second.start_ns);
  t.pair_ms = ms(std::max(first.end_ns, second.end_ns) - std::min(first.start_ns, second.start_ns));
  t.overlap = overlap_ratio(t.t1_ms, t.t2_ms, t.pair_ms);
  return t;
}

}  // namespace streams_and_sync
