// Lesson 00 tests: the byte counts and overlap rules on the CPU, the capability query
// against the runtime's own answers on the GPU.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include "course/check.h"
#include "device_check.cuh"
#include "gpu_test.h"

namespace {

using course::testing::concerns_todo;  // " [concerns TODO k]" on a failure: gpu_test.h
using device_check::bytes_moved;
using device_check::Capabilities;
using device_check::Transfer;

TEST(DeviceCheckBytes, DeviceToDeviceCountsReadAndWrite) {
  EXPECT_DOUBLE_EQ(bytes_moved(Transfer::device_to_device, 1000), 2000.0) << concerns_todo(3);
  EXPECT_DOUBLE_EQ(bytes_moved(Transfer::device_to_device, 1), 2.0) << concerns_todo(3);
}

TEST(DeviceCheckBytes, HostTransfersCrossTheLinkOnce) {
  EXPECT_DOUBLE_EQ(bytes_moved(Transfer::host_to_device, 4096), 4096.0) << concerns_todo(3);
  EXPECT_DOUBLE_EQ(bytes_moved(Transfer::device_to_host, 268435456), 268435456.0)
      << concerns_todo(3);
  EXPECT_DOUBLE_EQ(bytes_moved(Transfer::host_to_device, 0), 0.0) << concerns_todo(3);
}

TEST(DeviceCheckOverlap, CopyEnginesDecideWhatOverlaps) {
  Capabilities caps;
  for (int engines = 0; engines <= 3; ++engines) {
    for (bool concurrent : {false, true}) {
      caps.async_engine_count = engines;
      caps.concurrent_kernels = concurrent;
      const auto overlap = device_check::overlap_support(caps);
      EXPECT_EQ(overlap.copy_with_kernel, engines >= 1)
          << engines << " engines" << concerns_todo(2);
      EXPECT_EQ(overlap.copy_both_directions, engines >= 2)
          << engines << " engines" << concerns_todo(2);
      EXPECT_EQ(overlap.concurrent_kernels, concurrent) << concerns_todo(2);
    }
  }
}

TEST(DeviceCheckPeak, DoubleDataRateTimesBusWidth) {
  Capabilities caps;
  caps.memory_clock_khz = 2619000;  // an H100 SXM's HBM3
  caps.memory_bus_bits = 5120;
  EXPECT_NEAR(device_check::theoretical_memory_gbps(caps), 3352.3, 0.1);
}

class GpuDeviceCheck : public course::testing::GpuTest {};

int attribute(cudaDeviceAttr attr) {
  int value = 0;
  COURSE_CHECK(cudaDeviceGetAttribute(&value, attr, 0));
  return value;
}

TEST_F(GpuDeviceCheck, CapabilitiesMatchTheRuntimeAttributes) {
  const Capabilities caps = device_check::query_capabilities(0);
  char name[256] = {};
  cudaDeviceProp prop{};
  COURSE_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::snprintf(name, sizeof name, "%s", prop.name);
  EXPECT_EQ(caps.name, name) << concerns_todo(1);
  EXPECT_EQ(caps.cc_major, attribute(cudaDevAttrComputeCapabilityMajor)) << concerns_todo(1);
  EXPECT_EQ(caps.cc_minor, attribute(cudaDevAttrComputeCapabilityMinor)) << concerns_todo(1);
  EXPECT_EQ(caps.sm_count, attribute(cudaDevAttrMultiProcessorCount)) << concerns_todo(1);
  EXPECT_EQ(caps.async_engine_count, attribute(cudaDevAttrAsyncEngineCount)) << concerns_todo(1);
  EXPECT_EQ(caps.concurrent_kernels, attribute(cudaDevAttrConcurrentKernels) != 0)
      << concerns_todo(1);
  EXPECT_EQ(caps.shared_per_block_optin,
            static_cast<std::size_t>(attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin)))
      << concerns_todo(1);
  EXPECT_EQ(caps.shared_per_sm,
            static_cast<std::size_t>(attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor)))
      << concerns_todo(1);
  EXPECT_EQ(caps.l2_bytes, static_cast<std::size_t>(attribute(cudaDevAttrL2CacheSize)))
      << concerns_todo(1);
  EXPECT_EQ(caps.clock_khz, attribute(cudaDevAttrClockRate)) << concerns_todo(1);
  EXPECT_EQ(caps.memory_clock_khz, attribute(cudaDevAttrMemoryClockRate)) << concerns_todo(1);
  EXPECT_EQ(caps.memory_bus_bits, attribute(cudaDevAttrGlobalMemoryBusWidth)) << concerns_todo(1);
  EXPECT_EQ(caps.max_threads_per_sm, attribute(cudaDevAttrMaxThreadsPerMultiProcessor))
      << concerns_todo(1);
  std::size_t free_bytes = 0, total_bytes = 0;
  COURSE_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  EXPECT_EQ(caps.global_bytes, total_bytes) << concerns_todo(1);
  EXPECT_GT(device_check::theoretical_memory_gbps(caps), 100.0) << concerns_todo(1);
}

TEST_F(GpuDeviceCheck, BadDeviceOrdinalThrows) {
  EXPECT_THROW(device_check::query_capabilities(4096), course::CudaError) << concerns_todo(1);
  EXPECT_THROW(device_check::query_capabilities(-1), course::CudaError) << concerns_todo(1);
}

}  // namespace
