// Lesson 07 driver: runs the partitioned (producer warps + consumer warps) pipeline next to
// lesson 06's unified cuda::pipeline and primitives kernels and lesson 01's register-staged
// kernel, all with the same stage count and 16 KB batches, at one block per SM and at full
// occupancy; checks every output element against the CPU reference; compares each variant
// with a device-to-device cudaMemcpy and with the SM copy roof, both measured in the same
// run. Then it sweeps the number of producer and consumer warps at one block per SM (every
// point checked too; parts_sweeps.cu); with --csv the sweep goes to FILE_sweep.csv.
#include <cstdint>
#include <functional>
#include <iostream>
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
#include "producer_consumer.cuh"
#include "producer_consumer_parts.h"
#include "register_staged.cuh"

namespace {

namespace parts = producer_consumer::parts;
using course::workload::Problem;
using producer_consumer::Partition;
using producer_consumer::parts::batch_kilobytes;

constexpr int kUnifiedThreads = 256;  // lessons 01 and 06: 256 threads x 4 vectors = 16 KB
constexpr int kUnifiedVectors = 4;
static_assert(parts::kBatchBytes == kUnifiedThreads * kUnifiedVectors * sizeof(uint4),
              "every variant stages batches of the same size");
constexpr int kDefaultStages = 4;
constexpr std::uint32_t kSeed = 7;
constexpr const char* kLesson = "07_producer_consumer";
constexpr const char* kBaseline = "06-pipeline-1-per-SM";
constexpr const char* kHeadline = "1p8c-1-per-SM";
constexpr const char* kDefaultPartition = "role";

enum class Kernel { register_staged, unified_pipeline, unified_primitives, partitioned };

struct VariantSpec {
  const char* name;
  Kernel kernel;
  int producer_warps;  // partitioned only
  int consumer_warps;  // partitioned only
  bool one_block_per_sm;
};

// Lesson 06's unified cuda::pipeline at one block per SM first: every speed-up is relative
// to it. "1p8c" = 1 producer warp + 8 consumer warps.
const std::vector<VariantSpec> kVariants = {
    {kBaseline, Kernel::unified_pipeline, 0, 0, true},
    {"06-primitives-1-per-SM", Kernel::unified_primitives, 0, 0, true},
    {"01-coarse-1-per-SM", Kernel::register_staged, 0, 0, true},
    {"1p4c-1-per-SM", Kernel::partitioned, 1, 4, true},
    {kHeadline, Kernel::partitioned, 1, 8, true},
    {"2p8c-1-per-SM", Kernel::partitioned, 2, 8, true},
    {"06-pipeline", Kernel::unified_pipeline, 0, 0, false},
    {"06-primitives", Kernel::unified_primitives, 0, 0, false},
    {"01-coarse", Kernel::register_staged, 0, 0, false},
    {"1p4c", Kernel::partitioned, 1, 4, false},
    {"1p8c", Kernel::partitioned, 1, 8, false},
    {"2p8c", Kernel::partitioned, 2, 8, false},
};

/// The command line, as given: the common flags and lesson 07's own.
struct Settings {
  course::CommonOptions options;
  int stages = kDefaultStages;
  std::string partition_text;
  bool no_sweep = false;
};

/// Every size and count of the run, resolved from the command line.
struct Plan {
  std::size_t elements = 0;
  int stages = 0;  ///< of every pipelined variant
  Partition partition = Partition::role;
  std::string variant;             ///< the one row --variant asks for; empty: every row
  bool warp_sweep = false;         ///< the warp sweep runs (not --no-sweep, every row ran)
  bool every_stage_count = false;  ///< --quick's extra rows (parts::run_every_stage_count)

