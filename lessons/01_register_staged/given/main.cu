// Lesson 01 driver: runs the register-staged copy-and-compute kernel at two
// granularities and two occupancies, checks every output element against the CPU
// reference, and compares each variant's bandwidth with two yardsticks measured in the
// same run: a device-to-device cudaMemcpy and the SM copy roof (course/roof.h).
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "course/harness.h"
#include "course/problem.h"
#include "course/workload.h"
#include "register_staged.cuh"

namespace {

using course::workload::Problem;
using register_staged::Granularity;

constexpr int kThreads = 256;
constexpr std::uint32_t kSeed = 1;
constexpr const char* kLesson = "01_register_staged";
constexpr const char* kHeadline = "coarse";

struct VariantSpec {
  const char* name;
  Granularity granularity;
  bool one_block_per_sm;
};

// The Programming Guide's granularity (one element per thread) first: the baseline the
// others are compared with.
const std::vector<VariantSpec> kVariants = {
    {"fine", Granularity::fine, false},
    {kHeadline, Granularity::coarse, false},
    {"fine-1-per-SM", Granularity::fine, true},
    {"coarse-1-per-SM", Granularity::coarse, true},
};

/// The command line, as given: the common flags and --blocks-per-sm.
struct Settings {
  course::CommonOptions options;
  int blocks_per_sm = 0;
};

/// Every size and count of the run, resolved from the command line.
struct Plan {
  std::size_t elements = 0;
  int blocks_per_sm = 0;  ///< of 'fine' and 'coarse'; 0: as many as fit
};

Plan make_plan(const Settings& s);
void print_intro(const Plan& plan);
void add_yardsticks_and_targets(course::Harness& harness, Problem& w);
void run_variants(course::Harness& harness, Problem& w, const Plan& plan,
                  const course::DeviceSummary& gpu);

/// The output, part by part: the intro line, then the table.
int run(const Settings& s, const course::DeviceSummary& gpu) {
  const Plan plan = make_plan(s);
  print_intro(plan);
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

void print_intro(const Plan& plan) {
  std::cout << "lesson 01 register_staged: " << plan.elements << " uint32 elements, " << kThreads
            << " threads per block; GB/s counts bytes read + bytes written\n";
}

void add_yardsticks_and_targets(course::Harness& harness, Problem& w) {
  harness.reference_d2d_copy(w.out.data(), w.in.data(), w.in.bytes());
  // The roof kernel moves 16-byte vectors: a whole number of them (at most 12 bytes less).
  harness.roof_sm_copy(w.out.data(), w.in.data(), w.in.bytes() / 16 * 16);
  harness.baseline("fine");
  harness.headline(kHeadline);
  harness.target({kHeadline, 0.85});
}

/// Every variant: the line that says how it launches, then the checked, timed run.
void run_variants(course::Harness& harness, Problem& w, const Plan& plan,
                  const course::DeviceSummary& gpu) {
  for (const VariantSpec& spec : kVariants) {
    const int resident = register_staged::max_blocks_per_sm(spec.granularity, kThreads);
    const int per_sm =
        spec.one_block_per_sm ? 1 : (plan.blocks_per_sm > 0 ? plan.blocks_per_sm : resident);
    const register_staged::LaunchShape shape{gpu.sm_count * per_sm, kThreads};
    std::cout << "  " << spec.name << ": " << shape.blocks << " blocks (" << per_sm
              << " per SM; at most " << resident << " fit), batch of "
              << register_staged::batch_elements(spec.granularity, kThreads) << " elements\n";
    harness.run(w.checked(spec.name, register_staged::prepare_copy_and_compute(
                                         w.in.cspan(), w.out.span(), spec.granularity, shape)));
  }
}

void add_flags(course::FlagParser& flags, Settings& s) {
  flags.add_common(s.options, course::workload::size_help(), course::names_of(kVariants));
  flags.add_int("blocks-per-sm", &s.blocks_per_sm, 0,
                "blocks per SM for 'fine' and 'coarse' (default 0: as many as fit)");
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  course::FlagParser flags(
      kLesson,
      "Lesson 01: copy and compute through registers. Every variant stages batches\n"
      "global -> registers -> shared memory with two block barriers per batch; 'fine'\n"
      "copies one uint32 per thread per batch (the Programming Guide's snippet), 'coarse'\n"
      "four 16-byte vectors per thread. '-1-per-SM' variants launch one block per SM.");
  add_flags(flags, settings);
  return course::run_driver(flags, argc, argv, settings.options,
                            [&](const course::DeviceSummary& gpu) { return run(settings, gpu); });
}
