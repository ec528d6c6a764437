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
constexpr std::uint64_t kDefaultElements = 256ull << 20;  // 1 GiB of input: far beyond L2
constexpr std::uint64_t kQuickElements = 1000003;         // prime: a partial last batch
constexpr int kDefaultStages = 4;
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
    {"multi-stage", false, Kernel::multi_stage, Occupancy::full,
     "a full and an empty barrier per stage; stages - 1 batches in flight while one is computed"},
    {"multi-stage-1-per-SM", false, Kernel::multi_stage, Occupancy::one_per_sm,
     "multi-stage at one block per SM"},
};

// DELIBERATELY BROKEN: runs only when --variant names it.
const VariantSpec kBrokenVariant = {
    "broken-no-release", false, Kernel::multi_stage_no_release, Occupancy::broken,
    "DELIBERATELY BROKEN: multi-stage without the wait on the empty barrier; every warp but "
    "the first is held back before reading a batch, so the refills overwrite batches being read"};

std::vector<std::string> variant_names() {
  std::vector<std::string> names;
  for (const auto& v : kVariants) names.emplace_back(v.name);
  names.emplace_back(kBrokenVariant.name);
  return names;
}

/// The command line: the common flags and lesson 03's own.
struct Settings {
  course::CommonOptions options;
  int blocks_per_sm = 0;
  std::string stages_text;

  int stages() const { return stages_text.empty() ? kDefaultStages : std::stoi(stages_text); }
};

void add_flags(course::FlagParser& flags, Settings& s) {
  flags.add_common(s.options, "uint32 elements of input (default 256M = 1 GiB; K/M/G suffixes)",
                   variant_names());
  flags.add_int("blocks-per-sm", &s.blocks_per_sm, 0,
                "blocks per SM for the full-occupancy variants (default 0: as many as fit)");
  flags.add_choice("stages", &s.stages_text, {"2", "3", "4"},
                   "stages of the multi-stage variants (default 4)");
}

/// The problem every row runs, and the slots where the kernels report what memcpy_async
/// returned.
struct Workload : course::workload::Problem {
  explicit Workload(std::size_t elements)
      : Problem(elements, /*seed=*/1), report(cuda_barrier::kReportSlots) {}

  course::DeviceBuffer<std::uint32_t> report;
};

/// The blocks a row launches: --blocks-per-sm or as many as fit, one per SM, or, for the
/// broken variant, about 2 x stages batches per block (a refill happens only while a block
/// has more batches than stages), at most one block per SM.
int blocks_for(const VariantSpec& spec, const Settings& s, int resident, std::size_t n,
               const course::DeviceSummary& gpu) {
  int blocks = gpu.sm_count * (s.blocks_per_sm > 0 ? s.blocks_per_sm : resident);
  if (spec.occupancy == Occupancy::one_per_sm) blocks = gpu.sm_count;
  if (spec.occupancy == Occupancy::broken) {
    const std::size_t batches =
        (n + cuda_barrier::batch_elements(kThreads) - 1) / cuda_barrier::batch_elements(kThreads);
    blocks = static_cast<int>(
        std::clamp<std::size_t>(batches / (2 * static_cast<std::size_t>(s.stages())), 1,
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
void run_spec(course::Harness& harness, Workload& w, const course::DeviceSummary& gpu,
              const Settings& s, const VariantSpec& spec) {
  const int variant_stages =
      !spec.lesson01 && cuda_barrier::is_multi_stage(spec.kernel) ? s.stages() : 1;
  const int resident =
      spec.lesson01
          ? register_staged::max_blocks_per_sm(register_staged::Granularity::coarse, kThreads)
          : cuda_barrier::max_blocks_per_sm(spec.kernel, kThreads, variant_stages);
  if (resident < 1) {
    throw std::runtime_error(std::string(spec.name) + ": one block does not fit on an SM");
  }
  const cuda_barrier::LaunchShape shape{blocks_for(spec, s, resident, w.n, gpu), kThreads,
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
void run_other_stage_counts(course::Harness& harness, Workload& w, const course::DeviceSummary& gpu,
                            int table_stages) {
  for (int stages = cuda_barrier::kMinStages; stages <= cuda_barrier::kMaxStages; ++stages) {
    if (stages == table_stages) continue;  // the main table ran it
    harness.sweep("stages (--quick)", {{"stages", std::to_string(stages)}},
                  w.checked("multi-stage, " + std::to_string(stages) + " stages",
                            cuda_barrier::prepare_copy_and_compute(
                                w.in.cspan(), w.out.span(), Kernel::multi_stage,
                                {gpu.sm_count, kThreads, stages})));
  }
}

int run(const Settings& s, const course::DeviceSummary& gpu) {
  const course::CommonOptions& options = s.options;
  const std::size_t n =
      options.size ? options.size : (options.quick ? kQuickElements : kDefaultElements);
  const bool hopper = gpu.cc >= course::ComputeCapability{9, 0};
  std::cout << "lesson 03 cuda_barrier: " << n << " uint32 elements, " << kThreads
            << " threads per block, batches of " << cuda_barrier::batch_elements(kThreads)
            << " elements; GB/s counts bytes read + bytes written\n"
            << "aligned copies on this GPU: "
            << (hopper ? "one cp.async.bulk (TMA) per batch, issued by thread 0"
                       : "16-byte cp.async by every thread")
            << "\n";

  Workload w(n);
  course::Harness harness("03_cuda_barrier", options, gpu);
  harness.reference_d2d_copy(w.out.data(), w.in.data(), w.in.bytes());
  harness.roof_sm_copy(w.out.data(), w.in.data(), w.in.bytes());
  harness.baseline("01-coarse");
  harness.headline("multi-stage");
  harness.target({"multi-stage", 0.90});
  harness.target({"multi-stage", 0.95, course::Yardstick::sm_copy_roof});

  std::vector<VariantSpec> specs = kVariants;
  if (options.variant == kBrokenVariant.name) specs.push_back(kBrokenVariant);
  for (const VariantSpec& spec : specs) {
    if (!options.variant.empty() && options.variant != spec.name) continue;
    run_spec(harness, w, gpu, s, spec);
  }
  if (options.quick && options.variant.empty()) run_other_stage_counts(harness, w, gpu, s.stages());
  return harness.finish();
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  course::FlagParser flags(
      "03_cuda_barrier",
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
