/// \file read_through.h
/// \brief Reading a result on a stream of its own, for the tests of schedules over streams.
#pragma once

#include <cuda_runtime_api.h>

#include <cuda/std/span>
#include <vector>

#include "course/check.h"

namespace course::testing {

/// Copies a device array to the host through `stream` alone (a non-blocking stream), then
/// waits for that stream only. Tests that check what a schedule has finished once its stream
/// is synchronised read this way: course::to_host copies on the legacy stream, which would
/// first wait for whatever a wrong schedule left there.
template <class T>
std::vector<T> to_host_through(cudaStream_t stream, cuda::std::span<const T> device_data) {
  std::vector<T> host(device_data.size());
  COURSE_CHECK(cudaMemcpyAsync(host.data(), device_data.data(), device_data.size_bytes(),
                               cudaMemcpyDeviceToHost, stream));
  COURSE_CHECK(cudaStreamSynchronize(stream));
  return host;
}

}  // namespace course::testing
