// Lesson 14 driver: Mark Harris's overlap experiment on this GPU. Host -> kernel -> host,
// sequentially and in chunks issued in two orders (async V1, V2), every run checked; then a
// chunk sweep beside the engine-queue model's predictions (from stage times measured in the
// same run), a per-operation timeline, and the lesson's two targets.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "course/buffers.h"
#include "course/check.h"
#include "course/data.h"
#include "course/flags.h"
#include "course/harness.h"
#include "course/table.h"
#include "course/timing.h"
#include "overlap_transfers.cuh"

namespace {

namespace ot = overlap_transfers;
namespace model = overlap_transfers::model;
using ot::Order;
using ot::Stage;

constexpr std::uint64_t kDefaultBytes = 16ull << 20;  // the blog post's 4M floats
constexpr std::uint64_t kQuickElements = 1000003;     // prime: no chunk count divides it
constexpr int kThreads = 256;                         // the blog post's block size
constexpr int kQuickRounds = 2;
constexpr int kMaxRounds = 4096;
constexpr int kMaxChunks = 256;
constexpr std::uint32_t kSeed = 1;
const char* const kDefaultSweep = "1,2,4,8,16,32";
const char* const kQuickSweep = "1,3,4";
// The lesson's two targets: the best async run of the sweep against sequential, and
// against the model's bound computed from the same run's stage times.
constexpr double kMinSpeedup = 1.8;
constexpr double kMaxOfBound = 1.10;

const std::vector<Order> kOrders = {Order::sequential, Order::per_chunk, Order::by_operation};
const std::vector<Order> kAsyncOrders = {Order::per_chunk, Order::by_operation};

/// The command line: the common flags, lesson 14's own, and what validate() derives from them.
struct Settings {
  course::CommonOptions options;
  int chunks = 4;
  int rounds = 0;
  int balance_percent = 125;
  std::string sweep_text;
  std::uint64_t bytes = 0;  ///< resolved by validate()
  std::vector<int> sweep;   ///< resolved by validate(): sorted, unique, --chunks included
};

void add_flags(course::FlagParser& flags, Settings& s) {
  flags.add_common(s.options,
                   "bytes of float data, a multiple of 4 (default 16M = 4M floats, the blog "
                   "post's size; K/M/G suffixes)",
                   {"sequential", "async-v1", "async-v2"});
  flags.add_int("chunks", &s.chunks, 1,
                "chunks (one stream each) of async-v1/v2 and the timeline, at most " +
                    std::to_string(kMaxChunks) + " (default 4, the blog post's)");
  flags.add_int("rounds", &s.rounds, 1,
                "trig rounds per element, 1 to " + std::to_string(kMaxRounds) +
                    " (default: balance the kernel against the copies, see --balance)");
  flags.add_int("balance", &s.balance_percent, 1,
                "without --rounds: kernel time as a percentage of one host->device copy of the "
                "whole array (default 125)");
  flags.add_string("sweep", &s.sweep_text,
                   std::string("chunk counts of the sweep (default ") + kDefaultSweep +
                       "; --quick: " + kQuickSweep + ")");
}

/// The range checks the flag parser cannot do; run_driver calls it before opening the device.
void validate(Settings& s) {
  const course::CommonOptions& options = s.options;
  s.bytes = options.size ? options.size : (options.quick ? kQuickElements * 4 : kDefaultBytes);
  if (s.bytes % 4 != 0) {
    throw course::UsageError("--size must be a positive multiple of 4 bytes (whole floats)");
  }
  if (s.chunks > kMaxChunks) {
    throw course::UsageError("--chunks must be at most " + std::to_string(kMaxChunks) + ", got " +
                             std::to_string(s.chunks));
  }
  if (s.rounds > kMaxRounds) {
    throw course::UsageError("--rounds must be at most " + std::to_string(kMaxRounds) + ", got " +
                             std::to_string(s.rounds));
  }
  s.sweep = course::parse_int_list(
      "sweep", !s.sweep_text.empty() ? s.sweep_text : (options.quick ? kQuickSweep : kDefaultSweep),
      1, kMaxChunks);
  s.sweep.push_back(s.chunks);  // the timeline's chunk count is always a point of the sweep
  std::sort(s.sweep.begin(), s.sweep.end());
  s.sweep.erase(std::unique(s.sweep.begin(), s.sweep.end()), s.sweep.end());
}

/// What every part of the run shares: the data in pinned host memory (the only kind a copy
/// can overlap anything from), its device copy, the harness, one stream per chunk, the job.
struct Experiment {
  Experiment(const Settings& settings, const course::DeviceSummary& device, const model::Gpu& model)
      : s(settings),
        gpu(device),
        this_gpu(model),
        n(settings.bytes / 4),
        host_in(n),
        host_out(n),
        device_data(n),
        scratch(n),
        harness("14_overlap_transfers", settings.options, device),
        streams(std::max(2, settings.sweep.back())),
        job{host_in.data(), device_data.data(), host_out.data(), n, kQuickRounds, kThreads} {
    for (std::size_t i = 0; i < n; ++i) host_in[i] = ot::input_value(i, kSeed);
    std::memset(host_out.data(), 0, host_out.bytes());
    COURSE_CHECK(cudaMemset(scratch.data(), 0, scratch.bytes()));
    COURSE_CHECK(cudaDeviceSynchronize());  // the harness's stream does not wait for it
    ot::prepare_stage(Stage::h2d, job, 1)(stream());  // fill the device copy before any timing
    COURSE_CHECK(cudaStreamSynchronize(stream()));
  }

