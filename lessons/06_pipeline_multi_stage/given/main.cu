// Lesson 06 driver: runs the multi-stage copy-and-compute kernel written with a block-scope
// cuda::pipeline and with the pipeline primitives, next to lesson 01's register-staged
// kernel, at one block per SM and at full occupancy; checks every output element against
// the CPU reference; compares each variant with a device-to-device cudaMemcpy and with the
// SM copy roof, both measured in the same run. Then it sweeps the stage count (2-8) and the
// batch granularity (4-32 KB) at one block per SM, every point checked too; with --csv the
// sweeps go to FILE_sweep.csv for tools/plot_pipeline_sweep.py.
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "course/buffers.h"
#include "course/data.h"
#include "course/harness.h"
#include "course/launch.h"
#include "course/problem.h"
#include "course/workload.h"
#include "pipeline_multi_stage.cuh"
#include "register_staged.cuh"

namespace {

using pipeline_multi_stage::Config;
using pipeline_multi_stage::Interface;
using pipeline_multi_stage::kMaxStages;
using pipeline_multi_stage::kMinStages;

constexpr int kThreads = 256;
constexpr int kVectorsPerThread = 4;  // 256 x 4 x 16 B = 16 KB batches: lesson 01's coarse
constexpr int kDefaultStages = 4;
constexpr int kSweepVectors[] = {1, 2, 4, 8};  // the granularity sweep: 4-32 KB batches
constexpr std::uint32_t kSeed = 6;
constexpr const char* kLesson = "06_pipeline_multi_stage";
constexpr const char* kHeadline = "primitives-1-per-SM";
constexpr const char* kBaseline = "01-coarse-1-per-SM";
constexpr const char* kBroken = "broken-one-stage-too-many";

struct VariantSpec {
  const char* name;
  bool lesson01;  ///< lesson 01's register-staged kernel instead of this lesson's
  Interface interface;
  bool one_block_per_sm;
};

// Lesson 01's coarse kernel first: every speed-up is relative to it at one block per SM.
const std::vector<VariantSpec> kVariants = {
    {kBaseline, true, Interface::primitives, true},
    {"pipeline-1-per-SM", false, Interface::pipeline, true},
    {kHeadline, false, Interface::primitives, true},
    {"01-coarse", true, Interface::primitives, false},
    {"pipeline", false, Interface::pipeline, false},
    {"primitives", false, Interface::primitives, false},
};

// DELIBERATELY BROKEN (prefetches one batch more than it has buffers): runs only when
// --variant names it.
const VariantSpec kBrokenVariant = {kBroken, false, Interface::broken_one_stage_too_many, false};

/// The command line, as given: the common flags and lesson 06's own.
struct Settings {
  course::CommonOptions options;
  int stages = kDefaultStages;
  bool no_sweeps = false;
};

/// Every size and count of the run, resolved from the command line.
struct Plan {
  std::size_t elements = 0;
  int stages = 0;       ///< of the main table's pipelines and of the granularity sweep
  std::string variant;  ///< the one row --variant asks for; empty: every correct row
  bool sweeps = false;  ///< the sweeps run (not --no-sweeps, every row ran)
};

/// The problem every row runs, and the two kernels' launches over it.
struct Workload : course::workload::Problem {
  explicit Workload(std::size_t elements) : Problem(elements, kSeed) {}

