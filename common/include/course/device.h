/// \file device.h
/// \brief Choosing a device, and which lessons a compute capability can run.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace course {

/// There is no usable device (no GPU, no driver, or a bad --device). Drivers exit 77.
class NoDevice : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A compute capability such as 9.0. Ordered, so `cc >= ComputeCapability{8, 0}` works.
struct ComputeCapability {
  int major = 0;
  int minor = 0;
  friend bool operator<(ComputeCapability a, ComputeCapability b) {
    return a.major != b.major ? a.major < b.major : a.minor < b.minor;
  }
  friend bool operator>=(ComputeCapability a, ComputeCapability b) { return !(a < b); }
  friend bool operator==(ComputeCapability a, ComputeCapability b) {
    return a.major == b.major && a.minor == b.minor;
  }
  std::string str() const { return std::to_string(major) + "." + std::to_string(minor); }
};

/// What every driver needs to know about the device it runs on.
struct DeviceSummary {
  int ordinal = 0;
  std::string name;
  ComputeCapability cc;
  int sm_count = 0;
  /// "GPU 0: NVIDIA H200 (compute capability 9.0, 132 SMs)"
  std::string describe() const;
};

/// Selects device `ordinal` (cudaSetDevice) and describes it. Throws NoDevice when there
/// is no CUDA device, the driver is missing, or `ordinal` is out of range.
DeviceSummary open_device(int ordinal);

/// Throws NoDevice when `device` is older than `required`, naming both.
void require_compute_capability(const DeviceSummary& device, ComputeCapability required,
                                const std::string& why);

/// Throws NoDevice ("<where>: <why> need compute capability <required> or newer; this
/// device has ...") unless the current device (cudaGetDevice) has at least `required`.
/// Launchers of sm_90-only kernels call it before they launch.
void require_current_device(ComputeCapability required, const std::string& where,
                            const std::string& why);

/// One lesson of the course map (generated from lessons/catalog.json).
struct LessonEntry {
  const char* number;
  const char* slug;
  const char* title;
  int min_major;
  int min_minor;
  bool ready;    ///< false while the lesson is planned but not yet in the repository
  int min_gpus;  ///< GPUs of one host the lesson needs (lessons 16-17: 2)
  ComputeCapability min_cc() const { return {min_major, min_minor}; }
};

/// Every lesson of the course, in order.
const std::vector<LessonEntry>& lesson_catalog();

/// Whether a GPU of capability `cc` can run `lesson` (the course builds sm_80 and sm_90
/// code only, so anything older runs nothing). Says nothing about how many GPUs the lesson
/// needs (`min_gpus`): that is the machine's question, not the GPU's.
bool can_run(const LessonEntry& lesson, ComputeCapability cc);

}  // namespace course
