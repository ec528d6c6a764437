// Lesson 15: the device helpers every rung shares (read-only): the register micro-tile, the
// loads of rungs 2-3's tiles through registers, the cp.async wrappers of lesson 09 and the
// copies of one stage of rung 4, the mbarrier and tensor-load calls of lessons 10-11 for
// rung 5, and the epilogue that writes a thread's results.
#pragma once

#include <cuda.h>  // CUtensorMap
#include <cuda_runtime.h>
#include <cuda/ptx>

#include <cstddef>
#include <cstdint>

#include "capstone.cuh"

namespace capstone {
namespace {

namespace ptx = cuda::ptx;

// ---- The register micro-tile (rungs 2-5) -------------------------------------------------

/// acc[i][j] += a[i] b[j] for all 8 x 8 pairs: 16 values read from shared memory feed 64
/// fused multiply-adds. This ratio is what makes rungs 2-5 fast.
__device__ inline void outer_product(float (&acc)[kMicroM][kMicroN], const float (&a)[kMicroM],
                                     const float (&b)[kMicroN]) {
#pragma unroll
  for (int i = 0; i < kMicroM; ++i) {
#pragma unroll
    for (int j = 0; j < kMicroN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  }
}

/// Two float4 as one 8-element fragment.
__device__ inline void unpack(float (&f)[8], float4 lo, float4 hi) {
  f[0] = lo.x, f[1] = lo.y, f[2] = lo.z, f[3] = lo.w;
  f[4] = hi.x, f[5] = hi.y, f[6] = hi.z, f[7] = hi.w;
}

__device__ inline float4 load4(const float* p) { return *reinterpret_cast<const float4*>(p); }

__device__ inline float component(float4 v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// ---- Loads of one tile through registers (rungs 2 and 3) ---------------------------------

/// This thread's share of a 128 x 8 tile of A starting at (m0, k0): row t / 2, columns
/// (t % 2) x 4 .. + 3. Elements outside the m x k matrix read as zero.
template <bool Vec>
__device__ inline float4 load_a_chunk(const float* a, int m, int k, int m0, int k0, int t) {
  const int row = m0 + t / 2;
  const int col = k0 + (t % 2) * 4;
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
  if (row >= m) return v;
  const float* p = a + static_cast<std::size_t>(row) * k + col;
  if constexpr (Vec) {
    if (col < k) v = *reinterpret_cast<const float4*>(p);  // k % 4 == 0: the chunk is whole
  } else {
    if (col + 0 < k) v.x = p[0];
    if (col + 1 < k) v.y = p[1];
    if (col + 2 < k) v.z = p[2];
    if (col + 3 < k) v.w = p[3];
  }
  return v;
}

/// This thread's share of an 8 x 128 tile of B starting at (k0, n0): row t / 32, columns
/// (t % 32) x 4 .. + 3. Elements outside the k x n matrix read as zero.
template <bool Vec>
__device__ inline float4 load_b_chunk(const float* b, int k, int n, int k0, int n0, int t) {
  const int row = k0 + t / 32;
  const int col = n0 + (t % 32) * 4;
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
  if (row >= k) return v;
  const float* p = b + static_cast<std::size_t>(row) * n + col;
  if constexpr (Vec) {
    if (col < n) v = *reinterpret_cast<const float4*>(p);  // n % 4 == 0: the chunk is whole
  } else {
    if (col + 0 < n) v.x = p[0];
    if (col + 1 < n) v.y = p[1];
    if (col + 2 < n) v.z = p[2];
    if (col + 3 < n) v.w = p[3];
  }
  return v;
}

/// The padded row length of rungs 2-3's transposed A tile (As[k][m]): 128 + 4 floats, so the
/// transposing stores of a warp do not pile onto the same banks, and rows stay 16-byte aligned.
inline constexpr int kAStride = kBlockM + 4;

/// Stores a chunk from load_a_chunk() transposed: As[k][m] = A[m][k].
__device__ inline void store_a_transposed(float* as, float4 v, int t) {
  const int row = t / 2;
  const int col = (t % 2) * 4;
  as[(col + 0) * kAStride + row] = v.x;
  as[(col + 1) * kAStride + row] = v.y;
  as[(col + 2) * kAStride + row] = v.z;
  as[(col + 3) * kAStride + row] = v.w;
}

/// Stores a chunk from load_b_chunk(): Bs[k][n] = B[k][n].
__device__ inline void store_b(float* bs, float4 v, int t) {
  *reinterpret_cast<float4*>(bs + (t / 32) * kBlockN + (t % 32) * 4) = v;
}

// ---- One stage of rungs 4 and 5 ----------------------------------------------------------

/// Floats of one stage: the 128 x 32 tile of A (row-major, 128-byte rows whose 16-byte
/// chunks are swizzled by a_chunk_swizzle), then the 32 x 128 tile of B (row-major).
inline constexpr int kTileAFloats = kBlockM * kAsyncBlockK;
inline constexpr int kStageFloats = static_cast<int>(kStageBytes / sizeof(float));

// ---- The epilogue ------------------------------------------------------------------------

/// C[row][col + i] = alpha acc[i] + beta C[row][col + i] for the four columns inside the
/// matrix (C not read when beta == 0). Vec: n % 4 == 0 and C 16-byte aligned, so a chunk
/// is either whole or entirely outside.
template <bool Vec>
__device__ inline void store_c4(float* c, int m, int n, int row, int col, const float* acc,
                                float alpha, float beta) {
  if (row >= m || col >= n) return;
  float* p = c + static_cast<std::size_t>(row) * n + col;
  if constexpr (Vec) {
    float4 out = make_float4(alpha * acc[0], alpha * acc[1], alpha * acc[2], alpha * acc[3]);
    if (beta != 0.f) {
      const float4 old = *reinterpret_cast<const float4*>(p);
      out.x = fmaf(beta, old.x, out.x);
      out.y = fmaf(beta, old.y, out.y);
      out.z = fmaf(beta, old.z, out.z);
      out.w = fmaf(beta, old.w, out.w);
    }
    *reinterpret_cast<float4*>(p) = out;
  } else {
    for (int i = 0; i < 4 && col + i < n; ++i) {
      p[i] = beta != 0.f ? fmaf(beta, p[i], alpha * acc[i]) : alpha * acc[i];
    }
  }
}

// ---- The computing threads of rungs 4 and 5 ---------------------------------------------

/// Where a thread of rungs 4 and 5 computes: the 8 computing warps tile the 128 x 128 block
/// tile as 2 (down) x 4 (across) slabs of 64 x 32; lane l owns rows row0 + 8 i (i = 0..7)
/// and columns col0 + 0..3 and col0 + 16 + 0..3, with row0 = slab row + l / 4 and col0 =
/// slab column + (l % 4) x 4. Interleaved rows: the 8 rows a warp reads at once are
/// consecutive, so their swizzled A chunks fall in 8 different bank groups.
struct Place {
  int row0;
  int col0;
};

__device__ inline Place place_of(int t) {
  const int warp = t / 32, lane = t % 32;
  return {(warp / 4) * kWarpM + lane / 4, (warp % 4) * kWarpN + (lane % 4) * 4};
}

/// acc += this thread's rows of the stage's A tile x its columns of the B tile: 32 k-steps
/// of outer products. A's rows are read 4 k-steps at a time (one float4 per row, from its
/// swizzled chunk), B's row k as two float4.
__device__ inline void multiply_stage(float (&acc)[kMicroM][kMicroN], const float* stage, Place p) {
  const float* as = stage;
  const float* bs = stage + kTileAFloats;
#pragma unroll
  for (int q = 0; q < kAsyncBlockK / 4; ++q) {
    float4 arow[kMicroM];
#pragma unroll
    for (int i = 0; i < kMicroM; ++i) {
      const int row = p.row0 + 8 * i;
      arow[i] = load4(as + row * kAsyncBlockK + a_chunk_swizzle(row, q) * 4);
    }
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      float af[kMicroM], bf[kMicroN];
#pragma unroll
      for (int i = 0; i < kMicroM; ++i) af[i] = component(arow[i], kk);
      const float* bk = bs + (4 * q + kk) * kBlockN + p.col0;
      unpack(bf, load4(bk), load4(bk + 16));
      outer_product(acc, af, bf);
    }
  }
}

/// Writes a thread's 8 x 8 results of rungs 4 and 5 (see Place) through store_c4().
template <bool Vec>
__device__ inline void store_results(float* c, int m, int n, int m0, int n0, Place p,
                                     const float (&acc)[kMicroM][kMicroN], float alpha,
                                     float beta) {
#pragma unroll
  for (int i = 0; i < kMicroM; ++i) {
    const int row = m0 + p.row0 + 8 * i;
    store_c4<Vec>(c, m, n, row, n0 + p.col0, &acc[i][0], alpha, beta);
    store_c4<Vec>(c, m, n, row, n0 + p.col0 + 16, &acc[i][4], alpha, beta);
  }
}

// ---- cp.async (lesson 09), for rung 4 ----------------------------------------------------

__device__ inline std::uint32_t shared_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

/// 16 bytes from global `src` to shared `dst` (both 16-byte aligned), L1 bypassed; only
/// `src_size` bytes (0, 4, 8, 12 or 16) are read, the rest of the 16 is zero-filled.
__device__ inline void cp_async16_zfill(void* dst, const void* src, unsigned src_size) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)),
               "l"(src), "r"(src_size)
               : "memory");
}

