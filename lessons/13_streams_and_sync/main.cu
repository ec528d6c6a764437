// Lesson 13 driver: measures which kinds of stream run work concurrently, what breaks that
// concurrency, and what each synchronisation call waits for.
//
// Three tables:
//   1. settings: two operations (two spin kernels, or a host->device copy and a spin
//      kernel) in two streams of given kinds; their overlap on the GPU's own clock, and
//      whether it agrees with what the CUDA programming model guarantees;
//   2. breakers: two spin kernels in two streams with one operation between the launches
//      (a legacy-stream kernel, cudaMalloc, cudaFree, destroying a stream, ...), and
//      CUDA_LAUNCH_BLOCKING=1 (this executable run again as a child process);
//   3. synchronisation calls: what each query and wait answered, checked.
// Every spin kernel records its own start and end on the GPU's global timer, so the
// overlap is measured on the device: the host's launch overhead (large under
// compute-sanitizer) cannot fake or hide it.
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "course/buffers.h"
#include "course/check.h"
#include "course/data.h"
#include "course/harness.h"
#include "course/stats.h"
#include "course/table.h"
#include "streams_and_sync.cuh"

namespace {

using streams_and_sync::Concurrency;
using streams_and_sync::KindStream;
using streams_and_sync::PairTiming;
using streams_and_sync::SpinRecord;
using streams_and_sync::StreamKind;

constexpr std::uint64_t kDefaultCopyBytes = 256ull << 20;  // ~5 ms over PCIe 5
constexpr std::uint64_t kQuickCopyBytes = 32ull << 20;
constexpr int kDefaultSpinMs = 5;
constexpr int kQuickSpinMs = 2;                     // short: compute-sanitizer runs --quick
constexpr std::size_t kBreakerBytes = 64ull << 20;  // what cudaMalloc & co. allocate
constexpr std::size_t kProducerElements = 1u << 20;

// ---- What is measured -----------------------------------------------------------------

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

/// What the CUDA documentation promises about a breaker.
enum class Guarantee {
  breaks,            ///< documented to serialise the two kernels
  no_implicit_sync,  ///< documented not to make either kernel wait
  unspecified,       ///< the documentation promises neither: measure it
};

enum class Between {
  nothing,
  device_synchronize,
  legacy_kernel,
  sync_memcpy,
  malloc,
  free,
  malloc_host,
  stream_destroy,
  event_destroy,
  launch_blocking_child,
};

/// One operation between the launches of two spin kernels in two streams of kind `streams`.
struct Breaker {
  const char* name;
  const char* operation;
  Between between;
  StreamKind streams;
  Guarantee model;
};

const std::vector<Breaker> kBreakers = {
    {"nothing", "nothing (the control)", Between::nothing, StreamKind::non_blocking,
     Guarantee::no_implicit_sync},
    {"cudaDeviceSynchronize", "cudaDeviceSynchronize()", Between::device_synchronize,
     StreamKind::non_blocking, Guarantee::breaks},
    {"legacy-kernel/blocking", "a kernel in the legacy stream", Between::legacy_kernel,
     StreamKind::blocking, Guarantee::breaks},
    {"legacy-kernel/non-blocking", "a kernel in the legacy stream", Between::legacy_kernel,
     StreamKind::non_blocking, Guarantee::no_implicit_sync},
    {"cudaMemcpy/blocking", "cudaMemcpy, 4 bytes to pageable host memory", Between::sync_memcpy,
     StreamKind::blocking, Guarantee::breaks},
    {"cudaMemcpy/non-blocking", "cudaMemcpy, 4 bytes to pageable host memory", Between::sync_memcpy,
     StreamKind::non_blocking, Guarantee::no_implicit_sync},
    {"cudaMalloc", "cudaMalloc of 64 MiB", Between::malloc, StreamKind::non_blocking,
     Guarantee::unspecified},
    {"cudaFree", "cudaFree of 64 MiB", Between::free, StreamKind::non_blocking,
     Guarantee::unspecified},
    {"cudaMallocHost", "cudaMallocHost of 64 MiB", Between::malloc_host, StreamKind::non_blocking,
     Guarantee::unspecified},
    {"cudaStreamDestroy", "cudaStreamDestroy of the busy first stream", Between::stream_destroy,
     StreamKind::non_blocking, Guarantee::unspecified},
    {"cudaEventDestroy", "cudaEventDestroy of an event still pending", Between::event_destroy,
     StreamKind::non_blocking, Guarantee::unspecified},
    {"CUDA_LAUNCH_BLOCKING=1", "none, but CUDA_LAUNCH_BLOCKING=1 (child process)",
     Between::launch_blocking_child, StreamKind::non_blocking, Guarantee::breaks},
};

constexpr const char* kSyncApisVariant = "sync-apis";

std::vector<std::string> variant_names() {
  std::vector<std::string> names;
  for (const Setting& s : kSettings) names.emplace_back(s.name);
  for (const Breaker& b : kBreakers) names.emplace_back(b.name);
  names.emplace_back(kSyncApisVariant);
  return names;
}

// ---- Measuring one pair ---------------------------------------------------------------

/// One run of a pair: its times on the GPU's clock, the host time of the operation between
/// the launches, and what went wrong with the values (empty when they verified).
struct Sample {
  PairTiming timing;
  double between_ms = 0;
  std::string problem;
};

double host_ms(const std::function<void()>& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

/// Device memory for the spin records and the copy, and the runs that use them.
class Bench {
 public:
  Bench(std::uint64_t spin_ns, std::size_t copy_bytes)
      : spin_ns_(spin_ns),
        records_(kRecords),
        copy_src_(copy_bytes / sizeof(std::uint32_t)),
        copy_dst_(copy_bytes / sizeof(std::uint32_t)) {
    // Every byte the GPU or a copy reads is initialised first (compute-sanitizer initcheck).
    COURSE_CHECK(cudaMemset(records_.data(), 0, records_.bytes()));
    course::fill_hash_host(copy_src_.span(), /*seed=*/13);
    if (copy_dst_.size() > 0) course::poison(copy_dst_.data(), copy_dst_.bytes(), cudaStreamLegacy);
    COURSE_CHECK(cudaDeviceSynchronize());
  }

  std::uint64_t spin_ns() const { return spin_ns_; }

  /// A spin kernel in `first`, then `between` (timed on the host), then a spin kernel in
  /// `second`; waits for the GPU, then checks both records.
  Sample kernel_pair(cudaStream_t first, cudaStream_t second,
                     const std::function<void()>& between = {}) {
    COURSE_CHECK(cudaDeviceSynchronize());
    const std::uint32_t a = next_token();
    const std::uint32_t b = next_token();
    marker_token_ = 0;
    streams_and_sync::launch_spin(record(0), spin_ns_, a, first);
    Sample sample;
    if (between) sample.between_ms = host_ms(between);
    streams_and_sync::launch_spin(record(1), spin_ns_, b, second);
    COURSE_CHECK(cudaDeviceSynchronize());

    const std::vector<SpinRecord> r = read_records();
    sample.problem = first_of({check(r[0], a, spin_ns_), check(r[1], b, spin_ns_),
                               marker_token_ ? check(r[2], marker_token_, 0) : ""});
    if (sample.problem.empty())
      sample.timing = streams_and_sync::pair_timing(span(r[0]), span(r[1]));
    return sample;
  }

  /// A zero-length spin in the legacy stream that kernel_pair() checks too: the "kernel in
  /// the legacy stream" breaker.
  void launch_legacy_marker() {
    marker_token_ = next_token();
    streams_and_sync::launch_spin(record(2), 0, marker_token_, cudaStreamLegacy);
  }

  /// A host->device copy from pinned memory in `first`, framed by two zero-length spins that
  /// stamp the time before and after it, and a spin kernel in `second`. With
  /// `check_values`, the destination is poisoned first and compared with the source after.
  Sample copy_and_kernel(cudaStream_t first, cudaStream_t second, bool check_values) {
    if (check_values) {
      course::poison(copy_dst_.data(), copy_dst_.bytes(), cudaStreamLegacy);
    }
    COURSE_CHECK(cudaDeviceSynchronize());
    const std::uint32_t before = next_token();
    const std::uint32_t after = next_token();
    const std::uint32_t b = next_token();
    streams_and_sync::launch_spin(record(2), 0, before, first);
    COURSE_CHECK(cudaMemcpyAsync(copy_dst_.data(), copy_src_.data(), copy_src_.bytes(),
                                 cudaMemcpyHostToDevice, first));
    streams_and_sync::launch_spin(record(3), 0, after, first);
    streams_and_sync::launch_spin(record(1), spin_ns_, b, second);
    COURSE_CHECK(cudaDeviceSynchronize());

    const std::vector<SpinRecord> r = read_records();
    Sample sample;
    sample.problem =
        first_of({check(r[2], before, 0), check(r[3], after, 0), check(r[1], b, spin_ns_)});
    // The copy ran between the end of the first stamp and the start of the second.
    const streams_and_sync::Interval copy{r[2].end_ns, r[3].start_ns};
    if (sample.problem.empty() && !(copy.end_ns > copy.start_ns)) {
      sample.problem = "the copy's interval is empty: the two stamps did not frame it";
    }
    if (sample.problem.empty()) sample.timing = streams_and_sync::pair_timing(copy, span(r[1]));
    if (check_values && sample.problem.empty()) {
      const auto c = course::compare_exact<std::uint32_t>(copy_src_.span(),
                                                          course::to_host(copy_dst_.cspan()));
      if (!c.ok()) sample.problem = "host->device copy: " + c.summary();
    }
    return sample;
  }

  SpinRecord* record(int i) const { return records_.data() + i; }
  std::uint32_t next_token() { return ++token_; }
  std::vector<SpinRecord> read_records() const {
    std::vector<SpinRecord> host(kRecords);
    COURSE_CHECK(
        cudaMemcpy(host.data(), records_.data(), records_.bytes(), cudaMemcpyDeviceToHost));
    return host;
  }

  /// Why a record is wrong, or "" when it was written by the launch with `token` and ran
  /// for at least `min_ns`.
  static std::string check(const SpinRecord& r, std::uint32_t token, std::uint64_t min_ns) {
    if (r.token != token) {
      return "a spin record holds token " + std::to_string(r.token) + ", expected " +
             std::to_string(token) + ": the launch did not run or wrote elsewhere";
    }
    if (r.stopped_by != streams_and_sync::kStoppedByTime) {
      return "a spin stopped at its iteration cap before its time was up";
    }
    if (r.end_ns < r.start_ns || r.end_ns - r.start_ns < min_ns) {
      return "a spin ran for less than the time it was given";
    }
    return "";
  }
  static streams_and_sync::Interval span(const SpinRecord& r) { return {r.start_ns, r.end_ns}; }
  static std::string first_of(const std::vector<std::string>& problems) {
    for (const std::string& p : problems) {
      if (!p.empty()) return p;
    }
    return "";
  }

 private:
  static constexpr std::size_t kRecords = 4;
  std::uint64_t spin_ns_;
  course::DeviceBuffer<SpinRecord> records_;
  course::PinnedBuffer<std::uint32_t> copy_src_;
  course::DeviceBuffer<std::uint32_t> copy_dst_;
  std::uint32_t token_ = 0;
  std::uint32_t marker_token_ = 0;
};

/// The medians of repeated runs of one pair, and the first problem any run had.
struct Measured {
  PairTiming timing;
  double between_ms = 0;
  std::string problem;
};

/// Runs `once` warmup + iters times (the first run with its values checked) and takes the
/// median of every column over the timed runs.
Measured measure(int warmup, int iters, const std::function<Sample(bool check_values)>& once) {
  std::vector<double> t1, t2, pair, overlap, between;
  Measured m;
  for (int i = 0; i < warmup + iters; ++i) {
    const Sample s = once(i == 0);
    if (!s.problem.empty()) {
      if (m.problem.empty()) m.problem = s.problem;
      continue;
    }
    if (i < warmup) continue;
    t1.push_back(s.timing.t1_ms);
    t2.push_back(s.timing.t2_ms);
    pair.push_back(s.timing.pair_ms);
    overlap.push_back(s.timing.overlap);
    between.push_back(s.between_ms);
  }
  if (!overlap.empty()) {
    m.timing = {course::median(t1), course::median(t2), course::median(pair),
                course::median(overlap)};
    m.between_ms = course::median(between);
  } else if (m.problem.empty()) {
    m.problem = "no timed run";
  }
  return m;
}

// ---- The rows of the tables -----------------------------------------------------------

struct Row {
  std::string table;  // "settings" or "breakers"
  std::string name;
  std::string work;
  std::string first_stream;
  std::string second_stream;
  std::string operation;  // breakers: what ran between the launches
  Measured measured;
  std::optional<Concurrency> concurrency;  // empty when the values failed
  std::string model;
  std::string check;
  bool failed = false;
};

/// The check column. Where the model guarantees serialisation, a measured overlap is a
/// FAIL; where it guarantees nothing but the GPU could overlap, not overlapping is a NOTE
/// (reported, never failed). Values that do not verify always FAIL.
void judge(Row& row, std::optional<bool> must_serialise) {
  if (!row.measured.problem.empty()) {
    row.check = "FAIL";
    row.failed = true;
    return;
  }
  row.concurrency = streams_and_sync::classify(row.measured.timing.overlap);
  if (!must_serialise) {
    row.check = "-";
  } else if (*must_serialise) {
    row.check = *row.concurrency == Concurrency::serialised   ? "PASS"
                : *row.concurrency == Concurrency::concurrent ? "FAIL"
                                                              : "NOTE";
  } else {
    row.check = *row.concurrency == Concurrency::concurrent ? "PASS" : "NOTE";
  }
  row.failed = row.check == "FAIL";
}

Row measure_setting(Bench& bench, const Setting& s, bool copy, int warmup, int iters) {
  KindStream first(s.first);
  KindStream second(s.second);
  Row row;
  row.table = "settings";
  row.name = s.name;
  row.work = copy ? "copy+kernel" : "kernel+kernel";
  row.first_stream = streams_and_sync::stream_kind_name(s.first);
  row.second_stream = streams_and_sync::stream_kind_name(s.second);
  row.measured = measure(warmup, iters, [&](bool check_values) {
    return copy ? bench.copy_and_kernel(first, second, check_values)
                : bench.kernel_pair(first, second);
  });
  const bool serialised = streams_and_sync::implicitly_serialised(s.first, s.second);
  row.model = serialised ? "serialises" : "may overlap";
  judge(row, serialised);
  return row;
}

std::string model_name(Guarantee g) {
  switch (g) {
    case Guarantee::breaks:
      return "breaks";
    case Guarantee::no_implicit_sync:
      return "no implicit sync";
    case Guarantee::unspecified:
      return "unspecified";
  }
  return "?";
}

/// The path of this executable, to run it again as a child process (Linux).
std::optional<std::string> own_executable() {
  char path[PATH_MAX];
  const ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
  if (length <= 0) return std::nullopt;
  return std::string(path, static_cast<std::size_t>(length));
}

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

/// Runs `command` through the shell; returns its exit code and standard output.
std::pair<int, std::string> run_command(const std::string& command) {
  std::cout << std::flush;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, ""};
  std::string output;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

struct ChildArgs {
  int device;
  int spin_ms;
  int warmup;
  int iters;
};

/// The CUDA_LAUNCH_BLOCKING row: this executable again, with the variable set, measuring
/// the "nothing" pair; its report line is parsed back.
Measured measure_launch_blocking_child(const ChildArgs& args) {
  Measured m;
  const std::optional<std::string> exe = own_executable();
  if (!exe) {
    m.problem = "cannot find this executable (/proc/self/exe) to run it as a child";
    return m;
  }
  const std::string command =
      "CUDA_LAUNCH_BLOCKING=1 " + shell_quote(*exe) + " --child-launch-blocking --device " +
      std::to_string(args.device) + " --spin-ms " + std::to_string(args.spin_ms) + " --warmup " +
      std::to_string(args.warmup) + " --iters " + std::to_string(args.iters);
  const auto [exit_code, output] = run_command(command);
  // A sanitizer's lines about the child belong in this output too.
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("=========", 0) == 0) std::cout << line << "\n";
  }
  const auto report = streams_and_sync::parse_child_report(output);
  if (exit_code != 0 || !report) {
    m.problem = "the child process exited " + std::to_string(exit_code) +
                (report ? "" : " without a report line") + "; its output:\n" + output;
  } else if (!report->launch_blocking) {
    m.problem = "the child did not see CUDA_LAUNCH_BLOCKING=1";
  } else if (!report->values_ok) {
    m.problem = "the child's spin records did not verify";
  } else {
    m.timing = report->timing;
  }
  return m;
}

