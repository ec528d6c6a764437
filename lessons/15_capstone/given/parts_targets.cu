// Lesson 15's driver, the targets (capstone_driver.h): goals for an H100 or H200, not
// correctness, each a ratio measured in this run: the best rung against cuBLAS, every rung
// against the one before it, and, after the full sweep, the same at 2048^3 and 8192^3.
// Read-only.
#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "capstone_driver.h"
#include "course/table.h"

namespace capstone::driver {
namespace {

// The best rung against cuBLAS at 4096^3 and 8192^3 (kBestOfCublas) and at 2048^3, where a
// 128 x 256 tile leaves a quarter of a wave for the last blocks; the cp.async rung against
// cuBLAS and against rung 3.
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
  for (Rung r : kRungs) {
    const std::string rung = name(r);
    if (rate(rung) <= 0) continue;
    if (!previous.empty()) {
      const double ratio = rate(rung) / rate(previous);
      harness.judged_target(rung + at + " >= 1.00 x " + previous + at, ratio >= 1.0, ratio);
    }
    if (best.empty() || rate(rung) > rate(best)) best = rung;
    previous = rung;
  }
  if (best.empty() || rate(kReference) <= 0) return;
  const double of_cublas = rate(best) / rate(kReference);
  harness.judged_target(
      best + at + " (best) >= " + course::fixed(best_of_cublas, 2) + " x " + kReference + at,
      of_cublas >= best_of_cublas, of_cublas);
}

}  // namespace

void add_targets(course::Harness& harness, const std::vector<std::string>& ran, bool judge_sweep) {
  if (!ran.empty()) {
    const std::string best = *std::max_element(ran.begin(), ran.end(), [&](auto& x, auto& y) {
      return harness.rate_of(x) < harness.rate_of(y);
    });
    harness.target({best, kBestOfCublas});
    harness.target({best, 1.00});  // the course's goal: cuBLAS itself
    harness.target({name(Rung::cp_async), kCpAsyncOfCublas});
  }
  for (std::size_t i = 1; i < std::size(kRungs); ++i) {
    const Rung r = kRungs[i];
    // cp.async against registers, same tile: the copies alone must pay.
    const double min_ratio = r == Rung::cp_async ? kCpAsyncOverRegisters : 1.00;
    harness.ratio_target({name(r), name(kRungs[i - 1]), min_ratio});
  }
  if (judge_sweep) {
    judge_sweep_size(harness, 2048, kBestOfCublasAt2048);
    judge_sweep_size(harness, 8192, kBestOfCublas);
  }
}

}  // namespace capstone::driver
