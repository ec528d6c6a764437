// Your exercise: the TODOs in this file. Read-only: the helpers (capstone_device.cuh: the
// cp.async wrappers, the tile loads, the epilogue), the launchers (capstone_launch.cu), the
// rest of the lesson.
//
// Lesson 15: four SGEMM kernels, C = alpha A B + beta C (row-major, fp32 FMA), each one idea
// past the one before:
//   rung 1  a 32 x 32 tile per block, staged global -> registers -> shared, one output each
//   rung 2  a 128 x 128 tile per block, an 8 x 8 micro-tile of C in each thread's registers
//   rung 3  the same, with each warp owning a 64 x 32 slab and double-buffered shared tiles
//   rung 4  the tiles arrive through a multi-stage cp.async pipeline instead of registers
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
    // TODO 1: afterwards `sum` has gained this tile's share of the dot product of row `ty`
    //         of as and column `tx` of bs (fused multiply-adds, k in order).
    // BEGIN SOLUTION
#pragma unroll
    for (int kk = 0; kk < kSmemTile; ++kk) sum = fmaf(as[ty][kk], bs[kk][tx], sum);
    // STARTER: sum = fmaf(0.f, as[ty][0] + bs[0][tx], sum);
    // END SOLUTION
    __syncthreads();
  }
  if (row < m && col < n) {
    float* p = c + static_cast<std::size_t>(row) * n + col;
    *p = beta != 0.f ? fmaf(beta, *p, alpha * sum) : alpha * sum;
  }
}

// ---- The register micro-tile (rungs 2-4) -------------------------------------------------

// TODO 2: afterwards acc[i][j] has gained a[i] x b[j] for all 8 x 8 pairs (one fused
//         multiply-add each): 16 values read from shared memory feed 64 FMAs.
__device__ inline void outer_product(float (&acc)[kMicroM][kMicroN], const float (&a)[kMicroM],
                                     const float (&b)[kMicroN]) {
  // BEGIN SOLUTION
#pragma unroll
  for (int i = 0; i < kMicroM; ++i) {
#pragma unroll
    for (int j = 0; j < kMicroN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  }
  // STARTER: (void)acc; (void)a; (void)b;
  // END SOLUTION
}

/// Two float4 as one 8-element fragment.
__device__ inline void unpack(float (&f)[8], float4 lo, float4 hi) {
  f[0] = lo.x, f[1] = lo.y, f[2] = lo.z, f[3] = lo.w;
  f[4] = hi.x, f[5] = hi.y, f[6] = hi.z, f[7] = hi.w;
}

__device__ inline float4 load4(const float* p) { return *reinterpret_cast<const float4*>(p); }

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

/// Where a thread's 8 x 8 results sit in the block tile: rows row_base + {0, 32} + 0..3,
/// columns col_base + {0, 16} + 0..3.
struct WarpPlace {
  int row_base;
  int col_base;
};

// TODO 3: afterwards the 8 warps tile the 128 x 128 block tile as 2 (down) x 4 (across)
//         slabs of kWarpM x kWarpN; within its slab a warp's lanes form 8 (down) x 4
//         (across) groups of 4 x 4, so lanes that read the same rows of A share one address.
__device__ inline WarpPlace warp_place(int t) {
  // BEGIN SOLUTION
  const int warp = t / 32, lane = t % 32;
  return {(warp / 4) * kWarpM + (lane / 4) * 4, (warp % 4) * kWarpN + (lane % 4) * 4};
  // STARTER: (void)t;
  // STARTER: return {0, 0};
  // END SOLUTION
}

template <bool Vec>
__device__ inline void store_warp_results(float* c, int m, int n, int m0, int n0, WarpPlace w,
                                          const float (&acc)[kMicroM][kMicroN], float alpha,
                                          float beta) {
#pragma unroll
  for (int i = 0; i < kMicroM; ++i) {
    const int row = m0 + w.row_base + (i / 4) * 32 + i % 4;
    store_c4<Vec>(c, m, n, row, n0 + w.col_base, &acc[i][0], alpha, beta);
    store_c4<Vec>(c, m, n, row, n0 + w.col_base + 16, &acc[i][4], alpha, beta);
  }
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
  store_warp_results<Vec>(c, m, n, m0, n0, w, acc, alpha, beta);
}

// ---- Rung 4: a multi-stage cp.async pipeline ---------------------------------------------

__device__ inline float component(float4 v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// Two blocks per SM (at most 128 registers a thread): 16 warps hide each other's latency.
template <bool Vec, int Stages>
__global__ void __launch_bounds__(kThreads, 2)
    sgemm_cp_async_kernel(int m, int n, int k, float alpha, const float* a, const float* b,
                          float beta, float* c) {
  extern __shared__ __align__(16) float smem[];  // Stages x (A tile, B tile)
  const int t = threadIdx.x;
  const int m0 = blockIdx.y * kBlockM, n0 = blockIdx.x * kBlockN;
  const WarpPlace w = warp_place(t);
  const int tiles = (k + kAsyncBlockK - 1) / kAsyncBlockK;
  float acc[kMicroM][kMicroN] = {};
  float af[kMicroM], bf[kMicroN];
  // Prologue: tiles 0 .. Stages-2 in flight, one commit group each (empty ones included, so
  // that the group count stays in step with the tile count).
#pragma unroll
  for (int s = 0; s < Stages - 1; ++s) {
    if (s < tiles) {
      issue_tile<Vec>(smem + s * kStageFloats, smem + s * kStageFloats + kAsyncTileA, a, b, m, n, k,
                      m0, n0, s * kAsyncBlockK, t);
    }
    commit_group();
  }
  for (int tile = 0; tile < tiles; ++tile) {
    // TODO 4: afterwards tile `tile` has landed in stage tile % Stages and every thread can
    //         see it, and tile tile + Stages - 1 (if it exists) is in flight into the stage
    //         the block finished computing in the previous iteration, in a group of its own.
    // BEGIN SOLUTION
    wait_group<Stages - 2>();  // this thread's copies of `tile` are done...
    __syncthreads();           // ...and everyone's; and nobody still reads the stage reused next
    const int next = tile + Stages - 1;
    if (next < tiles) {
      float* stage = smem + (next % Stages) * kStageFloats;
      issue_tile<Vec>(stage, stage + kAsyncTileA, a, b, m, n, k, m0, n0, next * kAsyncBlockK, t);
    }
    commit_group();
    // END SOLUTION
    const float* as = smem + (tile % Stages) * kStageFloats;
    const float* bs = as + kAsyncTileA;
#pragma unroll
    for (int kk = 0; kk < kAsyncBlockK; kk += 4) {
      // A is row-major here (cp.async cannot transpose): one float4 holds 4 k-steps of a row.
      float4 arow[kMicroM];
#pragma unroll
      for (int i = 0; i < kMicroM; ++i) {
        const int row = w.row_base + (i / 4) * 32 + i % 4;
        arow[i] = load4(as + row * kAsyncBlockK + a_chunk_swizzle(row, kk / 4) * 4);
      }
#pragma unroll
      for (int q = 0; q < 4; ++q) {
#pragma unroll
        for (int i = 0; i < kMicroM; ++i) af[i] = component(arow[i], q);
        const float* bk = bs + (kk + q) * kBlockN + w.col_base;
        unpack(bf, load4(bk), load4(bk + 16));
        outer_product(acc, af, bf);
      }
    }
  }
  store_warp_results<Vec>(c, m, n, m0, n0, w, acc, alpha, beta);
}

}  // namespace
}  // namespace capstone
