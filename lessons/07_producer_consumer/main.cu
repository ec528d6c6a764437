// Lesson 07 driver: runs the partitioned (producer warps + consumer warps) pipeline next to
// lesson 06's unified cuda::pipeline and primitives kernels and lesson 01's register-staged
// kernel, all with the same stage count and 16 KB batches, at one block per SM and at full
// occupancy; checks every output element against the CPU reference; compares each variant
// with a device-to-device cudaMemcpy measured in the same run. Then it sweeps the number of
// producer and consumer warps at one block per SM (every point checked too) and writes the
// sweep as CSV when asked.
#include <cstdint>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/buffers.h"
#include "course/data.h"
#include "course/harness.h"
#include "course/table.h"
#include "course/timing.h"
#include "course/workload.h"
#include "pipeline_multi_stage.cuh"
#include "producer_consumer.cuh"
#include "register_staged.cuh"

namespace {

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

/// A kernel of this table, ready to launch with a number of blocks.
struct Launchable {
  std::function<void(cudaStream_t, int blocks)> launch;
  int resident = 0;  ///< blocks per SM that fit (occupancy query)
  std::string what;  ///< one line for the launch-shape printout
};

/// Everything a run needs: the data, the expected output, the device, the options.
struct Workload {
  std::size_t n;
  course::DeviceBuffer<std::uint32_t>& in;
  course::DeviceBuffer<std::uint32_t>& out;
  const std::vector<std::uint32_t>& expected;
  const course::DeviceSummary& gpu;
  int stages;
  Partition partition;

  producer_consumer::Config partitioned_config(int producer_warps, int consumer_warps) const {
    return {partition, stages, producer_warps, consumer_warps,
            producer_consumer::kDefaultBatchVectors};
  }

  Launchable make(const VariantSpec& spec) const {
    Launchable l;
    if (spec.kernel == Kernel::register_staged) {
      const auto g = register_staged::Granularity::coarse;
      l.resident = register_staged::max_blocks_per_sm(g, kUnifiedThreads);
      l.launch = [this, g](cudaStream_t s, int blocks) {
        register_staged::copy_and_compute(in.cspan(), out.span(), g, {blocks, kUnifiedThreads}, s);
      };
      l.what = "lesson 01's register-staged kernel, 256 threads, 1 buffer of 16 KB";
    } else if (spec.kernel == Kernel::partitioned) {
      const auto config = partitioned_config(spec.producer_warps, spec.consumer_warps);
      l.resident = producer_consumer::max_blocks_per_sm(config);
      l.launch = [this, config](cudaStream_t s, int blocks) {
        producer_consumer::copy_and_compute(in.cspan(), out.span(), config, blocks, s);
      };
      l.what = producer_consumer::describe(config);
    } else {
      using pipeline_multi_stage::Interface;
      const pipeline_multi_stage::Config config{
          spec.kernel == Kernel::unified_pipeline ? Interface::pipeline : Interface::primitives,
          stages, kUnifiedVectors};
      l.resident = pipeline_multi_stage::max_blocks_per_sm(config, kUnifiedThreads);
      l.launch = [this, config](cudaStream_t s, int blocks) {
        pipeline_multi_stage::copy_and_compute(in.cspan(), out.span(), config,
                                               {blocks, kUnifiedThreads}, s);
      };
      l.what = std::string("lesson 06's unified ") + pipeline_multi_stage::name(config.interface) +
               " kernel, 256 threads, " + std::to_string(stages) + " stages of 16 KB";
    }
    if (l.resident < 1) {
      throw std::runtime_error(std::string(spec.name) + ": one block does not fit on an SM");
    }
    return l;
  }

