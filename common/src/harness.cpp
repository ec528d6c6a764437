#include "course/harness.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>

#include "course/check.h"
#include "course/roof.h"
#include "course/timing.h"

namespace course {

Harness::Harness(std::string lesson, const CommonOptions& options, const DeviceSummary& device)
    : lesson_(std::move(lesson)),
      options_(options),
      device_(device),
      // --quick is for tests and sanitizers: a couple of runs prove the code, not its speed.
      warmup_(options.quick ? std::min(options.warmup, 1) : options.warmup),
      iters_(options.quick ? std::min(options.iters, 2) : options.iters) {}

void Harness::unit(std::string name, double amount_per_unit) {
  unit_ = std::move(name);
  amount_per_unit_ = amount_per_unit;
}

namespace {
double rate_of_amount(double amount, double ms, double amount_per_unit) {
  return ms > 0 ? amount / (ms * 1e-3) / amount_per_unit : 0;
}
}  // namespace

void Harness::reference(const std::string& name, double bytes,
                        std::function<void(cudaStream_t)> run) {
  const Timing t = time_stream_work(run, stream(), warmup_, iters_);
  reference_name_ = name;
  reference_rate_ = rate_of_amount(bytes, t.median_ms, amount_per_unit_);
  ResultRow row{name, t.median_ms, *reference_rate_, 1.0, std::nullopt, "ref", std::nullopt};
  measured_.push_back({"", {}, row, true});
}

void Harness::reference_d2d_copy(void* dst, const void* src, std::size_t bytes) {
  reference("D2D cudaMemcpy", 2.0 * static_cast<double>(bytes), [=](cudaStream_t s) {
    COURSE_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
  });
}

void Harness::roof_sm_copy(void* dst, const void* src, std::size_t bytes) {
  bytes -= bytes % 16;  // the roof copies whole 16-byte vectors: its rate is per byte anyway
  const SmCopyRoof roof =
      measure_sm_copy_roof(dst, src, bytes, device_, stream(), warmup_, iters_);
  roof_name_ = "SM copy roof";
  roof_shape_ = roof.describe();
  roof_rate_ = rate_of_amount(2.0 * static_cast<double>(bytes), roof.median_ms, amount_per_unit_);
  ResultRow row{roof_name_, roof.median_ms, *roof_rate_, std::nullopt, std::nullopt, "ref", 1.0};
  measured_.push_back({"", {}, row, true});
}

void Harness::judged_target(std::string description, bool met, double value) {
  judged_.push_back({std::move(description), met, value});
}

Harness::Measured Harness::measure(const Variant& v) {
  bool passed = true;
  std::string check = "-";
  if (v.check) {
    if (v.prepare) v.prepare(stream());
    v.run(stream());
    COURSE_CHECK(cudaStreamSynchronize(stream()));
    const Comparison comparison = v.check();
    passed = comparison.ok();
    check = passed ? "PASS" : "FAIL";
    if (!passed) std::cerr << lesson_ << " " << v.name << ": " << comparison.summary() << "\n";
  }
  const Timing t = time_stream_work(v.run, stream(), warmup_, iters_);
  ResultRow row{v.name,       t.median_ms,  rate_of_amount(v.bytes, t.median_ms, amount_per_unit_),
                std::nullopt, std::nullopt, check,        std::nullopt};
  return {"", {}, row, passed};
}

void Harness::run(const Variant& v) {
  if (!options_.variant.empty() && options_.variant != v.name) return;
  measured_.push_back(measure(v));
}

void Harness::record(const std::string& name, double median_ms, double amount,
                     const std::string& check) {
  ResultRow row{name,         median_ms,    rate_of_amount(amount, median_ms, amount_per_unit_),
                std::nullopt, std::nullopt, check,        std::nullopt};
  measured_.push_back({"", {}, row, check != "FAIL"});
}

void Harness::sweep(const std::string& sweep, const SweepParams& params, const Variant& v) {
  Measured m = measure(v);
  m.sweep = sweep;
  m.params = params;
  measured_.push_back(std::move(m));
}

void Harness::record_sweep(const std::string& sweep, const SweepParams& params,
                           const std::string& name, double median_ms, double amount,
                           const std::string& check) {
  ResultRow row{name,         median_ms,    rate_of_amount(amount, median_ms, amount_per_unit_),
                std::nullopt, std::nullopt, check,        std::nullopt};
  measured_.push_back({sweep, params, row, check != "FAIL"});
}

double Harness::rate_of(const std::string& name) const {
  for (const Measured& m : measured_) {
    if (m.sweep.empty() && m.row.variant == name) return m.row.rate;
  }
  return 0;
}

double Harness::sweep_rate_of(const std::string& sweep, const std::string& name) const {
  for (const Measured& m : measured_) {
    if (m.sweep == sweep && m.row.variant == name) return m.row.rate;
  }
  return 0;
}

ResultRow Harness::with_ratios(const Measured& m, const Measured* baseline) const {
  ResultRow row = m.row;
  if (reference_rate_ && *reference_rate_ > 0) row.of_reference = row.rate / *reference_rate_;
  if (roof_rate_ && *roof_rate_ > 0) row.of_roof = row.rate / *roof_rate_;
  if (baseline != nullptr && row.median_ms > 0 && row.check != "ref") {
    // A speed-up in time when both rows do the same work, else in rate.
    row.vs_baseline = row.rate / baseline->row.rate;
  }
  return row;
}

std::string sweep_csv_path(const std::string& main_csv) {
  const std::string suffix = ".csv";
  if (main_csv.size() > suffix.size() &&
      main_csv.compare(main_csv.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return main_csv.substr(0, main_csv.size() - suffix.size()) + "_sweep.csv";
  }
  return main_csv + "_sweep.csv";
}

// ---- finish(): the table, the sweeps, the CSVs, the headline, the targets, the verdict --------
// Each step is its own function, in the order finish() prints them; every table is built
// from measured_ by the same with_ratios(), so a row reads the same in every table and file.

namespace {

/// One judged goal as its TARGET line shows it: "TARGET: <text>: met (<value>)".
struct Verdict {
  std::string text;
  bool met = false;
  double value = 0;
};

std::string target_line(const Verdict& v) {
  return "TARGET: " + v.text + ": " + (v.met ? "met" : "MISSED") + " (" + fixed(v.value, 3) + ")";
}

/// The ratio rule, written once for finish() and ratio_target_line(): the variant's rate over
/// the other variant's. No verdict when either row is missing (not run, --variant) or the
/// other's rate is not positive (a ratio to nothing says nothing).
std::optional<Verdict> judge_ratio_target(const ResultsTable& table, const RatioTarget& t) {
  const ResultRow* row = table.find(t.variant);
  const ResultRow* of = table.find(t.of_variant);
  if (row == nullptr || of == nullptr || !(of->rate > 0)) return std::nullopt;
  const double ratio = row->rate / of->rate;
  return Verdict{t.variant + " >= " + fixed(t.min_ratio, 2) + " x " + t.of_variant,
                 ratio >= t.min_ratio, ratio};
}

/// A target against a yardstick: the row's ratio column (x reference or x roof). No verdict
/// when the row was not run (--variant) or has no such column.
std::optional<Verdict> judge_target(const ResultsTable& table, const Target& t,
                                    const std::string& reference, const std::string& roof) {
  const ResultRow* row = table.find(t.variant);
  const bool of_roof = t.of == Yardstick::sm_copy_roof;
  const std::optional<double> ratio = row == nullptr ? std::nullopt
                                      : of_roof       ? row->of_roof
                                                      : row->of_reference;
  if (!ratio) return std::nullopt;
  return Verdict{
      t.variant + " >= " + fixed(t.min_of_reference, 2) + " x " + (of_roof ? roof : reference),
      *ratio >= t.min_of_reference, *ratio};
}

/// The value of column `key` in a sweep point's parameters ("" when the point has none).
std::string param_value(const SweepParams& params, const std::string& key) {
  std::string value;
  for (const auto& [k, v] : params) {
    if (k == key) value = v;
  }
  return value;
}

}  // namespace

std::string Harness::reference_label() const {
  return reference_name_.empty() ? "reference" : reference_name_;
}

std::string Harness::baseline_label() const { return baseline_.empty() ? "baseline" : baseline_; }

const Harness::Measured* Harness::find_baseline() const {
  const Measured* baseline = nullptr;
  for (const Measured& m : measured_) {
    if (m.sweep.empty() && m.row.variant == baseline_) baseline = &m;
  }
  return baseline;
}

ResultsTable Harness::new_table() const {
  ResultsTable table(reference_label(), baseline_label(), unit_);
  if (roof_rate_) table.set_roof(roof_name_);
  return table;
}

bool Harness::all_checks_passed() const {
  bool all_passed = true;
  for (const Measured& m : measured_) all_passed = all_passed && m.passed;
  return all_passed;
}

std::vector<std::string> Harness::sweep_names() const {
  std::vector<std::string> sweeps;  // in order of appearance
  for (const Measured& m : measured_) {
    if (!m.sweep.empty() && std::find(sweeps.begin(), sweeps.end(), m.sweep) == sweeps.end()) {
      sweeps.push_back(m.sweep);
    }
  }
  return sweeps;
}

ResultsTable Harness::main_table(const Measured* baseline) const {
  ResultsTable table = new_table();
  for (const Measured& m : measured_) {
    if (m.sweep.empty()) table.add(with_ratios(m, baseline));
  }
  return table;
}

void Harness::print_sweeps(const std::vector<std::string>& sweeps, const Measured* baseline) const {
  for (const std::string& sweep : sweeps) {
    // Each sweep's table starts with the yardsticks, so its ratios can be read on their own.
    ResultsTable sweep_table = new_table();
    for (const Measured& m : measured_) {
      if (m.sweep.empty() && m.row.check == "ref") sweep_table.add(with_ratios(m, baseline));
    }
    for (const Measured& m : measured_) {
      if (m.sweep == sweep) sweep_table.add(with_ratios(m, baseline));
    }
    std::cout << "\nSweep: " << sweep << "\n";
    sweep_table.print(std::cout);
  }
}

void Harness::print_main_table(const ResultsTable& table) const {
  std::cout << "\n";
  table.print(std::cout);
  std::cout << "(" << iters_ << " timed runs after " << warmup_ << " warm-up runs, medians; "
            << "x " << baseline_label() << " = speed-up over it";
  if (roof_rate_) std::cout << "; the SM copy roof ran at " << roof_shape_;
  std::cout << ")\n\n";
}

bool Harness::write_sweep_csv(const std::string& path, const Measured* baseline) const {
  // One file for every sweep: the union of the parameter columns, in order of appearance.
  std::vector<std::string> columns;
  for (const Measured& m : measured_) {
    for (const auto& [key, value] : m.params) {
      if (std::find(columns.begin(), columns.end(), key) == columns.end()) columns.push_back(key);
    }
  }
  std::ofstream out(path);
  out << "lesson,gpu,sweep";
  for (const std::string& c : columns) out << "," << csv_field(c);
  out << ",variant,median_ms,rate,unit,of_reference,of_roof,vs_baseline,check\n";
  for (const Measured& m : measured_) {
    if (m.sweep.empty() && m.row.check != "ref") continue;  // the yardsticks, then the sweeps
    const ResultRow row = with_ratios(m, baseline);
    out << csv_field(lesson_) << "," << csv_field(device_.name) << ","
        << (m.sweep.empty() ? "reference" : csv_field(m.sweep));
    for (const std::string& c : columns) out << "," << csv_field(param_value(m.params, c));
    out << "," << csv_field(row.variant) << "," << fixed(row.median_ms, 6) << ","
        << fixed(row.rate, 3) << "," << csv_field(unit_) << ","
        << (row.of_reference ? fixed(*row.of_reference, 4) : "") << ","
        << (row.of_roof ? fixed(*row.of_roof, 4) : "") << ","
        << (row.vs_baseline ? fixed(*row.vs_baseline, 4) : "") << "," << row.check << "\n";
  }
  if (!out) std::cerr << "error: could not write " << path << "\n";
  return static_cast<bool>(out);
}

bool Harness::write_csv_files(const ResultsTable& table, bool has_sweeps,
                              const Measured* baseline) const {
  bool written = true;
  std::ofstream csv(options_.csv);
  table.write_csv(csv, {{"lesson", lesson_}, {"gpu", device_.name}});
  if (!csv) {
    std::cerr << "error: could not write " << options_.csv << "\n";
    written = false;
  }
  if (has_sweeps && !write_sweep_csv(sweep_csv_path(options_.csv), baseline)) written = false;
  return written;
}

void Harness::print_headline(const ResultsTable& table) const {
  const ResultRow* h = table.find(headline_);
  if (h == nullptr) return;
  std::cout << "HEADLINE: " << h->variant << " " << fixed(h->rate, unit_ == "GB/s" ? 0 : 2) << " "
            << unit_;
  if (h->of_reference) {
    std::cout << " = " << fixed(*h->of_reference, 2) << " x " << reference_label();
  }
  if (h->of_roof) std::cout << " = " << fixed(*h->of_roof, 2) << " x " << roof_name_;
  std::cout << "\n";
}

void Harness::print_targets(const ResultsTable& table) const {
  // Yardstick targets first, then ratio targets, then the lesson's own: the order of the
  // TARGET lines the results tooling reads.
  std::vector<Verdict> verdicts;
  for (const Target& t : targets_) {
    if (auto v = judge_target(table, t, reference_label(), roof_name_)) verdicts.push_back(*v);
  }
  for (const RatioTarget& t : ratio_targets_) {
    if (auto v = judge_ratio_target(table, t)) verdicts.push_back(*v);
  }
  for (const Judged& j : judged_) verdicts.push_back({j.description, j.met, j.value});
  int met_count = 0;
  for (const Verdict& v : verdicts) {
    std::cout << target_line(v) << "\n";
    met_count += v.met ? 1 : 0;
  }
  if (!verdicts.empty()) {
    std::cout << "TARGETS: " << met_count << " of " << verdicts.size()
              << " met (goals for this GPU, not correctness)\n";
  }
}

int Harness::finish() {
  const Measured* baseline = find_baseline();
  const ResultsTable table = main_table(baseline);
  const std::vector<std::string> sweeps = sweep_names();
  bool all_passed = all_checks_passed();

  print_sweeps(sweeps, baseline);
  print_main_table(table);
  if (!options_.csv.empty() && !write_csv_files(table, !sweeps.empty(), baseline)) {
    all_passed = false;  // a run whose results were asked for but not written did not pass
  }
  print_headline(table);
  print_targets(table);
  std::cout << "RESULT: " << (all_passed ? "PASS" : "FAIL") << "\n";
  return all_passed ? 0 : 1;
}

std::string ratio_target_line(const ResultsTable& table, const RatioTarget& target) {
  const std::optional<Verdict> v = judge_ratio_target(table, target);
  return v ? target_line(*v) : std::string();
}

int run_driver(const FlagParser& flags, int argc, const char* const* argv,
               const CommonOptions& options,
               const std::function<int(const DeviceSummary& device)>& body,
               const std::function<void()>& validate) {
  try {
    flags.parse(argc, argv);
    if (!options.help) {
      if (validate) validate();
      if (!options.csv.empty()) {
        // Open for appending: a writable path is found out now, before a long run, and
        // an existing file is not truncated until the run writes its results.
        std::ofstream probe(options.csv, std::ios::app);
        if (!probe) throw UsageError("--csv: cannot write " + options.csv);
      }
    }
  } catch (const UsageError& e) {
    std::cerr << "error: " << e.what() << "\n\n" << flags.usage();
    return 2;
  }
  if (options.help) {
    std::cout << flags.usage();
    return 0;
  }
  try {
    const DeviceSummary device = open_device(options.device);
    std::cout << device.describe() << std::endl;
    return body(device);
  } catch (const NoDevice& e) {
    std::cerr << "cannot run here: " << e.what() << "\n";
    return 77;
  } catch (const UsageError& e) {
    std::cerr << "error: " << e.what() << "\n\n" << flags.usage();
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    std::cout << "RESULT: FAIL\n";
    return 1;
  }
}

}  // namespace course
