// Lesson 10 driver: runs the copy-and-compute workload with Hopper bulk copies (TMA) - the
// multi-stage TMA pipeline with a producer warp, and the single-buffer kernels written with
// cuda::ptx and with cuda::barrier (bulk load, bulk store) - next to lesson 06's primitives
// kernel and lesson 09's best cp.async variant, plus the plain bulk copy in both barrier
// flavours. Every output element is checked against the CPU reference, and every bounded
// wait that timed out is reported. Each figure is compared with a device-to-device
// cudaMemcpy and with the SM copy roof of the same run. Then a stage sweep (2-8) and a
// granularity sweep (4-32 KB) of the TMA pipeline and of lesson 06's primitives at one
// block per SM; with --csv the sweeps go to FILE_sweep.csv for tools/plot_pipeline_sweep.py.
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "course/buffers.h"
#include "course/data.h"
#include "course/device.h"
#include "course/harness.h"
#include "course/launch.h"
#include "course/problem.h"
#include "course/workload.h"
#include "pipeline_multi_stage.cuh"
#include "tma_bulk_copy.cuh"
#if __has_include("ptx_cp_async.cuh")
#include "ptx_cp_async.cuh"
#define COURSE_L10_WITH_LESSON_09 1
#else
#define COURSE_L10_WITH_LESSON_09 0
#endif

namespace {

using tma_bulk_copy::Config;
using tma_bulk_copy::Variant;

constexpr int kThreads = 256;
constexpr int kVectorsPerThread = 4;  // 256 x 4 x 16 B = 16 KB batches, as in lessons 06 and 09
constexpr std::uint64_t kDefaultElements = 256ull << 20;  // 1 GiB of input: far beyond L2
constexpr std::uint64_t kQuickElements = 1000003;         // prime: never a whole batch
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

std::vector<std::string> variant_names() {
  std::vector<std::string> names;
  for (const auto& v : correct_variants()) names.push_back(v.name);
  for (const auto& v : kBrokenVariants) names.push_back(v.name);
  return names;
}

std::string kilobytes(std::size_t bytes) { return std::to_string(bytes / 1024) + " KB"; }

std::size_t batch_bytes(int vectors_per_thread) {
  return tma_bulk_copy::batch_elements(kThreads, vectors_per_thread) * sizeof(std::uint32_t);
}

/// The command line: the common flags and lesson 10's own.
struct Settings {
  course::CommonOptions options;
  int stages = Config{}.stages;
  bool no_sweeps = false;
};

void add_flags(course::FlagParser& flags, Settings& s) {
  flags.add_common(s.options, "uint32 elements of input (default 256M = 1 GiB; K/M/G suffixes)",
                   variant_names());
  flags.add_int("stages", &s.stages, 0,
                "stages of the tma-pipeline variant and of the granularity sweep, 2 to 8 "
                "(default 4)");
  flags.add_bool("no-sweeps", &s.no_sweeps, "skip the stage and granularity sweeps");
}

/// The range check the flag parser cannot do; run_driver calls it before opening the device.
void validate(const Settings& s) {
  course::require_in_range("stages", s.stages, tma_bulk_copy::kMinStages,
                           tma_bulk_copy::kMaxStages);
}

/// The problem every row runs, and what the plain bulk copy must produce.
struct Workload : course::workload::Problem {
  explicit Workload(std::size_t elements)
      : Problem(elements, kSeed),
        copy_bytes(n * sizeof(std::uint32_t) / 16 * 16),
        copied(copy_bytes / sizeof(std::uint32_t)) {
    // The plain bulk copy moves the whole 16-byte chunks of the input unchanged: the
    // input's prefix, the same hash the device fill wrote.
    course::fill_hash_host(copied, kSeed);
  }

  /// A checked variant: poison the output, run once, then report any bounded wait that timed
  /// out and compare every element (all of them, or the copied prefix).
  course::Variant checked(const std::string& name, course::Launch run, bool copy_only = false) {
    return course::Variant{
        name,
        copy_only ? 2.0 * static_cast<double>(copy_bytes) : course::workload::bytes_moved(n),
        std::move(run),
        [this](cudaStream_t s) { poison_output(s); },
        [this, name, copy_only] {
          const unsigned errors = tma_bulk_copy::take_wait_errors();
          const std::vector<std::uint32_t> got = course::to_host(out.cspan());
          course::Comparison c =
              copy_only
                  ? course::compare_exact<std::uint32_t>(
                        copied, cuda::std::span<const std::uint32_t>(got.data(), copied.size()))
                  : course::compare_exact<std::uint32_t>(expected, got);
          if (errors != tma_bulk_copy::kNoWaitError) {
            std::cout << "  " << name << ": " << tma_bulk_copy::describe_wait_errors(errors)
                      << "\n";
            c.mismatches = std::max<std::size_t>(c.mismatches, 1);
          }
          return c;
        },
    };
  }

