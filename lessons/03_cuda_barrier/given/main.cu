// Lesson 03 driver: runs the cuda::barrier + cuda::memcpy_async kernels beside lesson 01's
// register-staged kernel through the course harness: every output element checked against the
// CPU reference, what each kernel's memcpy_async calls returned (cuda::async_contract_fulfillment)
// printed, and every variant compared with a device-to-device cudaMemcpy and the SM copy roof
// measured in the same run.
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/buffers.h"
#include "course/check.h"
#include "course/data.h"
#include "course/harness.h"
#include "course/problem.h"
#include "course/workload.h"
#include "cuda_barrier.cuh"
#include "register_staged.cuh"

namespace {

using cuda_barrier::Kernel;

constexpr int kThreads = 256;
constexpr int kDefaultStages = 4;
constexpr std::uint32_t kSeed = 1;
constexpr const char* kLesson = "03_cuda_barrier";
constexpr const char* kHeadline = "multi-stage";
// The broken variant's readers wait up to 1 ms per batch for a refill to overwrite what they
// are about to read (a 16 KB copy lands in microseconds).
constexpr cuda_barrier::ReaderDelay kBrokenDelay{1000000};

enum class Occupancy { full, one_per_sm, broken };

struct VariantSpec {
  const char* name;
  bool lesson01;  // lesson 01's coarse register-staged kernel instead of one of this lesson
  Kernel kernel;  // (ignored for lesson 01)
  Occupancy occupancy;
  const char* what;
};

// Lesson 01 first: its coarse kernel is the baseline every async variant must beat.
const std::vector<VariantSpec> kVariants = {
    {"01-coarse", true, Kernel::one_stage, Occupancy::full,
     "lesson 01: global -> registers -> shared, two block syncs per batch"},
    {"01-coarse-1-per-SM", true, Kernel::one_stage, Occupancy::one_per_sm,
     "lesson 01 at one block per SM"},
    {"1-stage-4B", false, Kernel::one_stage_words, Occupancy::full,
     "memcpy_async(block, dst, src, bytes, barrier): 4-byte cp.async"},
    {"1-stage", false, Kernel::one_stage, Occupancy::full,
     "memcpy_async(block, dst, src, aligned_size_t<16>(bytes), barrier)"},
    {"1-stage-1-per-SM", false, Kernel::one_stage, Occupancy::one_per_sm,
     "1-stage at one block per SM"},
    {"custom-group", false, Kernel::custom_group, Occupancy::full,
     "1-stage with a hand-written 1-D group instead of this_thread_block()"},
    {"two-buffers", false, Kernel::two_buffers, Occupancy::full,
     "a uint4 buffer and a uint32 buffer per batch, one barrier"},
    {"system-scope", false, Kernel::system_scope, Occupancy::full,
     "barrier<thread_scope_system>, batch staged in global memory: a synchronous copy"},
    {kHeadline, false, Kernel::multi_stage, Occupancy::full,
     "a full and an empty barrier per stage; stages - 1 batches in flight while one is computed"},
    {"multi-stage-1-per-SM", false, Kernel::multi_stage, Occupancy::one_per_sm,
     "multi-stage at one block per SM"},
};

// DELIBERATELY BROKEN: runs only when --variant names it.
const VariantSpec kBrokenVariant = {
    "broken-no-release", false, Kernel::multi_stage_no_release, Occupancy::broken,
    "DELIBERATELY BROKEN: multi-stage without the wait on the empty barrier; every warp but "
    "the first is held back before reading a batch, so the refills overwrite batches being read"};

/// The command line, as given: the common flags and lesson 03's own.
struct Settings {
  course::CommonOptions options;
  int blocks_per_sm = 0;
  std::string stages_text;
};

/// Every size and count of the run, resolved from the command line.
struct Plan {
  std::size_t elements = 0;
  int stages = 0;                   ///< of the multi-stage variants
  int blocks_per_sm = 0;            ///< of the full-occupancy variants; 0: as many as fit
  std::string variant;              ///< the one row --variant asks for; empty: every correct row
  bool other_stage_counts = false;  ///< --quick's extra rows (run_other_stage_counts)
};

/// The problem every row runs, and the slots where the kernels report what memcpy_async
/// returned.
struct Workload : course::workload::Problem {
  explicit Workload(std::size_t elements)
      : Problem(elements, kSeed), report(cuda_barrier::kReportSlots) {}

