#include "course/stats.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace course {

double median(std::vector<double> samples) {
  if (samples.empty()) throw std::invalid_argument("median of no samples");
  const std::size_t mid = samples.size() / 2;
  std::nth_element(samples.begin(), samples.begin() + mid, samples.end());
  const double upper = samples[mid];
  if (samples.size() % 2 == 1) return upper;
  const double lower = *std::max_element(samples.begin(), samples.begin() + mid);
  return (lower + upper) / 2.0;
}

LinearFit fit_line(const std::vector<double>& xs, const std::vector<double>& ys) {
  if (xs.size() != ys.size()) {
    throw std::invalid_argument("fit_line: " + std::to_string(xs.size()) + " x values but " +
                                std::to_string(ys.size()) + " y values");
  }
  if (xs.size() < 2) {
    throw std::invalid_argument("fit_line: a line needs at least 2 points, got " +
                                std::to_string(xs.size()));
  }
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (!std::isfinite(xs[i]) || !std::isfinite(ys[i])) {
      throw std::invalid_argument("fit_line: point " + std::to_string(i) + " is not finite");
    }
  }
  // Compared exactly, not through the variance: the mean of equal values may round, and
  // a tiny non-zero variance made of rounding errors would give an arbitrary slope.
  if (std::all_of(xs.begin(), xs.end(), [&](double x) { return x == xs.front(); })) {
    throw std::invalid_argument("fit_line: every x is the same, so no slope is defined");
  }

  // Two passes (means first, then centred sums): the textbook one-pass formula
  // n*sum(xy) - sum(x)*sum(y) cancels catastrophically for x values like byte counts.
  const double n = static_cast<double>(xs.size());
  double mean_x = 0, mean_y = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    mean_x += xs[i];
    mean_y += ys[i];
  }
  mean_x /= n;
  mean_y /= n;
  double sxx = 0, sxy = 0, syy = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double dx = xs[i] - mean_x;
    const double dy = ys[i] - mean_y;
    sxx += dx * dx;
    sxy += dx * dy;
    syy += dy * dy;
  }

  LinearFit fit;
  fit.slope = sxy / sxx;
  fit.intercept = mean_y - fit.slope * mean_x;
  double residual = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double r = ys[i] - (fit.intercept + fit.slope * xs[i]);
    residual += r * r;
  }
  fit.r_squared = syy > 0 ? 1.0 - residual / syy : 1.0;
  return fit;
}

}  // namespace course
