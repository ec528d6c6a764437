/// \file alignment_parts.h
/// \brief Lesson 04: the driver's parts that live beside main.cu (read-only;
/// parts_emitted_ptx.cu).
#pragma once

#include <map>
#include <string>

#include "alignment.cuh"
#include "course/device.h"

namespace alignment::parts {

/// What each method's copy compiled to, and the PTX target that was read ("" if none).
struct Emitted {
  std::string target;
  std::map<Method, std::string> by_method;
};

/// What the compiler emitted for each method's copy, read from the PTX embedded in this
/// executable (the lesson's kernels are compiled with --no-compress): the module of the
/// running GPU's architecture, or the highest one present. When it cannot be read, a line
/// says why and the run goes on.
Emitted read_emitted(const course::DeviceSummary& gpu);

}  // namespace alignment::parts