/// Two spin kernels in two streams of the breaker's kind, `breaker.between` between the
/// launches, measured `warmup + iters` times.
Row measure_breaker(Bench& bench, const Breaker& breaker, const ChildArgs& child, int warmup,
                    int iters) {
  Row row;
  row.table = "breakers";
  row.name = breaker.name;
  row.work = "kernel+kernel";
  row.first_stream = row.second_stream = streams_and_sync::stream_kind_name(breaker.streams);
  row.operation = breaker.operation;
  row.model = model_name(breaker.model);

  KindStream first(breaker.streams);
  KindStream second(breaker.streams);
  course::DeviceBuffer<std::uint32_t> word(1);
  COURSE_CHECK(cudaMemset(word.data(), 0, word.bytes()));
  std::uint32_t host_word = 0;

  const auto once = [&](bool) -> Sample {
    switch (breaker.between) {
      case Between::nothing:
        return bench.kernel_pair(first, second);
      case Between::device_synchronize:
        return bench.kernel_pair(first, second, [] { COURSE_CHECK(cudaDeviceSynchronize()); });
      case Between::legacy_kernel:
        return bench.kernel_pair(first, second, [&] { bench.launch_legacy_marker(); });
      case Between::sync_memcpy:
        return bench.kernel_pair(first, second, [&] {
          COURSE_CHECK(
              cudaMemcpy(&host_word, word.data(), sizeof host_word, cudaMemcpyDeviceToHost));
        });
      case Between::malloc: {
        void* p = nullptr;
        Sample s =
            bench.kernel_pair(first, second, [&] { COURSE_CHECK(cudaMalloc(&p, kBreakerBytes)); });
        COURSE_CHECK(cudaFree(p));
        return s;
      }
      case Between::free: {
        void* p = nullptr;
        COURSE_CHECK(cudaMalloc(&p, kBreakerBytes));
        return bench.kernel_pair(first, second, [&] { COURSE_CHECK(cudaFree(p)); });
      }
      case Between::malloc_host: {
        void* p = nullptr;
        Sample s = bench.kernel_pair(first, second,
                                     [&] { COURSE_CHECK(cudaMallocHost(&p, kBreakerBytes)); });
        COURSE_CHECK(cudaFreeHost(p));
        return s;
      }
      case Between::stream_destroy: {
        // The first kernel goes into a stream of its own, destroyed while the kernel runs.
        cudaStream_t doomed = streams_and_sync::make_stream(breaker.streams);
        return bench.kernel_pair(
            doomed, second, [&] { streams_and_sync::destroy_stream(breaker.streams, doomed); });
      }
      case Between::event_destroy: {
        cudaEvent_t event = nullptr;
        COURSE_CHECK(cudaEventCreate(&event));
        return bench.kernel_pair(first, second, [&] {
          COURSE_CHECK(cudaEventRecord(event, first));  // pending: the first kernel runs
          COURSE_CHECK(cudaEventDestroy(event));
        });
      }
      case Between::launch_blocking_child:
        break;
    }
    return {};
  };

  if (breaker.between == Between::launch_blocking_child) {
    row.measured = measure_launch_blocking_child(child);
  } else {
    row.measured = measure(warmup, iters, once);
  }
  std::optional<bool> must_serialise;
  if (breaker.model == Guarantee::breaks) must_serialise = true;
  if (breaker.model == Guarantee::no_implicit_sync) must_serialise = false;
  judge(row, must_serialise);
  return row;
}

