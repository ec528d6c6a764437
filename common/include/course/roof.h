/// \file roof.h
/// \brief The SM copy roof: how fast the SMs themselves can copy memory on this GPU.
///
/// A device-to-device cudaMemcpy is the classic yardstick, but on some GPUs (the H200 among
/// them) the driver runs it on a copy engine, not on the SMs, and no kernel can match it.
/// Every copy-and-compute lesson therefore also divides by this roof: a plain, vectorised
/// copy kernel (16-byte loads and stores, 4 or 8 in flight per thread, tile by tile like
/// the lessons' batches), timed at 18 launch shapes in the same run, the fastest one kept. A kernel at 1.00 x this roof copies as
/// fast as the SMs can copy; what it does beyond copying then costs nothing.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace course {

struct DeviceSummary;

/// One launch shape of the roof kernel.
struct CopyShape {
  int blocks_per_sm = 1;
  int threads_per_block = 256;
  int vectors_per_thread = 4;  ///< 16-byte vectors each thread loads before it stores (4 or 8)
};

/// Enqueues the roof's copy kernel: `bytes` bytes from `src` to `dst` with `shape`.
/// Both pointers must be 16-byte aligned and `bytes` a multiple of 16
/// (std::invalid_argument otherwise, before any CUDA call).
void sm_copy(void* dst, const void* src, std::size_t bytes, const DeviceSummary& device,
             CopyShape shape, cudaStream_t stream);

/// The fastest shape of the roof kernel, and its time.
struct SmCopyRoof {
  CopyShape shape;
  double median_ms = 0;
  /// "8 x 256 threads per SM": how the roof was reached.
  std::string describe() const;
};

/// Times sm_copy() at 18 launch shapes (256, 512 and 1024 threads; one block per SM up to a
/// full SM; 4 or 8 vectors per thread) and returns the fastest: `warmup` untimed then `iters` timed runs each.
SmCopyRoof measure_sm_copy_roof(void* dst, const void* src, std::size_t bytes,
                                const DeviceSummary& device, cudaStream_t stream, int warmup,
                                int iters);

}  // namespace course
