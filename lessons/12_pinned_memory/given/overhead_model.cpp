// Lesson 12: the step model of small-copy times (read-only; overhead_model.h says what it
// is for). Plain C++ on the CPU, so the tests check it on any machine.
#include "overhead_model.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <stdexcept>

#include "course/stats.h"

namespace pinned_memory {
namespace {

// 1 GB/s is 10^9 bytes in 10^6 us.
constexpr double kBytesPerUsAtOneGbps = 1e3;

struct Candidate {
  CopyCostFit fit;
  double rss = 0;  // sum of squared residuals, us^2
  int parameters = 0;
};

double sum_of_squares_about_mean(const std::vector<double>& y, std::size_t begin, std::size_t end,
                                 double* mean) {
  double m = 0;
  for (std::size_t i = begin; i < end; ++i) m += y[i];
  m /= static_cast<double>(end - begin);
  double rss = 0;
  for (std::size_t i = begin; i < end; ++i) rss += (y[i] - m) * (y[i] - m);
  *mean = m;
  return rss;
}

// The least-squares line through points [begin, end): fills the rising part of `fit` and
// returns the residual sum of squares, or a negative number when the line does not rise.
double rising_part(const std::vector<double>& x, const std::vector<double>& y, std::size_t begin,
                   CopyCostFit& fit) {
  const std::vector<double> xs(x.begin() + static_cast<std::ptrdiff_t>(begin), x.end());
  const std::vector<double> ys(y.begin() + static_cast<std::ptrdiff_t>(begin), y.end());
  const course::LinearFit line = course::fit_line(xs, ys);
  if (!(line.slope > 0)) return -1;
  fit.rising_from_bytes = xs.front();
  fit.intercept_us = line.intercept;
  fit.slope_us_per_byte = line.slope;
  double rss = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double r = ys[i] - (line.intercept + line.slope * xs[i]);
    rss += r * r;
  }
  return rss;
}

std::string fixed(double value, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << value;
  return out.str();
}

}  // namespace

bool physical_bandwidth(double gbps, double link_gbps) {
  return std::isfinite(gbps) && gbps > 0 && gbps <= link_gbps;
}

const char* name(CostShape shape) {
  switch (shape) {
    case CostShape::flat:
      return "flat";
    case CostShape::line:
      return "line";
    case CostShape::step:
      return "step";
  }
  return "unknown";
}

namespace {

/// The inputs fit_copy_cost() accepts; throws std::invalid_argument naming what is wrong.
void check_fit_inputs(const std::vector<double>& bytes, const std::vector<double>& us,
                      double link_gbps) {
  const std::size_t n = bytes.size();
  if (us.size() != n || n < 3) {
    throw std::invalid_argument("fit_copy_cost: need as many times as sizes, at least 3");
  }
  if (!(link_gbps > 0) || !std::isfinite(link_gbps)) {
    throw std::invalid_argument("fit_copy_cost: the link's bandwidth must be positive");
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(bytes[i]) || !std::isfinite(us[i]) || (i > 0 && bytes[i] <= bytes[i - 1])) {
      throw std::invalid_argument(
          "fit_copy_cost: sizes must be finite and strictly increasing, "
          "times finite (point " +
          std::to_string(i) + ")");
    }
  }
}

/// Step: the flat level, the line, and the break, chosen by least squares. rss < 0 when no
/// break leaves a rising part.
Candidate best_step(const std::vector<double>& bytes, const std::vector<double>& us) {
  const std::size_t n = bytes.size();
  constexpr std::size_t kMinFlat = 2, kMinRising = 3;
  Candidate best;
  best.rss = -1;
  for (std::size_t k = kMinFlat; k + kMinRising <= n; ++k) {
    Candidate step;
    step.parameters = 4;
    step.fit.shape = CostShape::step;
    const double rising = rising_part(bytes, us, k, step.fit);
    if (rising < 0) continue;
    step.rss = rising + sum_of_squares_about_mean(us, 0, k, &step.fit.flat_us);
    step.fit.flat_points = k;
    step.fit.flat_until_bytes = bytes[k - 1];
    if (best.rss < 0 || step.rss < best.rss) best = step;
  }
  return best;
}

