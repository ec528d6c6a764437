// Lesson 10 driver: runs the copy-and-compute workload with Hopper bulk copies (TMA) - the
// multi-stage TMA pipeline with a producer warp, and the single-buffer kernels written with
// cuda::ptx and with cuda::barrier (bulk load, bulk store) - next to lesson 06's primitives
// kernel and lesson 09's best cp.async variant, plus the plain bulk copy in both barrier
// flavours. Every output element is checked against the CPU reference, and every bounded
// wait that timed out is reported. Each figure is compared with a device-to-device
// cudaMemcpy and with the SM copy roof of the same run. Then a stage sweep and a granularity
// sweep of the TMA pipeline and of lesson 06's primitives at one block per SM
// (parts_sweeps.cu); with --csv the sweeps go to FILE_sweep.csv for
// tools/plot_pipeline_sweep.py.
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "course/device.h"
#include "course/flags.h"
#include "course/harness.h"
#include "course/launch.h"
#include "course/mbarrier.cuh"
#include "pipeline_multi_stage.cuh"
#include "tma_bulk_copy.cuh"
#include "tma_bulk_copy_parts.h"
#if __has_include("ptx_cp_async.cuh")
#include "ptx_cp_async.cuh"
#define COURSE_L10_WITH_LESSON_09 1
#else
#define COURSE_L10_WITH_LESSON_09 0
#endif

