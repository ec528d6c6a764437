// Lesson 14 driver: Mark Harris's overlap experiment on this GPU. Host -> kernel -> host,
// sequentially and in chunks issued in two orders (async V1, V2), every run checked; then a
// chunk sweep beside the engine-queue model's predictions (from stage times measured in the
// same run), a per-operation timeline, and the lesson's two targets.
//
// Read it in this order: Settings (the flags as given), plan_of (every size and count as a
// number), run() (one line per part of the output), then the parts: the intro, the kernel's
// rounds and the main table here; the sweep with its targets and the timeline in
// parts_sweep.cu and parts_timeline.cu (what they share: overlap_driver.h).
#include <algorithm>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "course/check.h"
#include "course/flags.h"
#include "course/harness.h"
#include "course/table.h"
#include "overlap_driver.h"
#include "overlap_transfers.cuh"

namespace overlap_transfers::driver {
namespace {

constexpr std::uint64_t kDefaultBytes = 16ull << 20;  // the blog post's 4M floats
constexpr std::uint64_t kQuickElements = 1000003;     // prime: no chunk count divides it
constexpr int kDefaultChunks = 4;                     // the blog post's
constexpr int kMaxChunks = 256;
constexpr int kQuickRounds = 2;
constexpr int kMaxRounds = 4096;
constexpr int kDefaultBalancePercent = 125;
const char* const kDefaultSweep = "1,2,4,8,16,32";
const char* const kQuickSweep = "1,3,4";

const std::vector<Order> kOrders = {Order::sequential, Order::per_chunk, Order::by_operation};

/// The command line as given: the common flags and lesson 14's own.
struct Settings {
  course::CommonOptions options;
  int chunks = kDefaultChunks;
  int rounds = 0;  ///< 0: not given
  int balance_percent = kDefaultBalancePercent;
  std::string sweep_text;  ///< empty: not given
};

void add_flags(course::FlagParser& flags, Settings& s);
Plan plan_of(const Settings& s);

// The parts of this file, in the order of the output.
void print_intro(const Plan& plan, const model::Gpu& this_gpu,
                 const std::vector<model::Gpu>& generations);
void choose_rounds(Experiment& x);
bool run_main_table(Experiment& x);
bool stops_after_main_table(const Experiment& x, bool async_passed);

/// The whole run, one line per part of the output.
int run(const Plan& plan, const course::DeviceSummary& gpu) {
  const model::Gpu this_gpu = ot::model_of_device(gpu.ordinal, gpu.name);
  const std::vector<model::Gpu> generations = {model::tesla_c1060(), model::tesla_c2050(),
                                               model::tesla_k20(), this_gpu};
  print_intro(plan, this_gpu, generations);  // the sizes, the engines, the schematic
  Experiment x(plan, gpu, this_gpu);
  choose_rounds(x);                             // the kernel's rounds, each operation alone
  const bool async_passed = run_main_table(x);  // the three versions at --chunks, checked
  if (stops_after_main_table(x, async_passed)) return x.harness.finish();
  const SweepResult sweep = run_sweep(x);  // measured and modelled, every chunk count
  model::print_predictions(std::cout, generations, plan.chunks, sweep.at_chunks);
  run_timeline(x, sweep.at_chunks);  // events around every operation of V1 and V2
  add_targets(x, sweep);             // the best async run against sequential and the bound
  return x.harness.finish();         // the tables, HEADLINE, TARGET lines, RESULT
}

// ---- The flags and the plan ------------------------------------------------------------------

void add_flags(course::FlagParser& flags, Settings& s) {
  std::vector<std::string> variants;
  for (Order order : kOrders) variants.emplace_back(ot::order_name(order));
  flags.add_common(s.options,
                   "bytes of float data, a multiple of 4 (default " +
                       std::to_string(kDefaultBytes >> 20) +
                       "M = " + std::to_string((kDefaultBytes / 4) >> 20) +
                       "M floats, the blog post's size; K/M/G suffixes)",
                   variants);
  flags.add_int("chunks", &s.chunks, 1,
                "chunks (one stream each) of async-v1/v2 and the timeline, at most " +
                    std::to_string(kMaxChunks) + " (default " + std::to_string(kDefaultChunks) +
                    ", the blog post's)");
  flags.add_int("rounds", &s.rounds, 1,
                "trig rounds per element, 1 to " + std::to_string(kMaxRounds) +
                    " (default: balance the kernel against the copies, see --balance)");
  flags.add_int("balance", &s.balance_percent, 1,
                "without --rounds: kernel time as a percentage of one host->device copy of the "
                "whole array (default " +
                    std::to_string(kDefaultBalancePercent) + ")");
  flags.add_string("sweep", &s.sweep_text,
                   std::string("chunk counts of the sweep (default ") + kDefaultSweep +
                       "; --quick: " + kQuickSweep + ")");
}

/// Every size and count as a number, with the range checks the flag parser cannot do (a
/// UsageError each); run_driver calls it before opening the device.
Plan plan_of(const Settings& s) {
  const course::CommonOptions& options = s.options;
  Plan plan;
  plan.options = options;
  plan.bytes = options.size ? options.size : (options.quick ? kQuickElements * 4 : kDefaultBytes);
  if (plan.bytes % 4 != 0) {
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
  plan.chunks = s.chunks;
  plan.sweep = course::parse_int_list(
      "sweep", !s.sweep_text.empty() ? s.sweep_text : (options.quick ? kQuickSweep : kDefaultSweep),
      1, kMaxChunks);
  plan.sweep.push_back(s.chunks);  // the timeline's chunk count is always a point of the sweep
  std::sort(plan.sweep.begin(), plan.sweep.end());
  plan.sweep.erase(std::unique(plan.sweep.begin(), plan.sweep.end()), plan.sweep.end());
  plan.rounds = s.rounds > 0 ? s.rounds : (options.quick ? kQuickRounds : 0);
  plan.balance_percent = s.balance_percent;
  plan.rounds_origin =
      s.rounds > 0    ? " (--rounds)"
      : options.quick ? " (--quick)"
                      : " (balanced to " + std::to_string(s.balance_percent) + "% of the copy in)";
  return plan;
}

// ---- The parts -------------------------------------------------------------------------------

void print_intro(const Plan& plan, const model::Gpu& this_gpu,
                 const std::vector<model::Gpu>& generations) {
  std::cout << "lesson 14 overlap_transfers: " << plan.bytes / 4 << " floats (" << plan.bytes
            << " bytes) each way; GB/s counts the bytes of both copies\n  copy engines "
            << this_gpu.copy_engines << " (asyncEngineCount), " << this_gpu.connections
            << " hardware queues (CUDA_DEVICE_MAX_CONNECTIONS)\n";
  model::print_schematic(std::cout, generations);
}

/// The kernel's rounds (the plan's, or balanced against the copy in), the line that says
/// which, each operation's time alone, and the CPU reference for those rounds.
void choose_rounds(Experiment& x) {
  const Plan& plan = x.plan;
  x.job.rounds = plan.rounds > 0
                     ? plan.rounds
                     : ot::balanced_rounds(x.job, plan.balance_percent, kMaxRounds,
                                           [&](const course::Launch& l) { return x.time_ms(l); });
  std::cout << "\n  kernel: " << x.job.rounds << " trig rounds per element" << plan.rounds_origin
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
/// Returns whether both async orders passed their checks.
bool run_main_table(Experiment& x) {
  course::Harness& harness = x.harness;
  harness.reference("copies only", x.bytes_both_ways(),
                    ot::prepare_copies_only(x.job, x.scratch.data(), x.streams));
  harness.baseline("sequential");
  harness.headline("async-v1");
  std::map<Order, bool> passed;
  for (Order order : kOrders) {
    const std::string name = ot::order_name(order);
    harness.run({name, x.bytes_both_ways(),
                 ot::prepare_transfer_and_compute(order, x.job, x.plan.chunks, x.streams),
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
  return passed[Order::per_chunk] && passed[Order::by_operation];
}

/// After the main table, the run stops when --variant picked one version, or when an async
/// version failed its check (the sweep, the timeline and the targets would mean nothing);
/// it says which.
bool stops_after_main_table(const Experiment& x, bool async_passed) {
  if (!x.plan.options.variant.empty()) {
    std::cout << "(--variant: no sweep, timeline or targets)\n";
    return true;
  }
  if (!async_passed) {
    std::cout << "\nasync-v1 and async-v2 must pass their checks before the sweep, the "
                 "timeline and the targets mean anything: fix them first.\n";
    return true;
  }
  return false;
}

}  // namespace
}  // namespace overlap_transfers::driver

int main(int argc, char** argv) {
  namespace driver = overlap_transfers::driver;
  driver::Settings settings;
  driver::Plan plan;
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
  driver::add_flags(flags, settings);
  return course::run_driver(
      flags, argc, argv, settings.options,
      [&](const course::DeviceSummary& gpu) { return driver::run(plan, gpu); },
      [&] { plan = driver::plan_of(settings); });
}
