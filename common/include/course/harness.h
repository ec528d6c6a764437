/// \file harness.h
/// \brief The one harness every lesson driver uses: check each variant, time it the same
/// way, print the table against the in-run reference, and give the verdict.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <iosfwd>
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
  double bytes = 0;  ///< what one run moves, in the unit's amount (bytes for GB/s)
  /// Enqueues one run on the stream and nothing else: a prepared course::Launch, so that
  /// argument checks and attribute setting stay out of the timed region.
  std::function<void(cudaStream_t)> run;
  std::function<void(cudaStream_t)> prepare;  ///< before the checked run: poison outputs
  std::function<Comparison()> check;          ///< after the checked run: compare every element
};

/// Which yardstick a target divides by.
enum class Yardstick {
  reference,     ///< the table's in-run reference (usually the D2D cudaMemcpy)
  sm_copy_roof,  ///< the SM copy roof (course/roof.h), measured in the same run
};

/// A performance goal: `variant` should reach `min_of_reference` x the yardstick. Targets
/// are goals, not correctness: a missed target is reported plainly and never fails a run.
struct Target {
  std::string variant;
  double min_of_reference = 0;
  Yardstick of = Yardstick::reference;
};

/// Parameters of one sweep point, as (column, value) pairs: {{"stages", "4"}, ...}.
using SweepParams = std::vector<std::pair<std::string, std::string>>;

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
  /// The second yardstick of every copy-and-compute lesson: the SM copy roof
  /// (course/roof.h) over the same `bytes`, best of a few launch shapes, in this run.
  /// Adds the "x SM copy roof" column to the table. Both pointers 16-byte aligned; a size
  /// that is not a multiple of 16 is rounded down (the roof is a rate, per byte).
  void roof_sm_copy(void* dst, const void* src, std::size_t bytes);
  /// The unit of the rate column: the rate is amount / seconds / `amount_per_unit`
  /// (default "GB/s" with 1e9: a Variant's amount is then its bytes).
  void unit(std::string name, double amount_per_unit);
  /// The variant whose time the others' speed-ups are relative to (must be added too).
  void baseline(const std::string& name) { baseline_ = name; }
  /// The variant the tour quotes.
  void headline(const std::string& name) { headline_ = name; }
  void target(Target t) { targets_.push_back(std::move(t)); }
  /// A target relative to another variant; printed with the other TARGET lines.
  void ratio_target(RatioTarget t) { ratio_targets_.push_back(std::move(t)); }
  /// A target the lesson judges itself (an overlap fraction, a model's bound): printed as
  /// "TARGET: <description>: met (<value>)" or "... MISSED (<value>)" and counted.
  void judged_target(std::string description, bool met, double value);

  /// Checks `v` (poison, one run, compare every element), then times it. Skipped when
  /// --variant names another variant.
  void run(const Variant& v);

  /// Records a row the lesson timed itself (host clocks, several streams): `amount` in the
  /// table's unit's amount (bytes for GB/s), `check` "PASS", "FAIL" or "-".
  void record(const std::string& name, double median_ms, double amount, const std::string& check);

  /// Checks and times `v` as run() does, as one point of the sweep named `sweep`: every
  /// sweep is printed as its own table after the main one, with the same yardsticks, and
  /// written to the sweep CSV (--csv FILE.csv -> FILE_sweep.csv) with `params` as columns.
  void sweep(const std::string& sweep, const SweepParams& params, const Variant& v);
  /// A sweep point the lesson timed itself (see record()).
  void record_sweep(const std::string& sweep, const SweepParams& params, const std::string& name,
                    double median_ms, double amount, const std::string& check);

  /// Prints the table and the sweeps, writes the CSVs if asked, prints the HEADLINE, one
  /// TARGET line per target, "TARGETS: k of m met" and "RESULT: PASS|FAIL". RESULT is
  /// about correctness only. Returns 0 when every variant and sweep point passed its
  /// check, 1 otherwise.
  int finish();

  cudaStream_t stream() const { return stream_.get(); }
  int warmup() const { return warmup_; }
  int iters() const { return iters_; }
  /// The measured rate of a row already run (0 when there is none): for lessons that
  /// derive a judged target from two rows.
  double rate_of(const std::string& name) const;
  /// The measured rate of a point of sweep `sweep` already run (0 when there is none).
  double sweep_rate_of(const std::string& sweep, const std::string& name) const;

 private:
  struct Measured {
    std::string sweep;  ///< empty for the main table
    SweepParams params;
    ResultRow row;
    bool passed;
  };
  Measured measure(const Variant& v);
  ResultRow with_ratios(const Measured& m, const Measured* baseline) const;
  // The steps of finish(), in the order it runs them.
  std::string reference_label() const;  ///< the reference's name, "reference" when unnamed
  std::string baseline_label() const;   ///< the baseline's name, "baseline" when unnamed
  const Measured* find_baseline() const;
  ResultsTable new_table() const;  ///< empty, with this run's yardstick columns
  bool all_checks_passed() const;
  std::vector<std::string> sweep_names() const;  ///< in order of appearance
  ResultsTable main_table(const Measured* baseline) const;
  void print_sweeps(const std::vector<std::string>& sweeps, const Measured* baseline) const;
  void print_main_table(const ResultsTable& table) const;
  bool write_csv_files(const ResultsTable& table, bool has_sweeps, const Measured* baseline) const;
  bool write_sweep_csv(const std::string& path, const Measured* baseline) const;
  void print_headline(const ResultsTable& table) const;
  void print_targets(const ResultsTable& table) const;
  std::string lesson_;
  CommonOptions options_;
  DeviceSummary device_;
  Stream stream_;
  int warmup_;
  int iters_;
  std::string reference_name_;
  std::optional<double> reference_rate_;
  std::string unit_ = "GB/s";
  double amount_per_unit_ = 1e9;
  std::string roof_name_;
  std::optional<double> roof_rate_;
  std::string roof_shape_;
  struct Judged {
    std::string description;
    bool met;
    double value;
  };
  std::vector<Judged> judged_;
  std::string baseline_;
  std::string headline_;
  std::vector<Target> targets_;
  std::vector<RatioTarget> ratio_targets_;
  std::vector<Measured> measured_;
};

/// Parses the flags, runs `validate` (the lesson's own range checks: it throws UsageError),
/// checks that --csv names a writable file, then opens the device and runs `body`, mapping
/// every outcome to the course's exit codes: usage error 2 (always before any CUDA call),
/// no usable device 77, an exception 1, otherwise what `body` returns. --help prints the
/// usage and returns 0.
int run_driver(const FlagParser& flags, int argc, const char* const* argv,
               const CommonOptions& options,
               const std::function<int(const DeviceSummary& device)>& body,
               const std::function<void()>& validate = {});

/// "dir/06_x.csv" -> "dir/06_x_sweep.csv" (a name without ".csv" gets "_sweep.csv"): where
/// the harness writes the sweeps beside the main CSV.
std::string sweep_csv_path(const std::string& main_csv);

/// Converts a byte count and a time to GB/s (10^9 bytes per second).
inline double gigabytes_per_second(double bytes, double ms) {
  return ms > 0 ? bytes / (ms * 1e6) : 0;
}

}  // namespace course
