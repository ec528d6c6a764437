// Lesson 07 driver: runs the partitioned (producer warps + consumer warps) pipeline next to
// lesson 06's unified cuda::pipeline and primitives kernels and lesson 01's register-staged
// kernel, all with the same stage count and 16 KB batches, at one block per SM and at full
// occupancy; checks every output element against the CPU reference; compares each variant
// with a device-to-device cudaMemcpy and with the SM copy roof, both measured in the same
// run. Then it sweeps the number of producer and consumer warps at one block per SM (every
// point checked too); with --csv the sweep goes to FILE_sweep.csv.
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
#include "register_staged.cuh"

namespace {

using course::workload::Problem;
using producer_consumer::Partition;

constexpr int kUnifiedThreads = 256;  // lessons 01 and 06: 256 threads x 4 vectors = 16 KB
constexpr int kUnifiedVectors = 4;
constexpr int kDefaultStages = 4;
constexpr std::uint64_t kDefaultElements = 256ull << 20;  // 1 GiB of input: far beyond L2
constexpr std::uint64_t kQuickElements = 1000003;         // prime: never a whole batch
constexpr const char* kLesson = "07_producer_consumer";
constexpr const char* kBaseline = "06-pipeline-1-per-SM";
constexpr const char* kHeadline = "1p8c-1-per-SM";

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
    {"1p8c-1-per-SM", Kernel::partitioned, 1, 8, true},
    {"2p8c-1-per-SM", Kernel::partitioned, 2, 8, true},
    {"06-pipeline", Kernel::unified_pipeline, 0, 0, false},
    {"06-primitives", Kernel::unified_primitives, 0, 0, false},
    {"01-coarse", Kernel::register_staged, 0, 0, false},
    {"1p4c", Kernel::partitioned, 1, 4, false},
    {"1p8c", Kernel::partitioned, 1, 8, false},
    {"2p8c", Kernel::partitioned, 2, 8, false},
};

// The warp sweep, at one block per SM: producer warps x consumer warps.
const int kSweepProducerWarps[] = {1, 2, 4};
const int kSweepConsumerWarps[] = {2, 4, 8, 16};

std::vector<std::string> variant_names() {
  std::vector<std::string> names;
  for (const auto& v : kVariants) names.emplace_back(v.name);
  return names;
}

/// The command line: the common flags and lesson 07's own.
struct Settings {
  course::CommonOptions options;
  int stages = kDefaultStages;
  std::string partition_text;
  bool no_sweep = false;

  Partition partition() const {
    return partition_text == "producer-count" ? Partition::producer_count : Partition::role;
  }
  /// A partitioned pipeline of this run's stages and partition.
  producer_consumer::Config partitioned_config(int producer_warps, int consumer_warps) const {
    return producer_consumer::Config{partition(), stages, producer_warps, consumer_warps,
                                     producer_consumer::kDefaultBatchVectors};
  }
};

void add_flags(course::FlagParser& flags, Settings& s) {
  flags.add_common(s.options, "uint32 elements of input (default 256M = 1 GiB; K/M/G suffixes)",
                   variant_names());
  flags.add_int("stages", &s.stages, 0,
                "stages (shared buffers of 16 KB) of every pipelined variant, 2 to 8 (default 4)");
  flags.add_choice("partition", &s.partition_text, {"role", "producer-count"},
                   "how the partitioned pipeline is made: make_pipeline with a pipeline_role "
                   "per thread, or with the number of producer threads (default role)");
  flags.add_bool("no-sweep", &s.no_sweep, "skip the producer/consumer warp sweep");
}

/// The range check the flag parser cannot do; run_driver calls it before opening the device.
void validate(const Settings& s) {
  course::require_in_range("stages", s.stages, producer_consumer::kMinStages,
                           producer_consumer::kMaxStages);
}

/// A row of the main table before its block count is known: how many blocks fit on an SM,
/// what the row is, and how to prepare its launch for a number of blocks.
struct Prepared {
  int resident = 0;
  std::string what;
  std::function<course::Launch(int)> prepare;
};

Prepared prepare_spec(const VariantSpec& spec, Problem& w, const Settings& s) {
  Prepared p;
  if (spec.kernel == Kernel::register_staged) {
    const auto g = register_staged::Granularity::coarse;
    p.resident = register_staged::max_blocks_per_sm(g, kUnifiedThreads);
    p.prepare = [&w, g](int blocks) {
      return register_staged::prepare_copy_and_compute(w.in.cspan(), w.out.span(), g,
                                                       {blocks, kUnifiedThreads});
    };
    p.what = "lesson 01's register-staged kernel, 256 threads, 1 buffer of 16 KB";
  } else if (spec.kernel == Kernel::partitioned) {
    const auto config = s.partitioned_config(spec.producer_warps, spec.consumer_warps);
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
        s.stages, kUnifiedVectors};
    p.resident = pipeline_multi_stage::max_blocks_per_sm(config, kUnifiedThreads);
    p.prepare = [&w, config](int blocks) {
      return pipeline_multi_stage::prepare_copy_and_compute(w.in.cspan(), w.out.span(), config,
                                                            {blocks, kUnifiedThreads});
    };
    p.what = std::string("lesson 06's unified ") + pipeline_multi_stage::name(config.interface) +
             " kernel, 256 threads, " + std::to_string(s.stages) + " stages of 16 KB";
  }
  return p;
}

void run_spec(course::Harness& harness, Problem& w, const course::DeviceSummary& gpu,
              const Settings& s, const VariantSpec& spec) {
  const Prepared p = prepare_spec(spec, w, s);
  if (p.resident < 1) {
    throw std::runtime_error(std::string(spec.name) + ": one block does not fit on an SM");
  }
  const int per_sm = spec.one_block_per_sm ? 1 : p.resident;
  const int blocks = gpu.sm_count * per_sm;
  std::cout << "  " << spec.name << ": " << blocks << " blocks (" << per_sm << " per SM; at most "
            << p.resident << " fit), " << p.what << "\n";
  harness.run(w.checked(spec.name, p.prepare(blocks)));
}

