#include "course/check.h"

#include <sstream>

namespace course {

CudaError::CudaError(cudaError_t code, const std::string& message)
    : std::runtime_error(message), code_(code) {}

void check_cuda(cudaError_t code, const char* expression, const char* file, int line) {
  if (code == cudaSuccess) return;
  std::ostringstream message;
  message << file << ":" << line << ": " << expression << " failed: " << cudaGetErrorName(code)
          << " (" << cudaGetErrorString(code) << ")";
  throw CudaError(code, message.str());
}

}  // namespace course