// ---- The synchronisation calls --------------------------------------------------------

struct SyncRow {
  std::string call;
  std::string observed;
  std::string check;
};

std::string answer(bool done) { return done ? "cudaSuccess" : "cudaErrorNotReady"; }

/// Runs each synchronisation call once on real work and says what it answered. The checks
/// are what CUDA guarantees: after a wait, the work is done and its values are there. What
/// a query answers *while* work runs depends on timing, so it is reported, not checked.
std::vector<SyncRow> run_sync_calls(Bench& bench) {
  std::vector<SyncRow> rows;
  const std::uint64_t spin_ns = bench.spin_ns();
  const std::string spin_text = course::fixed(static_cast<double>(spin_ns) * 1e-6, 0) + " ms spin";
  course::Stream s1, s2;
  const auto ok = [](bool passed) { return std::string(passed ? "PASS" : "FAIL"); };
  const auto valid = [&](int i, std::uint32_t token, std::uint64_t min_ns) {
    return Bench::check(bench.read_records()[static_cast<std::size_t>(i)], token, min_ns).empty();
  };

  {  // cudaStreamQuery + cudaStreamSynchronize
    const std::uint32_t t = bench.next_token();
    streams_and_sync::launch_spin(bench.record(0), spin_ns, t, s1);
    const bool during = streams_and_sync::stream_is_idle(s1);
    COURSE_CHECK(cudaStreamSynchronize(s1));
    const bool after = streams_and_sync::stream_is_idle(s1);
    rows.push_back({"cudaStreamQuery, cudaStreamSynchronize",
                    "during a " + spin_text + ": " + answer(during) +
                        "; after cudaStreamSynchronize: " + answer(after),
                    ok(after && valid(0, t, spin_ns))});
  }
  {  // cudaEventQuery + cudaEventSynchronize
    cudaEvent_t event = nullptr;
    COURSE_CHECK(cudaEventCreate(&event));
    const bool never_recorded = streams_and_sync::event_has_completed(event);
    const std::uint32_t t = bench.next_token();
    streams_and_sync::launch_spin(bench.record(0), spin_ns, t, s1);
    COURSE_CHECK(cudaEventRecord(event, s1));
    const bool during = streams_and_sync::event_has_completed(event);
    COURSE_CHECK(cudaEventSynchronize(event));
    const bool after = streams_and_sync::event_has_completed(event);
    COURSE_CHECK(cudaEventDestroy(event));
    rows.push_back({"cudaEventQuery, cudaEventSynchronize",
                    "never recorded: " + answer(never_recorded) + "; recorded after a " +
                        spin_text + ": " + answer(during) +
                        "; after cudaEventSynchronize: " + answer(after),
                    ok(never_recorded && after && valid(0, t, spin_ns))});
  }
  {  // cudaStreamSynchronize waits for its own stream only
    const std::uint32_t t = bench.next_token();
    streams_and_sync::launch_spin(bench.record(0), spin_ns, t, s1);
    COURSE_CHECK(cudaStreamSynchronize(s2));  // s2 has no work: returns at once
    const bool s1_done = streams_and_sync::stream_is_idle(s1);
    COURSE_CHECK(cudaStreamSynchronize(s1));
    rows.push_back({"cudaStreamSynchronize(other stream)",
                    "returned while the " + spin_text + " in the first stream was " +
                        (s1_done ? "already done" : "still running"),
                    ok(streams_and_sync::stream_is_idle(s1) && valid(0, t, spin_ns))});
  }
  {  // cudaDeviceSynchronize waits for every stream
    KindStream blocking(StreamKind::blocking);
    const std::uint32_t a = bench.next_token();
    const std::uint32_t b = bench.next_token();
    streams_and_sync::launch_spin(bench.record(0), spin_ns, a, s1);
    streams_and_sync::launch_spin(bench.record(1), spin_ns, b, blocking);
    COURSE_CHECK(cudaDeviceSynchronize());
    const bool idle = streams_and_sync::stream_is_idle(s1) &&
                      streams_and_sync::stream_is_idle(blocking) &&
                      streams_and_sync::stream_is_idle(cudaStreamLegacy);
    rows.push_back({"cudaDeviceSynchronize",
                    std::string("after it, a non-blocking, a blocking and the legacy stream ") +
                        (idle ? "were all idle" : "were NOT all idle"),
                    ok(idle && valid(0, a, spin_ns) && valid(1, b, spin_ns))});
  }
  {  // cudaStreamWaitEvent orders a consumer after a producer in another stream
    course::DeviceBuffer<std::uint32_t> produced(kProducerElements), consumed(kProducerElements);
    course::poison(produced.data(), produced.bytes(), cudaStreamLegacy);
    course::poison(consumed.data(), consumed.bytes(), cudaStreamLegacy);
    COURSE_CHECK(cudaDeviceSynchronize());
    cudaEvent_t event = nullptr;
    COURSE_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    streams_and_sync::launch_delayed_fill(produced.span(), /*seed=*/99, spin_ns, s1);
    streams_and_sync::copy_after_producer(produced.cspan(), consumed.span(), s1, s2, event);
    COURSE_CHECK(cudaStreamSynchronize(s2));  // only the consumer's stream
    std::vector<std::uint32_t> expected(kProducerElements);
    course::fill_hash_host(expected, 99);
    const auto c =
        course::compare_exact<std::uint32_t>(expected, course::to_host(consumed.cspan()));
    COURSE_CHECK(cudaEventDestroy(event));
    COURSE_CHECK(cudaDeviceSynchronize());
    rows.push_back({"cudaEventRecord + cudaStreamWaitEvent",
                    "the consumer's copy, waited for with its own stream only, after a producer "
                    "that writes late: " +
                        c.summary(),
                    ok(c.ok())});
  }
  {  // cudaStreamWaitEvent on an event never recorded is a no-op
    cudaEvent_t event = nullptr;
    COURSE_CHECK(cudaEventCreate(&event));
    COURSE_CHECK(cudaStreamWaitEvent(s1, event, cudaEventWaitDefault));
    const std::uint32_t t = bench.next_token();
    streams_and_sync::launch_spin(bench.record(0), 0, t, s1);
    COURSE_CHECK(cudaStreamSynchronize(s1));
    COURSE_CHECK(cudaEventDestroy(event));
    rows.push_back({"cudaStreamWaitEvent(never-recorded event)",
                    "a no-op: the stream's next kernel ran without waiting", ok(valid(0, t, 0))});
  }
  return rows;
}

