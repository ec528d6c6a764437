/// \file nccl_check.h
/// \brief NCCL result checking, for the lesson that calls NCCL (17).
///
/// Header-only on purpose: course_common does not link NCCL, so only a lesson that
/// includes this header (and links NCCL itself) pays for it. Like COURSE_CHECK, a failure
/// throws instead of exiting, so tests can use it and the driver turns it into one message
/// and an exit code.
#pragma once

#include <nccl.h>

#include <stdexcept>
#include <string>

namespace course {

/// An NCCL call failed; what() names the call, NCCL's reason, the file and the line.
class NcclError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Throws NcclError "NCCL: CALL failed: REASON (FILE:LINE)" unless `result` is ncclSuccess.
/// Use through COURSE_NCCL_CHECK.
inline void check_nccl(ncclResult_t result, const char* call, const char* file, int line) {
  if (result == ncclSuccess) return;
  throw NcclError(std::string("NCCL: ") + call + " failed: " + ncclGetErrorString(result) + " (" +
                  file + ":" + std::to_string(line) + ")");
}

}  // namespace course

/// Checks an NCCL call: `COURSE_NCCL_CHECK(ncclAllGather(...));`
#define COURSE_NCCL_CHECK(call) ::course::check_nccl((call), #call, __FILE__, __LINE__)
