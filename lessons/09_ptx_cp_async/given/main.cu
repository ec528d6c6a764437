// Lesson 09 driver: the multi-stage copy-and-compute kernel built on hand-written cp.async
// PTX, in every copy form (.ca/.cg, 4/8/16 bytes, L2 prefetch sizes, groups or mbarrier
// completion), next to lesson 06's primitives kernel; then the tail workload (rows of an
// awkward length: an `if` around each copy against src-size zero fill) and the cache
// workload (a reused table beside a stream larger than L2: plain copies against L2 cache
// policies). Every output element is checked against a CPU reference; every figure is a
// ratio to yardsticks measured in the same run (the D2D cudaMemcpy and the SM copy roof).
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/check.h"
#include "course/harness.h"
#include "course/launch.h"
#include "course/problem.h"
#include "course/table.h"
#include "course/workload.h"
#include "pipeline_multi_stage.cuh"
#include "ptx_cp_async.cuh"
#include "ptx_cp_async_parts.h"

namespace {

namespace parts = ptx_cp_async::parts;
using course::workload::Problem;
using ptx_cp_async::Form;

constexpr int kThreads = 256;
constexpr int kVectorsPerThread = 4;  // 16 KB batches, as in lesson 06
constexpr int kDefaultStages = 4;
constexpr std::size_t kTailElements = 64ull << 20;  // tail input: about 256 MB
constexpr std::size_t kQuickTailRows = 1009;
constexpr int kDefaultTailLength = 13;
constexpr int kMaxTailLength = 4096;
constexpr int kDefaultTablePercent = 25;
constexpr int kMaxTablePercent = 400;
constexpr std::size_t kStreamL2s = 8;          // the cache workload's stream: 8 x L2
constexpr std::size_t kQuickTableBatches = 8;  // --quick: the table and the stream in batches
constexpr std::size_t kQuickStreamBatches = 64;
constexpr double kOfRoof = 0.95;      // targets: the best form against the SM copy roof,
constexpr double kOfLesson06 = 0.98;  // and against lesson 06's primitives kernel
constexpr std::uint32_t kSeed = 9;
constexpr const char* kLesson = "09_ptx_cp_async";
constexpr const char* kLesson06 = "06-primitives";

/// The command line, as given: the common flags and lesson 09's own.
struct Settings {
  course::CommonOptions options;
  int stages = kDefaultStages;
  int tail_length = kDefaultTailLength;
  int table_percent = kDefaultTablePercent;
};

/// Every size and count of the run, resolved from the command line and the GPU's L2.
struct Plan {
  std::size_t elements = 0;
  int stages = 0;                  ///< of the multi-stage kernels
  std::string variant;             ///< the one row --variant asks for; empty: every row
  bool every_stage_count = false;  ///< --quick's extra rows (run_every_stage_count)
  ptx_cp_async::Rows tail{};       ///< the tail workload's rows
  parts::CacheSizes cache{};       ///< the cache workload's table and stream

  /// Whether --variant leaves `name` (or every variant starting with `prefix`) in the run.
  bool wants(const std::string& name) const { return variant.empty() || variant == name; }
  bool wants_prefix(const std::string& prefix) const {
    return variant.empty() || variant.rfind(prefix, 0) == 0;
  }
};

Plan make_plan(const Settings& s, int l2_bytes);
void print_intro(const Plan& plan);
void add_yardsticks(course::Harness& harness, Problem& w);
void run_multi_stage(course::Harness& harness, Problem& w, const Plan& plan,
                     const course::DeviceSummary& gpu);
void run_every_stage_count(course::Harness& harness, const Plan& plan);
void report_wait_timeouts();
void add_targets(course::Harness& harness);

/// The output, part by part: the intro line, the multi-stage table (with --quick's extra
/// rows), the tail workload, the cache workload, the targets.
int run(const Settings& s, const course::DeviceSummary& gpu) {
  int l2_bytes = 0;
  COURSE_CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, gpu.ordinal));
  const Plan plan = make_plan(s, l2_bytes);
  print_intro(plan);
  Problem w(plan.elements, kSeed);
  course::Harness harness(kLesson, s.options, gpu);
  add_yardsticks(harness, w);
  run_multi_stage(harness, w, plan, gpu);
  if (plan.every_stage_count) run_every_stage_count(harness, plan);
  report_wait_timeouts();
  if (plan.wants_prefix("tail-")) parts::run_tail(harness, plan.tail);
  if (plan.wants_prefix("cache-")) parts::run_cache(harness, plan.cache);
  add_targets(harness);
  return harness.finish();
}