// ---- Printing -------------------------------------------------------------------------

/// An aligned text table: the first `left` columns left-aligned, the others right-aligned.
void print_table(const std::vector<std::vector<std::string>>& cells, std::size_t left) {
  std::vector<std::size_t> width;
  for (const auto& line : cells) {
    width.resize(std::max(width.size(), line.size()), 0);
    for (std::size_t c = 0; c < line.size(); ++c) width[c] = std::max(width[c], line[c].size());
  }
  for (const auto& line : cells) {
    for (std::size_t c = 0; c < line.size(); ++c) {
      std::cout << (c < left ? std::left : std::right) << std::setw(static_cast<int>(width[c]))
                << line[c] << (c + 1 < line.size() ? "  " : "\n");
    }
  }
}

std::string measured_text(const Row& row) {
  return row.concurrency ? streams_and_sync::concurrency_name(*row.concurrency) : "-";
}

std::string broke_text(const Row& row) {
  if (!row.concurrency) return "-";
  switch (*row.concurrency) {
    case Concurrency::serialised:
      return "yes";
    case Concurrency::partial:
      return "partly";
    case Concurrency::concurrent:
      return "no";
  }
  return "-";
}

std::string ms_text(const Row& row, double value) {
  return row.measured.problem.empty() ? course::fixed(value, 3) : "-";
}

