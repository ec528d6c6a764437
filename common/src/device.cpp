#include "course/device.h"

#include <cuda_runtime_api.h>

#include "course/check.h"

namespace course {

std::string DeviceSummary::describe() const {
  return "GPU " + std::to_string(ordinal) + ": " + name + " (compute capability " + cc.str() +
         ", " + std::to_string(sm_count) + " SMs)";
}

DeviceSummary open_device(int ordinal) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    // No driver, or no GPU behind it: not an error of the program, a machine it cannot use.
    // CUDA's own words for this ("CUDA driver version is insufficient for CUDA runtime
    // version") mislead on a machine that simply has no GPU: say that first.
    throw NoDevice(std::string("no GPU found (no NVIDIA driver or no device; CUDA says: ") +
                   cudaGetErrorString(status) + ")");
  }
  if (count == 0) throw NoDevice("no GPU found");
  if (ordinal < 0 || ordinal >= count) {
    throw NoDevice("--device " + std::to_string(ordinal) + " does not exist; this machine has " +
                   std::to_string(count) + " CUDA device(s)");
  }
  COURSE_CHECK(cudaSetDevice(ordinal));
  cudaDeviceProp prop{};
  COURSE_CHECK(cudaGetDeviceProperties(&prop, ordinal));
  DeviceSummary summary;
  summary.ordinal = ordinal;
  summary.name = prop.name;
  summary.cc = {prop.major, prop.minor};
  summary.sm_count = prop.multiProcessorCount;
  return summary;
}

void require_compute_capability(const DeviceSummary& device, ComputeCapability required,
                                const std::string& why) {
  if (!(device.cc >= required)) {
    throw NoDevice(device.name + " has compute capability " + device.cc.str() + "; " + why +
                   " needs " + required.str() + " or newer");
  }
}

void require_current_device(ComputeCapability required, const std::string& where,
                            const std::string& why) {
  int device = 0;
  ComputeCapability cc;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&cc.major, cudaDevAttrComputeCapabilityMajor, device));
  COURSE_CHECK(cudaDeviceGetAttribute(&cc.minor, cudaDevAttrComputeCapabilityMinor, device));
  if (!(cc >= required)) {
    throw NoDevice(where + ": " + why + " need compute capability " + required.str() +
                   " or newer; this device has " + cc.str());
  }
}

const std::vector<LessonEntry>& lesson_catalog() {
  static const std::vector<LessonEntry> catalog = {
#include "lesson_catalog.inc"
  };
  return catalog;
}

bool can_run(const LessonEntry& lesson, ComputeCapability cc) {
  return cc >= ComputeCapability{8, 0} && cc >= lesson.min_cc();
}

}  // namespace course
