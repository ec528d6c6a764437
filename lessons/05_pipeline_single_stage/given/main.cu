// Lesson 05 driver (read-only): runs the single-stage cuda::pipeline kernels (thread scope
// and block scope) beside lesson 01's register-staged kernel and lesson 03's one-stage
// cuda::barrier kernel, all in 16 KB batches, at full occupancy and at one block per SM;
// checks every output element against the CPU reference; compares each variant's bandwidth
// with a device-to-device cudaMemcpy and the SM copy roof measured in the same run.
#include <cstdint>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/harness.h"
#include "course/launch.h"
#include "course/problem.h"
#include "course/workload.h"
#include "cuda_barrier.cuh"
#include "pipeline_single_stage.cuh"
#include "register_staged.cuh"

namespace {

using course::workload::Problem;
using pipeline_single_stage::Scope;

constexpr int kThreads = 256;
constexpr int kMaxBlocksPerSm = 32;  // resident blocks of sm_80, sm_90
constexpr std::uint32_t kSeed = 1;
constexpr const char* kLesson = "05_pipeline_single_stage";
constexpr const char* kHeadline = "thread-pipeline";

/// Whose kernel a variant runs.
enum class Kernel {
  lesson01,         // register_staged::copy_and_compute, coarse granularity
  lesson03,         // cuda_barrier::copy_and_compute, Kernel::one_stage
  thread_pipeline,  // this lesson, Scope::thread
  block_pipeline,   // this lesson, Scope::block
};

struct VariantSpec {
  const char* name;
  Kernel kernel;
  bool one_block_per_sm;
  const char* what;
};

// Lesson 01's coarse kernel first: it is the baseline. Then each kernel at full occupancy
// and at one block per SM, where nothing but the block itself can hide a copy's latency.
const std::vector<VariantSpec> kVariants = {
    {"01-coarse", Kernel::lesson01, false,
     "lesson 01: global -> registers -> shared, two block syncs per batch"},
    {"01-coarse-1-per-SM", Kernel::lesson01, true, "lesson 01 at one block per SM"},
    {"03-1-stage", Kernel::lesson03, false,
     "lesson 03: memcpy_async(block, ..., aligned_size_t<16>, barrier), arrive_and_wait, sync"},
    {"03-1-stage-1-per-SM", Kernel::lesson03, true, "lesson 03 at one block per SM"},
    {kHeadline, Kernel::thread_pipeline, false,
     "make_pipeline(): per-thread cp.async groups + two __syncthreads per batch"},
    {"thread-pipeline-1-per-SM", Kernel::thread_pipeline, true,
     "thread-pipeline at one block per SM"},
    {"block-pipeline", Kernel::block_pipeline, false,
     "make_pipeline(block, &state), one stage: two mbarriers, no __syncthreads in the loop"},
    {"block-pipeline-1-per-SM", Kernel::block_pipeline, true, "block-pipeline at one block per SM"},
};

/// The command line, as given: the common flags and --blocks-per-sm.
struct Settings {
  course::CommonOptions options;
  int blocks_per_sm = 0;
};

/// Every size and count of the run, resolved from the command line.
struct Plan {
  std::size_t elements = 0;
  int blocks_per_sm = 0;  ///< of every full-occupancy variant; 0: the most that fit every kernel
};

Plan make_plan(const Settings& s);
void print_intro(const Plan& plan, const course::DeviceSummary& gpu);
void add_yardsticks_and_targets(course::Harness& harness, Problem& w);
void run_variants(course::Harness& harness, Problem& w, const Plan& plan,
                  const course::DeviceSummary& gpu);
int resident_blocks(Kernel kernel);
std::size_t batch_of(Kernel kernel);
course::Launch launch_of(Kernel kernel, cuda::std::span<const std::uint32_t> in,
                         cuda::std::span<std::uint32_t> out, register_staged::LaunchShape shape);
int full_occupancy(int blocks_per_sm);

/// The output, part by part: the intro lines, then the table.
int run(const Settings& s, const course::DeviceSummary& gpu) {
  const Plan plan = make_plan(s);
  print_intro(plan, gpu);
  Problem w(plan.elements, kSeed);
  course::Harness harness(kLesson, s.options, gpu);
  add_yardsticks_and_targets(harness, w);
  run_variants(harness, w, plan, gpu);
  return harness.finish();
}

/// --size, or the default of a full or a --quick run: the one place that reads --quick.
Plan make_plan(const Settings& s) {
  const course::CommonOptions& options = s.options;
  return {course::workload::elements_for(options),
          s.blocks_per_sm};
}

void print_intro(const Plan& plan, const course::DeviceSummary& gpu) {
  const bool hopper = gpu.cc >= course::ComputeCapability{9, 0};
  std::cout << "lesson 05 pipeline_single_stage: " << plan.elements << " uint32 elements, "
            << kThreads << " threads per block, batches of "
            << pipeline_single_stage::batch_elements(kThreads) << " elements ("
            << pipeline_single_stage::shared_bytes(kThreads) / 1024
            << " KB), one stage; GB/s counts bytes read + bytes written\n"
            << "copies: pipelines 16-byte cp.async on every GPU; lesson 03's aligned barrier "
            << "copy "
            << (hopper ? "one cp.async.bulk (TMA) per batch on this GPU"
                       : "16-byte cp.async on this GPU")
            << "\n";
}

void add_yardsticks_and_targets(course::Harness& harness, Problem& w) {
  harness.reference_d2d_copy(w.out.data(), w.in.data(), w.in.bytes());
  // The roof kernel copies whole 16-byte vectors (its rate is per byte, like every row's).
  harness.roof_sm_copy(w.out.data(), w.in.data(), w.in.bytes() - w.in.bytes() % 16);
  harness.baseline("01-coarse");
  harness.headline(kHeadline);
  // One stage cannot overlap copy and compute inside a block, but at full occupancy other
  // blocks on the SM hide the waits: the goal is to copy nearly as fast as the SMs can.
  harness.target({kHeadline, 0.90, course::Yardstick::sm_copy_roof});
}

/// The occupancy every full-occupancy variant shares, then every variant: the line that says
/// how it launches and the checked, timed run.
void run_variants(course::Harness& harness, Problem& w, const Plan& plan,
                  const course::DeviceSummary& gpu) {
  const int full_per_sm = full_occupancy(plan.blocks_per_sm);
  std::cout << "full occupancy: " << full_per_sm << " blocks per SM for every kernel\n";
  for (const VariantSpec& spec : kVariants) {
    const int resident = resident_blocks(spec.kernel);
    const int per_sm = spec.one_block_per_sm ? 1 : full_per_sm;
    const register_staged::LaunchShape shape{gpu.sm_count * per_sm, kThreads};
    std::cout << "  " << spec.name << ": " << shape.blocks << " blocks (" << per_sm
              << " per SM; at most " << resident << " fit), batch of " << batch_of(spec.kernel)
              << " elements; " << spec.what << "\n";
    harness.run(w.checked(spec.name, launch_of(spec.kernel, w.in.cspan(), w.out.span(), shape)));
  }
}

/// The most blocks of kThreads threads one SM holds for the variant's kernel.
int resident_blocks(Kernel kernel) {
  switch (kernel) {
    case Kernel::lesson01:
      return register_staged::max_blocks_per_sm(register_staged::Granularity::coarse, kThreads);
    case Kernel::lesson03:
      return cuda_barrier::max_blocks_per_sm(cuda_barrier::Kernel::one_stage, kThreads, 1);
    case Kernel::thread_pipeline:
      return pipeline_single_stage::max_blocks_per_sm(Scope::thread, kThreads);
    case Kernel::block_pipeline:
      return pipeline_single_stage::max_blocks_per_sm(Scope::block, kThreads);
  }
  return 0;
}

/// Elements one block stages per batch with the variant's kernel (16 KB for every one).
std::size_t batch_of(Kernel kernel) {
  switch (kernel) {
    case Kernel::lesson01:
      return register_staged::batch_elements(register_staged::Granularity::coarse, kThreads);
    case Kernel::lesson03:
      return cuda_barrier::batch_elements(kThreads);
    default:
      return pipeline_single_stage::batch_elements(kThreads);
  }
}

/// The variant's launch, prepared (checked, attributes set) here, outside the timed region.
course::Launch launch_of(Kernel kernel, cuda::std::span<const std::uint32_t> in,
                         cuda::std::span<std::uint32_t> out, register_staged::LaunchShape shape) {
  switch (kernel) {
    case Kernel::lesson01:
      return register_staged::prepare_copy_and_compute(in, out,
                                                       register_staged::Granularity::coarse, shape);
    case Kernel::lesson03:
      return cuda_barrier::prepare_copy_and_compute(in, out, cuda_barrier::Kernel::one_stage,
                                                    {shape.blocks, shape.threads_per_block, 1});
    case Kernel::thread_pipeline:
      return pipeline_single_stage::prepare_copy_and_compute(in, out, Scope::thread, shape);
    case Kernel::block_pipeline:
      return pipeline_single_stage::prepare_copy_and_compute(in, out, Scope::block, shape);
  }
  throw std::invalid_argument("05_pipeline_single_stage: unknown kernel");
}

/// Same occupancy for every kernel: the full-occupancy variants all launch as many blocks per
/// SM as fit for the kernel that fits the fewest (--blocks-per-sm overrides).
int full_occupancy(int blocks_per_sm) {
  int full_per_sm = blocks_per_sm;
  if (full_per_sm == 0) {
    for (const VariantSpec& spec : kVariants) {
      const int resident = resident_blocks(spec.kernel);
      if (full_per_sm == 0 || resident < full_per_sm) full_per_sm = resident;
    }
  }
  return full_per_sm;
}

void add_flags(course::FlagParser& flags, Settings& s) {
  flags.add_common(s.options, course::workload::size_help(), course::names_of(kVariants));
  flags.add_int("blocks-per-sm", &s.blocks_per_sm, 0,
                "blocks per SM of every full-occupancy variant (default 0: the most that fit "
                "every kernel; at most " +
                    std::to_string(kMaxBlocksPerSm) + ")");
}

/// The range check the flag parser cannot do; run_driver calls it before opening the device.
void validate(const Settings& s) {
  course::require_in_range("blocks-per-sm", s.blocks_per_sm, 0, kMaxBlocksPerSm);
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  course::FlagParser flags(
      kLesson,
      "Lesson 05: a single-stage cuda::pipeline. Every variant computes the same copy-and-\n"
      "compute workload in 16 KB batches (256 threads x 64 bytes) with one shared buffer.\n"
      "'thread-pipeline' gives each thread its own cuda::pipeline (make_pipeline()) and needs\n"
      "__syncthreads(); 'block-pipeline' shares one pipeline_shared_state<block, 1> across\n"
      "the block. '01-' is lesson 01's register-staged kernel, '03-' lesson 03's one-stage\n"
      "cuda::barrier kernel. '-1-per-SM' variants launch one block per SM.");
  add_flags(flags, settings);
  return course::run_driver(
      flags, argc, argv, settings.options,
      [&](const course::DeviceSummary& gpu) { return run(settings, gpu); },
      [&] { validate(settings); });
}