void print_settings(const std::vector<Row>& rows) {
  std::vector<std::vector<std::string>> cells = {{"streams (first+second)", "work", "t1 ms",
                                                  "t2 ms", "pair ms", "overlap", "measured",
                                                  "model", "check"}};
  for (const Row& r : rows) {
    if (r.table != "settings") continue;
    const PairTiming& t = r.measured.timing;
    cells.push_back({r.name, r.work, ms_text(r, t.t1_ms), ms_text(r, t.t2_ms),
                     ms_text(r, t.pair_ms), ms_text(r, t.overlap), measured_text(r), r.model,
                     r.check});
  }
  print_table(cells, 2);
}

void print_breakers(const std::vector<Row>& rows) {
  std::vector<std::vector<std::string>> cells = {{"between the two launches", "streams", "op ms",
                                                  "t1 ms", "t2 ms", "pair ms", "overlap",
                                                  "broke concurrency", "model", "check"}};
  for (const Row& r : rows) {
    if (r.table != "breakers") continue;
    const PairTiming& t = r.measured.timing;
    const bool child = r.name == "CUDA_LAUNCH_BLOCKING=1";
    cells.push_back({r.operation, r.first_stream, child ? "-" : ms_text(r, r.measured.between_ms),
                     ms_text(r, t.t1_ms), ms_text(r, t.t2_ms), ms_text(r, t.pair_ms),
                     ms_text(r, t.overlap), broke_text(r), r.model, r.check});
  }
  print_table(cells, 2);
}