/// The Bayesian information criterion: more parameters must buy a clearly smaller residual.
/// A floor on the residual keeps exact (synthetic) data finite; ties then go to the simpler
/// shape, which comes first.
const Candidate& lowest_criterion(const std::vector<Candidate>& candidates,
                                  const std::vector<double>& us) {
  double largest = 0;
  for (double t : us) largest = std::max(largest, std::abs(t));
  const double nd = static_cast<double>(us.size());
  const double floor = nd * 1e-18 * (1 + largest * largest);
  const auto criterion = [&](const Candidate& c) {
    return nd * std::log(std::max(c.rss, floor) / nd) + c.parameters * std::log(nd);
  };
  const Candidate* chosen = &candidates.front();
  for (const Candidate& c : candidates) {
    if (criterion(c) < criterion(*chosen)) chosen = &c;
  }
  return *chosen;
}

}  // namespace

CopyCostFit fit_copy_cost(const std::vector<double>& bytes, const std::vector<double>& us,
                          double link_gbps) {
  check_fit_inputs(bytes, us, link_gbps);
  const std::size_t n = bytes.size();

  std::vector<Candidate> candidates;
  // Flat: one parameter, the mean.
  Candidate flat;
  flat.parameters = 1;
  flat.rss = sum_of_squares_about_mean(us, 0, n, &flat.fit.flat_us);
  flat.fit.flat_points = n;
  flat.fit.flat_until_bytes = bytes.back();
  candidates.push_back(flat);
  // Line: intercept and slope.
  Candidate line;
  line.parameters = 2;
  line.fit.shape = CostShape::line;
  line.rss = rising_part(bytes, us, 0, line.fit);
  if (line.rss >= 0) candidates.push_back(line);
  // Step: four parameters (the break counts as one).
  const Candidate step = best_step(bytes, us);
  if (step.rss >= 0) candidates.push_back(step);

  const Candidate& chosen = lowest_criterion(candidates, us);
  CopyCostFit fit = chosen.fit;
  fit.rms_residual_us = std::sqrt(chosen.rss / static_cast<double>(n));
  if (fit.shape != CostShape::flat) {
    const double gbps = 1.0 / (fit.slope_us_per_byte * kBytesPerUsAtOneGbps);
    fit.physical = physical_bandwidth(gbps, link_gbps);
    fit.bandwidth_gbps = fit.physical ? gbps : 0;
  }
  return fit;
}

double model_us(const CopyCostFit& fit, double bytes) {
  if (fit.shape == CostShape::flat ||
      (fit.shape == CostShape::step && bytes < fit.rising_from_bytes)) {
    return fit.flat_us;
  }
  return fit.intercept_us + fit.slope_us_per_byte * bytes;
}

std::string describe(const CopyCostFit& fit) {
  std::string text = std::string(name(fit.shape)) + ": ";
  if (fit.shape != CostShape::line) {
    text += fixed(fit.flat_us, 2) + " us flat up to " + human_bytes(fit.flat_until_bytes);
    if (fit.shape == CostShape::flat) return text + " (no rate can be read from these sizes)";
    text += "; from " + human_bytes(fit.rising_from_bytes) + " on ";
  }
  text += fixed(fit.intercept_us, 2) + " us + bytes / ";
  if (fit.physical) return text + fixed(fit.bandwidth_gbps, 2) + " GB/s";
  return text + "a rate above a large copy's over this link (not physical: no bandwidth)";
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB"};
  int u = 0;
  while (bytes >= 1024 && u < 3) {
    bytes /= 1024;
    ++u;
  }
  return fixed(bytes, bytes == std::floor(bytes) ? 0 : 1) + " " + units[u];
}

}  // namespace pinned_memory