namespace {

namespace parts = tma_bulk_copy::parts;
using parts::batch_bytes;
using parts::kilobytes;
using parts::kThreads;
using parts::kVectorsPerThread;
using parts::Workload;
using tma_bulk_copy::Config;
using tma_bulk_copy::Variant;

constexpr int kLesson06Stages = 4;  // lesson 06's default
constexpr const char* kLesson = "10_tma_bulk_copy";
constexpr const char* kBaseline = "06-primitives";
constexpr const char* kLesson09 = "09-best";
constexpr const char* kHeadline = "tma-pipeline";

enum class Kind { lesson06, lesson09, tma, bulk_copy_ptx, bulk_copy_barrier };

struct VariantSpec {
  std::string name;
  Kind kind;
  Variant variant;
};

std::vector<VariantSpec> correct_variants() {
  std::vector<VariantSpec> specs = {{kBaseline, Kind::lesson06, Variant::pipeline}};
  if (COURSE_L10_WITH_LESSON_09) specs.push_back({kLesson09, Kind::lesson09, Variant::pipeline});
  specs.push_back({kHeadline, Kind::tma, Variant::pipeline});
  specs.push_back({"tma-single-ptx", Kind::tma, Variant::single_ptx});
  specs.push_back({"tma-single-barrier", Kind::tma, Variant::single_barrier});
  specs.push_back({"bulk-copy-ptx", Kind::bulk_copy_ptx, Variant::single_ptx});
  specs.push_back({"bulk-copy-barrier", Kind::bulk_copy_barrier, Variant::single_barrier});
  return specs;
}

// DELIBERATELY BROKEN: each runs only when --variant names it.
const std::vector<VariantSpec> kBrokenVariants = {
    {"broken-wrong-expect-tx", Kind::tma, Variant::broken_wrong_expect_tx},
    {"broken-parity-not-flipped", Kind::tma, Variant::broken_parity_not_flipped},
    {"broken-missing-proxy-fence", Kind::tma, Variant::broken_missing_proxy_fence},
};

/// The command line, as given: the common flags and lesson 10's own.
struct Settings {
  course::CommonOptions options;
  int stages = Config{}.stages;
  bool no_sweeps = false;
};

/// Every size and count of the run, resolved from the command line.
struct Plan {
  std::size_t elements = 0;
  int stages = 0;       ///< of the tma-pipeline variant and of the granularity sweep
  std::string variant;  ///< the one row --variant asks for; empty: every correct row
  bool sweeps = false;  ///< the sweeps run (not --no-sweeps, every row ran)
};

/// A variant ready to run: its launch, its blocks per SM, and the line that describes it.
struct Prepared {
  int resident = 0;
  course::Launch launch;
  std::string what;
};

Plan make_plan(const Settings& s);
void print_intro(const Plan& plan);
void add_yardsticks_and_targets(course::Harness& harness, Workload& w);
void run_variants(course::Harness& harness, Workload& w, const Plan& plan,
                  const course::DeviceSummary& gpu);

/// The output, part by part: the intro lines, the table, the sweeps.
int run(const Settings& s, const course::DeviceSummary& gpu) {
  course::require_compute_capability(gpu, {9, 0}, "lesson 10 (cp.async.bulk, mbarrier tx counts)");
  const Plan plan = make_plan(s);
  print_intro(plan);
  Workload w(plan.elements);
  course::Harness harness(kLesson, s.options, gpu);
  add_yardsticks_and_targets(harness, w);
  run_variants(harness, w, plan, gpu);
  if (plan.sweeps) parts::run_sweeps(harness, w, gpu, plan.stages);
  return harness.finish();
}

/// --size, --stages, --variant and --no-sweeps resolved: the one place that reads --quick.
Plan make_plan(const Settings& s) {
  const course::CommonOptions& options = s.options;
  // The sweeps, at one block per SM, only when every variant ran.
  return {course::workload::elements_for(options),
          s.stages, options.variant, !s.no_sweeps && options.variant.empty()};
}

void print_intro(const Plan& plan) {
  std::cout << "lesson 10 tma_bulk_copy: " << plan.elements << " uint32 elements, " << kThreads
            << " consumer threads per block, " << plan.stages << " stages of "
            << kilobytes(batch_bytes(kVectorsPerThread))
            << " in the main table; GB/s counts bytes read + bytes written\n";
  if (!COURSE_L10_WITH_LESSON_09) {
    std::cout << "lesson 09 is not part of this build: no 09-best row, no target against it\n";
  }
}

void add_yardsticks_and_targets(course::Harness& harness, Workload& w) {
  harness.reference_d2d_copy(w.out.data(), w.in.data(), w.in.bytes());
  harness.roof_sm_copy(w.out.data(), w.in.data(), w.in.bytes());
  harness.baseline(kBaseline);
  harness.headline(kHeadline);
  harness.target({kHeadline, 0.98, course::Yardstick::sm_copy_roof});
  if (COURSE_L10_WITH_LESSON_09) harness.ratio_target({kHeadline, kLesson09, 1.0});
}

/// Lesson 06's primitives kernel at lesson 06's settings, as many blocks per SM as fit.
Prepared prepare_lesson06(Workload& w, const course::DeviceSummary& gpu) {
  Prepared p;
  const pipeline_multi_stage::Config c{pipeline_multi_stage::Interface::primitives, kLesson06Stages,
                                       kVectorsPerThread};
  p.resident = pipeline_multi_stage::max_blocks_per_sm(c, kThreads);
  p.what = "lesson 06's primitives kernel, " + std::to_string(kLesson06Stages) + " stages of " +
           kilobytes(batch_bytes(kVectorsPerThread));
  p.launch = pipeline_multi_stage::prepare_copy_and_compute(
      w.in.cspan(), w.out.span(), c, {gpu.sm_count * std::max(p.resident, 1), kThreads});
  return p;
}

#if COURSE_L10_WITH_LESSON_09
/// Lesson 09's default cp.async variant, as many blocks per SM as fit.
Prepared prepare_lesson09(Workload& w, const course::DeviceSummary& gpu) {
  Prepared p;
  const ptx_cp_async::Config c{};
  p.resident = ptx_cp_async::max_blocks_per_sm(c, kThreads);
  p.what = std::string("lesson 09's default variant (") + ptx_cp_async::name(c) + ", " +
           std::to_string(c.stages) + " stages)";
  p.launch = ptx_cp_async::prepare_copy_and_compute(
      w.in.cspan(), w.out.span(), c, {gpu.sm_count * std::max(p.resident, 1), kThreads});
  return p;
}
#endif

/// One of this lesson's kernels (the TMA pipeline, a single-buffer kernel, a plain bulk copy,
/// a broken variant), as many blocks per SM as fit.
Prepared prepare_tma(const VariantSpec& spec, Workload& w, const course::DeviceSummary& gpu,
                     int stages) {
  Prepared p;
  const Config c{spec.variant, stages, kVectorsPerThread};
  p.resident = tma_bulk_copy::max_blocks_per_sm(c, kThreads);
  const register_staged::LaunchShape shape{gpu.sm_count * std::max(p.resident, 1), kThreads};
  const std::string batch = kilobytes(batch_bytes(kVectorsPerThread));
  p.what = spec.variant == Variant::pipeline
               ? std::to_string(stages) + " stages of " + batch + " + a producer warp"
               : "one " + batch + " input and one " + batch + " output buffer";
  if (spec.kind == Kind::bulk_copy_ptx || spec.kind == Kind::bulk_copy_barrier) {
    p.launch = tma_bulk_copy::prepare_bulk_copy(w.in.data(), w.out.data(), w.copy_bytes,
                                                spec.kind == Kind::bulk_copy_ptx
                                                    ? tma_bulk_copy::Barrier::ptx
                                                    : tma_bulk_copy::Barrier::cuda_barrier,
                                                shape, kVectorsPerThread);
    p.what = "a plain copy of the input, " + batch + " chunks, TMA load and store";
  } else {
    p.launch = tma_bulk_copy::prepare_copy_and_compute(w.in.cspan(), w.out.span(), c, shape);
  }
  if (tma_bulk_copy::is_broken(spec.variant)) p.what += "; DELIBERATELY BROKEN";
  return p;
}

/// Runs one row of the main table (unless --variant names another), after the line that
/// says how it launches.
void run_spec(course::Harness& harness, Workload& w, const Plan& plan,
              const course::DeviceSummary& gpu, const VariantSpec& spec) {
  if (!plan.variant.empty() && plan.variant != spec.name) return;
  Prepared p;
  if (spec.kind == Kind::lesson06) {
    p = prepare_lesson06(w, gpu);
#if COURSE_L10_WITH_LESSON_09
  } else if (spec.kind == Kind::lesson09) {
    p = prepare_lesson09(w, gpu);
#endif
  } else {
    p = prepare_tma(spec, w, gpu, plan.stages);
  }
  if (p.resident < 1) throw std::runtime_error(spec.name + ": one block does not fit on an SM");
  std::cout << "  " << spec.name << ": " << gpu.sm_count * p.resident << " blocks (" << p.resident
            << " per SM), " << p.what << "\n";
  const bool copy_only = spec.kind == Kind::bulk_copy_ptx || spec.kind == Kind::bulk_copy_barrier;
  harness.run(w.checked(spec.name, std::move(p.launch), copy_only));
}

/// The table's rows: every correct variant, then the broken one --variant names.
void run_variants(course::Harness& harness, Workload& w, const Plan& plan,
                  const course::DeviceSummary& gpu) {
  for (const VariantSpec& spec : correct_variants()) run_spec(harness, w, plan, gpu, spec);
  for (const VariantSpec& spec : kBrokenVariants) {
    if (plan.variant == spec.name) run_spec(harness, w, plan, gpu, spec);
  }
}

std::vector<std::string> variant_names() {
  std::vector<std::string> names;
  for (const auto& v : correct_variants()) names.push_back(v.name);
  for (const auto& v : kBrokenVariants) names.push_back(v.name);
  return names;
}

void add_flags(course::FlagParser& flags, Settings& s) {
  flags.add_common(s.options, course::workload::size_help(), variant_names());
  flags.add_int("stages", &s.stages, 0,
                "stages of the tma-pipeline variant and of the granularity sweep, " +
                    std::to_string(tma_bulk_copy::kMinStages) + " to " +
                    std::to_string(tma_bulk_copy::kMaxStages) + " (default " +
                    std::to_string(Config{}.stages) + ")");
  flags.add_bool("no-sweeps", &s.no_sweeps, "skip the stage and granularity sweeps");
}

/// The range check the flag parser cannot do; run_driver calls it before opening the device.
void validate(const Settings& s) {
  course::require_in_range("stages", s.stages, tma_bulk_copy::kMinStages,
                           tma_bulk_copy::kMaxStages);
}

/// The usage text's description; the batch size, the sweeps' ranges and the wait limit come
/// from the constants that define them.
std::string description() {
  const std::string batch = kilobytes(batch_bytes(kVectorsPerThread));
  const std::string stages =
      std::to_string(tma_bulk_copy::kMinStages) + "-" + std::to_string(tma_bulk_copy::kMaxStages);
  const std::string sizes =
      std::to_string(batch_bytes(parts::kSweepVectors[0]) / 1024) + "-" +
      kilobytes(batch_bytes(parts::kSweepVectors[std::size(parts::kSweepVectors) - 1]));
  return "Lesson 10: bulk copies (TMA) with mbarrier transaction counts; needs compute\n"
         "capability 9.0. 'tma-pipeline' keeps S batches of " +
         batch +
         " per block, a full and an empty\n"
         "mbarrier per batch and one producer warp whose elected lane issues cp.async.bulk;\n"
         "'tma-single-ptx' / 'tma-single-barrier' use one buffer, written with cuda::ptx and with\n"
         "cuda::barrier + memcpy_async_tx, and store their outputs with the bulk store;\n"
         "'bulk-copy-*' copy the input unchanged (load and store by TMA). '06-primitives' is\n"
         "lesson 06's kernel, '09-best' lesson 09's default cp.async variant. Then stage (" +
         stages + ")\nand granularity (" + sizes +
         ") sweeps at one block per SM; with --csv FILE the sweeps go to\n"
         "FILE with '_sweep' before '.csv'.\n"
         "'broken-wrong-expect-tx', 'broken-parity-not-flipped' and 'broken-missing-proxy-fence'\n"
         "are DELIBERATELY BROKEN and run only when --variant names them; every wait is bounded,\n"
         "so the first ends with a clear error after " +
         std::to_string(course::mbarrier::kWaitLimitNs / 1'000'000'000ull) +
         " s instead of hanging.";
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