/// The flags resolved, the cache workload's sizes from the L2's: the one place that reads
/// --quick.
Plan make_plan(const Settings& s, int l2_bytes) {
  const course::CommonOptions& options = s.options;
  const bool quick = options.quick;
  Plan plan;
  plan.elements = course::workload::elements_for(options);
  plan.stages = s.stages;
  plan.variant = options.variant;
  plan.every_stage_count = quick && options.variant.empty();
  plan.tail = {quick ? kQuickTailRows : kTailElements / ptx_cp_async::pitch(s.tail_length),
               static_cast<std::size_t>(s.tail_length)};
  plan.cache.l2_bytes = l2_bytes;
  const std::size_t batch = ptx_cp_async::kCacheBatch;
  const std::size_t l2_elements = static_cast<std::size_t>(l2_bytes) / 4;
  const std::size_t table_percent = static_cast<std::size_t>(s.table_percent);
  plan.cache.table_elements =
      quick ? kQuickTableBatches * batch
            : std::max<std::size_t>(batch, l2_elements * table_percent / 100 / batch * batch);
  plan.cache.stream_elements =
      quick ? kQuickStreamBatches * batch
            : std::max<std::size_t>(kQuickStreamBatches * batch,
                                    kStreamL2s * l2_elements / batch * batch);
  return plan;
}

void print_intro(const Plan& plan) {
  std::cout << "lesson 09 ptx_cp_async: " << plan.elements << " uint32 elements, " << kThreads
            << " threads per block, " << plan.stages << " stages of "
            << ptx_cp_async::batch_elements(kThreads, kVectorsPerThread) * sizeof(std::uint32_t) /
                   1024
            << " KB batches; L2: " << parts::megabytes(plan.cache.l2_bytes)
            << "; GB/s counts bytes read + bytes written\n";
}

void add_yardsticks(course::Harness& harness, Problem& w) {
  harness.reference_d2d_copy(w.out.data(), w.in.data(), w.in.bytes());
  harness.roof_sm_copy(w.out.data(), w.in.data(), w.in.bytes());
  harness.headline("cg16");
}

/// The multi-stage workload, lesson 06's primitives kernel and then every cp.async form, each
/// with as many blocks per SM as fit.
void run_multi_stage(course::Harness& harness, Problem& w, const Plan& plan,
                     const course::DeviceSummary& gpu) {
  if (plan.wants(kLesson06)) {
    const pipeline_multi_stage::Config config{pipeline_multi_stage::Interface::primitives,
                                              plan.stages, kVectorsPerThread};
    const int per_sm = pipeline_multi_stage::max_blocks_per_sm(config, kThreads);
    if (per_sm < 1) throw std::runtime_error("06-primitives: one block does not fit on an SM");
    std::cout << "  " << kLesson06 << ": lesson 06's primitives kernel, " << per_sm
              << " blocks per SM\n";
    harness.run(w.checked(
        kLesson06, pipeline_multi_stage::prepare_copy_and_compute(
                       w.in.cspan(), w.out.span(), config, {gpu.sm_count * per_sm, kThreads})));
  }
  for (Form form : ptx_cp_async::kForms) {
    const std::string name = ptx_cp_async::name(form);
    if (!plan.wants(name)) continue;
    const ptx_cp_async::Config config{form, plan.stages, kVectorsPerThread};
    const int per_sm = ptx_cp_async::max_blocks_per_sm(config, kThreads);
    if (per_sm < 1) throw std::runtime_error(name + ": one block does not fit on an SM");
    std::cout << "  " << name << ": " << ptx_cp_async::copy_bytes(form) << "-byte copies, "
              << per_sm << " blocks per SM\n";
    harness.run(
        w.checked(name, ptx_cp_async::prepare_copy_and_compute(w.in.cspan(), w.out.span(), config,
                                                               {gpu.sm_count * per_sm, kThreads})));
  }
}

/// --quick only: every cp.async form at every stage count but the main table's, on a small
/// input: 8 blocks of 4 KB batches, 3 batches each, the last one partial. Each stage count
/// compiles its own copy of the copies and waits you wrote, and the race checks run the
/// program --quick: a copy that never runs there is never checked.
void run_every_stage_count(course::Harness& harness, const Plan& plan) {
  constexpr int kBlocks = 8;
  Problem small(kBlocks * 3 * ptx_cp_async::batch_elements(kThreads, 1) - 37, kSeed);
  for (Form form : ptx_cp_async::kForms) {
    for (int stages = ptx_cp_async::kMinStages; stages <= ptx_cp_async::kMaxStages; ++stages) {
      if (stages == plan.stages) continue;  // the main table ran it
      const std::string name = ptx_cp_async::name(form);
      harness.sweep("stages (--quick)", {{"form", name}, {"stages", std::to_string(stages)}},
                    small.checked(name + ", " + std::to_string(stages) + " stages",
                                  ptx_cp_async::prepare_copy_and_compute(
                                      small.in.cspan(), small.out.span(), {form, stages, 1},
                                      {kBlocks, kThreads})));
    }
  }
}