void write_csv(const std::string& path, const std::string& gpu, const std::vector<Row>& rows,
               std::uint64_t spin_ns, std::size_t copy_bytes) {
  std::ofstream csv(path);
  csv << "lesson,gpu,table,name,work,first_stream,second_stream,between,spin_ms,copy_bytes,"
         "t1_ms,t2_ms,pair_ms,overlap,measured,broke_concurrency,host_op_ms,model,check\n";
  for (const Row& r : rows) {
    const bool timed = r.measured.problem.empty();
    const auto number = [&](double v) { return timed ? course::fixed(v, 6) : std::string(); };
    csv << "13_streams_and_sync," << course::csv_field(gpu) << "," << r.table << ","
        << course::csv_field(r.name) << "," << r.work << "," << r.first_stream << ","
        << r.second_stream << "," << course::csv_field(r.operation) << ","
        << course::fixed(static_cast<double>(spin_ns) * 1e-6, 3) << ","
        << (r.work == "copy+kernel" ? std::to_string(copy_bytes) : std::string()) << ","
        << number(r.measured.timing.t1_ms) << "," << number(r.measured.timing.t2_ms) << ","
        << number(r.measured.timing.pair_ms) << "," << number(r.measured.timing.overlap) << ","
        << measured_text(r) << "," << (r.table == "breakers" ? broke_text(r) : "") << ","
        << (r.table == "breakers" && r.name != "CUDA_LAUNCH_BLOCKING=1"
                ? number(r.measured.between_ms)
                : std::string())
        << "," << course::csv_field(r.model) << "," << r.check << "\n";
  }
  if (!csv) throw std::runtime_error("could not write " + path);
}

