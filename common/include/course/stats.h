/// \file stats.h
/// \brief The statistics the course reports: medians of repeated timings, and the
/// least-squares line through measurements (lesson 12's overhead model).
#pragma once

#include <vector>

namespace course {

/// The median of `samples` (the mean of the middle two for an even count). Medians, not
/// means: one slow run (a clock change, another process) must not move the figure.
/// Throws std::invalid_argument for an empty sample.
double median(std::vector<double> samples);

/// A straight line y = intercept + slope * x and how well it explains the data.
struct LinearFit {
  double slope = 0;
  double intercept = 0;
  /// The coefficient of determination, 1 - (residual sum of squares) / (total sum of
  /// squares): 1 for a perfect fit, near 0 when the line explains nothing. Defined as 1
  /// when every y is the same (the flat line through them is exact).
  double r_squared = 0;
};

/// The ordinary least-squares line through the points (xs[i], ys[i]): the slope and
/// intercept that minimise the sum of squared vertical distances.
/// Throws std::invalid_argument when the two vectors differ in length, hold fewer than
/// two points, hold a value that is not finite, or when every x is the same (then no
/// slope is defined).
LinearFit fit_line(const std::vector<double>& xs, const std::vector<double>& ys);

}  // namespace course
