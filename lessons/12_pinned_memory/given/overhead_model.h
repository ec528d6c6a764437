/// \file overhead_model.h
/// \brief Lesson 12: what one small copy costs, as a model (read-only; overhead_model.cpp).
///
/// The CUDA Handbook describes a copy of b bytes by a straight line, t(b) = overhead +
/// b / bandwidth (the exercise fits it: pinned_memory.cu, TODO 4). Copies issued back to
/// back show something the line cannot: below some size the time per copy does not grow
/// at all, because a fixed cost per call (the host issuing it, the engine starting it)
/// paces the copies and the bytes ride along for free. Above that size the bytes set the
/// pace. The step model says exactly that:
///
///     t(b) = flat                          for b below the break
///     t(b) = overhead + b / bandwidth      from the break on
///
/// A straight line through such data is pulled flat by the first part, so its slope can
/// claim a bandwidth faster than the link itself: not physics. fit_copy_cost() picks the
/// break by least squares, decides whether the data show a flat part, a line or a step at
/// all, and reports a bandwidth only when it is no faster than a large copy over the same
/// link.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace pinned_memory {

/// The straight-line model: one copy of b bytes takes overhead + b / bandwidth.
struct OverheadModel {
  double overhead_us = 0;     ///< the fixed cost of one copy (the fit's intercept), us
  double bandwidth_gbps = 0;  ///< the rate each further byte moves at (from the slope), GB/s
  double r_squared = 0;       ///< how well a straight line explains the measurements
};

/// Whether a fitted bandwidth can be a rate of moving bytes over the link: positive and
/// no faster than a large copy over the same link (`link_gbps`, measured in the same run).
bool physical_bandwidth(double gbps, double link_gbps);

/// Which shape describes the measured times best.
enum class CostShape {
  flat,  ///< every copy takes the same time: no rate can be read from these sizes
  line,  ///< overhead + bytes / bandwidth over the whole range (the Handbook's model)
  step,  ///< flat below the break, overhead + bytes / bandwidth from the break on
};

/// "flat", "line", "step".
const char* name(CostShape shape);

/// The model fit_copy_cost() chose, and what may be reported of it.
struct CopyCostFit {
  CostShape shape = CostShape::flat;
  double flat_us = 0;            ///< flat, step: the time of a copy below the break (mean)
  std::size_t flat_points = 0;   ///< flat, step: how many sizes lie below the break
  double flat_until_bytes = 0;   ///< flat, step: the largest size of the flat part
  double rising_from_bytes = 0;  ///< line, step: the smallest size of the rising part
  double intercept_us = 0;       ///< line, step: the rising part's overhead (intercept)
  double slope_us_per_byte = 0;  ///< line, step: the rising part's slope (> 0)
  bool physical = false;         ///< line, step: the slope is a rate no faster than the link
  double bandwidth_gbps = 0;     ///< the slope's rate when `physical`, otherwise 0: never
                                 ///< more than the link
  double rms_residual_us = 0;    ///< how far the measurements lie from the model, rms
};

/// Fits the flat, line and step shapes to `us[i]` microseconds per copy of `bytes[i]`
/// bytes and returns the best one:
///   - step: for every break that leaves at least 2 sizes below it and 3 from it on, the
///     flat part is the mean of the sizes below, the rising part the least-squares line
///     through the others; the break with the least sum of squared residuals wins;
///   - line: the least-squares line through every size;
///   - flat: the mean of every size.
/// A shape with more parameters must earn them: the one with the lowest Bayesian
/// information criterion n ln(RSS / n) + k ln(n) is chosen (k = 1, 2, 4 parameters; the
/// break counts as one). Shapes whose rising part does not rise (slope <= 0) are not
/// candidates. The rising part's bandwidth (GB/s, from its slope) is reported only when
/// physical_bandwidth(..., link_gbps) holds; otherwise `physical` is false and
/// `bandwidth_gbps` is 0.
/// Throws std::invalid_argument unless the vectors have the same length, at least 3
/// points, finite values, strictly increasing sizes, and link_gbps > 0.
CopyCostFit fit_copy_cost(const std::vector<double>& bytes, const std::vector<double>& us,
                          double link_gbps);

/// The time the fitted model gives a copy of `bytes` bytes, in microseconds.
double model_us(const CopyCostFit& fit, double bytes);

/// One line describing the fit, with no bandwidth unless it is physical, e.g.
/// "step: 2.01 us flat up to 28 KB; from 32 KB on 1.23 us + bytes / 37.90 GB/s", or for a
/// rate above the link's "line: 1.68 us + bytes / a rate above a large copy's over this link
/// (not physical: no bandwidth)".
std::string describe(const CopyCostFit& fit);

/// "4 KB", "1.5 MB", "256 MB" (K = 1024).
std::string human_bytes(double bytes);

}  // namespace pinned_memory