/// Says how many mbarrier waits gave up since the last call (none: nothing).
void report_wait_timeouts() {
  if (const unsigned long long gave_up = ptx_cp_async::take_wait_timeouts(); gave_up != 0) {
    std::cout << "  " << gave_up << " mbarrier wait(s) gave up after "
              << course::mbarrier::kWaitLimitNs / 1'000'000'000ull << " s: a batch's phase never "
              << "completed (a lost arrival, a wrong count or parity), so its values are wrong\n";
  }
}

/// The targets: ratios of this run. The best cp.async form against the SM copy roof and
/// lesson 06, zero fill against the `if`, the cache hint against plain copies.
void add_targets(course::Harness& harness) {
  std::string best;
  for (Form form : ptx_cp_async::kForms) {
    const std::string name = ptx_cp_async::name(form);
    if (harness.rate_of(name) > 0 &&
        (best.empty() || harness.rate_of(name) > harness.rate_of(best))) {
      best = name;
    }
  }
  if (!best.empty()) {
    const double of_roof = harness.rate_of(best) / harness.rate_of("SM copy roof");
    harness.judged_target("best multi-stage variant (" + best +
                              ") >= " + course::fixed(kOfRoof, 2) + " x SM copy roof",
                          of_roof >= kOfRoof, of_roof);
    if (harness.rate_of(kLesson06) > 0) {
      const double of_06 = harness.rate_of(best) / harness.rate_of(kLesson06);
      harness.judged_target("best multi-stage variant (" + best +
                                ") >= " + course::fixed(kOfLesson06, 2) + " x " + kLesson06,
                            of_06 >= kOfLesson06, of_06);
    }
  }
  harness.ratio_target({"tail-src-size", "tail-if", 1.00});
  harness.ratio_target({"cache-hint", "cache-plain", 1.10});
}

std::vector<std::string> variant_names() {
  std::vector<std::string> names{kLesson06};
  for (Form f : ptx_cp_async::kForms) names.emplace_back(ptx_cp_async::name(f));
  for (auto c : {ptx_cp_async::TailCopy::if_wrapped, ptx_cp_async::TailCopy::src_size}) {
    names.emplace_back(ptx_cp_async::name(c));
  }
  for (auto p : {ptx_cp_async::CachePolicy::plain, ptx_cp_async::CachePolicy::hinted}) {
    names.emplace_back(ptx_cp_async::name(p));
  }
  return names;
}

void add_flags(course::FlagParser& flags, Settings& s) {
  const auto range = [](int min, int max, int by_default) {
    return std::to_string(min) + " to " + std::to_string(max) + " (default " +
           std::to_string(by_default) + ")";
  };
  flags.add_common(s.options,
                   "uint32 elements of the multi-stage input (default " +
                       course::workload::default_elements_text() + ")",
                   variant_names());
  flags.add_int("stages", &s.stages, 0,
                "stages of the multi-stage kernels, " +
                    range(ptx_cp_async::kMinStages, ptx_cp_async::kMaxStages, kDefaultStages));
  flags.add_int(
      "tail-length", &s.tail_length, 0,
      "elements per row of the tail workload, " + range(1, kMaxTailLength, kDefaultTailLength));
  flags.add_int("table-percent", &s.table_percent, 0,
                "the cache workload's table as a percentage of L2, " +
                    range(1, kMaxTablePercent, kDefaultTablePercent));
}

/// The range checks the flag parser cannot do; run_driver calls it before opening the device.
void validate(const Settings& s) {
  course::require_in_range("stages", s.stages, ptx_cp_async::kMinStages, ptx_cp_async::kMaxStages);
  course::require_in_range("tail-length", s.tail_length, 1, kMaxTailLength);
  course::require_in_range("table-percent", s.table_percent, 1, kMaxTablePercent);
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  course::FlagParser flags(
      kLesson,
      "Lesson 09: cp.async in inline PTX. The multi-stage copy-and-compute kernel of lesson 06\n"
      "in every copy form: ca4, ca8, ca16 (through L1), cg16 (L1 bypassed), cg16 with the\n"
      ".L2::64B/128B/256B prefetch sizes, cg16 completed through an mbarrier (with and\n"
      "without .noinc), next to lesson 06's primitives kernel ('06-primitives'), all at full\n"
      "occupancy. Then 'tail-if' vs 'tail-src-size' on rows of --tail-length elements (each\n"
      "ending in a partial 16-byte chunk), and 'cache-plain' vs 'cache-hint' on a stream of\n" +
          std::to_string(kStreamL2s) +
          " x L2 beside a table (--table-percent of L2) that every block reads again.");
  add_flags(flags, settings);
  return course::run_driver(
      flags, argc, argv, settings.options,
      [&](const course::DeviceSummary& gpu) { return run(settings, gpu); },
      [&] { validate(settings); });
}