  cudaStream_t stream() const { return harness.stream(); }
  double time_ms(const course::Launch& launch) {
    return course::time_stream_work(launch, stream(), harness.warmup(), harness.iters()).median_ms;
  }
  /// One chunk's operation in steady state: all chunks of the stage back to back, / chunks.
  double stage_ms(Stage stage, int c) { return time_ms(ot::prepare_stage(stage, job, c)) / c; }
  cuda::std::span<const float> actual() const { return {host_out.data(), n}; }
  /// Poisons both ends, so an element that never made the round trip is caught.
  void poison(cudaStream_t st) {
    COURSE_CHECK(cudaStreamSynchronize(st));
    std::memset(host_out.data(), course::kPoisonByte, host_out.bytes());
    course::poison(device_data.data(), device_data.bytes(), st);
  }
  course::Comparison compare() const {
    return course::compare_close<float>(expected, actual(), ot::relative_tolerance(job.rounds),
                                        0.0);
  }
  /// One checked run outside the harness (the sweep, the timeline): "PASS" or "FAIL".
  std::string checked_run(const std::string& what, const course::Launch& launch) {
    poison(stream());
    launch(stream());
    COURSE_CHECK(cudaStreamSynchronize(stream()));
    const course::Comparison c = compare();
    if (!c.ok()) std::cerr << what << ": " << c.summary() << "\n";
    return std::string(c.ok() ? "PASS" : "FAIL");
  }
  double bytes_both_ways() const { return 2.0 * s.bytes; }

