#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>
#include <vector>

#include "course/stats.h"

TEST(Stats, MedianOfOddCountIsTheMiddleValue) {
  EXPECT_DOUBLE_EQ(course::median({5.0, 1.0, 3.0}), 3.0);
  EXPECT_DOUBLE_EQ(course::median({2.5}), 2.5);
}

TEST(Stats, MedianOfEvenCountIsTheMeanOfTheMiddleTwo) {
  EXPECT_DOUBLE_EQ(course::median({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_DOUBLE_EQ(course::median({1.0, 1.0}), 1.0);
}

TEST(Stats, MedianIgnoresOneOutlier) {
  EXPECT_DOUBLE_EQ(course::median({1.0, 1.1, 0.9, 1.0, 1000.0}), 1.0);
}

TEST(Stats, MedianOfNothingThrows) { EXPECT_THROW(course::median({}), std::invalid_argument); }

// ---- fit_line: the least-squares line (lesson 12's small-copy overhead model) ------------

TEST(StatsFitLine, RecoversAnExactLine) {
  // y = 3 + 2x: every point on the line, so the fit is the line and r^2 is 1.
  const course::LinearFit fit = course::fit_line({0, 1, 2, 3, 4}, {3, 5, 7, 9, 11});
  EXPECT_NEAR(fit.slope, 2.0, 1e-12);
  EXPECT_NEAR(fit.intercept, 3.0, 1e-12);
  EXPECT_NEAR(fit.r_squared, 1.0, 1e-12);
}

TEST(StatsFitLine, RecoversAnExactLineAtByteScale) {
  // Per-copy times of 2.5 us + bytes / (50 GB/s), at the sizes of lesson 12's sweep:
  // x values of tens of thousands must not cost precision.
  std::vector<double> bytes, us;
  for (double b = 4096; b <= 65536; b += 4096) {
    bytes.push_back(b);
    us.push_back(2.5 + b / 50e3);
  }
  const course::LinearFit fit = course::fit_line(bytes, us);
  EXPECT_NEAR(fit.slope, 1.0 / 50e3, 1e-15);
  EXPECT_NEAR(fit.intercept, 2.5, 1e-10);
  EXPECT_NEAR(fit.r_squared, 1.0, 1e-12);
}

TEST(StatsFitLine, NoisyLineGivesTheLeastSquaresAnswer) {
  // Worked by hand: mean x 1.5, mean y 2.75, Sxx 5, Sxy 5.5, so slope 1.1 and intercept
  // 2.75 - 1.1 * 1.5 = 1.1; residuals -0.1, 0.8, -1.3, 0.6 give SSres 2.7, SStot 8.75.
  const course::LinearFit fit = course::fit_line({0, 1, 2, 3}, {1, 3, 2, 5});
  EXPECT_NEAR(fit.slope, 1.1, 1e-12);
  EXPECT_NEAR(fit.intercept, 1.1, 1e-12);
  EXPECT_NEAR(fit.r_squared, 1.0 - 2.7 / 8.75, 1e-12);
}

TEST(StatsFitLine, NoisyLineAtByteScale) {
  // Exact rational answer: slope 7/204800 us per byte, intercept 57/20 us, r^2 7/10.
  const course::LinearFit fit = course::fit_line({4096, 8192, 12288, 16384}, {3.0, 3.2, 3.1, 3.5});
  EXPECT_NEAR(fit.slope, 7.0 / 204800.0, 1e-15);
  EXPECT_NEAR(fit.intercept, 2.85, 1e-12);
  EXPECT_NEAR(fit.r_squared, 0.7, 1e-12);
}

TEST(StatsFitLine, FlatDataHasZeroSlopeAndPerfectFit) {
  const course::LinearFit fit = course::fit_line({1, 2, 3}, {4, 4, 4});
  EXPECT_DOUBLE_EQ(fit.slope, 0.0);
  EXPECT_DOUBLE_EQ(fit.intercept, 4.0);
  EXPECT_DOUBLE_EQ(fit.r_squared, 1.0);
}

TEST(StatsFitLine, TwoPointsDefineTheLine) {
  const course::LinearFit fit = course::fit_line({1, 3}, {10, 4});
  EXPECT_NEAR(fit.slope, -3.0, 1e-12);
  EXPECT_NEAR(fit.intercept, 13.0, 1e-12);
}

TEST(StatsFitLine, RejectsWhatHasNoLine) {
  EXPECT_THROW(course::fit_line({}, {}), std::invalid_argument);
  EXPECT_THROW(course::fit_line({1}, {2}), std::invalid_argument);
  EXPECT_THROW(course::fit_line({1, 2, 3}, {1, 2}), std::invalid_argument);
  // Every x the same: the variance of x is zero and no slope exists (0.1 does not
  // survive the mean exactly, so this also checks that rounding is not taken for spread).
  EXPECT_THROW(course::fit_line({2, 2, 2}, {1, 2, 3}), std::invalid_argument);
  EXPECT_THROW(course::fit_line({0.1, 0.1, 0.1}, {1, 2, 3}), std::invalid_argument);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_THROW(course::fit_line({1, 2, nan}, {1, 2, 3}), std::invalid_argument);
  EXPECT_THROW(course::fit_line({1, 2, 3}, {1, inf, 3}), std::invalid_argument);
}
