/// \file pinned_memory_parts.h
/// \brief Lesson 12: the driver's measurements (read-only; pinned_memory_parts.cu, and
/// small_copies.cu for part 5).
///
/// The copies main.cu checks and times through the harness, and the parts it times with
/// the host clock: when cudaMemcpyAsync returns, what the CPU sees of host memory, and
/// what one small copy costs. Every part checks the data it moved, every word, and
/// reports its rows to the harness (sweeps "async", "host access", "per-call cost",
/// "breakeven", "batching"), which prints them and writes them to the sweep CSV.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "course/buffers.h"
#include "course/harness.h"
#include "course/stats.h"
#include "pinned_memory.cuh"

namespace pinned_memory {

enum class Direction { h2d, d2h };
inline constexpr Direction kDirections[] = {Direction::h2d, Direction::d2h};

/// "H2D", "D2H".
const char* label(Direction d);

/// "PASS", or "FAIL" after printing what differed (prefixed by `what`) on std::cerr.
std::string check_text(const course::Comparison& c, const std::string& what);

/// The first `n` words of `actual` (host memory) against `expected`, exactly.
course::Comparison compare_host(const std::vector<std::uint32_t>& expected,
                                const std::uint32_t* actual, std::size_t n);

/// The median of `reps` calls of `measure()`.
template <class Measure>
double median_of(int reps, Measure&& measure) {
  std::vector<double> samples;
  for (int r = 0; r < reps; ++r) samples.push_back(measure());
  return course::median(samples);
}

/// The device side and the data of the copies: `bytes` bytes of hash32(i, seed) on the
/// device for D2H copies to read, a device target for H2D copies, and the same words on
/// the host (at least `host_words` of them) to fill host buffers with and check against.
class CopyBench {
 public:
  CopyBench(std::size_t bytes, std::size_t host_words, std::uint32_t seed, cudaStream_t stream);

  std::size_t bytes() const { return bytes_; }
  std::uint32_t seed() const { return seed_; }
  cudaStream_t stream() const { return stream_; }
  const std::vector<std::uint32_t>& expected() const { return expected_; }
  /// Where H2D copies write, and where D2H copies read (hash32(i, seed)).
  std::uint32_t* target() const { return target_.data(); }
  const std::uint32_t* source() const { return source_.data(); }

  /// Enqueues one copy of the first `n_bytes` bytes between `host` and the device.
  void copy(Direction d, const HostBuffer& host, std::size_t n_bytes, cudaStream_t s) const;
  /// Before a checked copy: poisons its destination (the device target, or `host`).
  void poison(Direction d, const HostBuffer& host, std::size_t n_bytes) const;
  /// Puts the expected words into `host` (what H2D copies read).
  void refill(const HostBuffer& host) const;
  /// After a copy and a wait: did every word arrive? Write-combined memory is checked by
  /// the GPU through its mapping: the CPU reads it slowly (part 4 shows how slowly).
  course::Comparison check(Direction d, const HostBuffer& host, std::size_t n_bytes) const;
  /// The copy as a harness variant: poisoned, checked, then timed.
  course::Variant variant(std::string name, Direction d, const HostBuffer& host,
                          std::size_t n_bytes) const;
  /// GB/s of one large copy of bytes() bytes from pinned memory (the course's own
  /// PinnedBuffer, so the yardstick does not depend on the exercise), event-timed.
  double large_pinned_gbps(Direction d, int warmup, int iters) const;

 private:
  std::size_t bytes_;
  std::uint32_t seed_;
  cudaStream_t stream_;
  course::DeviceBuffer<std::uint32_t> source_;
  course::DeviceBuffer<std::uint32_t> target_;
  std::vector<std::uint32_t> expected_;
};

/// Part 3: `reps` cudaMemcpyAsync calls of bench.bytes() bytes on an idle stream, timed
/// with time_async_copy; records the median time until the call returned and until the
/// copy was complete (sweep "async").
void time_async_calls(course::Harness& harness, const CopyBench& bench, Direction d,
                      const HostBuffer& host, int reps);

/// Part 4: the CPU writing and reading `bytes` bytes of `host` (sweep "host access").
void time_host_access(course::Harness& harness, const HostBuffer& host, std::size_t bytes,
                      int reps);

/// Part 5's loop counts and the batching part's size, as the driver resolves them.
struct SmallCopyCounts {
  int calls = 0;                ///< copies per timed loop, per-call costs
  int copies = 0;               ///< copies per timed loop, break-even sweep
  int reps = 0;                 ///< loops per figure (the median is reported)
  std::size_t batch_total = 0;  ///< bytes the batching part copies in pieces and as one
};

/// Part 5: what one small copy costs: the per-call cost of 4-byte copies, the 4-64 KB
/// break-even sweep and its models (the straight line of TODO 4 and the step model of
/// overhead_model.h, both judged against a large copy over the same link), and
/// counts.batch_total bytes copied as 4 KB pieces or as one. Prints the fits; records the rows.
/// bench must hold at least max(64 KB, counts.batch_total) bytes of data on the host.
void time_small_copies(course::Harness& harness, const CopyBench& bench,
                       const SmallCopyCounts& counts);

}  // namespace pinned_memory