  course::DeviceBuffer<std::uint32_t> report;
};

Plan make_plan(const Settings& s);
void print_intro(const Plan& plan, const course::DeviceSummary& gpu);
void add_yardsticks_and_targets(course::Harness& harness, Workload& w);
void run_variants(course::Harness& harness, Workload& w, const Plan& plan,
                  const course::DeviceSummary& gpu);
void run_spec(course::Harness& harness, Workload& w, const Plan& plan,
              const course::DeviceSummary& gpu, const VariantSpec& spec);
void run_other_stage_counts(course::Harness& harness, Workload& w, const Plan& plan,
                            const course::DeviceSummary& gpu);

/// The output, part by part: the intro lines, the table, --quick's extra rows.
int run(const Settings& s, const course::DeviceSummary& gpu) {
  const Plan plan = make_plan(s);
  print_intro(plan, gpu);
  Workload w(plan.elements);
  course::Harness harness(kLesson, s.options, gpu);
  add_yardsticks_and_targets(harness, w);
  run_variants(harness, w, plan, gpu);
  if (plan.other_stage_counts) run_other_stage_counts(harness, w, plan, gpu);
  return harness.finish();
}

/// --size, --stages and --quick resolved: the one place that reads --quick.
Plan make_plan(const Settings& s) {
  const course::CommonOptions& options = s.options;
  Plan plan;
  plan.elements = course::workload::elements_for(options);
  plan.stages = s.stages_text.empty() ? kDefaultStages : std::stoi(s.stages_text);
  plan.blocks_per_sm = s.blocks_per_sm;
  plan.variant = options.variant;
  plan.other_stage_counts = options.quick && options.variant.empty();
  return plan;
}

void print_intro(const Plan& plan, const course::DeviceSummary& gpu) {
  const bool hopper = gpu.cc >= course::ComputeCapability{9, 0};
  std::cout << "lesson 03 cuda_barrier: " << plan.elements << " uint32 elements, " << kThreads
            << " threads per block, batches of " << cuda_barrier::batch_elements(kThreads)
            << " elements; GB/s counts bytes read + bytes written\n"
            << "aligned copies on this GPU: "
            << (hopper ? "one cp.async.bulk (TMA) per batch, issued by thread 0"
                       : "16-byte cp.async by every thread")
            << "\n";
}

void add_yardsticks_and_targets(course::Harness& harness, Workload& w) {
  harness.reference_d2d_copy(w.out.data(), w.in.data(), w.in.bytes());
  harness.roof_sm_copy(w.out.data(), w.in.data(), w.in.bytes());
  harness.baseline("01-coarse");
  harness.headline(kHeadline);
  harness.target({kHeadline, 0.90});
  harness.target({kHeadline, 0.95, course::Yardstick::sm_copy_roof});
}

/// The table's rows: every correct variant, or the one --variant names (the broken one too).
void run_variants(course::Harness& harness, Workload& w, const Plan& plan,
                  const course::DeviceSummary& gpu) {
  std::vector<VariantSpec> specs = kVariants;
  if (plan.variant == kBrokenVariant.name) specs.push_back(kBrokenVariant);
  for (const VariantSpec& spec : specs) {
    if (!plan.variant.empty() && plan.variant != spec.name) continue;
    run_spec(harness, w, plan, gpu, spec);
  }
}

/// The blocks a row launches: --blocks-per-sm or as many as fit, one per SM, or, for the
/// broken variant, about 2 x stages batches per block (a refill happens only while a block
/// has more batches than stages), at most one block per SM.
int blocks_for(const VariantSpec& spec, const Plan& plan, int resident,
               const course::DeviceSummary& gpu) {
  int blocks = gpu.sm_count * (plan.blocks_per_sm > 0 ? plan.blocks_per_sm : resident);
  if (spec.occupancy == Occupancy::one_per_sm) blocks = gpu.sm_count;
  if (spec.occupancy == Occupancy::broken) {
    const std::size_t batches = (plan.elements + cuda_barrier::batch_elements(kThreads) - 1) /
                                cuda_barrier::batch_elements(kThreads);
    blocks = static_cast<int>(
        std::clamp<std::size_t>(batches / (2 * static_cast<std::size_t>(plan.stages)), 1,
                                static_cast<std::size_t>(gpu.sm_count)));
  }
  return blocks;
}

/// The row's launch: lesson 01's kernel, or this lesson's (the broken one with its delay).
course::Launch launch_for(const VariantSpec& spec, Workload& w,
                          const cuda_barrier::LaunchShape& shape) {
  if (spec.lesson01) {
    const register_staged::LaunchShape shape01{shape.blocks, shape.threads_per_block};
    return [&in = w.in, &out = w.out, shape01](cudaStream_t s) {
      register_staged::copy_and_compute(in.cspan(), out.span(),
                                        register_staged::Granularity::coarse, shape01, s);
    };
  }
  const cuda_barrier::ReaderDelay delay =
      spec.occupancy == Occupancy::broken ? kBrokenDelay : cuda_barrier::ReaderDelay{};
  return cuda_barrier::prepare_copy_and_compute(w.in.cspan(), w.out.span(), spec.kernel, shape,
                                                w.report.span(), delay);
}

/// One row: the line that says how it launches, then the checked, timed run; after the check
/// this lesson's kernels print what each memcpy_async returned.
void run_spec(course::Harness& harness, Workload& w, const Plan& plan,
              const course::DeviceSummary& gpu, const VariantSpec& spec) {
  const int variant_stages =
      !spec.lesson01 && cuda_barrier::is_multi_stage(spec.kernel) ? plan.stages : 1;
  const int resident =
      spec.lesson01
          ? register_staged::max_blocks_per_sm(register_staged::Granularity::coarse, kThreads)
          : cuda_barrier::max_blocks_per_sm(spec.kernel, kThreads, variant_stages);
  if (resident < 1) {
    throw std::runtime_error(std::string(spec.name) + ": one block does not fit on an SM");
  }
  const cuda_barrier::LaunchShape shape{blocks_for(spec, plan, resident, gpu), kThreads,
                                        variant_stages};
  std::cout << "  " << spec.name << ": " << shape.blocks << " blocks (at most " << resident
            << " per SM fit)";
  if (variant_stages > 1) std::cout << ", " << variant_stages << " stages";
  std::cout << "; " << spec.what << "\n";

  harness.run({
      spec.name,
      course::workload::bytes_moved(w.n),
      launch_for(spec, w, shape),
      [&](cudaStream_t st) {
        w.poison_output(st);
        // 0xFF bytes: every slot reads kNotCalled until its call writes it.
        COURSE_CHECK(cudaMemsetAsync(w.report.data(), 0xFF, w.report.bytes(), st));
      },
      [&, spec] {
        if (!spec.lesson01) {
          const auto r = course::to_host(w.report.cspan());
          std::cout << "    " << spec.name << ": memcpy_async returned "
                    << cuda_barrier::contract_name(r[cuda_barrier::kBatchCopy]) << " (full batch), "
                    << cuda_barrier::contract_name(r[cuda_barrier::kSecondCopy])
                    << " (second buffer), "
                    << cuda_barrier::contract_name(r[cuda_barrier::kTailCopy])
                    << " (tail past the last 16-byte chunk)\n";
        }
        return w.compare_output();
      },
  });
}

/// --quick only: the multi-stage kernel at every stage count the main table did not use, one
/// block per SM. Each stage count compiles its own copy of the waits you wrote, and the race
/// checks run the program --quick: a copy that never runs there is never checked.
void run_other_stage_counts(course::Harness& harness, Workload& w, const Plan& plan,
                            const course::DeviceSummary& gpu) {
  for (int stages = cuda_barrier::kMinStages; stages <= cuda_barrier::kMaxStages; ++stages) {
    if (stages == plan.stages) continue;  // the main table ran it
    harness.sweep("stages (--quick)", {{"stages", std::to_string(stages)}},
                  w.checked("multi-stage, " + std::to_string(stages) + " stages",
                            cuda_barrier::prepare_copy_and_compute(
                                w.in.cspan(), w.out.span(), Kernel::multi_stage,
                                {gpu.sm_count, kThreads, stages})));
  }
}

std::vector<std::string> variant_names() {
  std::vector<std::string> names = course::names_of(kVariants);
  names.emplace_back(kBrokenVariant.name);
  return names;
}

void add_flags(course::FlagParser& flags, Settings& s) {
  std::vector<std::string> stage_counts;
  for (int stages = cuda_barrier::kMinStages; stages <= cuda_barrier::kMaxStages; ++stages) {
    stage_counts.push_back(std::to_string(stages));
  }
  flags.add_common(s.options, course::workload::size_help(), variant_names());
  flags.add_int("blocks-per-sm", &s.blocks_per_sm, 0,
                "blocks per SM for the full-occupancy variants (default 0: as many as fit)");
  flags.add_choice(
      "stages", &s.stages_text, stage_counts,
      "stages of the multi-stage variants (default " + std::to_string(kDefaultStages) + ")");
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  course::FlagParser flags(
      kLesson,
      "Lesson 03: cuda::barrier and cuda::memcpy_async. Every variant computes the same\n"
      "copy-and-compute workload in 16 KB batches (256 threads x 64 bytes). '01-' variants are\n"
      "lesson 01's register-staged kernel; the others copy with cuda::memcpy_async bound to a\n"
      "cuda::barrier. On sm_90 an aligned copy (aligned_size_t<16>) with a block-scope barrier\n"
      "becomes one bulk (TMA) copy per batch. '-1-per-SM' variants launch one block per SM.\n"
      "'broken-no-release' is DELIBERATELY BROKEN (it refills a stage without waiting for its\n"
      "empty barrier; racecheck reports it, and on sm_90 its check fails): it never runs unless\n"
      "--variant names it.");
  add_flags(flags, settings);
  return course::run_driver(flags, argc, argv, settings.options,
                            [&](const course::DeviceSummary& gpu) { return run(settings, gpu); });
}