/// 4 bytes, read only when `valid` (zero-filled otherwise): the path for rows that are not
/// 16-byte aligned.
__device__ inline void cp_async4_zfill(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(shared_address(dst)),
               "l"(src), "r"(valid ? 4u : 0u)
               : "memory");
}

__device__ inline void commit_group() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int N>
__device__ inline void wait_group() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/// One 16-byte chunk of a tile: `dst` in shared memory, from row `row` (of `rows`) and
/// columns col .. col + 3 (of `cols`) of the row-major matrix at `base` (leading dimension
/// `cols`). Outside the matrix the chunk is zero-filled: src-size 0 reads nothing, and its
/// source is then `base` itself, a valid address. Vec: rows 16-byte aligned; otherwise four
/// 4-byte copies.
template <bool Vec>
__device__ inline void copy_chunk(float* dst, const float* base, int rows, int cols, int row,
                                  int col) {
  const float* src = base + static_cast<std::size_t>(row) * cols + col;
  if constexpr (Vec) {
    const unsigned bytes = row < rows ? chunk_bytes(col, cols) : 0u;
    cp_async16_zfill(dst, bytes != 0 ? src : base, bytes);
  } else {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const bool valid = row < rows && col + e < cols;
      cp_async4_zfill(dst + e, valid ? src + e : base, valid);
    }
  }
}

