// Lesson 06 driver: runs the multi-stage copy-and-compute kernel written with a block-scope
// cuda::pipeline and with the pipeline primitives, next to lesson 01's register-staged
// kernel, at one block per SM and at full occupancy; checks every output element against
// the CPU reference; compares each variant with a device-to-device cudaMemcpy measured in
// the same run. Then it sweeps the stage count (2-8) and the batch granularity (4-32 KB)
// at one block per SM, checking every point too, and writes the sweeps as CSV for
// tools/plot_pipeline_sweep.py.
#include <algorithm>
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
#include "register_staged.cuh"

namespace {

using pipeline_multi_stage::Config;
using pipeline_multi_stage::Interface;

constexpr int kThreads = 256;
constexpr int kVectorsPerThread = 4;  // 256 x 4 x 16 B = 16 KB batches: lesson 01's coarse
constexpr int kDefaultStages = 4;
constexpr std::uint64_t kDefaultElements = 256ull << 20;  // 1 GiB of input: far beyond L2
constexpr std::uint64_t kQuickElements = 1000003;         // prime: never a whole batch
constexpr const char* kLesson = "06_pipeline_multi_stage";
constexpr const char* kBaseline = "01-coarse-1-per-SM";

enum class Kernel { register_staged, pipeline, primitives, broken };

struct VariantSpec {
  const char* name;
  Kernel kernel;
  bool one_block_per_sm;
};

// Lesson 01's coarse kernel first: every speed-up is relative to it at one block per SM.
const std::vector<VariantSpec> kVariants = {
    {kBaseline, Kernel::register_staged, true},
    {"pipeline-1-per-SM", Kernel::pipeline, true},
    {"primitives-1-per-SM", Kernel::primitives, true},
    {"01-coarse", Kernel::register_staged, false},
    {"pipeline", Kernel::pipeline, false},
    {"primitives", Kernel::primitives, false},
};

// DELIBERATELY BROKEN (prefetches one batch more than it has buffers): runs only when
// --variant names it.
const VariantSpec kBrokenVariant = {"broken-one-stage-too-many", Kernel::broken, false};

std::vector<std::string> variant_names() {
  std::vector<std::string> names;
  for (const auto& v : kVariants) names.emplace_back(v.name);
  names.emplace_back(kBrokenVariant.name);
  return names;
}

Interface interface_of(Kernel kernel) {
  switch (kernel) {
    case Kernel::pipeline:
      return Interface::pipeline;
    case Kernel::broken:
      return Interface::broken_one_stage_too_many;
    default:
      return Interface::primitives;
  }
}

std::string kilobytes(std::size_t bytes) { return std::to_string(bytes / 1024) + " KB"; }

/// Everything a run needs: the data, the expected output, the device.
struct Workload {
  std::size_t n;
  course::DeviceBuffer<std::uint32_t>& in;
  course::DeviceBuffer<std::uint32_t>& out;
  const std::vector<std::uint32_t>& expected;
  const course::DeviceSummary& gpu;

