/// \file check.h
/// \brief CUDA error checking that reports the failing call with file and line.
///
/// Helpers throw instead of calling exit(), so tests can use them and drivers can turn
/// every failure into a clear message and an exit code in one place.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace course {

/// A CUDA runtime call failed. what() names the call, the file and the line.
class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& message);
  /// The runtime's error code.
  cudaError_t code() const noexcept { return code_; }

 private:
  cudaError_t code_;
};

/// Throws CudaError when `code` is not cudaSuccess. Use through COURSE_CHECK.
void check_cuda(cudaError_t code, const char* expression, const char* file, int line);

}  // namespace course

/// Checks a CUDA runtime call: `COURSE_CHECK(cudaMalloc(&p, n));`
#define COURSE_CHECK(call) ::course::check_cuda((call), #call, __FILE__, __LINE__)

/// Checks the launch that just happened. A bad launch configuration (too much shared
/// memory, too many threads) is reported here, not by the launch statement itself.
#define COURSE_CHECK_LAUNCH() \
  ::course::check_cuda(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
