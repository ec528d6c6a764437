// Lesson 10's kernels as reference rows of lesson 11's table: its 1-D bulk copy and its
// default copy-and-compute pipeline, run on the same bytes as the tensor copies. CMake builds
// lesson10_rows.cu when lesson 10 is part of the build and lesson10_rows_absent.cu otherwise
// (COURSE_LESSON_FILTER may leave it out); the table is the same but for these rows.
#pragma once

#include <string>
#include <vector>

#include "course/device.h"
#include "course/launch.h"

namespace lesson10_rows {

/// A row ready to run: its launch, the bits it must leave in the output, the bytes it moves
/// and the line that describes it.
struct Row {
  course::Launch run;
  std::vector<float> expected;
  double bytes = 0;
  std::string what;
};

/// The rows' names, in table order; none when lesson 10 is not part of the build.
std::vector<std::string> names();

/// Row `name` over the matrix `host_in` (the same floats are in `in` on the device; `out`
/// has room for as many).
Row prepare(const std::string& name, const float* in, float* out,
            const std::vector<float>& host_in, const course::DeviceSummary& gpu);

/// Throws when one of lesson 10's bounded waits gave up since the last call.
void require_no_wait_errors(const std::string& name);

}  // namespace lesson10_rows
