#include "course/roof.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/check.h"
#include "course/device.h"
#include "course/timing.h"

namespace course {

namespace {

/// A plain copy of 16-byte vectors, tile by tile: block b copies tiles b, b + grid, ...
/// of `VectorsPerThread x blockDim.x` neighbouring vectors (the batches of the lessons);
/// each thread loads all of its vectors of a tile before it stores them, so that many
/// loads per thread are in flight at once, and a warp's accesses coalesce.
template <int VectorsPerThread>
__global__ void sm_copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst,
                               std::size_t vectors) {
  const std::size_t tile = static_cast<std::size_t>(blockDim.x) * VectorsPerThread;
  for (std::size_t first = blockIdx.x * tile; first < vectors; first += gridDim.x * tile) {
    if (first + tile <= vectors) {
      uint4 v[VectorsPerThread];
#pragma unroll
      for (int k = 0; k < VectorsPerThread; ++k) v[k] = src[first + k * blockDim.x + threadIdx.x];
#pragma unroll
      for (int k = 0; k < VectorsPerThread; ++k) dst[first + k * blockDim.x + threadIdx.x] = v[k];
    } else {  // the last, partial tile
      for (std::size_t i = first + threadIdx.x; i < vectors; i += blockDim.x) dst[i] = src[i];
    }
  }
}

}  // namespace

std::string SmCopyRoof::describe() const {
  return std::to_string(shape.blocks_per_sm) + " x " + std::to_string(shape.threads_per_block) +
         " threads per SM, " + std::to_string(shape.vectors_per_thread) + " vectors per thread";
}

void sm_copy(void* dst, const void* src, std::size_t bytes, const DeviceSummary& device,
             CopyShape shape, cudaStream_t stream) {
  if (reinterpret_cast<std::uintptr_t>(dst) % 16 != 0 ||
      reinterpret_cast<std::uintptr_t>(src) % 16 != 0 || bytes % 16 != 0) {
    throw std::invalid_argument(
        "sm_copy: both pointers must be 16-byte aligned and the size a multiple of 16");
  }
  if (shape.blocks_per_sm < 1 || shape.threads_per_block < 32 || shape.threads_per_block > 1024 ||
      (shape.vectors_per_thread != 4 && shape.vectors_per_thread != 8)) {
    throw std::invalid_argument("sm_copy: bad launch shape");
  }
  if (bytes == 0) return;
  const unsigned blocks = static_cast<unsigned>(device.sm_count * shape.blocks_per_sm);
  const auto* in = static_cast<const uint4*>(src);
  auto* out = static_cast<uint4*>(dst);
  if (shape.vectors_per_thread == 4) {
    sm_copy_kernel<4><<<blocks, shape.threads_per_block, 0, stream>>>(in, out, bytes / 16);
  } else {
    sm_copy_kernel<8><<<blocks, shape.threads_per_block, 0, stream>>>(in, out, bytes / 16);
  }
  COURSE_CHECK_LAUNCH();
}

SmCopyRoof measure_sm_copy_roof(void* dst, const void* src, std::size_t bytes,
                                const DeviceSummary& device, cudaStream_t stream, int warmup,
                                int iters) {
  // 2048 resident threads per SM on sm_80 and sm_90: every shape below fits.
  std::vector<CopyShape> shapes;
  for (int vectors : {4, 8}) {
    for (int threads : {256, 512, 1024}) {
      for (int blocks = 1; blocks * threads <= 2048; blocks *= 2) {
        shapes.push_back({blocks, threads, vectors});
      }
    }
  }
  SmCopyRoof best;
  for (const CopyShape& shape : shapes) {
    const Timing t = time_stream_work(
        [&](cudaStream_t s) { sm_copy(dst, src, bytes, device, shape, s); }, stream, warmup, iters);
    if (best.median_ms == 0 || t.median_ms < best.median_ms) best = {shape, t.median_ms};
  }
  return best;
}

}  // namespace course