  /// A partitioned pipeline of this run's stages and partition.
  producer_consumer::Config partitioned(int producer_warps, int consumer_warps) const {
    return producer_consumer::Config{partition, stages, producer_warps, consumer_warps,
                                     producer_consumer::kDefaultBatchVectors};
  }
};

Plan make_plan(const Settings& s);
void print_intro(const Plan& plan);
void add_yardsticks(course::Harness& harness, Problem& w);
void run_variants(course::Harness& harness, Problem& w, const Plan& plan,
                  const course::DeviceSummary& gpu);

/// The output, part by part: the intro line, the table, the warp sweep, --quick's extra rows.
int run(const Settings& s, const course::DeviceSummary& gpu) {
  const Plan plan = make_plan(s);
  print_intro(plan);
  Problem w(plan.elements, kSeed);
  course::Harness harness(kLesson, s.options, gpu);
  add_yardsticks(harness, w);
  run_variants(harness, w, plan, gpu);
  if (plan.warp_sweep) parts::run_warp_sweep(harness, w, plan.partition, plan.stages, gpu);
  if (plan.every_stage_count) {
    parts::run_every_stage_count(harness, w, plan.partition, plan.stages, gpu);
  }
  return harness.finish();
}

/// The flags resolved: the one place that reads --quick.
Plan make_plan(const Settings& s) {
  const course::CommonOptions& options = s.options;
  Plan plan;
  plan.elements = course::workload::elements_for(options);
  plan.stages = s.stages;
  plan.partition =
      s.partition_text == "producer-count" ? Partition::producer_count : Partition::role;
  plan.variant = options.variant;
  // The warp sweep at one block per SM, only when every variant ran (its speed-ups are
  // relative to the baseline of the main table).
  plan.warp_sweep = !s.no_sweep && options.variant.empty();
  plan.every_stage_count = options.quick && options.variant.empty();
  return plan;
}

void print_intro(const Plan& plan) {
  std::cout << "lesson 07 producer_consumer: " << plan.elements << " uint32 elements, "
            << plan.stages << " stages of " << batch_kilobytes() << ", " << name(plan.partition)
            << " partition; GB/s counts bytes read + bytes written\n";
}

void add_yardsticks(course::Harness& harness, Problem& w) {
  harness.reference_d2d_copy(w.out.data(), w.in.data(), w.in.bytes());
  harness.roof_sm_copy(w.out.data(), w.in.data(), w.in.bytes());
  harness.baseline(kBaseline);
  harness.headline(kHeadline);
  // No numeric target for this lesson: the table reports what the GPU gives.
}

/// A row of the main table before its block count is known: how many blocks fit on an SM,
/// what the row is, and how to prepare its launch for a number of blocks.
struct Prepared {
  int resident = 0;
  std::string what;
  std::function<course::Launch(int)> prepare;
};

Prepared prepare_spec(const VariantSpec& spec, Problem& w, const Plan& plan) {
  Prepared p;
  if (spec.kernel == Kernel::register_staged) {
    const auto g = register_staged::Granularity::coarse;
    p.resident = register_staged::max_blocks_per_sm(g, kUnifiedThreads);
    p.prepare = [&w, g](int blocks) {
      return register_staged::prepare_copy_and_compute(w.in.cspan(), w.out.span(), g,
                                                       {blocks, kUnifiedThreads});
    };
    p.what = "lesson 01's register-staged kernel, " + std::to_string(kUnifiedThreads) +
             " threads, 1 buffer of " + batch_kilobytes();
  } else if (spec.kernel == Kernel::partitioned) {
    const auto config = plan.partitioned(spec.producer_warps, spec.consumer_warps);
    p.resident = producer_consumer::max_blocks_per_sm(config);
    p.prepare = [&w, config](int blocks) {
      return producer_consumer::prepare_copy_and_compute(w.in.cspan(), w.out.span(), config,
                                                         blocks);
    };
    p.what = producer_consumer::describe(config);
  } else {
    using pipeline_multi_stage::Interface;
    const pipeline_multi_stage::Config config{
        spec.kernel == Kernel::unified_pipeline ? Interface::pipeline : Interface::primitives,
        plan.stages, kUnifiedVectors};
    p.resident = pipeline_multi_stage::max_blocks_per_sm(config, kUnifiedThreads);
    p.prepare = [&w, config](int blocks) {
      return pipeline_multi_stage::prepare_copy_and_compute(w.in.cspan(), w.out.span(), config,
                                                            {blocks, kUnifiedThreads});
    };
    p.what = std::string("lesson 06's unified ") + pipeline_multi_stage::name(config.interface) +
             " kernel, " + std::to_string(kUnifiedThreads) + " threads, " +
             std::to_string(plan.stages) + " stages of " + batch_kilobytes();
  }
  return p;
}

void run_spec(course::Harness& harness, Problem& w, const Plan& plan,
              const course::DeviceSummary& gpu, const VariantSpec& spec) {
  const Prepared p = prepare_spec(spec, w, plan);
  if (p.resident < 1) {
    throw std::runtime_error(std::string(spec.name) + ": one block does not fit on an SM");
  }
  const int per_sm = spec.one_block_per_sm ? 1 : p.resident;
  const int blocks = gpu.sm_count * per_sm;
  std::cout << "  " << spec.name << ": " << blocks << " blocks (" << per_sm << " per SM; at most "
            << p.resident << " fit), " << p.what << "\n";
  harness.run(w.checked(spec.name, p.prepare(blocks)));
}

/// The table's rows: every variant, or the one --variant names.
void run_variants(course::Harness& harness, Problem& w, const Plan& plan,
                  const course::DeviceSummary& gpu) {
  for (const VariantSpec& spec : kVariants) {
    if (!plan.variant.empty() && plan.variant != spec.name) continue;
    run_spec(harness, w, plan, gpu, spec);
  }
}

/// "1, 2, 4": a sweep's list as the usage text writes it.
template <std::size_t N>
std::string listed(const int (&values)[N]) {
  std::string text;
  for (int v : values) text += (text.empty() ? "" : ", ") + std::to_string(v);
  return text;
}

void add_flags(course::FlagParser& flags, Settings& s) {
  flags.add_common(s.options, course::workload::size_help(), course::names_of(kVariants));
  flags.add_int("stages", &s.stages, 0,
                "stages (shared buffers of " + batch_kilobytes() +
                    ") of every pipelined variant, " +
                    std::to_string(producer_consumer::kMinStages) + " to " +
                    std::to_string(producer_consumer::kMaxStages) + " (default " +
                    std::to_string(kDefaultStages) + ")");
  flags.add_choice("partition", &s.partition_text, {kDefaultPartition, "producer-count"},
                   "how the partitioned pipeline is made: make_pipeline with a pipeline_role "
                   "per thread, or with the number of producer threads (default " +
                       std::string(kDefaultPartition) + ")");
  flags.add_bool("no-sweep", &s.no_sweep, "skip the producer/consumer warp sweep");
}

/// The range check the flag parser cannot do; run_driver calls it before opening the device.
void validate(const Settings& s) {
  course::require_in_range("stages", s.stages, producer_consumer::kMinStages,
                           producer_consumer::kMaxStages);
}

/// The usage text's description; the batch size and the sweep's lists come from the
/// constants that define them.
std::string description() {
  std::string producers = listed(parts::kSweepProducerWarps);  // "1, 2, 4"
  producers.replace(producers.rfind(' '), 1, "\n");            // the text wraps before the last
  return "Lesson 07: producer and consumer warps. A partitioned block-scope cuda::pipeline:\n"
         "the first warps of each block only copy (acquire, memcpy_async, commit), the\n"
         "others only compute (wait, compute, release). 'PpCc' = P producer warps + C\n"
         "consumer warps. '06-pipeline' and '06-primitives' are lesson 06's unified kernels\n"
         "(every thread copies and computes), '01-coarse' is lesson 01's register-staged\n"
         "kernel; all use " +
         batch_kilobytes() +
         " batches and the same stage count. '-1-per-SM' variants launch\n"
         "one block per SM, the others as many as fit. Then a sweep of producer warps (" +
         producers + ") x consumer warps (" + listed(parts::kSweepConsumerWarps) +
         ") at one block per SM; with --csv FILE the sweep\n"
         "goes to FILE with '_sweep' before '.csv'.";
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