  static constexpr std::uint32_t kSeed = 10;
  const std::size_t copy_bytes;       ///< the bulk copy's bytes: whole 16-byte chunks
  std::vector<std::uint32_t> copied;  ///< the bulk copy's output: the input's prefix
};

/// A variant ready to run: its launch, its blocks per SM, and the line that describes it.
struct Prepared {
  int resident = 0;
  course::Launch launch;
  std::string what;
};

/// Lesson 06's primitives kernel at lesson 06's settings, as many blocks per SM as fit.
Prepared prepare_lesson06(Workload& w, const course::DeviceSummary& gpu) {
  Prepared p;
  const pipeline_multi_stage::Config c{pipeline_multi_stage::Interface::primitives, 4,
                                       kVectorsPerThread};
  p.resident = pipeline_multi_stage::max_blocks_per_sm(c, kThreads);
  p.what = "lesson 06's primitives kernel, 4 stages of 16 KB";
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
  p.what = spec.variant == Variant::pipeline
               ? std::to_string(stages) + " stages of 16 KB + a producer warp"
               : "one 16 KB input and one 16 KB output buffer";
  if (spec.kind == Kind::bulk_copy_ptx || spec.kind == Kind::bulk_copy_barrier) {
    p.launch = tma_bulk_copy::prepare_bulk_copy(w.in.data(), w.out.data(), w.copy_bytes,
                                                spec.kind == Kind::bulk_copy_ptx
                                                    ? tma_bulk_copy::Barrier::ptx
                                                    : tma_bulk_copy::Barrier::cuda_barrier,
                                                shape, kVectorsPerThread);
    p.what = "a plain copy of the input, 16 KB chunks, TMA load and store";
  } else {
    p.launch = tma_bulk_copy::prepare_copy_and_compute(w.in.cspan(), w.out.span(), c, shape);
  }
  if (tma_bulk_copy::is_broken(spec.variant)) p.what += "; DELIBERATELY BROKEN";
  return p;
}

/// Runs one row of the main table (unless --variant names another), after the line that
/// says how it launches.
void run_spec(course::Harness& harness, Workload& w, const course::DeviceSummary& gpu,
              const Settings& settings, const VariantSpec& spec) {
  if (!settings.options.variant.empty() && settings.options.variant != spec.name) return;
  Prepared p;
  if (spec.kind == Kind::lesson06) {
    p = prepare_lesson06(w, gpu);
#if COURSE_L10_WITH_LESSON_09
  } else if (spec.kind == Kind::lesson09) {
    p = prepare_lesson09(w, gpu);
#endif
  } else {
    p = prepare_tma(spec, w, gpu, settings.stages);
  }
  if (p.resident < 1) throw std::runtime_error(spec.name + ": one block does not fit on an SM");
  std::cout << "  " << spec.name << ": " << gpu.sm_count * p.resident << " blocks (" << p.resident
            << " per SM), " << p.what << "\n";
  const bool copy_only = spec.kind == Kind::bulk_copy_ptx || spec.kind == Kind::bulk_copy_barrier;
  harness.run(w.checked(spec.name, std::move(p.launch), copy_only));
}

/// One point of a sweep, at one block per SM: the TMA pipeline or lesson 06's primitives at
/// `s` stages of `vectors` vectors per thread (skipped, and said so, when it does not fit).
void sweep_point(course::Harness& harness, Workload& w, const course::DeviceSummary& gpu,
                 const std::string& sweep, bool tma, int s, int vectors) {
  const register_staged::LaunchShape one_per_sm{gpu.sm_count, kThreads};
  const std::string interface = tma ? "pipeline" : "primitives";
  const std::string label = std::string(tma ? "tma-pipeline" : "06-primitives") + ", " +
                            std::to_string(s) + " stages, " + kilobytes(batch_bytes(vectors));
  const Config c{Variant::pipeline, s, vectors};
  const pipeline_multi_stage::Config c06{pipeline_multi_stage::Interface::primitives, s, vectors};
  const int fits = tma ? tma_bulk_copy::max_blocks_per_sm(c, kThreads)
                       : pipeline_multi_stage::max_blocks_per_sm(c06, kThreads);
  if (fits < 1) {
    std::cout << "  " << sweep << " sweep, " << label << ": skipped, does not fit one SM\n";
    return;
  }
  course::Launch launch =
      tma ? tma_bulk_copy::prepare_copy_and_compute(w.in.cspan(), w.out.span(), c, one_per_sm)
          : pipeline_multi_stage::prepare_copy_and_compute(w.in.cspan(), w.out.span(), c06,
                                                           one_per_sm);
  harness.sweep(sweep,
                {{"interface", interface},
                 {"stages", std::to_string(s)},
                 {"vectors_per_thread", std::to_string(vectors)},
                 {"batch_bytes", std::to_string(batch_bytes(vectors))},
                 {"threads_per_block", std::to_string(kThreads)},
                 {"blocks", std::to_string(one_per_sm.blocks)}},
                w.checked(label, std::move(launch)));
}

/// The stage sweep (2-8 stages of 16 KB) and the granularity sweep (4-32 KB at --stages).
void run_sweeps(course::Harness& harness, Workload& w, const course::DeviceSummary& gpu,
                int stages) {
  for (bool tma : {true, false}) {
    for (int s = tma_bulk_copy::kMinStages; s <= tma_bulk_copy::kMaxStages; ++s) {
      sweep_point(harness, w, gpu, "stages", tma, s, kVectorsPerThread);
    }
  }
  for (bool tma : {true, false}) {
    for (int vectors : {1, 2, 4, 8})
      sweep_point(harness, w, gpu, "granularity", tma, stages, vectors);
  }
  std::cout << "Sweeps: one block per SM (" << gpu.sm_count << " blocks of " << kThreads
            << " consumer threads; the TMA pipeline adds a producer warp); interface "
               "'pipeline' is this lesson's TMA pipeline, 'primitives' lesson 06's kernel\n";
}

int run(const Settings& settings, const course::DeviceSummary& gpu) {
  const course::CommonOptions& options = settings.options;
  course::require_compute_capability(gpu, {9, 0}, "lesson 10 (cp.async.bulk, mbarrier tx counts)");
  const std::size_t n =
      options.size ? options.size : (options.quick ? kQuickElements : kDefaultElements);
  std::cout << "lesson 10 tma_bulk_copy: " << n << " uint32 elements, " << kThreads
            << " consumer threads per block, " << settings.stages << " stages of "
            << kilobytes(batch_bytes(kVectorsPerThread))
            << " in the main table; GB/s counts bytes read + bytes written\n";
  if (!COURSE_L10_WITH_LESSON_09) {
    std::cout << "lesson 09 is not part of this build: no 09-best row, no target against it\n";
  }

  Workload w(n);
  course::Harness harness(kLesson, options, gpu);
  harness.reference_d2d_copy(w.out.data(), w.in.data(), w.in.bytes());
  harness.roof_sm_copy(w.out.data(), w.in.data(), w.in.bytes());
  harness.baseline(kBaseline);
  harness.headline(kHeadline);
  harness.target({kHeadline, 0.98, course::Yardstick::sm_copy_roof});
  if (COURSE_L10_WITH_LESSON_09) harness.ratio_target({kHeadline, kLesson09, 1.0});

  for (const VariantSpec& spec : correct_variants()) run_spec(harness, w, gpu, settings, spec);
  for (const VariantSpec& spec : kBrokenVariants) {
    if (options.variant == spec.name) run_spec(harness, w, gpu, settings, spec);
  }
  // The sweeps, at one block per SM, only when every variant ran.
  if (!settings.no_sweeps && options.variant.empty()) run_sweeps(harness, w, gpu, settings.stages);
  return harness.finish();
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  course::FlagParser flags(
      kLesson,
      "Lesson 10: bulk copies (TMA) with mbarrier transaction counts; needs compute\n"
      "capability 9.0. 'tma-pipeline' keeps S batches of 16 KB per block, a full and an empty\n"
      "mbarrier per batch and one producer warp whose elected lane issues cp.async.bulk;\n"
      "'tma-single-ptx' / 'tma-single-barrier' use one buffer, written with cuda::ptx and with\n"
      "cuda::barrier + memcpy_async_tx, and store their outputs with the bulk store;\n"
      "'bulk-copy-*' copy the input unchanged (load and store by TMA). '06-primitives' is\n"
      "lesson 06's kernel, '09-best' lesson 09's default cp.async variant. Then stage (2-8)\n"
      "and granularity (4-32 KB) sweeps at one block per SM; with --csv FILE the sweeps go to\n"
      "FILE with '_sweep' before '.csv'.\n"
      "'broken-wrong-expect-tx', 'broken-parity-not-flipped' and 'broken-missing-proxy-fence'\n"
      "are DELIBERATELY BROKEN and run only when --variant names them; every wait is bounded,\n"
      "so the first ends with a clear error after 2 s instead of hanging.");
  add_flags(flags, settings);
  return course::run_driver(
      flags, argc, argv, settings.options,
      [&](const course::DeviceSummary& gpu) { return run(settings, gpu); },
      [&] { validate(settings); });
}