/// Starts this thread's copies of one stage: the tiles at (m0, k0) of A and (k0, n0) of B,
/// 1024 chunks each, four of each per thread. A's chunks go where the 128-byte swizzle puts
/// them, so rung 4's stage has exactly the layout of rung 5's tensor loads.
template <bool Vec>
__device__ inline void copy_stage(float* stage, const float* a, const float* b, int m, int n, int k,
                                  int m0, int n0, int k0, int t) {
  constexpr int kChunksPerRow = kAsyncBlockK / 4;  // 8 in a row of A
#pragma unroll
  for (int p = 0; p < kTileAFloats / 4 / kThreads; ++p) {
    const int q = t + p * kThreads;
    const int row = q / kChunksPerRow, chunk = q % kChunksPerRow;
    copy_chunk<Vec>(stage + row * kAsyncBlockK + a_chunk_swizzle(row, chunk) * 4, a, m, k, m0 + row,
                    k0 + chunk * 4);
  }
  float* bs = stage + kTileAFloats;
#pragma unroll
  for (int p = 0; p < kAsyncBlockK * kBlockN / 4 / kThreads; ++p) {
    const int q = t + p * kThreads;
    const int row = q / (kBlockN / 4), chunk = q % (kBlockN / 4);
    copy_chunk<Vec>(bs + row * kBlockN + chunk * 4, b, k, n, k0 + row, n0 + chunk * 4);
  }
}

// ---- mbarriers and tensor loads (lessons 10 and 11), for rung 5 --------------------------

/// `p` moved up to the next shared-memory address that is a multiple of `alignment`.
__device__ inline unsigned char* align_shared(unsigned char* p, std::uint32_t alignment) {
  return p + (alignment - shared_address(p) % alignment) % alignment;
}

/// Waits that gave up (see wait_parity); read and reset by take_wait_timeouts().
__device__ unsigned long long g_wait_timeouts;

__device__ inline unsigned long long global_timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// Waits until the phase of `bar` with parity `parity` has completed, for at most
/// kWaitLimitNs. A missing arrival or a wrong parity would otherwise hang the GPU until the
/// test's timeout; here the thread counts the failure in g_wait_timeouts and goes on (its
/// results are wrong, the host reports it), and once any wait gave up, later ones give up
/// at once, so a broken kernel ends quickly.
__device__ inline void wait_parity(std::uint64_t* bar, std::uint32_t parity) {
#if __CUDA_ARCH__ >= 900
  if (ptx::mbarrier_try_wait_parity(bar, parity)) return;
  if (*static_cast<volatile unsigned long long*>(&g_wait_timeouts) != 0) return;
  const unsigned long long start = global_timer_ns();
  while (!ptx::mbarrier_try_wait_parity(bar, parity)) {
    if (global_timer_ns() - start > kWaitLimitNs) {
      atomicAdd(&g_wait_timeouts, 1ull);
      return;
    }
  }
#else
  (void)bar, (void)parity;
#endif
}

/// One thread: the box of `map` whose first element is (row, col) is on its way into `smem`,
/// its bytes counted on `bar` (coordinates go innermost first: column, then row).
__device__ inline void load_box(const CUtensorMap* map, void* smem, std::uint64_t* bar, int row,
                                int col) {
#if __CUDA_ARCH__ >= 900
  const std::int32_t coords[2] = {col, row};
  ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, smem, map, coords, bar);
#else
  (void)map, (void)smem, (void)bar, (void)row, (void)col;
#endif
}

}  // namespace
}  // namespace capstone
