// Lesson 13 driver: measures which kinds of stream run work concurrently, what breaks that
// concurrency, and what each synchronisation call waits for.
//
// The main table: two operations (two spin kernels, or a host->device copy and a spin
// kernel) in two streams of given kinds; their overlap on the GPU's own clock, checked
// against what the CUDA programming model guarantees (the student's implicitly_serialised).
// Two more tables: the breaker matrix (breakers.cu: one operation between the launches of
// two spin kernels) and the synchronisation calls (sync_calls.cu). The rate column of every
// table is the overlap in percent (100 x overlap_ratio).
#include <cuda_runtime.h>

#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "course/check.h"
#include "course/harness.h"
#include "course/table.h"
#include "measure.h"
#include "streams_and_sync.cuh"

namespace {

using namespace streams_and_sync;

constexpr std::uint64_t kDefaultCopyBytes = 256ull << 20;  // ~5 ms over PCIe 5
constexpr std::uint64_t kQuickCopyBytes = 32ull << 20;
constexpr std::uint64_t kMaxCopyBytes = 4ull << 30;  // pinned host memory and device memory
constexpr int kDefaultSpinMs = 5;
constexpr int kQuickSpinMs = 2;  // short: compute-sanitizer runs --quick
constexpr std::uint64_t kNsPerMs = 1'000'000;
constexpr int kMaxSpinMs = static_cast<int>(kMaxSpinNs / kNsPerMs);
constexpr const char* kSyncApisVariant = "sync-apis";
// The pair the targets judge, and whose kernel+kernel row is the headline.
constexpr const char* kTargetSetting = "non-blocking+non-blocking";
constexpr const char* kLesson = "13_streams_and_sync";

/// Two streams of given kinds. The first gets the first operation, the second the other.
struct Setting {
  const char* name;
  StreamKind first;
  StreamKind second;
};

const std::vector<Setting> kSettings = {
    {"legacy+legacy", StreamKind::legacy_default, StreamKind::legacy_default},
    {"legacy+blocking", StreamKind::legacy_default, StreamKind::blocking},
    {"legacy+non-blocking", StreamKind::legacy_default, StreamKind::non_blocking},
    {"per-thread+per-thread", StreamKind::per_thread_default, StreamKind::per_thread_default},
    {"per-thread+legacy", StreamKind::per_thread_default, StreamKind::legacy_default},
    {"per-thread+blocking", StreamKind::per_thread_default, StreamKind::blocking},
    {"blocking+blocking", StreamKind::blocking, StreamKind::blocking},
    {kTargetSetting, StreamKind::non_blocking, StreamKind::non_blocking},
};

/// The command line, as given: the common flags and lesson 13's own.
struct Settings {
  course::CommonOptions options;
  int spin_ms = 0;
  bool child_launch_blocking = false;
};

/// Every size and count of the run, resolved from the command line.
struct Plan {
  int spin_ms = 0;  ///< GPU time of each spin kernel
  std::uint64_t spin_ns = 0;
  std::uint64_t copy_bytes = 0;  ///< the host->device copy of the copy+kernel pairs
  std::string variant;           ///< the one row or table --variant asks for; empty: all
  bool child_launch_blocking = false;

