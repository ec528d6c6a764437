// Lesson 02 driver: runs the copy-and-compute workload with cooperative_groups::memcpy_async
// (one buffer + wait, and two buffers + wait_prior<1>) beside lesson 01's register-staged
// kernel, at lesson 01's two granularities, at full occupancy and at one block per SM.
// Every variant's output is checked element by element against the CPU reference, and
// every bandwidth is compared with two yardsticks measured in the same run: a
// device-to-device cudaMemcpy and the SM copy roof (course/roof.h).
#include <cstdint>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "cg_memcpy_async.cuh"
#include "course/harness.h"
#include "course/launch.h"
#include "course/problem.h"
#include "course/workload.h"
#include "register_staged.cuh"

namespace {

using cg_memcpy_async::Buffering;
using cg_memcpy_async::Granularity;
using course::workload::Problem;

constexpr int kThreads = 256;
constexpr std::uint32_t kSeed = 2;
constexpr const char* kLesson = "02_cg_memcpy_async";

/// Which kernel runs a variant: lesson 01's, or one of this lesson's two.
enum class Kernel { register_staged, cg_wait, cg_double_buffered };

struct VariantSpec {
  const char* name;
  Kernel kernel;
  Granularity granularity;
  bool one_block_per_sm;
};

// Grouped by granularity, lesson 01's kernel first in each group: compare each async
// variant with the register-staged row just above it.
const std::vector<VariantSpec> kVariants = {
    {"register-fine", Kernel::register_staged, Granularity::fine, false},
    {"wait-fine", Kernel::cg_wait, Granularity::fine, false},
    {"double-fine", Kernel::cg_double_buffered, Granularity::fine, false},
    {"register-coarse", Kernel::register_staged, Granularity::coarse, false},
    {"wait-coarse", Kernel::cg_wait, Granularity::coarse, false},
    {"double-coarse", Kernel::cg_double_buffered, Granularity::coarse, false},
    {"register-coarse-1-per-SM", Kernel::register_staged, Granularity::coarse, true},
    {"wait-coarse-1-per-SM", Kernel::cg_wait, Granularity::coarse, true},
    {"double-coarse-1-per-SM", Kernel::cg_double_buffered, Granularity::coarse, true},
};

/// The command line, as given: the common flags and --blocks-per-sm.
struct Settings {
  course::CommonOptions options;
  int blocks_per_sm = 0;
};

/// Every size and count of the run, resolved from the command line.
struct Plan {
  std::size_t elements = 0;
  int blocks_per_sm = 0;  ///< of the variants at full occupancy; 0: as many as fit
};

Plan make_plan(const Settings& s);
void print_intro(const Plan& plan);
void add_yardsticks(course::Harness& harness, Problem& w);
void run_variants(course::Harness& harness, Problem& w, const Plan& plan,
                  const course::DeviceSummary& gpu);
Buffering buffering_of(Kernel k);
int resident_blocks(const VariantSpec& spec);
std::size_t shared_bytes_of(const VariantSpec& spec);

/// The output, part by part: the intro line, then the table.
int run(const Settings& s, const course::DeviceSummary& gpu) {
  const Plan plan = make_plan(s);
  print_intro(plan);
  Problem w(plan.elements, kSeed);
  course::Harness harness(kLesson, s.options, gpu);
  add_yardsticks(harness, w);
  run_variants(harness, w, plan, gpu);
  return harness.finish();
}

/// --size, or the default of a full or a --quick run: the one place that reads --quick.
Plan make_plan(const Settings& s) {
  const course::CommonOptions& options = s.options;
  return {course::workload::elements_for(options),
          s.blocks_per_sm};
}

void print_intro(const Plan& plan) {
  std::cout << "lesson 02 cg_memcpy_async: " << plan.elements << " uint32 elements, " << kThreads
            << " threads per block; GB/s counts bytes read + bytes written\n";
}

void add_yardsticks(course::Harness& harness, Problem& w) {
  harness.reference_d2d_copy(w.out.data(), w.in.data(), w.in.bytes());
  // The roof kernel moves 16-byte vectors: a whole number of them (at most 12 bytes less).
  harness.roof_sm_copy(w.out.data(), w.in.data(), w.in.bytes() / 16 * 16);
  // Lesson 01's kernel at the headline's granularity; the fine rows compare with
  // register-fine, the rows at one block per SM with register-coarse-1-per-SM.
  harness.baseline("register-coarse");
  harness.headline("double-coarse");
  // Lesson 02 has no performance target: the table reports what this GPU gives.
}

/// Every variant: the line that says how it launches, then the checked, timed run.
void run_variants(course::Harness& harness, Problem& w, const Plan& plan,
                  const course::DeviceSummary& gpu) {
  for (const VariantSpec& spec : kVariants) {
    const int resident = resident_blocks(spec);
    const int per_sm =
        spec.one_block_per_sm ? 1 : (plan.blocks_per_sm > 0 ? plan.blocks_per_sm : resident);
    const register_staged::LaunchShape shape{gpu.sm_count * per_sm, kThreads};
    std::cout << "  " << spec.name << ": " << shape.blocks << " blocks (" << per_sm
              << " per SM; at most " << resident << " fit), batch of "
              << register_staged::batch_elements(spec.granularity, kThreads) << " elements, "
              << shared_bytes_of(spec) / 1024 << " KB of shared memory per block\n";
    course::Launch launch =
        spec.kernel == Kernel::register_staged
            ? register_staged::prepare_copy_and_compute(w.in.cspan(), w.out.span(),
                                                        spec.granularity, shape)
            : cg_memcpy_async::prepare_copy_and_compute(
                  w.in.cspan(), w.out.span(), spec.granularity, buffering_of(spec.kernel), shape);
    harness.run(w.checked(spec.name, std::move(launch)));
  }
}

Buffering buffering_of(Kernel k) {
  return k == Kernel::cg_double_buffered ? Buffering::double_buffered : Buffering::single;
}

/// The most blocks per SM the variant's kernel allows (its shared memory decides).
int resident_blocks(const VariantSpec& spec) {
  if (spec.kernel == Kernel::register_staged) {
    return register_staged::max_blocks_per_sm(spec.granularity, kThreads);
  }
  return cg_memcpy_async::max_blocks_per_sm(spec.granularity, buffering_of(spec.kernel), kThreads);
}

std::size_t shared_bytes_of(const VariantSpec& spec) {
  if (spec.kernel == Kernel::register_staged) {
    return register_staged::shared_bytes(spec.granularity, kThreads);
  }
  return cg_memcpy_async::shared_bytes(spec.granularity, buffering_of(spec.kernel), kThreads);
}

void add_flags(course::FlagParser& flags, Settings& s) {
  flags.add_common(s.options, course::workload::size_help(), course::names_of(kVariants));
  flags.add_int("blocks-per-sm", &s.blocks_per_sm, 0,
                "blocks per SM for the variants at full occupancy (default 0: as many as fit)");
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  course::FlagParser flags(
      kLesson,
      "Lesson 02: copy and compute with cooperative_groups::memcpy_async. 'register-*' is\n"
      "lesson 01's kernel (global -> registers -> shared); 'wait-*' copies each batch with\n"
      "one memcpy_async and waits for it at once (cooperative_groups::wait); 'double-*'\n"
      "uses two buffers and starts the next batch's copy before computing this one\n"
      "(cooperative_groups::wait_prior<1>). 'fine' = 4 bytes per thread per batch (1 KB\n"
      "batches), 'coarse' = 64 bytes (16 KB batches). '-1-per-SM' launches one block per SM.");
  add_flags(flags, settings);
  return course::run_driver(flags, argc, argv, settings.options,
                            [&](const course::DeviceSummary& gpu) { return run(settings, gpu); });
}