  course::Launch lesson01(register_staged::LaunchShape shape) const {
    return register_staged::prepare_copy_and_compute(in.cspan(), out.span(),
                                                     register_staged::Granularity::coarse, shape);
  }
  course::Launch pipelined(const Config& config, register_staged::LaunchShape shape) const {
    return pipeline_multi_stage::prepare_copy_and_compute(in.cspan(), out.span(), config, shape);
  }
};

Plan make_plan(const Settings& s);
void print_intro(const Plan& plan);
void add_yardsticks_and_targets(course::Harness& harness, Workload& w);
void run_variants(course::Harness& harness, Workload& w, const Plan& plan,
                  const course::DeviceSummary& gpu);
void run_sweeps(course::Harness& harness, Workload& w, const course::DeviceSummary& gpu,
                int stages);
std::string kilobytes(std::size_t bytes);
std::size_t batch_bytes(int vectors_per_thread);

/// The output, part by part: the intro line, the table, the sweeps.
int run(const Settings& s, const course::DeviceSummary& gpu) {
  const Plan plan = make_plan(s);
  print_intro(plan);
  Workload w(plan.elements);
  course::Harness harness(kLesson, s.options, gpu);
  add_yardsticks_and_targets(harness, w);
  run_variants(harness, w, plan, gpu);
  if (plan.sweeps) run_sweeps(harness, w, gpu, plan.stages);
  return harness.finish();
}

/// --size, --stages, --variant and --no-sweeps resolved: the one place that reads --quick.
Plan make_plan(const Settings& s) {
  const course::CommonOptions& options = s.options;
  // The sweeps, at one block per SM, only when every variant ran (their speed-ups are
  // relative to the baseline of the main table).
  return {course::workload::elements_for(options),
          s.stages, options.variant, !s.no_sweeps && options.variant.empty()};
}

void print_intro(const Plan& plan) {
  std::cout << "lesson 06 pipeline_multi_stage: " << plan.elements << " uint32 elements, "
            << kThreads << " threads per block, " << plan.stages << " stages of "
            << kilobytes(batch_bytes(kVectorsPerThread))
            << " in the main table; GB/s counts bytes read + bytes written\n";
}

void add_yardsticks_and_targets(course::Harness& harness, Workload& w) {
  harness.reference_d2d_copy(w.out.data(), w.in.data(), w.in.bytes());
  harness.roof_sm_copy(w.out.data(), w.in.data(), w.in.bytes());
  harness.baseline(kBaseline);
  harness.headline(kHeadline);
  harness.target({"primitives", 0.95, course::Yardstick::sm_copy_roof});
  harness.ratio_target({kHeadline, kBaseline, 1.15});
}

/// One row of the main table: the blocks it launches (one per SM, as many as fit, or, for
/// the broken variant, about 2 x stages batches per block), the line saying so, the run.
void run_spec(course::Harness& harness, Workload& w, const course::DeviceSummary& gpu, int stages,
              const VariantSpec& spec) {
  const Config config{spec.interface, stages, kVectorsPerThread};
  const int resident = spec.lesson01 ? register_staged::max_blocks_per_sm(
                                           register_staged::Granularity::coarse, kThreads)
                                     : pipeline_multi_stage::max_blocks_per_sm(config, kThreads);
  if (resident < 1) {
    throw std::runtime_error(std::string(spec.name) + ": one block does not fit on an SM");
  }
  std::string what = spec.lesson01
                         ? "lesson 01's register-staged kernel, 1 buffer of " +
                               kilobytes(batch_bytes(kVectorsPerThread))
                         : std::to_string(stages) + " stages of " +
                               kilobytes(batch_bytes(kVectorsPerThread)) + " (" +
                               kilobytes(pipeline_multi_stage::shared_bytes(config, kThreads)) +
                               " of shared memory)";
  int per_sm = spec.one_block_per_sm ? 1 : resident;
  int blocks = gpu.sm_count * per_sm;
  if (spec.interface == Interface::broken_one_stage_too_many) {
    // The extra copy is only issued when a block owns more batches than it has
    // buffers: give each block about 2 x stages batches (at most one block per SM).
    const std::size_t batches = pipeline_multi_stage::batch_count(
        w.n, pipeline_multi_stage::batch_elements(kThreads, kVectorsPerThread));
    blocks = static_cast<int>(
        std::clamp<std::size_t>(batches / (2 * stages), 1, static_cast<std::size_t>(gpu.sm_count)));
    per_sm = 1;
    what += "; DELIBERATELY BROKEN: prefetches one batch more than it has buffers";
  }
  const register_staged::LaunchShape shape{blocks, kThreads};
  std::cout << "  " << spec.name << ": " << blocks << " blocks (" << per_sm << " per SM; at most "
            << resident << " fit), " << what << "\n";
  harness.run(w.checked(spec.name, spec.lesson01 ? w.lesson01(shape) : w.pipelined(config, shape)));
}

/// The table's rows: every correct variant, or the one --variant names (the broken one too).
void run_variants(course::Harness& harness, Workload& w, const Plan& plan,
                  const course::DeviceSummary& gpu) {
  std::vector<VariantSpec> specs = kVariants;
  if (plan.variant == kBroken) specs.push_back(kBrokenVariant);
  for (const VariantSpec& spec : specs) {
    if (!plan.variant.empty() && plan.variant != spec.name) continue;
    run_spec(harness, w, gpu, plan.stages, spec);
  }
}

/// One point of a sweep at one block per SM (skipped, and said so, when it does not fit).
void sweep_point(course::Harness& harness, Workload& w, const course::DeviceSummary& gpu,
                 const std::string& sweep, const Config& config) {
  const register_staged::LaunchShape one_per_sm{gpu.sm_count, kThreads};
  const std::string label = std::string(pipeline_multi_stage::name(config.interface)) + ", " +
                            std::to_string(config.stages) + " stages, " +
                            kilobytes(batch_bytes(config.vectors_per_thread));
  if (pipeline_multi_stage::max_blocks_per_sm(config, kThreads) < 1) {
    std::cout << "  " << sweep << " sweep, " << label << ": skipped, "
              << kilobytes(pipeline_multi_stage::shared_bytes(config, kThreads))
              << " of shared memory does not fit one block\n";
    return;
  }
  harness.sweep(sweep,
                {{"interface", pipeline_multi_stage::name(config.interface)},
                 {"stages", std::to_string(config.stages)},
                 {"vectors_per_thread", std::to_string(config.vectors_per_thread)},
                 {"batch_bytes", std::to_string(batch_bytes(config.vectors_per_thread))},
                 {"threads_per_block", std::to_string(kThreads)},
                 {"blocks", std::to_string(one_per_sm.blocks)}},
                w.checked(label, w.pipelined(config, one_per_sm)));
}

/// The stage sweep (every stage count, 16 KB batches) and the granularity sweep (every batch
/// size of kSweepVectors at --stages).
void run_sweeps(course::Harness& harness, Workload& w, const course::DeviceSummary& gpu,
                int stages) {
  for (Interface interface : {Interface::pipeline, Interface::primitives}) {
    for (int s = kMinStages; s <= kMaxStages; ++s) {
      sweep_point(harness, w, gpu, "stages", {interface, s, kVectorsPerThread});
    }
  }
  for (Interface interface : {Interface::pipeline, Interface::primitives}) {
    for (int vectors : kSweepVectors) {
      sweep_point(harness, w, gpu, "granularity", {interface, stages, vectors});
    }
  }
  std::cout << "Sweeps: one block per SM (" << gpu.sm_count << " blocks of " << kThreads
            << " threads); 'stages' with " << kilobytes(batch_bytes(kVectorsPerThread))
            << " batches, 'granularity' with " << stages << " stages\n";
}

std::string kilobytes(std::size_t bytes) { return std::to_string(bytes / 1024) + " KB"; }

std::size_t batch_bytes(int vectors_per_thread) {
  return pipeline_multi_stage::batch_elements(kThreads, vectors_per_thread) * sizeof(std::uint32_t);
}

std::vector<std::string> variant_names() {
  std::vector<std::string> names = course::names_of(kVariants);
  names.emplace_back(kBroken);
  return names;
}

void add_flags(course::FlagParser& flags, Settings& s) {
  flags.add_common(s.options, course::workload::size_help(), variant_names());
  flags.add_int("stages", &s.stages, 0,
                "stages (shared buffers) of the pipeline and primitives variants and of the "
                "granularity sweep, " +
                    std::to_string(kMinStages) + " to " + std::to_string(kMaxStages) +
                    " (default " + std::to_string(kDefaultStages) + ")");
  flags.add_bool("no-sweeps", &s.no_sweeps, "skip the stage and granularity sweeps");
}

/// The usage text's description; the batch size and the sweeps' ranges come from the
/// constants that define them.
std::string description() {
  const std::string stages = std::to_string(kMinStages) + "-" + std::to_string(kMaxStages);
  const std::string sizes = std::to_string(batch_bytes(kSweepVectors[0]) / 1024) + "-" +
                            kilobytes(batch_bytes(kSweepVectors[std::size(kSweepVectors) - 1]));
  return "Lesson 06: multi-stage pipelines. Each block keeps S batches of " +
         kilobytes(batch_bytes(kVectorsPerThread)) +
         " in shared\n"
         "memory and copies the next batches while it computes the current one. 'pipeline'\n"
         "uses a block-scope cuda::pipeline (acquire/commit/wait/release), 'primitives' the\n"
         "__pipeline_memcpy_async/commit/wait_prior primitives with a zero-filled last batch;\n"
         "'01-coarse' is lesson 01's register-staged kernel. '-1-per-SM' variants launch one\n"
         "block per SM, the others as many as fit. Then a stage sweep (" +
         stages + ") and a batch\ngranularity sweep (" + sizes +
         ") at one block per SM; with --csv FILE the sweeps go to\n"
         "FILE with '_sweep' before '.csv'.\n"
         "'broken-one-stage-too-many' is DELIBERATELY BROKEN (it prefetches one batch more\n"
         "than it has buffers; racecheck reports it): it never runs unless --variant names it.";
}

/// The range check the flag parser cannot do; run_driver calls it before opening the device.
void validate(const Settings& s) {
  course::require_in_range("stages", s.stages, kMinStages, kMaxStages);
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  course::FlagParser flags(kLesson, description());
  add_flags(flags, settings);
  return course::run_driver(
      flags, argc, argv, settings.options,
      [&](const course::DeviceSummary& gpu) { return run(settings, gpu); },
      [&] { validate(settings); });
}