const Row* find_row(const std::vector<Row>& rows, const std::string& name,
                    const std::string& work) {
  for (const Row& r : rows) {
    if (r.name == name && r.work == work && r.concurrency) return &r;
  }
  return nullptr;
}

// ---- The child process ----------------------------------------------------------------

/// --child-launch-blocking: measure the "nothing" pair (two non-blocking streams) and print
/// one report line for the parent. The parent sets CUDA_LAUNCH_BLOCKING=1 for this run.
int run_child(std::uint64_t spin_ns, int warmup, int iters) {
  Bench bench(spin_ns, 0);
  course::Stream first, second;
  const Measured m = measure(warmup, iters, [&](bool) { return bench.kernel_pair(first, second); });
  streams_and_sync::ChildReport report;
  const char* blocking = std::getenv("CUDA_LAUNCH_BLOCKING");
  report.launch_blocking = blocking != nullptr && std::string(blocking) == "1";
  report.values_ok = m.problem.empty();
  report.timing = m.timing;
  if (!m.problem.empty()) std::cerr << "child: " << m.problem << "\n";
  std::cout << streams_and_sync::format_child_report(report) << std::endl;
  return report.values_ok ? 0 : 1;
}

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
      "overlap = (t1 + t2 - t_pair) / min(t1, t2): 1 concurrent, 0 serialised.");
  flags.add_common(options,
                   "bytes of the host->device copy of the copy+kernel pairs (default 256M; "
                   "32M with --quick; K/M/G suffixes)",
                   variant_names());
  flags.add_int("spin-ms", &spin_ms, 0,
                "milliseconds of GPU time each spin kernel runs (default 0: 5, or 2 with --quick)");
  flags.add_bool("child-launch-blocking", &child_launch_blocking,
                 "internal: the child run the CUDA_LAUNCH_BLOCKING row starts (prints one "
                 "CHILD-REPORT line)");

  return course::run_driver(flags, argc, argv, options, [&](const course::DeviceSummary& gpu) {
    const int effective_spin_ms =
        spin_ms > 0 ? spin_ms : (options.quick ? kQuickSpinMs : kDefaultSpinMs);
    const std::uint64_t spin_ns = static_cast<std::uint64_t>(effective_spin_ms) * 1'000'000ull;
    if (spin_ns > streams_and_sync::kMaxSpinNs) throw course::UsageError("--spin-ms is too large");
    // --quick is for tests and sanitizers: a few runs prove the code, not the figures.
    const int warmup = options.quick ? std::min(options.warmup, 1) : options.warmup;
    const int iters = options.quick ? std::min(options.iters, 3) : options.iters;
    if (child_launch_blocking) return run_child(spin_ns, warmup, iters);

    const std::uint64_t copy_bytes =
        options.size ? options.size : (options.quick ? kQuickCopyBytes : kDefaultCopyBytes);
    if (copy_bytes % 4 != 0) throw course::UsageError("--size must be a multiple of 4 bytes");
    const int concurrent_kernels = device_attribute(cudaDevAttrConcurrentKernels, gpu.ordinal);
    const int copy_engines = device_attribute(cudaDevAttrAsyncEngineCount, gpu.ordinal);
    std::cout << "lesson 13 streams_and_sync: spin kernels of " << effective_spin_ms
              << " ms (one block of " << streams_and_sync::kSpinThreads
              << " threads each), a host->device copy of " << copy_bytes
              << " bytes from pinned memory\n"
              << "  concurrent kernels: " << (concurrent_kernels ? "yes" : "no")
              << ", copy engines: " << copy_engines << "\n"
              << "  overlap = (t1 + t2 - t_pair) / min(t1, t2) on the GPU's global timer, "
                 "median of "
              << iters << " runs after " << warmup << " warm-up runs: below "
              << course::fixed(streams_and_sync::kSerialisedBelow, 2) << " serialised, above "
              << course::fixed(streams_and_sync::kConcurrentAbove, 2) << " concurrent\n";

    const auto selected = [&](const std::string& name) {
      return options.variant.empty() || options.variant == name;
    };
    Bench bench(spin_ns, copy_bytes);
    std::vector<Row> rows;
    for (const Setting& s : kSettings) {
      if (!selected(s.name)) continue;
      for (bool copy : {false, true})
        rows.push_back(measure_setting(bench, s, copy, warmup, iters));
    }
    const ChildArgs child{gpu.ordinal, effective_spin_ms, warmup, iters};
    for (const Breaker& b : kBreakers) {
      if (selected(b.name)) rows.push_back(measure_breaker(bench, b, child, warmup, iters));
    }
    std::vector<SyncRow> sync_rows;
    if (selected(kSyncApisVariant)) sync_rows = run_sync_calls(bench);

    bool failed = false;
    for (const Row& r : rows) {
      if (!r.measured.problem.empty())
        std::cerr << r.name << " (" << r.work << "): " << r.measured.problem << "\n";
      failed = failed || r.failed;
    }
    for (const SyncRow& r : sync_rows) failed = failed || r.check == "FAIL";

    if (std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.table == "settings"; })) {
      std::cout << "\nTwo operations in two streams (t1: the first stream's, t2: the second's):\n";
      print_settings(rows);
    }
    if (std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.table == "breakers"; })) {
      std::cout << "\nWhat breaks concurrency: a spin kernel in each of two streams, one operation "
                   "between the launches (op ms: how long it held the host):\n";
      print_breakers(rows);
    }
    if (!sync_rows.empty()) {
      std::cout << "\nSynchronisation calls:\n";
      std::vector<std::vector<std::string>> cells = {{"call", "observed", "check"}};
      for (const SyncRow& r : sync_rows) cells.push_back({r.call, r.observed, r.check});
      print_table(cells, 2);
    }
    std::cout << "\n(check: PASS agrees with what CUDA guarantees; FAIL contradicts it or the "
                 "values did not verify; NOTE: allowed, but the GPU did not overlap; -: nothing "
                 "is guaranteed, only measured)\n\n";

    if (!options.csv.empty()) write_csv(options.csv, gpu.name, rows, spin_ns, copy_bytes);

    const Row* kernels = find_row(rows, "non-blocking+non-blocking", "kernel+kernel");
    const Row* copy = find_row(rows, "non-blocking+non-blocking", "copy+kernel");
    const Row* legacy = find_row(rows, "legacy+blocking", "kernel+kernel");
    std::vector<std::string> headline;
    if (kernels)
      headline.push_back("two non-blocking streams overlap two kernels " +
                         course::fixed(kernels->measured.timing.overlap, 2));
    if (copy)
      headline.push_back("a copy and a kernel " + course::fixed(copy->measured.timing.overlap, 2));
    if (legacy)
      headline.push_back("legacy + blocking stream " +
                         course::fixed(legacy->measured.timing.overlap, 2) + " (" +
                         measured_text(*legacy) + ")");
    if (!headline.empty()) {
      std::cout << "HEADLINE: ";
      for (std::size_t i = 0; i < headline.size(); ++i) {
        std::cout << (i ? "; " : "") << headline[i];
      }
      std::cout << "\n";
    }
    // Expected, not guaranteed: reported, never failed.
    for (const Row* r : {kernels, copy}) {
      if (r == nullptr) continue;
      const bool met = *r->concurrency == Concurrency::concurrent;
      std::cout << "TARGET: " << r->work << " in two non-blocking streams concurrent (overlap > "
                << course::fixed(streams_and_sync::kConcurrentAbove, 2)
                << "): " << (met ? "met" : "MISSED") << " ("
                << course::fixed(r->measured.timing.overlap, 3) << ")\n";
    }
    std::cout << "RESULT: " << (failed ? "FAIL" : "PASS") << "\n";
    return failed ? 1 : 0;
  });
}