  /// Whether --variant leaves the row or table `name` in the run.
  bool selected(const std::string& name) const { return variant.empty() || variant == name; }
};

/// The overlaps the targets judge: both pairs in two non-blocking streams (empty when not run
/// or not measured).
struct TargetOverlaps {
  std::optional<double> kernels, copy;
};

Plan make_plan(const Settings& s);
void print_intro(int spin_ms, std::uint64_t copy_bytes, const course::DeviceSummary& gpu);
TargetOverlaps run_pairs_table(course::Harness& harness, PairBench& bench, const Plan& plan);
void run_breakers_table(course::Harness& harness, PairBench& bench, const Plan& plan,
                        const ChildArgs& child);
void run_sync_calls_table(course::Harness& harness, PairBench& bench);
void add_target(course::Harness& harness, const char* work, std::optional<double> overlap);

/// The output, part by part: the intro lines, the pairs table, the breaker matrix, the
/// synchronisation calls, the targets. The child run of the CUDA_LAUNCH_BLOCKING row prints
/// its one report line instead.
int run(const Settings& s, const course::DeviceSummary& gpu) {
  const Plan plan = make_plan(s);
  course::Harness harness(kLesson, s.options, gpu);
  const int warmup = harness.warmup();
  const int iters = harness.iters();
  if (plan.child_launch_blocking) return run_child(plan.spin_ns, warmup, iters);

  print_intro(plan.spin_ms, plan.copy_bytes, gpu);
  harness.unit("overlap %", 0.01);
  PairBench bench(plan.spin_ns, plan.copy_bytes);
  const TargetOverlaps overlaps = run_pairs_table(harness, bench, plan);
  run_breakers_table(harness, bench, plan, ChildArgs{gpu.ordinal, plan.spin_ms, warmup, iters});
  if (plan.selected(kSyncApisVariant)) run_sync_calls_table(harness, bench);
  add_target(harness, "kernel+kernel", overlaps.kernels);
  add_target(harness, "copy+kernel", overlaps.copy);
  return harness.finish();
}

/// The flags resolved: the one place that reads --quick.
Plan make_plan(const Settings& s) {
  const course::CommonOptions& options = s.options;
  Plan plan;
  plan.spin_ms = s.spin_ms > 0 ? s.spin_ms : (options.quick ? kQuickSpinMs : kDefaultSpinMs);
  plan.spin_ns = static_cast<std::uint64_t>(plan.spin_ms) * kNsPerMs;
  plan.copy_bytes =
      options.size ? options.size : (options.quick ? kQuickCopyBytes : kDefaultCopyBytes);
  plan.variant = options.variant;
  plan.child_launch_blocking = s.child_launch_blocking;
  return plan;
}

/// The harness's rate is amount / seconds / amount_per_unit; with the unit "overlap %"
/// (0.01 per second) a pair recorded with this amount shows its overlap in percent.
double overlap_amount(const Measured& m) {
  return m.problem.empty() ? m.timing.overlap * m.timing.pair_ms * 1e-3 : 0;
}

std::string ms(double value) { return course::fixed(value, 3); }

int device_attribute(cudaDeviceAttr attribute, int device) {
  int value = 0;
  COURSE_CHECK(cudaDeviceGetAttribute(&value, attribute, device));
  return value;
}

void print_intro(int spin_ms, std::uint64_t copy_bytes, const course::DeviceSummary& gpu) {
  std::cout << "lesson 13 streams_and_sync: spin kernels of " << spin_ms << " ms (one block of "
            << kSpinThreads << " threads each), a host->device copy of " << copy_bytes
            << " bytes from pinned memory\n  concurrent kernels: "
            << (device_attribute(cudaDevAttrConcurrentKernels, gpu.ordinal) ? "yes" : "no")
            << ", copy engines: " << device_attribute(cudaDevAttrAsyncEngineCount, gpu.ordinal)
            << "\n  overlap % = the time both ran at once, in % of the shorter one's own time, "
               "on the GPU's global timer (median ms: t_pair): below "
            << kSerialisedBelow * 100 << " serialised, above " << kConcurrentAbove * 100
            << " concurrent\n  check: PASS agrees with what CUDA guarantees; FAIL "
               "contradicts it or the values did not verify; NOTE allowed, but the GPU "
               "did not overlap; - nothing is guaranteed, only measured\n";
}

/// The main table: for every pair of stream kinds, two kernels and then a copy and a kernel,
/// each judged against what CUDA guarantees for that pair.
TargetOverlaps run_pairs_table(course::Harness& harness, PairBench& bench, const Plan& plan) {
  TargetOverlaps overlaps;
  for (const Setting& setting : kSettings) {
    if (!plan.selected(setting.name)) continue;
    const bool serialised = implicitly_serialised(setting.first, setting.second);
    for (const bool copy : {false, true}) {
      KindStream first(setting.first);
      KindStream second(setting.second);
      const Measured m = measure(harness.warmup(), harness.iters(), [&](bool check_values) {
        return copy ? bench.copy_and_kernel(first, second, check_values)
                    : bench.kernel_pair(first, second);
      });
      const std::string work = copy ? "copy+kernel" : "kernel+kernel";
      const std::string label = std::string(setting.name) + " " + work + " (" +
                                (serialised ? "serialises" : "may overlap") + ")";
      if (!m.problem.empty()) std::cerr << label << ": " << m.problem << "\n";
      harness.record(label, m.timing.pair_ms, overlap_amount(m), judge(m, serialised));
      if (setting.name == std::string(kTargetSetting) && m.problem.empty()) {
        (copy ? overlaps.copy : overlaps.kernels) = m.timing.overlap;
        if (!copy) harness.headline(label);
      }
    }
  }
  return overlaps;
}

/// One row of the breaker matrix: a spin kernel in each of two streams, one operation
/// between the launches (in a child process for the environment variables).
void run_breaker(course::Harness& harness, PairBench& bench, const Breaker& b,
                 const ChildArgs& child) {
  const Measured m = measure_breaker(bench, b, child, harness.warmup(), harness.iters());
  std::optional<bool> must_serialise;
  if (b.model == Guarantee::breaks) must_serialise = true;
  if (b.model == Guarantee::no_implicit_sync) must_serialise = false;
  const std::string label = std::string(b.name) + " (" + guarantee_name(b.model) + ")";
  const bool timed = m.problem.empty();
  const bool in_child = !b.between;
  std::cout << "  " << b.operation << ", " << stream_kind_name(b.streams) << " streams"
            << (in_child || !timed ? "" : ": held the host " + ms(m.between_ms) + " ms") << "\n";
  if (!timed) std::cerr << label << ": " << m.problem << "\n";
  harness.record_sweep("breakers",
                       {{"between", b.operation},
                        {"streams", stream_kind_name(b.streams)},
                        {"model", guarantee_name(b.model)},
                        {"t1_ms", timed ? ms(m.timing.t1_ms) : ""},
                        {"t2_ms", timed ? ms(m.timing.t2_ms) : ""},
                        {"host_op_ms", timed && !in_child ? ms(m.between_ms) : ""}},
                       label, m.timing.pair_ms, overlap_amount(m), judge(m, must_serialise));
}

void run_breakers_table(course::Harness& harness, PairBench& bench, const Plan& plan,
                        const ChildArgs& child) {
  bool any_breaker = false;
  for (const Breaker& b : breakers()) {
    if (!plan.selected(b.name)) continue;
    if (!any_breaker) {
      std::cout << "\nWhat breaks concurrency: a spin kernel in each of two streams, one "
                   "operation between the launches:\n";
      any_breaker = true;
    }
    run_breaker(harness, bench, b, child);
  }
}

void run_sync_calls_table(course::Harness& harness, PairBench& bench) {
  std::cout << "\nSynchronisation calls (their table's time is how long the call held "
               "the host; the overlap column does not apply):\n";
  for (const SyncRow& r : run_sync_calls(bench)) {
    std::cout << "  " << r.call << ": " << r.observed << "  " << r.check << "\n";
    harness.record_sweep("sync calls", {{"observed", r.observed}}, r.call, r.host_ms, 0, r.check);
  }
}

/// Expected on any GPU with concurrent kernels and a copy engine, never promised.
void add_target(course::Harness& harness, const char* work, std::optional<double> overlap) {
  if (!overlap) return;
  harness.judged_target(std::string(work) + " in two non-blocking streams concurrent (overlap > " +
                            course::fixed(kConcurrentAbove, 2) + ")",
                        classify(*overlap) == Concurrency::concurrent, *overlap);
}

std::vector<std::string> variant_names() {
  std::vector<std::string> names;
  for (const Setting& s : kSettings) names.emplace_back(s.name);
  for (const Breaker& b : breakers()) names.emplace_back(b.name);
  names.emplace_back(kSyncApisVariant);
  return names;
}

void add_flags(course::FlagParser& flags, Settings& s) {
  flags.add_common(s.options,
                   "bytes of the host->device copy of the copy+kernel pairs, a multiple of 4, "
                   "at most " +
                       course::count_text(kMaxCopyBytes) + " (default " +
                       course::count_text(kDefaultCopyBytes) + "; " +
                       course::count_text(kQuickCopyBytes) + " with --quick; K/M/G suffixes)",
                   variant_names());
  flags.add_int("spin-ms", &s.spin_ms, 0,
                "milliseconds of GPU time each spin kernel runs, at most " +
                    std::to_string(kMaxSpinMs) + " (default 0: " + std::to_string(kDefaultSpinMs) +
                    ", or " + std::to_string(kQuickSpinMs) + " with --quick)");
  flags.add_bool("child-launch-blocking", &s.child_launch_blocking,
                 "internal: the child run the CUDA_LAUNCH_BLOCKING row starts (prints one "
                 "CHILD-REPORT line)");
}

/// The range checks the flag parser cannot do; run_driver calls it before opening the device.
void validate(const Settings& s) {
  if (s.spin_ms > kMaxSpinMs) {
    throw course::UsageError("--spin-ms must be at most " + std::to_string(kMaxSpinMs) + ", got " +
                             std::to_string(s.spin_ms));
  }
  if (s.options.size % 4 != 0) throw course::UsageError("--size must be a multiple of 4 bytes");
  if (s.options.size > kMaxCopyBytes) {
    throw course::UsageError("--size must be at most " + course::count_text(kMaxCopyBytes));
  }
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  course::FlagParser flags(
      kLesson,
      "Lesson 13: streams and synchronisation. Measures, on the GPU's own clock, whether two\n"
      "operations in two streams of given kinds (legacy default, per-thread default,\n"
      "blocking, non-blocking) run concurrently; what breaks that concurrency (an operation\n"
      "in the legacy stream, cudaMalloc, cudaFree, destroying a stream or an event,\n"
      "CUDA_LAUNCH_BLOCKING=1, ...); and what each synchronisation call waits for.\n"
      "overlap: the time both ran at once, as a fraction of the shorter one's own time\n"
      "(100 % concurrent, 0 % serialised).");
  add_flags(flags, settings);
  return course::run_driver(
      flags, argc, argv, settings.options,
      [&](const course::DeviceSummary& gpu) { return run(settings, gpu); },
      [&] { validate(settings); });
}
