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

}  // namespace

int main(int argc, char** argv) {
  course::CommonOptions options;
  int stages = Config{}.stages;
  bool no_sweeps = false;
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
  flags.add_common(options, "uint32 elements of input (default 256M = 1 GiB; K/M/G suffixes)",
                   variant_names());
  flags.add_int("stages", &stages, 0,
                "stages of the tma-pipeline variant and of the granularity sweep, 2 to 8 "
                "(default 4)");
  flags.add_bool("no-sweeps", &no_sweeps, "skip the stage and granularity sweeps");

  auto validate = [&] {
    if (stages < tma_bulk_copy::kMinStages || stages > tma_bulk_copy::kMaxStages) {
      throw course::UsageError("--stages must be in [2, 8], got " + std::to_string(stages));
    }
  };

  auto body = [&](const course::DeviceSummary& gpu) {
    course::require_compute_capability(gpu, {9, 0},
                                       "lesson 10 (cp.async.bulk, mbarrier tx counts)");
    const std::size_t n =
        options.size ? options.size : (options.quick ? kQuickElements : kDefaultElements);
    std::cout << "lesson 10 tma_bulk_copy: " << n << " uint32 elements, " << kThreads
              << " consumer threads per block, " << stages << " stages of "
              << kilobytes(batch_bytes(kVectorsPerThread))
              << " in the main table; GB/s counts bytes read + bytes written\n";
    if (!COURSE_L10_WITH_LESSON_09) {
      std::cout << "lesson 09 is not part of this build: no 09-best row, no target against it\n";
    }

    course::DeviceBuffer<std::uint32_t> in(n), out(n);
    course::fill_hash(in.span(), /*seed=*/10);
    const std::vector<std::uint32_t> host_in = course::to_host(in.cspan());
    std::vector<std::uint32_t> expected(n);
    course::workload::reference(host_in, expected);
    // The plain bulk copy moves the whole 16-byte chunks of the input unchanged.
    const std::size_t copy_bytes = n * sizeof(std::uint32_t) / 16 * 16;
    const std::vector<std::uint32_t> copied(host_in.begin(),
                                            host_in.begin() + copy_bytes / sizeof(std::uint32_t));

    course::Harness harness(kLesson, options, gpu);
    harness.reference_d2d_copy(out.data(), in.data(), in.bytes());
    harness.roof_sm_copy(out.data(), in.data(), in.bytes());
    harness.baseline(kBaseline);
    harness.headline(kHeadline);
    harness.target({kHeadline, 0.98, course::Yardstick::sm_copy_roof});
    if (COURSE_L10_WITH_LESSON_09) harness.ratio_target({kHeadline, kLesson09, 1.0});

    // A checked variant: poison the output, run once, then report any bounded wait that
    // timed out and compare every element (all of them, or the copied prefix).
    auto checked = [&](const std::string& name, course::Launch run, bool copy_only = false) {
      return course::Variant{
          name,
          copy_only ? 2.0 * static_cast<double>(copy_bytes) : course::workload::bytes_moved(n),
          std::move(run),
          [&](cudaStream_t s) { course::poison(out.data(), out.bytes(), s); },
          [&, name, copy_only] {
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
    };

    auto run_spec = [&](const VariantSpec& spec) {
      if (!options.variant.empty() && options.variant != spec.name) return;
      int resident = 0;
      course::Launch launch;
      std::string what;
      if (spec.kind == Kind::lesson06) {
        const pipeline_multi_stage::Config c{pipeline_multi_stage::Interface::primitives, 4,
                                             kVectorsPerThread};
        resident = pipeline_multi_stage::max_blocks_per_sm(c, kThreads);
        what = "lesson 06's primitives kernel, 4 stages of 16 KB";
        launch = pipeline_multi_stage::prepare_copy_and_compute(
            in.cspan(), out.span(), c, {gpu.sm_count * std::max(resident, 1), kThreads});
#if COURSE_L10_WITH_LESSON_09
      } else if (spec.kind == Kind::lesson09) {
        const ptx_cp_async::Config c{};
        resident = ptx_cp_async::max_blocks_per_sm(c, kThreads);
        what = std::string("lesson 09's default variant (") + ptx_cp_async::name(c) + ", " +
               std::to_string(c.stages) + " stages)";
        launch = ptx_cp_async::prepare_copy_and_compute(
            in.cspan(), out.span(), c, {gpu.sm_count * std::max(resident, 1), kThreads});
#endif
      } else {
        const Config c{spec.variant, stages, kVectorsPerThread};
        resident = tma_bulk_copy::max_blocks_per_sm(c, kThreads);
        const register_staged::LaunchShape shape{gpu.sm_count * std::max(resident, 1), kThreads};
        what = spec.variant == Variant::pipeline
                   ? std::to_string(stages) + " stages of 16 KB + a producer warp"
                   : "one 16 KB input and one 16 KB output buffer";
        if (spec.kind == Kind::bulk_copy_ptx || spec.kind == Kind::bulk_copy_barrier) {
          launch = tma_bulk_copy::prepare_bulk_copy(in.data(), out.data(), copy_bytes,
                                                    spec.kind == Kind::bulk_copy_ptx
                                                        ? tma_bulk_copy::Barrier::ptx
                                                        : tma_bulk_copy::Barrier::cuda_barrier,
                                                    shape, kVectorsPerThread);
          what = "a plain copy of the input, 16 KB chunks, TMA load and store";
        } else {
          launch = tma_bulk_copy::prepare_copy_and_compute(in.cspan(), out.span(), c, shape);
        }
        if (tma_bulk_copy::is_broken(spec.variant)) what += "; DELIBERATELY BROKEN";
      }
      if (resident < 1) throw std::runtime_error(spec.name + ": one block does not fit on an SM");
      std::cout << "  " << spec.name << ": " << gpu.sm_count * resident << " blocks (" << resident
                << " per SM), " << what << "\n";
      const bool copy_only =
          spec.kind == Kind::bulk_copy_ptx || spec.kind == Kind::bulk_copy_barrier;
      harness.run(checked(spec.name, std::move(launch), copy_only));
    };
    for (const VariantSpec& spec : correct_variants()) run_spec(spec);
    for (const VariantSpec& spec : kBrokenVariants) {
      if (options.variant == spec.name) run_spec(spec);
    }

    // The sweeps, at one block per SM, only when every variant ran.
    if (!no_sweeps && options.variant.empty()) {
      const register_staged::LaunchShape one_per_sm{gpu.sm_count, kThreads};
      auto point = [&](const std::string& sweep, bool tma, int s, int vectors) {
        const std::string interface = tma ? "pipeline" : "primitives";
        const std::string label = std::string(tma ? "tma-pipeline" : "06-primitives") + ", " +
                                  std::to_string(s) + " stages, " + kilobytes(batch_bytes(vectors));
        const Config c{Variant::pipeline, s, vectors};
        const pipeline_multi_stage::Config c06{pipeline_multi_stage::Interface::primitives, s,
                                               vectors};
        const int fits = tma ? tma_bulk_copy::max_blocks_per_sm(c, kThreads)
                             : pipeline_multi_stage::max_blocks_per_sm(c06, kThreads);
        if (fits < 1) {
          std::cout << "  " << sweep << " sweep, " << label << ": skipped, does not fit one SM\n";
          return;
        }
        course::Launch launch =
            tma ? tma_bulk_copy::prepare_copy_and_compute(in.cspan(), out.span(), c, one_per_sm)
                : pipeline_multi_stage::prepare_copy_and_compute(in.cspan(), out.span(), c06,
                                                                 one_per_sm);
        harness.sweep(sweep,
                      {{"interface", interface},
                       {"stages", std::to_string(s)},
                       {"vectors_per_thread", std::to_string(vectors)},
                       {"batch_bytes", std::to_string(batch_bytes(vectors))},
                       {"threads_per_block", std::to_string(kThreads)},
                       {"blocks", std::to_string(one_per_sm.blocks)}},
                      checked(label, std::move(launch)));
      };
      for (bool tma : {true, false}) {
        for (int s = tma_bulk_copy::kMinStages; s <= tma_bulk_copy::kMaxStages; ++s) {
          point("stages", tma, s, kVectorsPerThread);
        }
      }
      for (bool tma : {true, false}) {
        for (int vectors : {1, 2, 4, 8}) point("granularity", tma, stages, vectors);
      }
      std::cout << "Sweeps: one block per SM (" << one_per_sm.blocks << " blocks of " << kThreads
                << " consumer threads; the TMA pipeline adds a producer warp); interface "
                   "'pipeline' is this lesson's TMA pipeline, 'primitives' lesson 06's kernel\n";
    }
    return harness.finish();
  };

  return course::run_driver(flags, argc, argv, options, body, validate);
}
