/// \file harness.h
/// \brief The one harness every lesson driver uses: check each variant, time it the same
/// way, print the table against the in-run reference, and give the verdict.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "course/buffers.h"
#include "course/data.h"
#include "course/device.h"
#include "course/flags.h"
#include "course/table.h"

namespace course {

/// One way of doing the lesson's work.
struct Variant {
  std::string name;
  double bytes = 0;                           ///< bytes one run moves (for GB/s)
  std::function<void(cudaStream_t)> run;      ///< enqueue one run on the stream
  std::function<void(cudaStream_t)> prepare;  ///< before the checked run: poison outputs
  std::function<Comparison()> check;          ///< after the checked run: compare every element
};

/// A performance target from an issue: `variant` must reach `min_of_reference` x the reference.
struct Target {
  std::string variant;
  double min_of_reference = 0;
};

/// A target between two variants of the same run: `variant` must reach `min_ratio` x the rate
/// of `of_variant` (e.g. a new kernel against an earlier lesson's at the same occupancy).
struct RatioTarget {
  std::string variant;
  std::string of_variant;
  double min_ratio = 0;
};

/// The `TARGET:` line of a ratio target, read from a finished table:
/// "TARGET: a >= 1.30 x b: met (1.412)". Empty when either variant is not in the table
/// (not run, --variant) or `of_variant`'s rate is not positive.
std::string ratio_target_line(const ResultsTable& table, const RatioTarget& target);

/// Runs the reference and the variants, then prints the table, the headline and the verdict.
class Harness {
 public:
  Harness(std::string lesson, const CommonOptions& options, const DeviceSummary& device);

  /// The in-run reference every rate is divided by (not checked: it *is* the yardstick).
  void reference(const std::string& name, double bytes, std::function<void(cudaStream_t)> run);
  /// The reference most lessons use: a device-to-device cudaMemcpy of `bytes` bytes,
  /// counted as 2 x bytes moved (each byte is read once and written once).
  void reference_d2d_copy(void* dst, const void* src, std::size_t bytes);
  /// The variant whose time the others' speed-ups are relative to (must be added too).
  void baseline(const std::string& name) { baseline_ = name; }
  /// The variant the tour quotes.
  void headline(const std::string& name) { headline_ = name; }
  void target(Target t) { targets_.push_back(std::move(t)); }
  /// A target relative to another variant; printed with the other TARGET lines.
  void ratio_target(RatioTarget t) { ratio_targets_.push_back(std::move(t)); }

  /// Checks `v` (poison, one run, compare every element), then times it. Skipped when
  /// --variant names another variant.
  void run(const Variant& v);

  /// Prints the table, writes the CSV if asked, prints HEADLINE / TARGET / RESULT lines.
  /// Returns the exit code: 0 when every variant passed its check, 1 otherwise.
  int finish();

  cudaStream_t stream() const { return stream_.get(); }
  int warmup() const { return warmup_; }
  int iters() const { return iters_; }

 private:
  std::string lesson_;
  CommonOptions options_;
  DeviceSummary device_;
  Stream stream_;
  int warmup_;
  int iters_;
  std::string reference_name_;
  std::optional<double> reference_rate_;
  std::string baseline_;
  std::string headline_;
  std::vector<Target> targets_;
  std::vector<RatioTarget> ratio_targets_;
  struct Measured {
    ResultRow row;
    double bytes;
    bool passed;
  };
  std::vector<Measured> measured_;
};

/// Parses the flags, opens the device and runs `body`, mapping every outcome to the
/// course's exit codes: usage error 2 (before any CUDA call), no usable device 77, an
/// exception 1, otherwise what `body` returns. --help prints the usage and returns 0.
int run_driver(const FlagParser& flags, int argc, const char* const* argv,
               const CommonOptions& options,
               const std::function<int(const DeviceSummary& device)>& body);

/// Converts a byte count and a time to GB/s (10^9 bytes per second).
inline double gigabytes_per_second(double bytes, double ms) {
  return ms > 0 ? bytes / (ms * 1e6) : 0;
}

}  // namespace course
