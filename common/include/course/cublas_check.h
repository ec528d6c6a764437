/// \file cublas_check.h
/// \brief cuBLAS status checking, for the lessons that call cuBLAS (15 and 17).
///
/// Header-only on purpose: course_common does not link cuBLAS, so only a lesson that
/// includes this header (and links CUDA::cublas itself) pays for it. Like COURSE_CHECK, a
/// failure throws instead of exiting, so tests can use it and the driver turns it into one
/// message and an exit code.
#pragma once

#include <cublas_v2.h>

#include <stdexcept>
#include <string>

namespace course {

/// Throws std::runtime_error "cuBLAS: CALL failed: STATUS_NAME (status text)" unless
/// `status` is CUBLAS_STATUS_SUCCESS. `call` names the cuBLAS function that returned it.
inline void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string("cuBLAS: ") + call +
                             " failed: " + cublasGetStatusName(status) + " (" +
                             cublasGetStatusString(status) + ")");
  }
}

}  // namespace course
