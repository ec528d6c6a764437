/// \file device_check.cuh
/// \brief Lesson 00: what this GPU can do for asynchronous data movement.
#pragma once

#include <cstddef>
#include <string>

namespace device_check {

/// The capabilities later lessons depend on.
struct Capabilities {
  std::string name;
  int cc_major = 0;  ///< compute capability: 8.0 brings cp.async, 9.0 TMA
  int cc_minor = 0;
  int sm_count = 0;            ///< multiprocessors: a persistent grid's size
  int async_engine_count = 0;  ///< copy engines (asyncEngineCount)
  bool concurrent_kernels = false;         ///< kernels of different streams may run at once
  std::size_t shared_per_block_optin = 0;  ///< the most dynamic shared memory a block can opt in to
  std::size_t shared_per_sm = 0;           ///< shared memory per multiprocessor
  std::size_t l2_bytes = 0;      ///< L2 cache: bandwidth tests must use more data than this
  std::size_t global_bytes = 0;  ///< device memory
  int clock_khz = 0;  ///< SM clock (cudaDevAttrClockRate; not in cudaDeviceProp since CUDA 13)
  int memory_clock_khz = 0;  ///< memory clock (cudaDevAttrMemoryClockRate)
  int memory_bus_bits = 0;   ///< memory bus width
  int max_threads_per_sm = 0;
};

/// Reads the capabilities of device `device`. Throws course::CudaError for a bad ordinal.
Capabilities query_capabilities(int device);

/// What can run at the same time, given the copy engines and concurrent-kernel support.
struct OverlapSupport {
  bool copy_with_kernel = false;      ///< a copy can overlap a kernel
  bool copy_both_directions = false;  ///< a host->device and a device->host copy at once
  bool concurrent_kernels = false;    ///< kernels from different streams at once
};

/// What `caps` allows to overlap (lessons 13 and 14 measure it).
OverlapSupport overlap_support(const Capabilities& caps);

/// The direction of a cudaMemcpy.
enum class Transfer { device_to_device, host_to_device, device_to_host };

/// Bytes a copy of `copy_bytes` moves through the memory system that limits it (the README's
/// "Counting bytes"). Bandwidths in the course use these counts.
double bytes_moved(Transfer transfer, std::size_t copy_bytes);

/// The datasheet-style peak of device memory: 2 transfers per clock (double data rate)
/// x memory clock x bus width, in GB/s. A ceiling to compare measurements with.
double theoretical_memory_gbps(const Capabilities& caps);

}  // namespace device_check
