// Lesson 15: rungs 1-3, worked (read-only). Every tile travels global -> registers -> shared
// memory, as in lesson 01; each rung adds one idea to the one before:
//   rung 1  a 32 x 32 tile per block, one output per thread
//   rung 2  a 128 x 128 tile per block, an 8 x 8 micro-tile of C in each thread's registers
//   rung 3  the same, each warp owning a 64 x 32 slab, with double-buffered shared tiles
// Rungs 4 and 5 (capstone.cu) replace the trip through registers with asynchronous copies.
#pragma once

#include "capstone.cuh"
#include "capstone_device.cuh"

namespace capstone {
namespace {

// ---- Rung 1: shared-memory tiling through registers -------------------------------------

__global__ void __launch_bounds__(kSmemTile* kSmemTile)
    sgemm_smem_kernel(int m, int n, int k, float alpha, const float* a, const float* b, float beta,
                      float* c) {
  __shared__ float as[kSmemTile][kSmemTile];
  __shared__ float bs[kSmemTile][kSmemTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * kSmemTile + ty;
  const int col = blockIdx.x * kSmemTile + tx;
  float sum = 0.f;
  for (int k0 = 0; k0 < k; k0 += kSmemTile) {
    // Each thread loads one element of each tile into a register, then stores it.
    const float av = row < m && k0 + tx < k ? a[static_cast<std::size_t>(row) * k + k0 + tx] : 0.f;
    const float bv = k0 + ty < k && col < n ? b[static_cast<std::size_t>(k0 + ty) * n + col] : 0.f;
    as[ty][tx] = av;
    bs[ty][tx] = bv;
    __syncthreads();
    // Two shared-memory reads per fused multiply-add: shared memory, not the FMA units, sets
    // this rung's pace.
#pragma unroll
    for (int kk = 0; kk < kSmemTile; ++kk) sum = fmaf(as[ty][kk], bs[kk][tx], sum);
    __syncthreads();
  }
  if (row < m && col < n) {
    float* p = c + static_cast<std::size_t>(row) * n + col;
    *p = beta != 0.f ? fmaf(beta, *p, alpha * sum) : alpha * sum;
  }
}

// ---- Rung 2: register blocking -----------------------------------------------------------

template <bool Vec>
__global__ void __launch_bounds__(kThreads)
    sgemm_regblock_kernel(int m, int n, int k, float alpha, const float* a, const float* b,
                          float beta, float* c) {
  __shared__ __align__(16) float as[kBlockK * kAStride];  // transposed: as[k][m]
  __shared__ __align__(16) float bs[kBlockK * kBlockN];
  const int t = threadIdx.x, tx = t % 16, ty = t / 16;
  const int m0 = blockIdx.y * kBlockM, n0 = blockIdx.x * kBlockN;
  float acc[kMicroM][kMicroN] = {};
  float af[kMicroM], bf[kMicroN];
  for (int k0 = 0; k0 < k; k0 += kBlockK) {
    store_a_transposed(as, load_a_chunk<Vec>(a, m, k, m0, k0, t), t);
    store_b(bs, load_b_chunk<Vec>(b, k, n, k0, n0, t), t);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBlockK; ++kk) {
      // Rows ty*4.. and 64+ty*4.., columns tx*4.. and 64+tx*4..: float4 reads, no conflicts.
      unpack(af, load4(&as[kk * kAStride + ty * 4]), load4(&as[kk * kAStride + 64 + ty * 4]));
      unpack(bf, load4(&bs[kk * kBlockN + tx * 4]), load4(&bs[kk * kBlockN + 64 + tx * 4]));
      outer_product(acc, af, bf);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kMicroM; ++i) {
    const int row = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
    store_c4<Vec>(c, m, n, row, n0 + tx * 4, &acc[i][0], alpha, beta);
    store_c4<Vec>(c, m, n, row, n0 + 64 + tx * 4, &acc[i][4], alpha, beta);
  }
}

// ---- Rung 3: warp tiling -----------------------------------------------------------------

/// Where a thread's 8 x 8 results sit in the block tile: the 8 warps tile it as 2 (down) x 4
/// (across) slabs of 64 x 32; within its slab a warp's lanes form 8 (down) x 4 (across)
/// groups, lane l owning rows r0 + {0, 32} + 0..3 and columns c0 + {0, 16} + 0..3 with
/// r0 = slab row + (l / 4) x 4, c0 = slab column + (l % 4) x 4. The four lanes that share
/// rows read the same A values: one shared-memory read serves all four.
struct WarpPlace {
  int row_base;
  int col_base;
};

__device__ inline WarpPlace warp_place(int t) {
  const int warp = t / 32, lane = t % 32;
  return {(warp / 4) * kWarpM + (lane / 4) * 4, (warp % 4) * kWarpN + (lane % 4) * 4};
}

template <bool Vec>
__global__ void __launch_bounds__(kThreads)
    sgemm_warptile_kernel(int m, int n, int k, float alpha, const float* a, const float* b,
                          float beta, float* c) {
  __shared__ __align__(16) float as[2][kBlockK * kAStride];
  __shared__ __align__(16) float bs[2][kBlockK * kBlockN];
  const int t = threadIdx.x;
  const int m0 = blockIdx.y * kBlockM, n0 = blockIdx.x * kBlockN;
  const WarpPlace w = warp_place(t);
  float acc[kMicroM][kMicroN] = {};
  float af[kMicroM], bf[kMicroN];
  float4 av = load_a_chunk<Vec>(a, m, k, m0, 0, t), bv = load_b_chunk<Vec>(b, k, n, 0, n0, t);
  store_a_transposed(as[0], av, t);
  store_b(bs[0], bv, t);
  __syncthreads();
  int cur = 0;
  for (int k0 = 0; k0 < k; k0 += kBlockK) {
    const bool more = k0 + kBlockK < k;
    if (more) {  // the next tile's loads are in flight while this one is computed
      av = load_a_chunk<Vec>(a, m, k, m0, k0 + kBlockK, t);
      bv = load_b_chunk<Vec>(b, k, n, k0 + kBlockK, n0, t);
    }
#pragma unroll
    for (int kk = 0; kk < kBlockK; ++kk) {
      const float* ak = &as[cur][kk * kAStride + w.row_base];
      const float* bk = &bs[cur][kk * kBlockN + w.col_base];
      unpack(af, load4(ak), load4(ak + 32));
      unpack(bf, load4(bk), load4(bk + 16));
      outer_product(acc, af, bf);
    }
    if (more) {  // the other buffer was last read before the previous barrier
      store_a_transposed(as[cur ^ 1], av, t);
      store_b(bs[cur ^ 1], bv, t);
    }
    __syncthreads();
    cur ^= 1;
  }
#pragma unroll
  for (int i = 0; i < kMicroM; ++i) {
    const int row = m0 + w.row_base + (i / 4) * 32 + i % 4;
    store_c4<Vec>(c, m, n, row, n0 + w.col_base, &acc[i][0], alpha, beta);
    store_c4<Vec>(c, m, n, row, n0 + w.col_base + 16, &acc[i][4], alpha, beta);
  }
}

}  // namespace
}  // namespace capstone
