#include "course/multi_gpu.h"

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <utility>

#include "course/check.h"

namespace course {

int visible_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver or no GPU: a machine we cannot use, not an error
    return 0;
  }
  return count;
}

std::vector<DeviceSummary> open_devices(int min_count, const std::string& why, int first) {
  const int count = visible_device_count();
  if (first < 0 || (count > 0 && first >= count)) {
    throw NoDevice("--device " + std::to_string(first) + " does not exist; this machine has " +
                   std::to_string(count) + " CUDA device(s)");
  }
  const int usable = count - first;
  if (usable < min_count) {
    std::string found = count == 0 ? std::string("no GPU found")
                                   : "this machine has " + std::to_string(count) + " GPU(s)";
    if (first > 0 && count > 0)
      found += ", " + std::to_string(usable) + " from GPU " + std::to_string(first) + " on";
    throw NoDevice(why + " needs " + std::to_string(min_count) + " GPUs; " + found);
  }
  std::vector<DeviceSummary> devices;
  for (int d = first; d < count; ++d) devices.push_back(open_device(d));
  COURSE_CHECK(cudaSetDevice(first));
  return devices;
}

bool can_access_peer(int a, int b) {
  const int count = visible_device_count();
  if (a < 0 || b < 0 || a >= count || b >= count || a == b) return false;
  int yes = 0;
  if (cudaDeviceCanAccessPeer(&yes, a, b) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return yes != 0;
}

void require_peer_access(int a, int b, const std::string& why) {
  for (auto [x, y] : {std::pair{a, b}, std::pair{b, a}}) {
    if (!can_access_peer(x, y)) {
      throw NoDevice(why + " needs peer access between GPUs; GPU " + std::to_string(x) +
                     " cannot access GPU " + std::to_string(y) +
                     "'s memory (cudaDeviceCanAccessPeer says no: no NVLink or PCIe P2P "
                     "path, or they are the same GPU)");
    }
  }
}

void enable_peer_access(int from, int to) {
  int current = 0;
  COURSE_CHECK(cudaGetDevice(&current));
  COURSE_CHECK(cudaSetDevice(from));
  const cudaError_t status = cudaDeviceEnablePeerAccess(to, 0);
  if (status == cudaErrorPeerAccessAlreadyEnabled) {
    (void)cudaGetLastError();  // the runtime also records it as the last error: consume it
  } else if (status != cudaSuccess) {
    (void)cudaSetDevice(current);
    check_cuda(status, "cudaDeviceEnablePeerAccess(to, 0)", __FILE__, __LINE__);
  }
  COURSE_CHECK(cudaSetDevice(current));
}

void enable_all_peer_access(const std::vector<DeviceSummary>& devices) {
  for (const DeviceSummary& a : devices) {
    for (const DeviceSummary& b : devices) {
      if (a.ordinal != b.ordinal) enable_peer_access(a.ordinal, b.ordinal);
    }
  }
}

std::string describe_devices(const std::vector<DeviceSummary>& devices) {
  std::string line;
  for (const DeviceSummary& d : devices) line += (line.empty() ? "" : " | ") + d.describe();
  return line;
}

void set_nccl_nvls_off() {
  // NVLink multicast stays off on shared machines (see the header); overwrite = 0 keeps a
  // value the user set on purpose.
  setenv("NCCL_NVLS_ENABLE", "0", 0);
}

}  // namespace course