/// The warp sweep at one block per SM: producer warps x consumer warps.
void run_warp_sweep(course::Harness& harness, Problem& w, const course::DeviceSummary& gpu,
                    const Settings& s) {
  const int blocks = gpu.sm_count;
  for (int producers : kSweepProducerWarps) {
    for (int consumers : kSweepConsumerWarps) {
      const auto config = s.partitioned_config(producers, consumers);
      const std::string label = std::to_string(producers) + "p" + std::to_string(consumers) + "c";
      if (producer_consumer::max_blocks_per_sm(config) < 1) {
        std::cout << "  warp sweep, " << label << ": skipped, one block does not fit\n";
        continue;
      }
      harness.sweep(
          "warps",
          {{"partition", name(s.partition())},
           {"stages", std::to_string(s.stages)},
           {"producer_warps", std::to_string(producers)},
           {"consumer_warps", std::to_string(consumers)},
           {"threads_per_block", std::to_string(producer_consumer::threads_per_block(config))},
           {"copies_per_producer_thread",
            std::to_string(producer_consumer::copies_per_producer_thread(config))},
           {"blocks", std::to_string(blocks)}},
          w.checked(label, producer_consumer::prepare_copy_and_compute(w.in.cspan(), w.out.span(),
                                                                       config, blocks)));
    }
  }
  std::cout << "Warp sweep: Pp Cc = P producer warps + C consumer warps, " << s.stages
            << " stages of 16 KB, " << name(s.partition()) << " partition, one block per SM ("
            << blocks << " blocks)\n";
}

/// --quick only: 1p8c, one block per SM, at every stage count with both partitions (all but
/// the main table's pair). stage_buffer is compiled once per stage count, the kernel once per
/// stage count and partition, and the race checks run the program --quick: each copy of the
/// helpers you wrote must run there to be checked. Stages that do not fit are skipped.
void run_every_stage_count(course::Harness& harness, Problem& w, const course::DeviceSummary& gpu,
                           const Settings& s) {
  for (Partition p : {Partition::role, Partition::producer_count}) {
    for (int stages = producer_consumer::kMinStages; stages <= producer_consumer::kMaxStages;
         ++stages) {
      if (p == s.partition() && stages == s.stages) continue;  // the main table ran it
      const producer_consumer::Config config{p, stages, 1, 8,
                                             producer_consumer::kDefaultBatchVectors};
      const std::string label = std::string(name(p)) + ", " + std::to_string(stages) + " stages";
      if (producer_consumer::max_blocks_per_sm(config) < 1) {
        std::cout << "  stages (--quick), " << label << ": skipped, one block does not fit\n";
        continue;
      }
      harness.sweep("stages (--quick)",
                    {{"partition", name(p)}, {"stages", std::to_string(stages)}},
                    w.checked(label, producer_consumer::prepare_copy_and_compute(
                                         w.in.cspan(), w.out.span(), config, gpu.sm_count)));
    }
  }
}

int run(const Settings& s, const course::DeviceSummary& gpu) {
  const course::CommonOptions& options = s.options;
  const std::size_t n =
      options.size ? options.size : (options.quick ? kQuickElements : kDefaultElements);
  std::cout << "lesson 07 producer_consumer: " << n << " uint32 elements, " << s.stages
            << " stages of 16 KB, " << name(s.partition())
            << " partition; GB/s counts bytes read + bytes written\n";

  Problem w(n, /*seed=*/7);
  course::Harness harness(kLesson, options, gpu);
  harness.reference_d2d_copy(w.out.data(), w.in.data(), w.in.bytes());
  harness.roof_sm_copy(w.out.data(), w.in.data(), w.in.bytes());
  harness.baseline(kBaseline);
  harness.headline(kHeadline);
  // No numeric target for this lesson: the table reports what the GPU gives.

  for (const VariantSpec& spec : kVariants) {
    if (!options.variant.empty() && options.variant != spec.name) continue;
    run_spec(harness, w, gpu, s, spec);
  }
  // The warp sweep at one block per SM, only when every variant ran (its speed-ups are
  // relative to the baseline of the main table).
  if (!s.no_sweep && options.variant.empty()) run_warp_sweep(harness, w, gpu, s);
  if (options.quick && options.variant.empty()) run_every_stage_count(harness, w, gpu, s);
  return harness.finish();
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  course::FlagParser flags(
      kLesson,
      "Lesson 07: producer and consumer warps. A partitioned block-scope cuda::pipeline:\n"
      "the first warps of each block only copy (acquire, memcpy_async, commit), the\n"
      "others only compute (wait, compute, release). 'PpCc' = P producer warps + C\n"
      "consumer warps. '06-pipeline' and '06-primitives' are lesson 06's unified kernels\n"
      "(every thread copies and computes), '01-coarse' is lesson 01's register-staged\n"
      "kernel; all use 16 KB batches and the same stage count. '-1-per-SM' variants launch\n"
      "one block per SM, the others as many as fit. Then a sweep of producer warps (1, 2,\n"
      "4) x consumer warps (2, 4, 8, 16) at one block per SM; with --csv FILE the sweep\n"
      "goes to FILE with '_sweep' before '.csv'.");
  add_flags(flags, settings);
  return course::run_driver(
      flags, argc, argv, settings.options,
      [&](const course::DeviceSummary& gpu) { return run(settings, gpu); },
      [&] { validate(settings); });
}