  /// Poisons the output, runs `run` once, and compares every element with the reference.
  course::Comparison check(const std::function<void(cudaStream_t)>& run, cudaStream_t s) const {
    course::poison(out.data(), out.bytes(), s);
    run(s);
    COURSE_CHECK(cudaStreamSynchronize(s));
    return course::compare_exact<std::uint32_t>(expected, course::to_host(out.cspan()));
  }
};

/// One measured point of the warp sweep, for the table and the CSV.
struct SweepRow {
  std::string variant;
  int producer_warps = 0;
  int consumer_warps = 0;
  int threads = 0;
  int copies_per_producer_thread = 0;
  double median_ms = 0;
  double rate = 0;
  std::string check;
};

/// The producer/consumer warp sweep at one block per SM, with the two yardsticks (a D2D
/// copy and lesson 06's unified pipeline) timed in the sweep itself. Every point is
/// checked. Throws std::runtime_error (after printing and writing everything) when a point
/// fails.
void run_sweep(const Workload& w, const course::CommonOptions& options, cudaStream_t stream,
               int warmup, int iters) {
  const double bytes = course::workload::bytes_moved(w.n);
  const int blocks = w.gpu.sm_count;
  auto time = [&](const std::function<void(cudaStream_t)>& run) {
    return course::time_stream_work(run, stream, warmup, iters).median_ms;
  };
  std::vector<SweepRow> rows;
  std::vector<std::string> failures;

  const double d2d_ms = time([&](cudaStream_t s) {
    COURSE_CHECK(
        cudaMemcpyAsync(w.out.data(), w.in.data(), w.in.bytes(), cudaMemcpyDeviceToDevice, s));
  });
  const double d2d_rate = course::gigabytes_per_second(2.0 * w.in.bytes(), d2d_ms);

  auto measure = [&](const std::string& label, const std::function<void(cudaStream_t)>& run,
                     SweepRow row) {
    const course::Comparison c = w.check(run, stream);
    if (!c.ok()) failures.push_back(label + ": " + c.summary());
    row.variant = label;
    row.median_ms = time(run);
    row.rate = course::gigabytes_per_second(bytes, row.median_ms);
    row.check = c.ok() ? "PASS" : "FAIL";
    rows.push_back(row);
  };

  const Launchable unified = w.make(kVariants.front());
  measure(kBaseline, [&](cudaStream_t s) { unified.launch(s, blocks); },
          {"", 0, 0, kUnifiedThreads, kUnifiedVectors, 0, 0, ""});
  for (int producers : kSweepProducerWarps) {
    for (int consumers : kSweepConsumerWarps) {
      const auto config = w.partitioned_config(producers, consumers);
      if (producer_consumer::max_blocks_per_sm(config) < 1) continue;  // cannot happen at 64 KB
      const std::string label = std::to_string(producers) + "p" + std::to_string(consumers) + "c";
      measure(label,
              [&, config](cudaStream_t s) {
                producer_consumer::copy_and_compute(w.in.cspan(), w.out.span(), config, blocks, s);
              },
              {"", producers, consumers, producer_consumer::threads_per_block(config),
               producer_consumer::copies_per_producer_thread(config), 0, 0, ""});
    }
  }

  const double base_rate = rows.front().rate;
  course::ResultsTable table("D2D cudaMemcpy", kBaseline);
  table.add({"D2D cudaMemcpy", d2d_ms, d2d_rate, 1.0, std::nullopt, "ref"});
  for (const SweepRow& r : rows) {
    table.add({r.variant, r.median_ms, r.rate, r.rate / d2d_rate, r.rate / base_rate, r.check});
  }
  std::cout << "\nWarp sweep: Pp Cc = P producer warps + C consumer warps, " << w.stages
            << " stages of 16 KB, " << name(w.partition) << " partition, one block per SM ("
            << blocks << " blocks); yardsticks timed in this sweep\n";
  table.print(std::cout);

  if (!options.csv.empty()) {
    const std::string path = course::sweep_csv_path(options.csv);
    std::ofstream csv(path);
    csv << "lesson,gpu,variant,partition,stages,producer_warps,consumer_warps,threads_per_block,"
           "copies_per_producer_thread,blocks,median_ms,gb_per_s,of_d2d,vs_06_pipeline_1_per_sm,"
           "check\n";
    for (const SweepRow& r : rows) {
      csv << kLesson << "," << course::csv_field(w.gpu.name) << "," << r.variant << ","
          << (r.producer_warps > 0 ? name(w.partition) : "unified") << "," << w.stages << ","
          << r.producer_warps << "," << r.consumer_warps << "," << r.threads << ","
          << r.copies_per_producer_thread << "," << blocks << "," << course::fixed(r.median_ms, 6)
          << "," << course::fixed(r.rate, 3) << "," << course::fixed(r.rate / d2d_rate, 4) << ","
          << course::fixed(r.rate / base_rate, 4) << "," << r.check << "\n";
    }
    if (!csv) throw std::runtime_error("could not write " + path);
    std::cout << "(sweep CSV: " << path << ")\n";
  }
  if (!failures.empty()) {
    throw std::runtime_error(std::to_string(failures.size()) +
                             " sweep point(s) failed their check; first: " + failures.front());
  }
}

}  // namespace

