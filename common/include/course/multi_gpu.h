/// \file multi_gpu.h
/// \brief Opening several GPUs of one host and joining them by peer access (lessons 16-17).
///
/// Every helper throws course::NoDevice (drivers exit 77, GPU tests skip) when the machine
/// cannot run the lesson: too few GPUs, or two GPUs that cannot reach each other.
#pragma once

#include <string>
#include <vector>

#include "course/device.h"

namespace course {

/// How many CUDA devices this process sees (0 when there is no driver or no GPU; never throws).
int visible_device_count();

/// Opens devices `first`, `first + 1`, ... : every visible device from `first` on, at least
/// `min_count` of them. Throws NoDevice naming how many GPUs were found and `why` the lesson
/// needs `min_count` ("lesson 16 needs 2 GPUs (peer copies between them); this machine has
/// 1"). Leaves device `first` current.
std::vector<DeviceSummary> open_devices(int min_count, const std::string& why, int first = 0);

/// Whether device `a` can map device `b`'s memory (cudaDeviceCanAccessPeer). Never throws
/// for an ordinal that does not exist: says false.
bool can_access_peer(int a, int b);

/// Throws NoDevice unless `a` can access `b`'s memory and `b` can access `a`'s (peer access
/// both ways), naming the two GPUs and `why`.
void require_peer_access(int a, int b, const std::string& why);

/// Lets kernels and copies on device `from` reach memory of device `to`
/// (cudaDeviceEnablePeerAccess on `from`). Enabling twice is not an error here: the
/// runtime's cudaErrorPeerAccessAlreadyEnabled is consumed (cudaGetLastError) and ignored.
/// Restores the device that was current. Throws CudaError for any other failure.
void enable_peer_access(int from, int to);

/// Enables peer access between every ordered pair of `devices` (both ways).
void enable_all_peer_access(const std::vector<DeviceSummary>& devices);

/// One line naming every device: "GPU 0: NVIDIA H100 ... | GPU 1: NVIDIA H100 ...".
std::string describe_devices(const std::vector<DeviceSummary>& devices);

/// Sets NCCL_NVLS_ENABLE=0 unless the user has set it (a user's value is kept).
///
/// NVLink multicast (NVLS, "NVLink SHARP") must stay off on the shared machines the course is
/// measured on: its multicast objects (cuMulticastCreate) are a fabric resource that a
/// crashed or killed process can leave behind for the next user. No course program calls
/// cuMulticastCreate itself. On a cluster of your own, unset it or set it to 1 to let NCCL use
/// NVLS where the switch supports it. Call it before the first NCCL call.
void set_nccl_nvls_off();

}  // namespace course
