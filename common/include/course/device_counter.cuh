/// \file device_counter.cuh
/// \brief Reading back a `__device__` counter that kernels add to (a bounded wait that gave
/// up, a pipeline step short of its stages): its value, and the counter reset to 0.
///
/// A `__device__` variable of a program compiled without relocatable device code belongs to
/// its translation unit, so call this from the unit that defines the counter and launches the
/// kernels (a lesson's launch file).
#pragma once

#include <cuda_runtime.h>

#include "course/check.h"

namespace course {

/// Waits for the device to finish its work, then returns `counter`'s value and sets it to 0.
template <class Counter>
unsigned long long take_device_count(const Counter& counter) {
  COURSE_CHECK(cudaDeviceSynchronize());
  unsigned long long count = 0;
  COURSE_CHECK(cudaMemcpyFromSymbol(&count, counter, sizeof(count)));
  if (count != 0) {
    const unsigned long long zero = 0;
    COURSE_CHECK(cudaMemcpyToSymbol(counter, &zero, sizeof(zero)));
  }
  return count;
}

}  // namespace course