  const Settings& s;
  const course::DeviceSummary& gpu;
  const model::Gpu this_gpu;
  const std::size_t n;
  course::PinnedBuffer<float> host_in, host_out;
  course::DeviceBuffer<float> device_data, scratch;
  course::Harness harness;
  const ot::StreamSet streams;
  ot::Job job;
  std::vector<float> expected;  ///< the CPU reference, computed once job.rounds is final
};

/// The kernel's rounds (--rounds, --quick's, or balanced against the copy in), the line that
/// says which, each operation's time alone, and the CPU reference for those rounds.
void choose_rounds(Experiment& x) {
  const Settings& s = x.s;
  if (s.rounds > 0) {
    x.job.rounds = s.rounds;
  } else if (!s.options.quick) {
    x.job.rounds = ot::balanced_rounds(x.job, s.balance_percent, kMaxRounds,
                                       [&](const course::Launch& l) { return x.time_ms(l); });
  }
  std::cout << "\n  kernel: " << x.job.rounds << " trig rounds per element"
            << (s.rounds > 0 ? " (--rounds)"
                : s.options.quick
                    ? " (--quick)"
                    : " (balanced to " + std::to_string(s.balance_percent) + "% of the copy in)")
            << "; " << kThreads << " threads per block, one thread per element ("
            << ot::blocks_for(x.n, kThreads) << " blocks for the whole array; up to "
            << ot::max_blocks_per_sm(kThreads) << " per SM on " << x.gpu.sm_count << " SMs)\n"
            << "  whole array, each operation alone:";
  for (Stage st : {Stage::h2d, Stage::kernel, Stage::d2h}) {
    std::cout << " " << ot::stage_name(st) << " " << course::fixed(x.stage_ms(st, 1), 4) << " ms";
  }
  std::cout << "\n\n";
  x.expected.resize(x.n);
  ot::reference(cuda::std::span<const float>(x.host_in.data(), x.n), x.expected, x.job.rounds);
}

/// The main table: the three versions at --chunks, each checked (and its max error printed).
/// Returns which orders passed their checks.
std::map<Order, bool> run_main_table(Experiment& x) {
  course::Harness& harness = x.harness;
  harness.reference("copies only", x.bytes_both_ways(),
                    ot::prepare_copies_only(x.job, x.scratch.data(), x.streams));
  harness.baseline("sequential");
  harness.headline("async-v1");
  std::map<Order, bool> passed;
  for (Order order : kOrders) {
    const std::string name = ot::order_name(order);
    harness.run({name, x.bytes_both_ways(),
                 ot::prepare_transfer_and_compute(order, x.job, x.s.chunks, x.streams),
                 [&x](cudaStream_t st) { x.poison(st); },
                 [&, order, name] {
                   const course::Comparison c = x.compare();
                   passed[order] = c.ok();
                   std::cout << "  " << std::left << std::setw(12) << name << std::right
                             << " max error " << std::scientific << std::setprecision(3)
                             << ot::max_abs_error(x.expected, x.actual()) << std::defaultfloat
                             << "\n";
                   return c;
                 }});
  }
  return passed;
}

/// What the sweep found: the stage times at --chunks, the bound at every chunk count, and the
/// fastest async run of 2 or more chunks.
struct SweepResult {
  model::StageTimes at_chunks;
  std::map<int, double> bound_of;
  double best_ms = std::numeric_limits<double>::infinity();
  int best_chunks = 0;
  std::string best_name;
};

/// The sweep: measured ("chunks") against the model ("model": this GPU's engine queues fed
/// with one chunk's stage times, and the bound no order can beat).
SweepResult run_sweep(Experiment& x) {
  SweepResult r;
  for (int c : x.s.sweep) {
    const model::StageTimes t{x.stage_ms(Stage::h2d, c), x.stage_ms(Stage::kernel, c),
                              x.stage_ms(Stage::d2h, c)};
    if (c == x.s.chunks) r.at_chunks = t;
    r.bound_of[c] = model::pipeline_bound(c, t);
    // The model's input rides along in the sweep CSV: one chunk's stage times.
    const auto params = [&](const std::string& order) {
      return course::SweepParams{{"chunks", std::to_string(c)},
                                 {"order", order},
                                 {"h2d_ms", course::fixed(t.h2d, 6)},
                                 {"kernel_ms", course::fixed(t.kernel, 6)},
                                 {"d2h_ms", course::fixed(t.d2h, 6)}};
    };
    for (Order order : kAsyncOrders) {
      const std::string name =
          std::string(ot::order_name(order)) + ", " + course::count_text(c, "chunk");
      const course::Launch launch = ot::prepare_transfer_and_compute(order, x.job, c, x.streams);
      const std::string check = x.checked_run(name, launch);
      const double ms = x.time_ms(launch);
      x.harness.record_sweep("chunks", params(ot::order_name(order)), name, ms, x.bytes_both_ways(),
                             check);
      x.harness.record_sweep("model", params(ot::order_name(order)), "model " + name,
                             model::predict(x.this_gpu, order, c, t), x.bytes_both_ways(), "-");
      if (c >= 2 && ms < r.best_ms) {
        r.best_ms = ms;
        r.best_chunks = c;
        r.best_name = name;
      }
    }
    x.harness.record_sweep("model", params("bound"),
                           "bound (any order), " + course::count_text(c, "chunk"), r.bound_of[c],
                           x.bytes_both_ways(), "-");
  }
  return r;
}

/// The timeline: an event before and after every operation of one V1 and one V2 run, beside
/// the model's schedule of the same order (FILE_timeline.csv with --csv).
void run_timeline(Experiment& x, const model::StageTimes& at_chunks) {
  const int chunks = x.s.chunks;
  std::vector<ot::TimelineRun> runs;
  for (Order order : kAsyncOrders) {
    const std::string name =
        std::string(ot::order_name(order)) + ", " + course::count_text(chunks, "chunk");
    ot::Timeline timeline;
    const std::string check = x.checked_run(
        name, ot::prepare_transfer_and_compute(order, x.job, chunks, x.streams, &timeline));
    runs.push_back({ot::order_name(order), timeline.read(),
                    model::simulate(model::issue_order(order, chunks, at_chunks), x.this_gpu)});
    x.harness.record_sweep(
        "timeline", {{"chunks", std::to_string(chunks)}, {"order", ot::order_name(order)}},
        name + ", events around every operation", ot::last_end_ms(runs.back().measured),
        x.bytes_both_ways(), check);
  }
  if (!x.s.options.csv.empty()) {
    const std::string path = ot::timeline_csv_path(x.s.options.csv);
    ot::write_timeline_csv(path, "14_overlap_transfers", x.gpu.name, chunks, runs);
    std::cout << "  wrote " << path << " (tools/plot_timeline.py)\n";
  }
}

/// The lesson's two targets: the best async run against sequential, and against the model's
/// bound at its chunk count.
void add_targets(Experiment& x, SweepResult& sweep) {
  const double sequential_rate = x.harness.rate_of("sequential");
  if (sweep.best_chunks >= 2 && sweep.bound_of[sweep.best_chunks] > 0 && sequential_rate > 0) {
    const double speedup =
        course::gigabytes_per_second(x.bytes_both_ways(), sweep.best_ms) / sequential_rate;
    const double of_bound = sweep.best_ms / sweep.bound_of[sweep.best_chunks];
    const std::string who = "best async (" + sweep.best_name + ")";
    x.harness.judged_target(
        who + " >= " + course::fixed(kMinSpeedup, 2) + " x faster than sequential",
        speedup >= kMinSpeedup, speedup);
    x.harness.judged_target(who + " <= " + course::fixed(kMaxOfBound, 2) + " x the model's bound",
                            of_bound <= kMaxOfBound, of_bound);
  }
}

int run(const Settings& s, const course::DeviceSummary& gpu) {
  const std::size_t n = s.bytes / 4;
  const model::Gpu this_gpu = ot::model_of_device(gpu.ordinal, gpu.name);
  const std::vector<model::Gpu> generations = {model::tesla_c1060(), model::tesla_c2050(),
                                               model::tesla_k20(), this_gpu};
  std::cout << "lesson 14 overlap_transfers: " << n << " floats (" << s.bytes
            << " bytes) each way; GB/s counts the bytes of both copies\n  copy engines "
            << this_gpu.copy_engines << " (asyncEngineCount), " << this_gpu.connections
            << " hardware queues (CUDA_DEVICE_MAX_CONNECTIONS)\n";
  model::print_schematic(std::cout, generations);

  Experiment x(s, gpu, this_gpu);
  choose_rounds(x);
  std::map<Order, bool> passed = run_main_table(x);
  if (!s.options.variant.empty()) {
    std::cout << "(--variant: no sweep, timeline or targets)\n";
    return x.harness.finish();
  }
  if (!passed[Order::per_chunk] || !passed[Order::by_operation]) {
    std::cout << "\nasync-v1 and async-v2 must pass their checks before the sweep, the "
                 "timeline and the targets mean anything: fix them first.\n";
    return x.harness.finish();
  }
  SweepResult sweep = run_sweep(x);
  model::print_predictions(std::cout, generations, s.chunks, sweep.at_chunks);
  run_timeline(x, sweep.at_chunks);
  add_targets(x, sweep);
  return x.harness.finish();
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  course::FlagParser flags(
      "14_overlap_transfers",
      "Lesson 14: overlapping host<->device transfers with kernels. An array of floats goes\n"
      "to the device, through a trig kernel and back: 'sequential' in one piece on one\n"
      "stream; 'async-v1' cut into chunks, one stream each, issued chunk by chunk (copy in,\n"
      "kernel, copy out); 'async-v2' the same chunks issued operation by operation (every\n"
      "copy in, then every kernel, then every copy out). Then a sweep of the chunk count,\n"
      "the engine-queue model's predictions from stage times measured in the same run, and\n"
      "a per-operation timeline (--csv FILE also writes FILE_sweep.csv and\n"
      "FILE_timeline.csv for tools/plot_overlap_sweep.py and tools/plot_timeline.py).");
  add_flags(flags, settings);
  return course::run_driver(
      flags, argc, argv, settings.options,
      [&](const course::DeviceSummary& gpu) { return run(settings, gpu); },
      [&] { validate(settings); });
}
