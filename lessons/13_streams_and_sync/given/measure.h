/// \file measure.h
/// \brief Lesson 13's experiments (read-only): two operations in two streams timed on the
/// GPU's own clock (measure.cu), what breaks their concurrency (breakers.cu), the
/// CUDA_LAUNCH_BLOCKING=1 run in a child process (child.cu), and what each synchronisation
/// call waits for (sync_calls.cu). The driver (main.cu) puts their results in its tables.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "course/buffers.h"
#include "streams_and_sync.cuh"

namespace streams_and_sync {

// ---- A pair of operations, timed on the GPU (measure.cu) ------------------------------

/// One run of a pair: its times on the GPU's clock, how long the operation between the two
/// launches held the host, and what went wrong with the values (empty when they verified).
struct Sample {
  PairTiming timing;
  double between_ms = 0;
  std::string problem;
};

/// The medians of repeated runs of one pair, and the first problem any run had.
using Measured = Sample;

/// Device memory for the spin records and the copy, and the runs that use them. Every spin
/// records its own start and end on the GPU's global timer, so an overlap is measured on the
/// device: the host's launch overhead (large under compute-sanitizer) cannot fake or hide it.
class PairBench {
 public:
  /// Spins of `spin_ns`; a host->device copy of `copy_bytes` (a multiple of 4; 0: no copy).
  PairBench(std::uint64_t spin_ns, std::size_t copy_bytes);

  std::uint64_t spin_ns() const { return spin_ns_; }

  /// A spin kernel in `first`, then `between` (timed on the host), then a spin kernel in
  /// `second`; waits for the whole device, then checks both records.
  Sample kernel_pair(cudaStream_t first, cudaStream_t second,
                     const std::function<void()>& between = {});
  /// A zero-length spin in the legacy stream that the next kernel_pair() checks too: the
  /// "kernel in the legacy stream" breaker.
  void launch_legacy_marker();
  /// A host->device copy from pinned memory in `first`, framed by two zero-length spins that
  /// stamp the time before and after it, and a spin kernel in `second`. With `check_values`,
  /// the destination is poisoned first and compared with the source after.
  Sample copy_and_kernel(cudaStream_t first, cudaStream_t second, bool check_values);

  SpinRecord* record(int i) const { return records_.data() + i; }
  std::uint32_t next_token() { return ++token_; }
  std::vector<SpinRecord> read_records() const;
  /// Why a record is wrong, or "" when it was written by the launch with `token` and ran for
  /// at least `min_ns`.
  static std::string check(const SpinRecord& r, std::uint32_t token, std::uint64_t min_ns);

 private:
  static constexpr std::size_t kRecords = 4;
  std::uint64_t spin_ns_;
  course::DeviceBuffer<SpinRecord> records_;
  course::PinnedBuffer<std::uint32_t> copy_src_;
  course::DeviceBuffer<std::uint32_t> copy_dst_;
  std::uint32_t token_ = 0;
  std::uint32_t marker_token_ = 0;
};

/// Runs `once` warmup + iters times (the first run with its values checked) and takes the
/// median of every column over the timed runs.
Measured measure(int warmup, int iters, const std::function<Sample(bool check_values)>& once);

/// The check of a measured pair against what CUDA guarantees. `must_serialise` true: PASS
/// when serialised, FAIL when concurrent; false: PASS when concurrent; a pair that could
/// have overlapped but did not is a NOTE (allowed, never a failure); no guarantee: "-".
/// Values that did not verify are always a FAIL.
std::string judge(const Measured& m, std::optional<bool> must_serialise);

// ---- What breaks concurrency (breakers.cu) --------------------------------------------

/// What the CUDA documentation promises about an operation between two launches.
enum class Guarantee {
  breaks,            ///< documented to serialise the two kernels
  no_implicit_sync,  ///< documented not to make either kernel wait
  unspecified,       ///< the documentation promises neither: measure it
};

/// "breaks", "no implicit sync" or "unspecified".
const char* guarantee_name(Guarantee g);

/// One row of the breaker matrix: a spin kernel in each of two streams of kind `streams`,
/// and `between` run between the two launches. An empty `between` is the
/// CUDA_LAUNCH_BLOCKING=1 row, measured in a child process.
struct Breaker {
  const char* name;       ///< what --variant selects
  const char* operation;  ///< what runs between the launches, in words
  StreamKind streams;
  Guarantee model;
  std::function<Sample(PairBench& bench, cudaStream_t first, cudaStream_t second)> between;
};

/// The breaker matrix, the control ("nothing") first.
const std::vector<Breaker>& breakers();

/// What the driver passes to the child process.
struct ChildArgs {
  int device = 0;
  int spin_ms = 0;
  int warmup = 0;
  int iters = 1;
};

/// Measures one breaker `warmup + iters` times (the child row: in the child process).
Measured measure_breaker(PairBench& bench, const Breaker& breaker, const ChildArgs& child,
                         int warmup, int iters);

// ---- CUDA_LAUNCH_BLOCKING=1 (child.cu) ------------------------------------------------

/// This executable again, with CUDA_LAUNCH_BLOCKING=1 and --child-launch-blocking,
/// measuring the "nothing" pair; its report line is parsed back.
Measured measure_launch_blocking_child(const ChildArgs& args);

/// The child's side (--child-launch-blocking): measure two spins in two non-blocking
/// streams and print one CHILD-REPORT line. Returns the exit code.
int run_child(std::uint64_t spin_ns, int warmup, int iters);

// ---- The synchronisation calls (sync_calls.cu) ----------------------------------------

/// What one synchronisation call did on real work.
struct SyncRow {
  std::string call;      ///< the call (or calls) under test
  std::string observed;  ///< what it answered or did, in words
  double host_ms = 0;    ///< how long the call under test held the host
  std::string check;     ///< "PASS" or "FAIL": what CUDA guarantees held
};

/// Runs each synchronisation call once on spins of `bench.spin_ns()` and says what it did.
/// The checks are what CUDA guarantees: after a wait the work is done and its values are
/// there. What a query answers *while* work runs depends on timing: reported, not checked.
std::vector<SyncRow> run_sync_calls(PairBench& bench);

}  // namespace streams_and_sync