  /// Poisons the output, runs `run` once, and compares every element with the reference.
  course::Comparison check(const std::function<void(cudaStream_t)>& run, cudaStream_t s) const {
    course::poison(out.data(), out.bytes(), s);
    run(s);
    COURSE_CHECK(cudaStreamSynchronize(s));
    return course::compare_exact<std::uint32_t>(expected, course::to_host(out.cspan()));
  }
};

/// One measured point of a sweep, for the table and the CSV.
struct SweepRow {
  std::string sweep;  // "stages", "granularity" or "reference"
  std::string interface;
  int stages = 0;
  int vectors_per_thread = 0;
  std::size_t batch_bytes = 0;
  int blocks = 0;
  double median_ms = 0;
  double rate = 0;
  std::string check;
};

/// The stage and granularity sweeps, at one block per SM. Every point is checked; the
/// rates are relative to a D2D copy and to lesson 01's kernel timed in the sweep itself.
/// Throws std::runtime_error (after printing and writing everything) when a point fails.
void run_sweeps(const Workload& w, const course::CommonOptions& options, int default_stages,
                cudaStream_t stream, int warmup, int iters) {
  const double bytes = course::workload::bytes_moved(w.n);
  auto time = [&](const std::function<void(cudaStream_t)>& run) {
    return course::time_stream_work(run, stream, warmup, iters).median_ms;
  };
  std::vector<SweepRow> rows;
  std::vector<std::string> failures;

  // The two yardsticks, measured here so that every ratio comes from this sweep's run.
  const double d2d_ms = time([&](cudaStream_t s) {
    COURSE_CHECK(
        cudaMemcpyAsync(w.out.data(), w.in.data(), w.in.bytes(), cudaMemcpyDeviceToDevice, s));
  });
  const double d2d_rate = course::gigabytes_per_second(2.0 * w.in.bytes(), d2d_ms);
  rows.push_back({"reference", "D2D cudaMemcpy", 0, 0, 0, 0, d2d_ms, d2d_rate, "ref"});

  const register_staged::LaunchShape one_per_sm{w.gpu.sm_count, kThreads};
  auto lesson01 = [&](cudaStream_t s) {
    register_staged::copy_and_compute(w.in.cspan(), w.out.span(),
                                      register_staged::Granularity::coarse, one_per_sm, s);
  };
  const course::Comparison base_check = w.check(lesson01, stream);
  if (!base_check.ok()) failures.push_back(std::string(kBaseline) + ": " + base_check.summary());
  const double base_ms = time(lesson01);
  rows.push_back({"reference", kBaseline, 1, register_staged::kVectorsPerThread,
                  register_staged::shared_bytes(register_staged::Granularity::coarse, kThreads),
                  one_per_sm.blocks, base_ms, course::gigabytes_per_second(bytes, base_ms),
                  base_check.ok() ? "PASS" : "FAIL"});

  auto point = [&](const std::string& sweep, Config config) {
    const std::size_t batch_bytes =
        pipeline_multi_stage::batch_elements(kThreads, config.vectors_per_thread) *
        sizeof(std::uint32_t);
    const std::string label = std::string(pipeline_multi_stage::name(config.interface)) + ", " +
                              std::to_string(config.stages) + " stages, " + kilobytes(batch_bytes) +
                              " batches";
    if (pipeline_multi_stage::max_blocks_per_sm(config, kThreads) < 1) {
      std::cout << "  " << label << ": skipped, "
                << kilobytes(pipeline_multi_stage::shared_bytes(config, kThreads))
                << " of shared memory does not fit one block\n";
      return;
    }
    auto run = [&](cudaStream_t s) {
      pipeline_multi_stage::copy_and_compute(w.in.cspan(), w.out.span(), config, one_per_sm, s);
    };
    const course::Comparison c = w.check(run, stream);
    if (!c.ok()) failures.push_back(label + ": " + c.summary());
    const double ms = time(run);
    rows.push_back({sweep, pipeline_multi_stage::name(config.interface), config.stages,
                    config.vectors_per_thread, batch_bytes, one_per_sm.blocks, ms,
                    course::gigabytes_per_second(bytes, ms), c.ok() ? "PASS" : "FAIL"});
  };
  for (Interface interface : {Interface::pipeline, Interface::primitives}) {
    for (int stages = pipeline_multi_stage::kMinStages; stages <= pipeline_multi_stage::kMaxStages;
         ++stages) {
      point("stages", {interface, stages, kVectorsPerThread});
    }
  }
  for (Interface interface : {Interface::pipeline, Interface::primitives}) {
    for (int vectors : {1, 2, 4, 8}) point("granularity", {interface, default_stages, vectors});
  }

  // Print one table per sweep, each with the two yardsticks on top.
  const std::string stage_sweep_batch = kilobytes(
      pipeline_multi_stage::batch_elements(kThreads, kVectorsPerThread) * sizeof(std::uint32_t));
  const double base_rate = course::gigabytes_per_second(bytes, base_ms);
  for (const std::string sweep : {"stages", "granularity"}) {
    course::ResultsTable table("D2D cudaMemcpy", kBaseline);
    for (const SweepRow& r : rows) {
      if (r.sweep != "reference" && r.sweep != sweep) continue;
      std::string variant = r.interface;
      if (r.sweep != "reference") {
        variant += ", " + std::to_string(r.stages) + " stages, " + kilobytes(r.batch_bytes);
      }
      const bool is_d2d = r.interface == "D2D cudaMemcpy";
      table.add({variant, r.median_ms, r.rate, r.rate / d2d_rate,
                 is_d2d ? std::nullopt : std::optional<double>(r.rate / base_rate), r.check});
    }
    const std::string title =
        sweep == "stages" ? "Stage sweep: " + stage_sweep_batch + " batches"
                          : "Granularity sweep: " + std::to_string(default_stages) + " stages";
    std::cout << "\n"
              << title << ", one block per SM (" << one_per_sm.blocks << " blocks of " << kThreads
              << " threads); yardsticks timed in this sweep\n";
    table.print(std::cout);
  }

  if (!options.csv.empty()) {
    const std::string path = pipeline_multi_stage::sweep_csv_path(options.csv);
    std::ofstream csv(path);
    csv << "lesson,gpu,sweep,interface,stages,vectors_per_thread,batch_bytes,threads_per_block,"
           "blocks,median_ms,gb_per_s,of_d2d,vs_01_coarse_1_per_sm,check\n";
    for (const SweepRow& r : rows) {
      csv << kLesson << "," << course::csv_field(w.gpu.name) << "," << r.sweep << ","
          << course::csv_field(r.interface) << "," << r.stages << "," << r.vectors_per_thread << ","
          << r.batch_bytes << "," << kThreads << "," << r.blocks << ","
          << course::fixed(r.median_ms, 6) << "," << course::fixed(r.rate, 3) << ","
          << course::fixed(r.rate / d2d_rate, 4) << "," << course::fixed(r.rate / base_rate, 4)
          << "," << r.check << "\n";
    }
    if (!csv) throw std::runtime_error("could not write " + path);
    std::cout << "(sweep CSV: " << path << "; plot it with tools/plot_pipeline_sweep.py)\n";
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
  bool no_sweeps = false;
  course::FlagParser flags(
      kLesson,
      "Lesson 06: multi-stage pipelines. Each block keeps S batches of 16 KB in shared\n"
      "memory and copies the next batches while it computes the current one. 'pipeline'\n"
      "uses a block-scope cuda::pipeline (acquire/commit/wait/release), 'primitives' the\n"
      "__pipeline_memcpy_async/commit/wait_prior primitives with a zero-filled last batch;\n"
      "'01-coarse' is lesson 01's register-staged kernel. '-1-per-SM' variants launch one\n"
      "block per SM, the others as many as fit. Then a stage sweep (2-8) and a batch\n"
      "granularity sweep (4-32 KB) at one block per SM; with --csv FILE the sweeps go to\n"
      "FILE with '_sweep' before '.csv'.\n"
      "'broken-one-stage-too-many' is DELIBERATELY BROKEN (it prefetches one batch more\n"
      "than it has buffers; racecheck reports it): it never runs unless --variant names it.");
  flags.add_common(options, "uint32 elements of input (default 256M = 1 GiB; K/M/G suffixes)",
                   variant_names());
  flags.add_choice("stages", &stages_text, {"2", "3", "4", "5", "6", "7", "8"},
                   "stages (shared buffers) of the pipeline and primitives variants and of the "
                   "granularity sweep (default 4)");
  flags.add_bool("no-sweeps", &no_sweeps, "skip the stage and granularity sweeps");

  return course::run_driver(flags, argc, argv, options, [&](const course::DeviceSummary& gpu) {
    const int stages = stages_text.empty() ? kDefaultStages : std::stoi(stages_text);
    const std::size_t n =
        options.size ? options.size : (options.quick ? kQuickElements : kDefaultElements);
    std::cout << "lesson 06 pipeline_multi_stage: " << n << " uint32 elements, " << kThreads
              << " threads per block; GB/s counts bytes read + bytes written\n";

    course::DeviceBuffer<std::uint32_t> in(n), out(n);
    course::fill_hash(in.span(), /*seed=*/6);
    // to_host is a synchronous cudaMemcpy: when it returns, the fill is done too.
    std::vector<std::uint32_t> host_in = course::to_host(in.cspan());
    std::vector<std::uint32_t> expected(n);
    course::workload::reference(host_in, expected);
    const Workload workload{n, in, out, expected, gpu};

    course::Harness harness(kLesson, options, gpu);
    harness.reference_d2d_copy(out.data(), in.data(), in.bytes());
    harness.baseline(kBaseline);
    harness.headline("primitives-1-per-SM");
    harness.target({"primitives", 0.93});
    harness.ratio_target({"primitives-1-per-SM", kBaseline, 1.3});

    std::vector<VariantSpec> specs = kVariants;
    if (options.variant == kBrokenVariant.name) specs.push_back(kBrokenVariant);
    for (const VariantSpec& spec : specs) {
      if (!options.variant.empty() && options.variant != spec.name) continue;
      const Config config{interface_of(spec.kernel), stages, kVectorsPerThread};
      int resident = 0;
      std::function<void(cudaStream_t, register_staged::LaunchShape)> launch;
      std::string what;
      if (spec.kernel == Kernel::register_staged) {
        resident =
            register_staged::max_blocks_per_sm(register_staged::Granularity::coarse, kThreads);
        launch = [&](cudaStream_t s, register_staged::LaunchShape shape) {
          register_staged::copy_and_compute(in.cspan(), out.span(),
                                            register_staged::Granularity::coarse, shape, s);
        };
        what = "lesson 01's register-staged kernel, 1 buffer of 16 KB";
      } else {
        resident = pipeline_multi_stage::max_blocks_per_sm(config, kThreads);
        launch = [&, config](cudaStream_t s, register_staged::LaunchShape shape) {
          pipeline_multi_stage::copy_and_compute(in.cspan(), out.span(), config, shape, s);
        };
        what = std::to_string(stages) + " stages of " +
               kilobytes(pipeline_multi_stage::batch_elements(kThreads, kVectorsPerThread) * 4) +
               " (" + kilobytes(pipeline_multi_stage::shared_bytes(config, kThreads)) +
               " of shared memory)";
      }
      if (resident < 1) {
        throw std::runtime_error(std::string(spec.name) + ": one block does not fit on an SM");
      }
      int per_sm = spec.one_block_per_sm ? 1 : resident;
      int blocks = gpu.sm_count * per_sm;
      if (spec.kernel == Kernel::broken) {
        // The extra copy is only issued when a block owns more batches than it has
        // buffers: give each block about 2 x stages batches (at most one block per SM).
        const std::size_t batches = pipeline_multi_stage::batch_count(
            n, pipeline_multi_stage::batch_elements(kThreads, kVectorsPerThread));
        blocks = static_cast<int>(std::clamp<std::size_t>(batches / (2 * stages), 1,
                                                          static_cast<std::size_t>(gpu.sm_count)));
        per_sm = 1;
        what += "; DELIBERATELY BROKEN: prefetches one batch more than it has buffers";
      }
      const register_staged::LaunchShape shape{blocks, kThreads};
      std::cout << "  " << spec.name << ": " << shape.blocks << " blocks (" << per_sm
                << " per SM; at most " << resident << " fit), " << what << "\n";
      harness.run({
          spec.name,
          course::workload::bytes_moved(n),
          [launch, shape](cudaStream_t s) { launch(s, shape); },
          [&](cudaStream_t s) { course::poison(out.data(), out.bytes(), s); },
          [&] {
            const auto actual = course::to_host(out.cspan());
            return course::compare_exact<std::uint32_t>(expected, actual);
          },
      });
    }

    if (!no_sweeps && options.variant.empty()) {
      run_sweeps(workload, options, stages, harness.stream(), harness.warmup(), harness.iters());
    }
    std::cout << "\nMain table (" << stages << " stages, 16 KB batches):\n";
    return harness.finish();
  });
}
