#include "course/roof.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "course/check.h"
#include "course/device.h"
#include "course/timing.h"

namespace course {

namespace {

/// A plain grid-stride copy of 16-byte vectors: each thread loads four vectors (a block's
/// loads of one round are `4 x blockDim.x` neighbouring vectors apart) before it stores
/// them, so four loads per thread are in flight at once.
__global__ void sm_copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst,
                               std::size_t vectors) {
  constexpr int kInFlight = 4;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + (kInFlight - 1) * stride < vectors; i += kInFlight * stride) {
    uint4 v[kInFlight];
#pragma unroll
    for (int k = 0; k < kInFlight; ++k) v[k] = src[i + k * stride];
#pragma unroll
    for (int k = 0; k < kInFlight; ++k) dst[i + k * stride] = v[k];
  }
  for (; i < vectors; i += stride) dst[i] = src[i];
}

}  // namespace

std::string SmCopyRoof::describe() const {
  return std::to_string(shape.blocks_per_sm) + " x " + std::to_string(shape.threads_per_block) +
         " threads per SM";
}

void sm_copy(void* dst, const void* src, std::size_t bytes, const DeviceSummary& device,
             CopyShape shape, cudaStream_t stream) {
  if (reinterpret_cast<std::uintptr_t>(dst) % 16 != 0 ||
      reinterpret_cast<std::uintptr_t>(src) % 16 != 0 || bytes % 16 != 0) {
    throw std::invalid_argument(
        "sm_copy: both pointers must be 16-byte aligned and the size a multiple of 16");
  }
  if (shape.blocks_per_sm < 1 || shape.threads_per_block < 32 || shape.threads_per_block > 1024) {
    throw std::invalid_argument("sm_copy: bad launch shape");
  }
  if (bytes == 0) return;
  sm_copy_kernel<<<device.sm_count * shape.blocks_per_sm, shape.threads_per_block, 0, stream>>>(
      static_cast<const uint4*>(src), static_cast<uint4*>(dst), bytes / 16);
  COURSE_CHECK_LAUNCH();
}

SmCopyRoof measure_sm_copy_roof(void* dst, const void* src, std::size_t bytes,
                                const DeviceSummary& device, cudaStream_t stream, int warmup,
                                int iters) {
  // 2048 resident threads per SM on sm_80 and sm_90: every shape below fits.
  const std::vector<CopyShape> shapes = {{1, 256}, {2, 256}, {4, 256}, {8, 256}, {1, 512},
                                         {2, 512}, {4, 512}, {1, 1024}, {2, 1024}};
  SmCopyRoof best;
  for (const CopyShape& shape : shapes) {
    const Timing t = time_stream_work(
        [&](cudaStream_t s) { sm_copy(dst, src, bytes, device, shape, s); }, stream, warmup, iters);
    if (best.median_ms == 0 || t.median_ms < best.median_ms) best = {shape, t.median_ms};
  }
  return best;
}

}  // namespace course
