// Lesson 15: rungs 1-3, worked (read-only). Every tile travels global -> registers -> shared
// memory, as in lesson 01; each rung adds one idea to the one before:
//   rung 1  a 32 x 32 tile per block, one output per thread
//   rung 2  a 128 x 128 tile per block, an 8 x 8 micro-tile of C in each thread's registers
//   rung 3  a 128 x 256 tile, each warp owning a 64 x 64 warp tile and each thread 8 x 16
//           results, with double-buffered shared tiles: the tile of rungs 4 and 5
// Rungs 4 and 5 (capstone.cu) keep rung 3's tile and arithmetic and replace the trip through
// registers with asynchronous copies.
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
  __shared__ __align__(16) float as[kBlockK * kAStride];  // (kBlockK, kBlockM): A transposed
  __shared__ __align__(16) float bs[kBlockK * kBlockN];   // (kBlockK, kBlockN)
  const int t = threadIdx.x, tx = t % 16, ty = t / 16;
  const int m0 = blockIdx.y * kBlockM, n0 = blockIdx.x * kBlockN;
  float acc[kMicroM][kMicroN] = {};
  float af[kMicroM], bf[kMicroN];
  for (int k0 = 0; k0 < k; k0 += kBlockK) {
    // Thread t stages A[m0 + t / 2][k0 + (t % 2) * 4 ..] and B[k0 + t / 32][n0 + (t % 32) * 4 ..].
    store_a_transposed(as, load_chunk<Vec>(a, m, k, m0 + t / 2, k0 + (t % 2) * 4), t);
    *reinterpret_cast<float4*>(bs + (t / 32) * kBlockN + (t % 32) * 4) =
        load_chunk<Vec>(b, k, n, k0 + t / 32, n0 + (t % 32) * 4);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBlockK; ++kk) {
      // Rows ty*4.. and 64+ty*4.., columns tx*4.. and 64+tx*4..: float4 reads, no conflicts.
      load4_into(af, 0, &as[kk * kAStride + ty * 4]);
      load4_into(af, 4, &as[kk * kAStride + 64 + ty * 4]);
      load4_into(bf, 0, &bs[kk * kBlockN + tx * 4]);
      load4_into(bf, 4, &bs[kk * kBlockN + 64 + tx * 4]);
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

// ---- Rung 3: warp tiling, double-buffered through registers --------------------------------

/// This thread's chunks of one stage, on their way through registers: the chunks rung 4
/// copies with cp.async (a_chunk, b_chunk).
struct StagedChunks {
  float4 a;
  float4 b[kBChunksPerThread];
};

/// Loads this thread's chunks of the tiles at (m0, k0) of A and (k0, n0) of B into registers.
template <bool Vec>
__device__ inline void load_stage(StagedChunks& r, const float* a, const float* b, int m, int n,
                                  int k, int m0, int n0, int k0, int t) {
  const TileChunk ach = a_chunk(t);
  r.a = load_chunk<Vec>(a, m, k, m0 + ach.row, k0 + ach.col);
#pragma unroll
  for (int p = 0; p < kBChunksPerThread; ++p) {
    const TileChunk ch = b_chunk(t, p);
    r.b[p] = load_chunk<Vec>(b, k, n, k0 + ch.row, n0 + ch.col);
  }
}

/// Stores the chunks load_stage() loaded where they belong in `stage` (A transposed).
__device__ inline void store_stage(StageBuffer& stage, const StagedChunks& r, int t) {
  store_a_chunk_transposed(stage, a_chunk(t), r.a);
#pragma unroll
  for (int p = 0; p < kBChunksPerThread; ++p) {
    const TileChunk ch = b_chunk(t, p);
    *reinterpret_cast<float4*>(&stage.b[ch.row][ch.col]) = r.b[p];
  }
}

template <bool Vec>
__global__ void __launch_bounds__(kThreads, 1)
    sgemm_warptile_kernel(int m, int n, int k, float alpha, const float* a, const float* b,
                          float beta, float* c) {
  __shared__ StageBuffer stages[2];  // double buffering: 24 KiB
  const int t = threadIdx.x;
  const int m0 = blockIdx.y * kTileM, n0 = blockIdx.x * kTileN;
  const Place place = place_of(t);
  const int tiles = (k + kTileK - 1) / kTileK;
  Accumulators acc = {};
  StagedChunks staged;
  load_stage<Vec>(staged, a, b, m, n, k, m0, n0, 0, t);
  store_stage(stages[0], staged, t);
  __syncthreads();
  for (int tile = 0; tile < tiles; ++tile) {
    const bool more = tile + 1 < tiles;
    // The next tile's loads are in flight while this one is computed...
    if (more) load_stage<Vec>(staged, a, b, m, n, k, m0, n0, (tile + 1) * kTileK, t);
    multiply_stage(acc, stages[tile % 2], place);
    // ...and land in the other stage, which every thread last read before the last barrier.
    if (more) store_stage(stages[(tile + 1) % 2], staged, t);
    __syncthreads();
  }
  store_results<Vec>(c, m, n, m0, n0, place, acc, alpha, beta);
}

}  // namespace
}  // namespace capstone
