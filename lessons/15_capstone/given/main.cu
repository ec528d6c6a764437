// Lesson 15 driver: the SGEMM ladder, C = alpha A B + beta C in fp32 on the CUDA cores, every
// rung checked element by element against cuBLAS (cublasSgemm, measured in the same run as the
// reference) with a tolerance that grows with k, then timed in TFLOP/s, and a sweep over
// square sizes (written to FILE_sweep.csv with --csv; --no-sweep leaves it out).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "capstone.cuh"
#include "course/buffers.h"
#include "course/check.h"
#include "course/data.h"
#include "course/harness.h"
#include "course/launch.h"
#include "course/table.h"
#include "streamed.cuh"

namespace {

using capstone::GemmShape;
using capstone::Rung;

constexpr const char* kLesson = "15_capstone";
constexpr const char* kReference = "cuBLAS";
constexpr int kDefaultSize = 4096;
constexpr GemmShape kQuickShape{509, 388, 260};  // m prime, no dimension a multiple of 128
constexpr float kAlpha = 1.0f;
constexpr float kBeta = 0.0f;

// Targets (goals for an H100 or H200, not correctness): the best rung against cuBLAS at
// 4096^3 and 8192^3 (kBestOfCublas) and at 2048^3, where a 128 x 256 tile leaves a quarter
// of a wave for the last blocks; the cp.async rung against cuBLAS and against rung 3.
constexpr double kBestOfCublas = 0.97;
constexpr double kBestOfCublasAt2048 = 0.90;
constexpr double kCpAsyncOfCublas = 0.95;
constexpr double kCpAsyncOverRegisters = 1.05;

/// The targets judged on the sweep's rows of one size: each rung at least as fast as the
/// rung before it, and the best rung against cuBLAS of that size.
void judge_sweep_size(course::Harness& harness, int size, double best_of_cublas) {
  const std::string at = ", " + std::to_string(size);
  const auto rate = [&](const std::string& name) {
    return harness.sweep_rate_of("square", name + at);
  };
  std::string previous, best;
  for (Rung r : capstone::kRungs) {
    const std::string name = capstone::name(r);
    if (rate(name) <= 0) continue;
    if (!previous.empty()) {
      const double ratio = rate(name) / rate(previous);
      harness.judged_target(name + at + " >= 1.00 x " + previous + at, ratio >= 1.0, ratio);
    }
    if (best.empty() || rate(name) > rate(best)) best = name;
    previous = name;
  }
  if (best.empty() || rate(kReference) <= 0) return;
  const double of_cublas = rate(best) / rate(kReference);
  harness.judged_target(
      best + at + " (best) >= " + course::fixed(best_of_cublas, 2) + " x " + kReference + at,
      of_cublas >= best_of_cublas, of_cublas);
}

std::vector<std::string> variant_names() {
  std::vector<std::string> names;
  for (Rung r : capstone::kRungs) names.emplace_back(capstone::name(r));
  return names;
}

/// One problem on the device: A, B, the C every run starts from, the expected C (cuBLAS) and
/// the per-element error bound |alpha| |A| |B| + |beta| |C0| (cuBLAS on absolute values).
struct Problem {
  GemmShape shape;
  course::DeviceBuffer<float> a, b, c0, c;
  std::vector<float> expected, bound;

  Problem(GemmShape s, std::uint32_t seed, cudaStream_t stream)
      : shape(s),
        a(static_cast<std::size_t>(s.m) * s.k),
        b(static_cast<std::size_t>(s.k) * s.n),
        c0(static_cast<std::size_t>(s.m) * s.n),
        c(static_cast<std::size_t>(s.m) * s.n) {
    capstone::fill_uniform(a.span(), seed, stream);
    capstone::fill_uniform(b.span(), seed + 1, stream);
    capstone::fill_uniform(c0.span(), seed + 2, stream);
    course::DeviceBuffer<float> out(c.size());
    COURSE_CHECK(
        cudaMemcpyAsync(out.data(), c0.data(), c0.bytes(), cudaMemcpyDeviceToDevice, stream));
    capstone::prepare_cublas_sgemm(s, kAlpha, a.data(), b.data(), kBeta, out.data())(stream);
    COURSE_CHECK(cudaStreamSynchronize(stream));
    expected = course::to_host(out.cspan());
    {
      course::DeviceBuffer<float> abs_a(a.size()), abs_b(b.size());
      capstone::absolute_values(a.cspan(), abs_a.span(), stream);
      capstone::absolute_values(b.cspan(), abs_b.span(), stream);
      capstone::absolute_values(c0.cspan(), out.span(), stream);
      capstone::prepare_cublas_sgemm(s, std::abs(kAlpha), abs_a.data(), abs_b.data(),
                                     std::abs(kBeta), out.data())(stream);
      COURSE_CHECK(cudaStreamSynchronize(stream));
    }
    bound = course::to_host(out.cspan());
  }

