/// \file stats.h
/// \brief The statistics the course reports: medians of repeated timings.
#pragma once

#include <vector>

namespace course {

/// The median of `samples` (the mean of the middle two for an even count). Medians, not
/// means: one slow run (a clock change, another process) must not move the figure.
/// Throws std::invalid_argument for an empty sample.
double median(std::vector<double> samples);

}  // namespace course
