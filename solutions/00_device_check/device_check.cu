// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
//
// Lesson 00: what this GPU can do for asynchronous data movement.
//
// Every later lesson depends on a few numbers: the compute capability (8.0 brings the
// cp.async hardware path, 9.0 the tensor memory accelerator), the number of copy engines
// (whether transfers can overlap kernels, and each other), the shared memory a block may
// opt in to (how deep a pipeline can be), the L2 size (how much data a bandwidth test
// needs to measure memory instead of cache) and the memory clock and bus (the ceiling).
#include "device_check.cuh"

#include <cuda_runtime_api.h>

#include "course/check.h"

namespace device_check {

Capabilities query_capabilities(int device) {
  Capabilities caps;
  // TODO 1: afterwards every field of `caps` holds device `device`'s own value, exactly as
  //         the runtime reports it (the GPU test compares each one with the runtime's
  //         answer), in the units the struct documents. A bad ordinal must throw
  //         course::CudaError, not return garbage: no CUDA call's error may go unchecked.
  //         Mind the fields CUDA 13 removed from the property struct (the README says
  //         which). Budget: one query of the whole property struct, plus one single-value
  //         query for each field that struct no longer carries.
  // BEGIN SOLUTION
  cudaDeviceProp prop{};
  COURSE_CHECK(cudaGetDeviceProperties(&prop, device));
  caps.name = prop.name;
  caps.cc_major = prop.major;
  caps.cc_minor = prop.minor;
  caps.sm_count = prop.multiProcessorCount;
  caps.async_engine_count = prop.asyncEngineCount;
  caps.concurrent_kernels = prop.concurrentKernels != 0;
  caps.shared_per_block_optin = prop.sharedMemPerBlockOptin;
  caps.shared_per_sm = prop.sharedMemPerMultiprocessor;
  caps.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  caps.global_bytes = prop.totalGlobalMem;
  caps.memory_bus_bits = prop.memoryBusWidth;
  caps.max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
  COURSE_CHECK(cudaDeviceGetAttribute(&caps.clock_khz, cudaDevAttrClockRate, device));
  COURSE_CHECK(cudaDeviceGetAttribute(&caps.memory_clock_khz, cudaDevAttrMemoryClockRate, device));
  // STARTER: (void)device;
  // END SOLUTION
  return caps;
}

OverlapSupport overlap_support(const Capabilities& caps) {
  OverlapSupport support;
  // TODO 2: afterwards each field of `support` says whether that kind of overlap is
  //         possible on a GPU with `caps`, decided from `caps` alone (no CUDA call): what
  //         each one needs is in the README's capability table. One line per field.
  // BEGIN SOLUTION
  support.copy_with_kernel = caps.async_engine_count >= 1;
  support.copy_both_directions = caps.async_engine_count >= 2;
  support.concurrent_kernels = caps.concurrent_kernels;
  // STARTER: (void)caps;
  // END SOLUTION
  return support;
}

double bytes_moved(Transfer transfer, std::size_t copy_bytes) {
  // TODO 3: return the bytes a copy of `copy_bytes` in direction `transfer` moves through
  //         the memory system that limits it, counted the way every GB/s of the course
  //         counts them (the README's "Counting bytes"). The driver turns the D2D
  //         reference's and the transfers' times into GB/s with it; the harness counts the
  //         SM copy roof as read + write, so only the right count makes the D2D and roof
  //         rows comparable. At most 2 lines.
  // BEGIN SOLUTION
  const double bytes = static_cast<double>(copy_bytes);
  return transfer == Transfer::device_to_device ? 2.0 * bytes : bytes;
  // STARTER: (void)transfer; (void)copy_bytes;
  // STARTER: return 0.0;
  // END SOLUTION
}

double theoretical_memory_gbps(const Capabilities& caps) {
  // kHz x 1000 = transfers per second per pin, x2 for double data rate, x bits / 8 = bytes.
  return 2.0 * caps.memory_clock_khz * 1e3 * (caps.memory_bus_bits / 8.0) / 1e9;
}

}  // namespace device_check
