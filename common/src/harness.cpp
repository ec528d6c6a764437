#include "course/harness.h"

#include <algorithm>
#include <fstream>
#include <iostream>

#include "course/check.h"
#include "course/timing.h"

namespace course {

Harness::Harness(std::string lesson, const CommonOptions& options, const DeviceSummary& device)
    : lesson_(std::move(lesson)),
      options_(options),
      device_(device),
      // --quick is for tests and sanitizers: a couple of runs prove the code, not its speed.
      warmup_(options.quick ? std::min(options.warmup, 1) : options.warmup),
      iters_(options.quick ? std::min(options.iters, 2) : options.iters) {}

void Harness::reference(const std::string& name, double bytes,
                        std::function<void(cudaStream_t)> run) {
  const Timing t = time_stream_work(run, stream(), warmup_, iters_);
  reference_name_ = name;
  reference_rate_ = gigabytes_per_second(bytes, t.median_ms);
  ResultRow row{name, t.median_ms, *reference_rate_, 1.0, std::nullopt, "ref"};
  measured_.push_back({row, bytes, true});
}

void Harness::reference_d2d_copy(void* dst, const void* src, std::size_t bytes) {
  reference("D2D cudaMemcpy", 2.0 * static_cast<double>(bytes), [=](cudaStream_t s) {
    COURSE_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
  });
}

void Harness::run(const Variant& v) {
  if (!options_.variant.empty() && options_.variant != v.name) return;
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
  ResultRow row{v.name,       t.median_ms,  gigabytes_per_second(v.bytes, t.median_ms),
                std::nullopt, std::nullopt, check};
  measured_.push_back({row, v.bytes, passed});
}

int Harness::finish() {
  ResultsTable table(reference_name_.empty() ? "reference" : reference_name_,
                     baseline_.empty() ? "baseline" : baseline_);
  const Measured* baseline = nullptr;
  for (const Measured& m : measured_) {
    if (m.row.variant == baseline_) baseline = &m;
  }
  bool all_passed = true;
  for (const Measured& m : measured_) {
    ResultRow row = m.row;
    if (reference_rate_ && *reference_rate_ > 0) row.of_reference = row.rate / *reference_rate_;
    if (baseline != nullptr && row.median_ms > 0 && row.check != "ref") {
      row.vs_baseline = baseline->row.median_ms / row.median_ms;
    }
    all_passed = all_passed && m.passed;
    table.add(row);
  }

  std::cout << "\n";
  table.print(std::cout);
  std::cout << "(" << iters_ << " timed runs after " << warmup_ << " warm-up runs, medians; "
            << "x " << (baseline_.empty() ? "baseline" : baseline_) << " = speed-up over it)\n\n";

  if (!options_.csv.empty()) {
    std::ofstream csv(options_.csv);
    table.write_csv(csv, {{"lesson", lesson_}, {"gpu", device_.name}});
    if (!csv) {
      std::cerr << "error: could not write " << options_.csv << "\n";
      all_passed = false;
    }
  }

  if (const ResultRow* h = table.find(headline_); h != nullptr) {
    std::cout << "HEADLINE: " << h->variant << " " << fixed(h->rate, 0) << " GB/s";
    if (h->of_reference)
      std::cout << " = " << fixed(*h->of_reference, 2) << " x " << reference_name_;
    std::cout << "\n";
  }
  for (const Target& t : targets_) {
    const ResultRow* row = table.find(t.variant);
    if (row == nullptr || !row->of_reference) continue;  // not run (--variant)
    const bool met = *row->of_reference >= t.min_of_reference;
    std::cout << "TARGET: " << t.variant << " >= " << fixed(t.min_of_reference, 2) << " x "
              << reference_name_ << ": " << (met ? "met" : "MISSED") << " ("
              << fixed(*row->of_reference, 3) << ")\n";
  }
  for (const RatioTarget& t : ratio_targets_) {
    const std::string line = ratio_target_line(table, t);
    if (!line.empty()) std::cout << line << "\n";
  }
  std::cout << "RESULT: " << (all_passed ? "PASS" : "FAIL") << "\n";
  return all_passed ? 0 : 1;
}

std::string ratio_target_line(const ResultsTable& table, const RatioTarget& target) {
  const ResultRow* row = table.find(target.variant);
  const ResultRow* of = table.find(target.of_variant);
  if (row == nullptr || of == nullptr || !(of->rate > 0)) return {};
  const double ratio = row->rate / of->rate;
  return "TARGET: " + target.variant + " >= " + fixed(target.min_ratio, 2) + " x " +
         target.of_variant + ": " + (ratio >= target.min_ratio ? "met" : "MISSED") + " (" +
         fixed(ratio, 3) + ")";
}

int run_driver(const FlagParser& flags, int argc, const char* const* argv,
               const CommonOptions& options,
               const std::function<int(const DeviceSummary& device)>& body) {
  try {
    flags.parse(argc, argv);
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
