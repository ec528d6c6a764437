#include "gpu_test.h"

namespace course::testing {

std::optional<std::string> gpu_unavailable(ComputeCapability required) {
  // Asked once: the answer cannot change while the test runs.
  static const std::optional<std::string> no_device = []() -> std::optional<std::string> {
    try {
      open_device(0);
      return std::nullopt;
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  }();
  if (no_device) return "no usable GPU: " + *no_device;
  const DeviceSummary device = open_device(0);
  if (!(device.cc >= required)) {
    return device.name + " has compute capability " + device.cc.str() + "; this test needs " +
           required.str();
  }
  return std::nullopt;
}

}  // namespace course::testing
