// Lesson 15: the device helpers the kernels in capstone.cu share: the cp.async wrappers you
// wrote in lesson 09, the loads of one tile from global memory (bounds-checked, zeros past
// the matrix) and the epilogue that writes a thread's results. Read-only.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "capstone.cuh"

namespace capstone {
namespace {

// ---- cp.async (lesson 09) ----------------------------------------------------------------

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

// ---- Loads of one tile through cp.async (rung 4) ------------------------------------------

/// Floats of one stage of the cp.async rung: a 128 x 16 tile of A (row-major, its 16-byte
/// chunks swizzled by a_chunk_swizzle) and a 16 x 128 tile of B (row-major).
inline constexpr int kAsyncTileA = kBlockM * kAsyncBlockK;
inline constexpr int kStageFloats = kAsyncTileA + kAsyncBlockK * kBlockN;

/// Starts the copies of this thread's share of the tiles at (m0, k0) of A and (k0, n0) of B
/// into one stage (`as`, `bs`): two 16-byte chunks of each. Past the matrix the chunk is
/// zero-filled (src-size 0 reads nothing; its source is then the matrix's first element, a
/// valid address). Vec: rows 16-byte aligned; otherwise four 4-byte copies per chunk.
template <bool Vec>
__device__ inline void issue_tile(float* as, float* bs, const float* a, const float* b, int m,
                                  int n, int k, int m0, int n0, int k0, int t) {
#pragma unroll
  for (int p = 0; p < 2; ++p) {
    const int q = t + p * kThreads;
    const int row = q / 4, chunk = q % 4;
    float* dst = as + row * kAsyncBlockK + a_chunk_swizzle(row, chunk) * 4;
    const int gr = m0 + row, gc = k0 + chunk * 4;
    const float* src = a + static_cast<std::size_t>(gr) * k + gc;
    if constexpr (Vec) {
      const unsigned bytes = gr < m ? chunk_bytes(gc, k) : 0u;
      cp_async16_zfill(dst, bytes != 0 ? src : a, bytes);
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const bool valid = gr < m && gc + e < k;
        cp_async4_zfill(dst + e, valid ? src + e : a, valid);
      }
    }
  }
#pragma unroll
  for (int p = 0; p < 2; ++p) {
    const int q = t + p * kThreads;
    const int row = q / 32, chunk = q % 32;
    float* dst = bs + row * kBlockN + chunk * 4;
    const int gr = k0 + row, gc = n0 + chunk * 4;
    const float* src = b + static_cast<std::size_t>(gr) * n + gc;
    if constexpr (Vec) {
      const unsigned bytes = gr < k ? chunk_bytes(gc, n) : 0u;
      cp_async16_zfill(dst, bytes != 0 ? src : b, bytes);
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const bool valid = gr < k && gc + e < n;
        cp_async4_zfill(dst + e, valid ? src + e : b, valid);
      }
    }
  }
}

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

}  // namespace
}  // namespace capstone