  /// A rung as a harness variant: C poisoned (beta == 0: C must not be read) or reset to C0
  /// before the checked run, every element compared afterwards.
  course::Variant variant(const std::string& name, course::Launch run) {
    return course::Variant{
        name, capstone::flops(shape), std::move(run),
        [this](cudaStream_t s) {
          if (kBeta == 0.0f) {
            course::poison(c.data(), c.bytes(), s);
          } else {
            COURSE_CHECK(
                cudaMemcpyAsync(c.data(), c0.data(), c.bytes(), cudaMemcpyDeviceToDevice, s));
          }
        },
        [this, name] {
          if (const auto timeouts = capstone::take_wait_timeouts(); timeouts != 0) {
            throw std::runtime_error(name + ": " + std::to_string(timeouts) +
                                     " mbarrier waits gave up (a phase never completed)");
          }
          return capstone::compare_gemm(expected, bound, course::to_host(c.cspan()), shape.k);
        }};
  }

  course::Launch rung(Rung r, int stages) {
    return capstone::prepare_sgemm({r, stages}, shape, kAlpha, a.data(), b.data(), kBeta, c.data());
  }
};

/// The command line: the common flags, Part 1's (the ladder) and Part 2's (the streamed GEMM).
struct Settings {
  course::CommonOptions options;
  int m = 0, n = 0, k = 0, rung = 0, stages = capstone::kDefaultStages;
  bool no_sweep = false;
  int rows = 0, width = 0;  // Part 2, the streamed GEMM (streamed.cuh)
  std::string chunk_list, part;
  capstone::StreamedSettings streamed;  ///< resolved by validate()
};

void add_flags(course::FlagParser& flags, Settings& s) {
  flags.add_common(s.options, "m = n = k of a square problem (default 4096)", variant_names());
  flags.add_int("m", &s.m, 0, "rows of A and C (overrides --size)");
  flags.add_int("n", &s.n, 0, "columns of B and C (overrides --size)");
  flags.add_int("k", &s.k, 0, "columns of A, rows of B (overrides --size)");
  flags.add_int("rung", &s.rung, 0, "run only this rung, 1 to 5 (0: all)");
  flags.add_int("stages", &s.stages, 0, "stages of rungs 4 and 5, 2 to 4 (default 4)");
  flags.add_bool("no-sweep", &s.no_sweep,
                 "leave out the sweep over square sizes 512 ... 8192 (--quick: 128, 256)");
  flags.add_int("rows", &s.rows, 1, "Part 2: rows of A and C (default 32768; --quick 1000)");
  flags.add_int("width", &s.width, 1, "Part 2: k = n (default 1024; --quick k = 100, n = 52)");
  flags.add_string("chunks", &s.chunk_list,
                   "Part 2: chunk counts, comma-separated (default 1,2,4,8,16,32; --quick 1,3,7)");
  flags.add_choice("part", &s.part, {"gemm", "stream", "all"},
                   "gemm: the ladder, stream: the streamed GEMM, all (default): both");
}

/// The range checks the flag parser cannot do; run_driver calls it before opening the device.
/// --rung N becomes --variant (the rung's name).
void validate(Settings& s) {
  if (s.rung < 0 || s.rung > static_cast<int>(std::size(capstone::kRungs))) {
    throw course::UsageError("--rung must be in [0, " +
                             std::to_string(std::size(capstone::kRungs)) + "], got " +
                             std::to_string(s.rung));
  }
  if (s.rung != 0 && !s.options.variant.empty()) {
    throw course::UsageError("give --rung or --variant, not both");
  }
  if (s.stages < capstone::kMinStages || s.stages > capstone::kMaxStages) {
    throw course::UsageError("--stages must be in [2, 4], got " + std::to_string(s.stages));
  }
  if (s.options.size > 65535u * capstone::kSmemTile) {
    throw course::UsageError("--size must be at most 2097120");
  }
  if (s.m > 65535 * capstone::kSmemTile) throw course::UsageError("--m must be at most 2097120");
  if (s.rung != 0) s.options.variant = capstone::name(capstone::kRungs[s.rung - 1]);
  s.streamed = capstone::streamed_settings(s.rows, s.width, s.chunk_list, s.options.quick);
}

/// Part 1's problem: 4096^3 (--quick: 509 x 388 x 260), or --size, then --m, --n, --k.
GemmShape main_shape(const Settings& s) {
  GemmShape shape =
      s.options.quick ? kQuickShape : GemmShape{kDefaultSize, kDefaultSize, kDefaultSize};
  if (s.options.size) {
    const int size = static_cast<int>(s.options.size);
    shape = {size, size, size};
  }
  if (s.m) shape.m = s.m;
  if (s.n) shape.n = s.n;
  if (s.k) shape.k = s.k;
  return shape;
}

void print_intro(const GemmShape& shape, int stages) {
  std::cout << "lesson 15 capstone: SGEMM " << capstone::to_string(shape)
            << " (m x n x k), alpha = " << kAlpha << ", beta = " << kBeta << ", "
            << capstone::kThreads << " computing threads per block in rungs 2-5, " << stages
            << " stages in rungs 4-5; tolerance per element: 2 gamma(k + 2) (|alpha| |A| |B| + "
               "|beta| |C|), gamma(k + 2) = "
            << capstone::error_factor(shape.k)
            << "\n  (in the sweeps, x cuBLAS divides by cuBLAS at this size: compare a rung with "
               "the cuBLAS row of its own size)\n";
}

/// The rungs this GPU runs on `shape` (rung 5 needs the tensor memory accelerator of sm_90,
/// and its tensor maps k and n multiples of 4), each one left out said so; --variant picks one.
std::vector<Rung> runnable_rungs(const course::DeviceSummary& gpu, const std::string& variant,
                                 const GemmShape& shape) {
  std::vector<Rung> rungs;
  for (Rung r : capstone::kRungs) {
    const std::string name = capstone::name(r);
    if (!variant.empty() && variant != name) continue;
    if (!(gpu.cc >= capstone::min_compute_capability(r))) {
      std::cout << "  " << name << ": not run (needs compute capability "
                << capstone::min_compute_capability(r).major << "."
                << capstone::min_compute_capability(r).minor << ")\n";
    } else if (r == Rung::tma && (shape.k % 4 != 0 || shape.n % 4 != 0)) {
      std::cout << "  " << name << ": not run (a tensor map needs k and n multiples of 4)\n";
    } else {
      rungs.push_back(r);
    }
  }
  return rungs;
}

/// The sweep over square sizes: cuBLAS and every rung at each size, each size its own problem.
void run_square_sweep(course::Harness& harness, const std::vector<Rung>& rungs, bool quick,
                      int stages) {
  const std::vector<int> sizes =
      quick ? std::vector<int>{128, 256} : std::vector<int>{512, 1024, 2048, 4096, 8192};
  for (int s : sizes) {
    Problem p({s, s, s}, 150 + static_cast<std::uint32_t>(s), harness.stream());
    const course::SweepParams params{{"size", std::to_string(s)}};
    course::DeviceBuffer<float> out(p.c.size());
    const std::string at = ", " + std::to_string(s);  // the size in every row's name
    harness.sweep("square", params,
                  course::Variant{kReference + at,
                                  capstone::flops(p.shape),
                                  capstone::prepare_cublas_sgemm(p.shape, kAlpha, p.a.data(),
                                                                 p.b.data(), kBeta, out.data()),
                                  {},
                                  {}});
    for (Rung r : rungs) {
      harness.sweep("square", params, p.variant(capstone::name(r) + at, p.rung(r, stages)));
    }
  }
}

/// The targets: ratios measured in this run. The main table (4096^3 by default), then, when
/// `judge_sweep`, the sweep's rows at 2048^3 and 8192^3. A row that was not run is not judged.
void add_targets(course::Harness& harness, const std::vector<std::string>& ran, bool judge_sweep) {
  if (!ran.empty()) {
    const std::string best = *std::max_element(ran.begin(), ran.end(), [&](auto& x, auto& y) {
      return harness.rate_of(x) < harness.rate_of(y);
    });
    harness.target({best, kBestOfCublas});
    harness.target({best, 1.00});  // the course's goal: cuBLAS itself
    harness.target({capstone::name(Rung::cp_async), kCpAsyncOfCublas});
  }
  for (std::size_t i = 1; i < std::size(capstone::kRungs); ++i) {
    const Rung r = capstone::kRungs[i];
    // cp.async against registers, same tile: the copies alone must pay.
    const double min_ratio = r == Rung::cp_async ? kCpAsyncOverRegisters : 1.00;
    harness.ratio_target({capstone::name(r), capstone::name(capstone::kRungs[i - 1]), min_ratio});
  }
  if (judge_sweep) {
    judge_sweep_size(harness, 2048, kBestOfCublasAt2048);
    judge_sweep_size(harness, 8192, kBestOfCublas);
  }
}

int run(const Settings& s, const course::DeviceSummary& gpu) {
  course::require_compute_capability(gpu, {8, 0}, "lesson 15 (cp.async)");
  const GemmShape shape = main_shape(s);
  print_intro(shape, s.stages);
  const std::vector<Rung> rungs = runnable_rungs(gpu, s.options.variant, shape);

  course::Harness harness(kLesson, s.options, gpu);
  harness.unit("TFLOP/s", 1e12);
  Problem main_problem(shape, 15, harness.stream());
  course::DeviceBuffer<float> ref_out(main_problem.c.size());
  harness.reference(kReference, capstone::flops(shape),
                    capstone::prepare_cublas_sgemm(shape, kAlpha, main_problem.a.data(),
                                                   main_problem.b.data(), kBeta, ref_out.data()));
  const bool ladder = s.part != "stream";
  std::vector<std::string> ran;
  for (Rung r : ladder ? rungs : std::vector<Rung>{}) {
    const std::string name = capstone::name(r);
    harness.run(main_problem.variant(name, main_problem.rung(r, s.stages)));
    ran.push_back(name);
  }
  if (!ran.empty()) {
    harness.baseline(ran.front());
    harness.headline(ran.back());
  }
  if (ladder && !s.no_sweep) run_square_sweep(harness, rungs, s.options.quick, s.stages);

  if (s.part != "gemm") {  // Part 2 with the fastest rung this GPU runs on its shape
    const bool tma = gpu.cc >= capstone::min_compute_capability(Rung::tma) &&
                     s.streamed.k % 4 == 0 && s.streamed.n % 4 == 0;
    capstone::run_streamed(harness, gpu, s.streamed, {tma ? Rung::tma : Rung::cp_async, s.stages},
                           s.options.csv);
  }
  add_targets(harness, ran, ladder && !s.no_sweep && !s.options.quick);
  return harness.finish();
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  course::FlagParser flags(
      kLesson,
      "Lesson 15: the SGEMM ladder. C = alpha A B + beta C (row-major, fp32 FMA on the CUDA\n"
      "cores, alpha = 1, beta = 0) by five kernels, each adding one idea: 1-smem (shared\n"
      "tiles through registers), 2-regblock (8 x 8 register micro-tiles, float4), 3-warptile\n"
      "(128 x 256 tiles, 64 x 64 warp tiles, 8 x 16 per thread, double-buffered through\n"
      "registers), 4-cp-async (the same tiles through a multi-stage cp.async pipeline), 5-tma\n"
      "(TMA tensor loads from a producer warpgroup, full/empty mbarriers, setmaxnreg; sm_90).\n"
      "Every rung is checked against cuBLAS, measured in the same run as the reference.");
  add_flags(flags, settings);
  return course::run_driver(
      flags, argc, argv, settings.options,
      [&](const course::DeviceSummary& gpu) { return run(settings, gpu); },
      [&] { validate(settings); });
}
