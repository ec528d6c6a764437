// Lesson 13 driver: measures which kinds of stream run work concurrently, what breaks that
// concurrency, and what each synchronisation call waits for.
//
// The main table: two operations (two spin kernels, or a host->device copy and a spin
// kernel) in two streams of given kinds; their overlap on the GPU's own clock, checked
// against what the CUDA programming model guarantees (the student's implicitly_serialised).
// Two more tables: the breaker matrix (breakers.cu: one operation between the launches of
// two spin kernels) and the synchronisation calls (sync_calls.cu). The rate column of every
// table is the overlap in percent, (t1 + t2 - t_pair) / min(t1, t2) x 100.
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
constexpr int kMaxSpinMs = static_cast<int>(kMaxSpinNs / 1'000'000);

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
    {"non-blocking+non-blocking", StreamKind::non_blocking, StreamKind::non_blocking},
};

constexpr const char* kSyncApisVariant = "sync-apis";

std::vector<std::string> variant_names() {
  std::vector<std::string> names;
  for (const Setting& s : kSettings) names.emplace_back(s.name);
  for (const Breaker& b : breakers()) names.emplace_back(b.name);
  names.emplace_back(kSyncApisVariant);
  return names;
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

}  // namespace

int main(int argc, char** argv) {
  course::CommonOptions options;
  int spin_ms = 0;
  bool child_launch_blocking = false;
  course::FlagParser flags(
      "13_streams_and_sync",
      "Lesson 13: streams and synchronisation. Measures, on the GPU's own clock, whether two\n"
      "operations in two streams of given kinds (legacy default, per-thread default,\n"
      "blocking, non-blocking) run concurrently; what breaks that concurrency (an operation\n"
      "in the legacy stream, cudaMalloc, cudaFree, destroying a stream or an event,\n"
      "CUDA_LAUNCH_BLOCKING=1, ...); and what each synchronisation call waits for.\n"
      "overlap = (t1 + t2 - t_pair) / min(t1, t2): 100 % concurrent, 0 % serialised.");
  flags.add_common(options,
                   "bytes of the host->device copy of the copy+kernel pairs, a multiple of 4, "
                   "at most 4G (default 256M; 32M with --quick; K/M/G suffixes)",
                   variant_names());
  flags.add_int("spin-ms", &spin_ms, 0,
                "milliseconds of GPU time each spin kernel runs, at most " +
                    std::to_string(kMaxSpinMs) + " (default 0: 5, or 2 with --quick)");
  flags.add_bool("child-launch-blocking", &child_launch_blocking,
                 "internal: the child run the CUDA_LAUNCH_BLOCKING row starts (prints one "
                 "CHILD-REPORT line)");

  const auto validate = [&] {
    if (spin_ms > kMaxSpinMs) {
      throw course::UsageError("--spin-ms must be at most " + std::to_string(kMaxSpinMs) +
                               ", got " + std::to_string(spin_ms));
    }
    if (options.size % 4 != 0) throw course::UsageError("--size must be a multiple of 4 bytes");
    if (options.size > kMaxCopyBytes) throw course::UsageError("--size must be at most 4G");
  };

  return course::run_driver(
      flags, argc, argv, options,
      [&](const course::DeviceSummary& gpu) {
        const int used_spin_ms =
            spin_ms > 0 ? spin_ms : (options.quick ? kQuickSpinMs : kDefaultSpinMs);
        const std::uint64_t spin_ns = static_cast<std::uint64_t>(used_spin_ms) * 1'000'000ull;
        course::Harness harness("13_streams_and_sync", options, gpu);
        const int warmup = harness.warmup();
        const int iters = harness.iters();
        if (child_launch_blocking) return run_child(spin_ns, warmup, iters);

        const std::uint64_t copy_bytes =
            options.size ? options.size : (options.quick ? kQuickCopyBytes : kDefaultCopyBytes);
        std::cout << "lesson 13 streams_and_sync: spin kernels of " << used_spin_ms
                  << " ms (one block of " << kSpinThreads
                  << " threads each), a host->device copy of " << copy_bytes
                  << " bytes from pinned memory\n  concurrent kernels: "
                  << (device_attribute(cudaDevAttrConcurrentKernels, gpu.ordinal) ? "yes" : "no")
                  << ", copy engines: "
                  << device_attribute(cudaDevAttrAsyncEngineCount, gpu.ordinal)
                  << "\n  overlap % = 100 x (t1 + t2 - t_pair) / min(t1, t2) on the GPU's global "
                     "timer (median ms: t_pair): below "
                  << kSerialisedBelow * 100 << " serialised, above " << kConcurrentAbove * 100
                  << " concurrent\n  check: PASS agrees with what CUDA guarantees; FAIL "
                     "contradicts it or the values did not verify; NOTE allowed, but the GPU "
                     "did not overlap; - nothing is guaranteed, only measured\n";
        harness.unit("overlap %", 0.01);

        const auto selected = [&](const std::string& name) {
          return options.variant.empty() || options.variant == name;
        };
        PairBench bench(spin_ns, copy_bytes);
        std::optional<double> kernels_overlap, copy_overlap;  // the targets' rows
        for (const Setting& s : kSettings) {
          if (!selected(s.name)) continue;
          const bool serialised = implicitly_serialised(s.first, s.second);
          for (const bool copy : {false, true}) {
            KindStream first(s.first);
            KindStream second(s.second);
            const Measured m = measure(warmup, iters, [&](bool check_values) {
              return copy ? bench.copy_and_kernel(first, second, check_values)
                          : bench.kernel_pair(first, second);
            });
            const std::string work = copy ? "copy+kernel" : "kernel+kernel";
            const std::string label = std::string(s.name) + " " + work + " (" +
                                      (serialised ? "serialises" : "may overlap") + ")";
            if (!m.problem.empty()) std::cerr << label << ": " << m.problem << "\n";
            harness.record(label, m.timing.pair_ms, overlap_amount(m), judge(m, serialised));
            if (std::string(s.name) == "non-blocking+non-blocking" && m.problem.empty()) {
              (copy ? copy_overlap : kernels_overlap) = m.timing.overlap;
              if (!copy) harness.headline(label);
            }
          }
        }

        const ChildArgs child{gpu.ordinal, used_spin_ms, warmup, iters};
        bool any_breaker = false;
        for (const Breaker& b : breakers()) {
          if (!selected(b.name)) continue;
          if (!any_breaker) {
            std::cout << "\nWhat breaks concurrency: a spin kernel in each of two streams, one "
                         "operation between the launches:\n";
            any_breaker = true;
          }
          const Measured m = measure_breaker(bench, b, child, warmup, iters);
          std::optional<bool> must_serialise;
          if (b.model == Guarantee::breaks) must_serialise = true;
          if (b.model == Guarantee::no_implicit_sync) must_serialise = false;
          const std::string label = std::string(b.name) + " (" + guarantee_name(b.model) + ")";
          const bool timed = m.problem.empty();
          const bool in_child = !b.between;
          std::cout << "  " << b.operation << ", " << stream_kind_name(b.streams) << " streams"
                    << (in_child || !timed ? "" : ": held the host " + ms(m.between_ms) + " ms")
                    << "\n";
          if (!timed) std::cerr << label << ": " << m.problem << "\n";
          harness.record_sweep("breakers",
                               {{"between", b.operation},
                                {"streams", stream_kind_name(b.streams)},
                                {"model", guarantee_name(b.model)},
                                {"t1_ms", timed ? ms(m.timing.t1_ms) : ""},
                                {"t2_ms", timed ? ms(m.timing.t2_ms) : ""},
                                {"host_op_ms", timed && !in_child ? ms(m.between_ms) : ""}},
                               label, m.timing.pair_ms, overlap_amount(m),
                               judge(m, must_serialise));
        }

        if (selected(kSyncApisVariant)) {
          std::cout << "\nSynchronisation calls (their table's time is how long the call held "
                       "the host; the overlap column does not apply):\n";
          for (const SyncRow& r : run_sync_calls(bench)) {
            std::cout << "  " << r.call << ": " << r.observed << "  " << r.check << "\n";
            harness.record_sweep("sync calls", {{"observed", r.observed}}, r.call, r.host_ms, 0,
                                 r.check);
          }
        }

        // Expected on any GPU with concurrent kernels and a copy engine, never promised.
        const auto target = [&](const char* work, std::optional<double> overlap) {
          if (!overlap) return;
          harness.judged_target(std::string(work) +
                                    " in two non-blocking streams concurrent (overlap > " +
                                    course::fixed(kConcurrentAbove, 2) + ")",
                                classify(*overlap) == Concurrency::concurrent, *overlap);
        };
        target("kernel+kernel", kernels_overlap);
        target("copy+kernel", copy_overlap);
        return harness.finish();
      },
      validate);
}
