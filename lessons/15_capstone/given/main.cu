// Lesson 15 driver: the SGEMM ladder, C = alpha A B + beta C in fp32 on the CUDA cores, every
// rung checked element by element against cuBLAS (cublasSgemm, measured in the same run as the
// reference) with a tolerance that grows with k, then timed in TFLOP/s, and a sweep over
// square sizes (written to FILE_sweep.csv with --csv; --no-sweep leaves it out).
//
// Read it in this order: Settings (the flags as given), plan_of (every size and count as a
// number), run() (one line per part of the output), then the parts: the intro, the rungs
// this GPU runs and the main table here; the square sweep and the targets in parts_sweep.cu
// and parts_targets.cu (what they share: capstone_driver.h); Part 2, the streamed GEMM, in
// streamed.cu.
#include <cstdint>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "capstone.cuh"
#include "capstone_driver.h"
#include "course/buffers.h"
#include "course/flags.h"
#include "course/harness.h"
#include "streamed.cuh"

namespace capstone::driver {
namespace {

constexpr int kDefaultSize = 4096;
constexpr GemmShape kQuickShape{509, 388, 260};  // m prime, no dimension a multiple of 128
const std::vector<int> kSweepSizes = {512, 1024, 2048, 4096, 8192};
const std::vector<int> kQuickSweepSizes = {128, 256};  // --quick
constexpr int kRungCount = static_cast<int>(std::size(kRungs));

/// The command line as given: the common flags, Part 1's (the ladder) and Part 2's (the
/// streamed GEMM). 0 or "": not given.
struct Settings {
  course::CommonOptions options;
  int m = 0, n = 0, k = 0, rung = 0, stages = kDefaultStages;
  bool no_sweep = false;
  int rows = 0, width = 0;  // Part 2, the streamed GEMM (streamed.cuh)
  std::string chunk_list, part;
};

void add_flags(course::FlagParser& flags, Settings& s);
Plan plan_of(const Settings& s);

// The parts of this file, in the order of the output.
void print_intro(const GemmShape& shape, int stages);
std::vector<Rung> runnable_rungs(const course::DeviceSummary& gpu, const Plan& plan);
std::vector<std::string> run_ladder(course::Harness& harness, const Plan& plan,
                                    const std::vector<Rung>& rungs, Problem& problem);
void run_streamed_part(course::Harness& harness, const Plan& plan,
                       const course::DeviceSummary& gpu);

/// The whole run, one line per part of the output.
int run(const Plan& plan, const course::DeviceSummary& gpu) {
  course::require_compute_capability(gpu, {8, 0}, "lesson 15 (cp.async)");
  print_intro(plan.shape, plan.stages);                       // the problem and the tolerance
  const std::vector<Rung> rungs = runnable_rungs(gpu, plan);  // each one left out says why
  course::Harness harness(kLesson, plan.options, gpu);
  harness.unit("TFLOP/s", 1e12);
  Problem main_problem(plan.shape, 15, harness.stream());
  const std::vector<std::string> ran = run_ladder(harness, plan, rungs, main_problem);
  run_square_sweep(harness, plan, rungs);       // parts_sweep.cu
  run_streamed_part(harness, plan, gpu);        // Part 2 (streamed.cu)
  add_targets(harness, ran, plan.judge_sweep);  // parts_targets.cu
  return harness.finish();                      // the tables, HEADLINE, TARGET lines, RESULT
}

// ---- The flags and the plan ------------------------------------------------------------------

/// {128, 256} -> "128, 256": a list of sizes as the usage text shows it.
std::string listed(const std::vector<int>& values) {
  std::string text;
  for (int v : values) text += (text.empty() ? "" : ", ") + std::to_string(v);
  return text;
}

void add_flags(course::FlagParser& flags, Settings& s) {
  std::vector<std::string> variants;
  for (Rung r : kRungs) variants.emplace_back(name(r));
  flags.add_common(s.options,
                   "m = n = k of a square problem (default " + std::to_string(kDefaultSize) + ")",
                   variants);
  flags.add_int("m", &s.m, 0, "rows of A and C (overrides --size)");
  flags.add_int("n", &s.n, 0, "columns of B and C (overrides --size)");
  flags.add_int("k", &s.k, 0, "columns of A, rows of B (overrides --size)");
  flags.add_int("rung", &s.rung, 0,
                "run only this rung, 1 to " + std::to_string(kRungCount) + " (0: all)");
  flags.add_int("stages", &s.stages, 0,
                "stages of rungs 4 and 5, " + std::to_string(kMinStages) + " to " +
                    std::to_string(kMaxStages) + " (default " + std::to_string(kDefaultStages) +
                    ")");
  flags.add_bool("no-sweep", &s.no_sweep,
                 "leave out the sweep over square sizes " + std::to_string(kSweepSizes.front()) +
                     " ... " + std::to_string(kSweepSizes.back()) +
                     " (--quick: " + listed(kQuickSweepSizes) + ")");
  flags.add_int("rows", &s.rows, 1,
                "Part 2: rows of A and C (default " + std::to_string(kDefaultRows) + "; --quick " +
                    std::to_string(kQuickRows) + ")");
  flags.add_int("width", &s.width, 1,
                "Part 2: k = n (default " + std::to_string(kDefaultWidth) + "; --quick k = " +
                    std::to_string(kQuickK) + ", n = " + std::to_string(kQuickN) + ")");
  flags.add_string("chunks", &s.chunk_list,
                   std::string("Part 2: chunk counts, comma-separated (default ") + kDefaultChunks +
                       "; --quick " + kQuickChunks + ")");
  flags.add_choice("part", &s.part, {"gemm", "stream", "all"},
                   "gemm: the ladder, stream: the streamed GEMM, all (default): both");
}

/// Every size and count as a number, with the range checks the flag parser cannot do (a
/// UsageError each); run_driver calls it before opening the device. --rung N becomes
/// --variant (the rung's name); Part 1's problem is 4096^3 (--quick: 509 x 388 x 260), or
/// --size, then --m, --n, --k.
Plan plan_of(const Settings& s) {
  course::require_in_range("rung", s.rung, 0, kRungCount);
  if (s.rung != 0 && !s.options.variant.empty()) {
    throw course::UsageError("give --rung or --variant, not both");
  }
  course::require_in_range("stages", s.stages, kMinStages, kMaxStages);
  const auto too_large = [](const char* flag) {
    return course::UsageError(std::string("--") + flag + " must be at most " +
                              std::to_string(kMaxDimension));
  };
  if (s.options.size > static_cast<std::uint64_t>(kMaxDimension)) throw too_large("size");
  if (s.m > kMaxDimension) throw too_large("m");
  const bool quick = s.options.quick;
  Plan plan;
  plan.options = s.options;
  if (s.rung != 0) plan.options.variant = name(kRungs[s.rung - 1]);
  const int size = static_cast<int>(s.options.size);
  plan.shape = size    ? GemmShape{size, size, size}
               : quick ? kQuickShape
                       : GemmShape{kDefaultSize, kDefaultSize, kDefaultSize};
  if (s.m) plan.shape.m = s.m;
  if (s.n) plan.shape.n = s.n;
  if (s.k) plan.shape.k = s.k;
  plan.stages = s.stages;
  plan.ladder = s.part != "stream";
  if (plan.ladder && !s.no_sweep) plan.sweep_sizes = quick ? kQuickSweepSizes : kSweepSizes;
  plan.judge_sweep = plan.ladder && !s.no_sweep && !quick;
  plan.streamed = s.part != "gemm";
  plan.part2 = streamed_settings(s.rows, s.width, s.chunk_list, quick);
  return plan;
}

// ---- The parts -------------------------------------------------------------------------------

void print_intro(const GemmShape& shape, int stages) {
  std::cout << "lesson 15 capstone: SGEMM " << to_string(shape)
            << " (m x n x k), alpha = " << kAlpha << ", beta = " << kBeta << ", " << kThreads
            << " computing threads per block in rungs 2-5, " << stages
            << " stages in rungs 4-5; tolerance per element: 2 gamma(k + 2) (|alpha| |A| |B| + "
               "|beta| |C|), gamma(k + 2) = "
            << error_factor(shape.k)
            << "\n  (in the sweeps, x cuBLAS divides by cuBLAS at this size: compare a rung with "
               "the cuBLAS row of its own size)\n";
}

/// The rungs this GPU runs on the plan's shape (rung 5 needs the tensor memory accelerator of
/// sm_90, and its tensor maps k and n multiples of 4), each one left out said so; --variant
/// (or --rung) picks one.
std::vector<Rung> runnable_rungs(const course::DeviceSummary& gpu, const Plan& plan) {
  std::vector<Rung> rungs;
  for (Rung r : kRungs) {
    const std::string rung = name(r);
    if (!plan.options.variant.empty() && plan.options.variant != rung) continue;
    if (!(gpu.cc >= min_compute_capability(r))) {
      std::cout << "  " << rung << ": not run (needs compute capability "
                << min_compute_capability(r).major << "." << min_compute_capability(r).minor
                << ")\n";
    } else if (r == Rung::tma && (plan.shape.k % 4 != 0 || plan.shape.n % 4 != 0)) {
      std::cout << "  " << rung << ": not run (a tensor map needs k and n multiples of 4)\n";
    } else {
      rungs.push_back(r);
    }
  }
  return rungs;
}

/// The main table: cuBLAS on `problem` (the reference, always), then each rung of `rungs`
/// when the plan runs the ladder, checked and timed. Returns the names of the rungs it ran.
std::vector<std::string> run_ladder(course::Harness& harness, const Plan& plan,
                                    const std::vector<Rung>& rungs, Problem& problem) {
  course::DeviceBuffer<float> ref_out(problem.c.size());
  harness.reference(kReference, flops(problem.shape),
                    prepare_cublas_sgemm(problem.shape, kAlpha, problem.a.data(), problem.b.data(),
                                         kBeta, ref_out.data()));
  std::vector<std::string> ran;
  for (Rung r : plan.ladder ? rungs : std::vector<Rung>{}) {
    harness.run(problem.variant(name(r), problem.rung(r, plan.stages)));
    ran.push_back(name(r));
  }
  if (!ran.empty()) {
    harness.baseline(ran.front());
    harness.headline(ran.back());
  }
  return ran;
}

/// Part 2 (streamed.cu's run_streamed), when the plan runs it, with the fastest rung this GPU
/// runs on its shape.
void run_streamed_part(course::Harness& harness, const Plan& plan,
                       const course::DeviceSummary& gpu) {
  if (!plan.streamed) return;
  const bool tma =
      gpu.cc >= min_compute_capability(Rung::tma) && plan.part2.k % 4 == 0 && plan.part2.n % 4 == 0;
  run_streamed(harness, gpu, plan.part2, {tma ? Rung::tma : Rung::cp_async, plan.stages},
               plan.options.csv);
}

}  // namespace
}  // namespace capstone::driver

int main(int argc, char** argv) {
  namespace driver = capstone::driver;
  driver::Settings settings;
  driver::Plan plan;
  course::FlagParser flags(
      driver::kLesson,
      "Lesson 15: the SGEMM ladder. C = alpha A B + beta C (row-major, fp32 FMA on the CUDA\n"
      "cores, alpha = 1, beta = 0) by five kernels, each adding one idea: 1-smem (shared\n"
      "tiles through registers), 2-regblock (8 x 8 register micro-tiles, float4), 3-warptile\n"
      "(128 x 256 tiles, 64 x 64 warp tiles, 8 x 16 per thread, double-buffered through\n"
      "registers), 4-cp-async (the same tiles through a multi-stage cp.async pipeline), 5-tma\n"
      "(TMA tensor loads from a producer warpgroup, full/empty mbarriers, setmaxnreg; sm_90).\n"
      "Every rung is checked against cuBLAS, measured in the same run as the reference.");
  driver::add_flags(flags, settings);
  return course::run_driver(
      flags, argc, argv, settings.options,
      [&](const course::DeviceSummary& gpu) { return driver::run(plan, gpu); },
      [&] { plan = driver::plan_of(settings); });
}
