// Lesson 08 driver: what warp entanglement does on this GPU.
//
// 1. The model: the Programming Guide's fully diverged example (PB, TB, what a wait covers).
// 2. The entanglement report: one instrumented launch per variant (converged; diverged with
//    32 and 4 paths; the same copies with the commit after __syncwarp(), the control of each
//    diverged variant; and after the branch without __syncwarp()), the model's prediction
//    beside what the GPU measured (warp_entanglement_launch.cu prints it). The harness keeps
//    these launches as the sweep `entanglement`: their times in the sweep table, the report's
//    columns in the sweep CSV (--csv FILE.csv -> FILE_sweep.csv).
// 3. The harness table: the same kernels uninstrumented, timed against a D2D cudaMemcpy and
//    the SM copy roof, every output checked (entanglement moves time, never values).
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/buffers.h"
#include "course/data.h"
#include "course/harness.h"
#include "course/problem.h"
#include "course/workload.h"
#include "warp_entanglement.cuh"

namespace {

using course::workload::Problem;

namespace we = warp_entanglement;

constexpr int kThreads = 256;
constexpr int kDefaultBlocksPerSm = 1;  // one block's pipeline is all there is to hide latency
constexpr int kMaxBlocksPerSm = 32;     // no GPU of the course holds more
constexpr std::uint32_t kSeed = 8;
constexpr const char* kLesson = "08_warp_entanglement";
constexpr const char* kBaseline = "converged";

/// The command line, as given: the common flags and --blocks-per-sm.
struct Settings {
  course::CommonOptions options;
  int blocks_per_sm = kDefaultBlocksPerSm;
};

/// Every size and count of the run, resolved from the command line.
struct Plan {
  std::size_t elements = 0;
  int blocks_per_sm = 0;  ///< 0: as many as fit
  std::string variant;    ///< the one variant --variant asks for; empty: every variant
};

Plan make_plan(const Settings& s);
void print_intro(const Plan& plan);
void add_yardsticks(course::Harness& harness, Problem& w);
std::vector<we::LaunchShape> launch_shapes(int blocks_per_sm, const course::DeviceSummary& gpu);
void run_entanglement_report(course::Harness& harness, Problem& w,
                             const std::vector<we::LaunchShape>& shapes, const std::string& variant,
                             const course::DeviceSummary& gpu);
void run_table(course::Harness& harness, Problem& w, const std::vector<we::LaunchShape>& shapes,
               const std::string& variant);

/// The output, part by part: the intro line, the model's example, the variants' launches, the
/// entanglement report, the harness table.
int run(const Settings& s, const course::DeviceSummary& gpu) {
  const Plan plan = make_plan(s);
  print_intro(plan);
  Problem w(plan.elements, kSeed);
  we::model::print_fully_diverged_example(std::cout);
  course::Harness harness(kLesson, s.options, gpu);
  add_yardsticks(harness, w);
  const std::vector<we::LaunchShape> shapes = launch_shapes(plan.blocks_per_sm, gpu);
  run_entanglement_report(harness, w, shapes, plan.variant, gpu);
  run_table(harness, w, shapes, plan.variant);
  return harness.finish();
}

/// --size, or the default of a full or a --quick run: the one place that reads --quick.
Plan make_plan(const Settings& s) {
  const course::CommonOptions& options = s.options;
  return {course::workload::elements_for(options),
          s.blocks_per_sm, options.variant};
}

void print_intro(const Plan& plan) {
  std::cout << "lesson 08 warp_entanglement: " << plan.elements << " uint32 elements, " << kThreads
            << " threads per block, " << we::kStages << " buffers of "
            << we::batch_elements(kThreads) * sizeof(std::uint32_t) / 1024
            << " KB; batch k+1 starts before wait_prior(" << we::kAllowedPending
            << ") for batch k; GB/s counts bytes read + bytes written\n";
}

void add_yardsticks(course::Harness& harness, Problem& w) {
  harness.reference_d2d_copy(w.out.data(), w.in.data(), w.in.bytes());
  // The roof copies whole 16-byte vectors: the largest multiple of 16 bytes (a rate).
  harness.roof_sm_copy(w.out.data(), w.in.data(), w.in.bytes() / 16 * 16);
  harness.baseline(kBaseline);
  harness.headline(kBaseline);
}

/// Every variant's launch shape, one line each. One block per SM by default: the variant's
/// own pipeline is all that hides latency.
std::vector<we::LaunchShape> launch_shapes(int blocks_per_sm, const course::DeviceSummary& gpu) {
  std::vector<we::LaunchShape> shapes;
  std::cout << "\nVariants (" << kThreads << " threads per block):\n";
  for (const we::VariantSpec& spec : we::variants()) {
    const int resident = we::max_blocks_per_sm(spec.mode, kThreads);
    if (resident < 1) throw std::runtime_error("one block does not fit on an SM");
    const int per_sm = blocks_per_sm > 0 ? std::min(blocks_per_sm, resident) : resident;
    shapes.push_back({gpu.sm_count * per_sm, kThreads});
    std::cout << "  " << spec.name << ": " << shapes.back().blocks << " blocks (" << per_sm
              << " per SM; at most " << resident << " fit); " << spec.what << "\n";
  }
  return shapes;
}

/// The entanglement report: one instrumented launch per variant, the model beside what it
/// measured (sweep `entanglement`). With --variant, its control (and the converged baseline)
/// are measured too.
void run_entanglement_report(course::Harness& harness, Problem& w,
                             const std::vector<we::LaunchShape>& shapes, const std::string& variant,
                             const course::DeviceSummary& gpu) {
  const std::vector<std::string> reported =
      variant.empty() ? course::names_of(we::variants()) : we::with_controls(variant);
  std::vector<we::EntanglementRow> rows;
  for (std::size_t i = 0; i < we::variants().size(); ++i) {
    const we::VariantSpec& spec = we::variants()[i];
    if (std::find(reported.begin(), reported.end(), spec.name) == reported.end()) continue;
    rows.push_back(we::measure_entanglement(w.in.cspan(), w.out.span(), w.expected, spec, shapes[i],
                                            harness.stream()));
  }
  we::compare_with_controls(rows);
  we::print_entanglement(rows, gpu.name, std::cout);
  for (const we::EntanglementRow& r : rows) {
    if (!r.failure.empty()) std::cerr << kLesson << " " << r.spec.name << ": " << r.failure << "\n";
    harness.record_sweep("entanglement", we::entanglement_columns(r), r.spec.name, r.kernel_ms,
                         course::workload::bytes_moved(w.n), r.failure.empty() ? "PASS" : "FAIL");
  }
  std::cout << "(The harness lists these instrumented launches, one run each, as the sweep "
               "`entanglement` below;\nthe main table times the same kernels uninstrumented.)\n";
}

/// The harness table: the same kernels, uninstrumented, checked and timed.
void run_table(course::Harness& harness, Problem& w, const std::vector<we::LaunchShape>& shapes,
               const std::string& variant) {
  for (std::size_t i = 0; i < we::variants().size(); ++i) {
    const we::VariantSpec& spec = we::variants()[i];
    if (!variant.empty() && variant != spec.name) continue;
    harness.run(
        w.checked(spec.name, we::prepare_copy_and_compute(w.in.cspan(), w.out.span(), spec.mode,
                                                          we::lane_paths(spec.paths), shapes[i])));
  }
}

void add_flags(course::FlagParser& flags, Settings& s) {
  flags.add_common(s.options, course::workload::size_help(), course::names_of(we::variants()));
  flags.add_int("blocks-per-sm", &s.blocks_per_sm, 0,
                "blocks per SM, at most " + std::to_string(kMaxBlocksPerSm) + " (default " +
                    std::to_string(kDefaultBlocksPerSm) +
                    ", where one block's pipeline is all there "
                    "is to hide latency; 0: as many as fit)");
}

/// The range check the flag parser cannot do; run_driver calls it before opening the device.
void validate(const Settings& s) {
  course::require_in_range("blocks-per-sm", s.blocks_per_sm, 0, kMaxBlocksPerSm);
}

/// The usage text's description; the buffers, their size and the wait's count come from the
/// lesson's constants.
std::string description() {
  return "Lesson 08: warp entanglement. The same copy-and-compute kernel (pipeline primitives,\n" +
         std::to_string(we::kStages) + " buffers of " +
         std::to_string(we::batch_elements(kThreads) * sizeof(std::uint32_t) / 1024) +
         " KB; each step starts batch k+1, then waits with __pipeline_wait_prior(" +
         std::to_string(we::kAllowedPending) +
         ")\n"
         "for batch k and computes it) commits and arrives on (cp.async.mbarrier.arrive)\n"
         "converged, from a data-dependent branch with 32 or 4 paths, or after that branch with\n"
         "and without __syncwarp(). The driver prints what the model of the warp-shared batch\n"
         "sequence predicts next to what one instrumented launch per variant measured (with\n"
         "--csv FILE.csv: FILE_sweep.csv), then times the uninstrumented kernels against a D2D\n"
         "cudaMemcpy and the SM copy roof (FILE.csv).";
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