int main(int argc, char** argv) {
  course::CommonOptions options;
  std::string stages_text;
  std::string partition_text;
  bool no_sweep = false;
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
  flags.add_common(options, "uint32 elements of input (default 256M = 1 GiB; K/M/G suffixes)",
                   variant_names());
  flags.add_choice("stages", &stages_text, {"2", "3", "4", "5", "6", "7", "8"},
                   "stages (shared buffers of 16 KB) of every pipelined variant (default 4)");
  flags.add_choice("partition", &partition_text, {"role", "producer-count"},
                   "how the partitioned pipeline is made: make_pipeline with a pipeline_role "
                   "per thread, or with the number of producer threads (default role)");
  flags.add_bool("no-sweep", &no_sweep, "skip the producer/consumer warp sweep");

  return course::run_driver(flags, argc, argv, options, [&](const course::DeviceSummary& gpu) {
    const int stages = stages_text.empty() ? kDefaultStages : std::stoi(stages_text);
    const Partition partition =
        partition_text == "producer-count" ? Partition::producer_count : Partition::role;
    const std::size_t n =
        options.size ? options.size : (options.quick ? kQuickElements : kDefaultElements);
    std::cout << "lesson 07 producer_consumer: " << n << " uint32 elements, " << stages
              << " stages of 16 KB, " << name(partition)
              << " partition; GB/s counts bytes read + bytes written\n";

    course::DeviceBuffer<std::uint32_t> in(n), out(n);
    course::fill_hash(in.span(), /*seed=*/7);
    // to_host is a synchronous cudaMemcpy: when it returns, the fill is done too.
    std::vector<std::uint32_t> host_in = course::to_host(in.cspan());
    std::vector<std::uint32_t> expected(n);
    course::workload::reference(host_in, expected);
    const Workload workload{n, in, out, expected, gpu, stages, partition};

    course::Harness harness(kLesson, options, gpu);
    harness.reference_d2d_copy(out.data(), in.data(), in.bytes());
    harness.baseline(kBaseline);
    harness.headline(kHeadline);
    // The issue sets no numeric target for this lesson: the table reports what the GPU gives.

    for (const VariantSpec& spec : kVariants) {
      if (!options.variant.empty() && options.variant != spec.name) continue;
      const Launchable l = workload.make(spec);
      const int per_sm = spec.one_block_per_sm ? 1 : l.resident;
      const int blocks = gpu.sm_count * per_sm;
      std::cout << "  " << spec.name << ": " << blocks << " blocks (" << per_sm
                << " per SM; at most " << l.resident << " fit), " << l.what << "\n";
      const auto launch = l.launch;
      harness.run({
          spec.name,
          course::workload::bytes_moved(n),
          [launch, blocks](cudaStream_t s) { launch(s, blocks); },
          [&](cudaStream_t s) { course::poison(out.data(), out.bytes(), s); },
          [&] {
            const auto actual = course::to_host(out.cspan());
            return course::compare_exact<std::uint32_t>(expected, actual);
          },
      });
    }

    if (!no_sweep && options.variant.empty()) {
      run_sweep(workload, options, harness.stream(), harness.warmup(), harness.iters());
    }
    std::cout << "\nMain table (" << stages << " stages of 16 KB, " << name(partition)
              << " partition):\n";
    return harness.finish();
  });
}
