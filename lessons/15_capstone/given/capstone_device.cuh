// Lesson 15: the device helpers the rungs share (read-only): loading a 16-byte chunk of a
// matrix, rung 2's micro-tile, the one tile of rungs 3-5 (where each thread computes, how it
// multiplies a stage, how it writes its results, who copies which chunk of a stage), the
// cp.async wrappers of lesson 09 for rung 4, and rung 5's mbarriers with the course's bounded
// wait (course/mbarrier.cuh).
#pragma once

#include <cuda.h>  // CUtensorMap
#include <cuda_runtime.h>
#include <cuda/ptx>

#include <cstddef>
#include <cstdint>

#include "capstone.cuh"
#include "course/mbarrier.cuh"


namespace capstone {
namespace {

namespace ptx = cuda::ptx;

__device__ inline float4 load4(const float* p) { return *reinterpret_cast<const float4*>(p); }

/// The 16-byte chunk of the row-major matrix `base` (rows x cols, leading dimension cols) at
/// row `row`, columns col .. col + 3, through registers. Elements outside the matrix read as
/// zero. Vec: rows are 16-byte aligned and cols % 4 == 0, so a chunk is whole or entirely
/// outside, and one float4 load reads it.
template <bool Vec>
__device__ inline float4 load_chunk(const float* base, int rows, int cols, int row, int col) {
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
  if (row >= rows) return v;
  const float* p = base + static_cast<std::size_t>(row) * cols + col;
  if constexpr (Vec) {
    if (col < cols) v = load4(p);
  } else {
    if (col + 0 < cols) v.x = p[0];
    if (col + 1 < cols) v.y = p[1];
    if (col + 2 < cols) v.z = p[2];
    if (col + 3 < cols) v.w = p[3];
  }
  return v;
}

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
      const float4 old = load4(p);
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

/// acc[i][j] += a[i] b[j] for every pair: M + N values feed M x N fused multiply-adds. This
/// ratio is what makes rungs 2-5 fast. Column by column, the rows in serpentine order (down,
/// then up): consecutive FMAs share an operand, which the hardware reuses instead of reading
/// it again from the register file.
template <int M, int N>
__device__ inline void outer_product(float (&acc)[M][N], const float (&a)[M], const float (&b)[N]) {
#pragma unroll
  for (int j = 0; j < N; ++j) {
#pragma unroll
    for (int r = 0; r < M; ++r) {
      const int i = j % 2 == 0 ? r : M - 1 - r;
      acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
  }
}

/// Four consecutive floats (16-byte aligned) into f[at .. at + 3].
template <int N>
__device__ inline void load4_into(float (&f)[N], int at, const float* p) {
  const float4 v = load4(p);
  f[at + 0] = v.x, f[at + 1] = v.y, f[at + 2] = v.z, f[at + 3] = v.w;
}

// ---- Rung 2: the 8 x 8 micro-tile ----------------------------------------------------------

/// The padded row length of rung 2's transposed A tile (As[k][m]): 128 + 4 floats, so the
/// transposing stores of a warp do not pile onto the same banks, and rows stay 16-byte aligned.
inline constexpr int kAStride = kBlockM + 4;

/// Stores this thread's chunk of rung 2's 128 x 8 A tile (row t / 2, columns (t % 2) x 4 ..)
/// transposed: As[k][m] = A[m][k].
__device__ inline void store_a_transposed(float* as, float4 v, int t) {
  const int row = t / 2;
  const int col = (t % 2) * 4;
  as[(col + 0) * kAStride + row] = v.x;
  as[(col + 1) * kAStride + row] = v.y;
  as[(col + 2) * kAStride + row] = v.z;
  as[(col + 3) * kAStride + row] = v.w;
}

// ---- Rungs 3-5: where a thread computes ------------------------------------------------

/// A thread's place in the 128 x 256 block tile. Warp w owns the 64 x 64 warp tile at rows
/// (w / 4) x 64, columns (w % 4) x 64. In it, lane l owns 16 rows, four runs of 4 that are 16
/// apart (row0 + 16 i + r, i, r = 0..3), and 8 columns, two runs of 4 that are 32 apart
/// (col0 + 32 j + e, j, e = 0..1, 0..3), with row0 = warp row + (l / 8) x 4 and col0 = warp
/// column + (l % 8) x 4. At a k-step the warp then reads 4 x 16 contiguous bytes of a row of
/// A^T and 8 x 16 of a row of B per float4 load: no bank is read twice.
struct Place {
  int row0;
  int col0;
};

__device__ inline Place place_of(int t) {
  const int warp = t / 32, lane = t % 32;
  constexpr int kWarpsAcross = kTileN / kWarpTileN;  // 4
  return {(warp / kWarpsAcross) * kWarpTileM + (lane / kLanesAcross) * 4,
          (warp % kWarpsAcross) * kWarpTileN + (lane % kLanesAcross) * 4};
}

/// The results a thread accumulates in registers: 16 x 8 floats.
using Accumulators = float[kThreadTileM][kThreadTileN];

/// acc += this thread's rows of the stage's A tile x its columns of the B tile, one k-step
/// after the other: per k-step four float4 of A^T's row k, two float4 of B's row k, and 128
/// fused multiply-adds.
__device__ inline void multiply_stage(Accumulators& acc, const StageBuffer& stage, Place p) {
#pragma unroll
  for (int k = 0; k < kTileK; ++k) {
    float a[kThreadTileM], b[kThreadTileN];
#pragma unroll
    for (int i = 0; i < kThreadTileM / 4; ++i) load4_into(a, 4 * i, &stage.a[k][p.row0 + 16 * i]);
#pragma unroll
    for (int j = 0; j < kThreadTileN / 4; ++j) load4_into(b, 4 * j, &stage.b[k][p.col0 + 32 * j]);
    outer_product(acc, a, b);
  }
}

/// Writes a thread's 16 x 8 results (see Place) through store_c4(): per row, two chunks of 4
/// columns, 32 apart.
template <bool Vec>
__device__ inline void store_results(float* c, int m, int n, int m0, int n0, Place p,
                                     const Accumulators& acc, float alpha, float beta) {
#pragma unroll
  for (int i = 0; i < kThreadTileM; ++i) {
    const int row = m0 + p.row0 + 16 * (i / 4) + i % 4;
#pragma unroll
    for (int j = 0; j < kThreadTileN / 4; ++j) {
      store_c4<Vec>(c, m, n, row, n0 + p.col0 + 32 * j, &acc[i][4 * j], alpha, beta);
    }
  }
}

// ---- Rungs 3-5: who copies which chunk of a stage ------------------------------------------

/// A stage is 256 16-byte chunks of A (128 rows x 2) and 512 of B (8 rows x 64). Each of the
/// 256 computing threads of rung 3 loads one chunk of A (row t / 2, columns (t % 2) x 4 ..)
/// and two of B (chunks t and t + 256, row-major): the global reads of a warp are contiguous.
/// A's chunk is stored transposed, one float at a time (rung 5's transposing warps do the
/// same); the padding of StageBuffer::a puts the 32 stores of a warp in 32 different banks.
/// (Rung 4 copies A float by float instead: StageCopyPlan.)
inline constexpr int kAChunks = kTileM * kTileK / 4;
inline constexpr int kBChunksPerThread = kTileK * kTileN / 4 / kThreads;
static_assert(kAChunks == kThreads && kBChunksPerThread * kThreads * 4 == kTileK * kTileN,
              "rung 3: one chunk of A and two of B per thread");

/// A chunk of a tile: its row and first column within the tile.
struct TileChunk {
  int row;
  int col;
};

/// Chunk q of the A tile (128 x 8): row q / 2, columns (q % 2) x 4 .. + 3.
__device__ inline TileChunk a_chunk(int q) { return {q / (kTileK / 4), (q % (kTileK / 4)) * 4}; }

/// Chunk t + kThreads p of the B tile (8 x 256).
__device__ inline TileChunk b_chunk(int t, int p) {
  const int q = t + p * kThreads;
  return {q / (kTileN / 4), (q % (kTileN / 4)) * 4};
}

/// Stores a chunk of A (row `ch.row`, 4 columns from `ch.col`) transposed into the stage.
__device__ inline void store_a_chunk_transposed(StageBuffer& stage, TileChunk ch, float4 v) {
  stage.a[ch.col + 0][ch.row] = v.x;
  stage.a[ch.col + 1][ch.row] = v.y;
  stage.a[ch.col + 2][ch.row] = v.z;
  stage.a[ch.col + 3][ch.row] = v.w;
}

// ---- cp.async (lesson 09), for rung 4 ------------------------------------------------------

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

/// Rung 4's share of thread t in every stage: 4 floats of the A tile, rows t / 8 + 32 e and
/// column t % 8 (cp.async moves 4, 8 or 16 contiguous bytes and cannot transpose, so A goes
/// float by float; the 32 copies of a warp read 4 rows x 8 consecutive floats, 4 sectors, and
/// write 32 different banks of A^T), and 2 chunks of the B tile, rows t / 64 + 4 p, columns
/// (t % 64) x 4 .. + 3. Worked out once per block: from one tile to the next only k0 moves,
/// so a copy then costs an add and a compare. (Working every address out again per copy took
/// rung 4 4% more instructions and cost it 5% of its speed on an H100.)
inline constexpr int kAFloatsPerThread = kTileM * kTileK / kThreads;  // 4
inline constexpr int kARowsApart = kThreads / kTileK;                 // 32
inline constexpr int kBRowsApart = kThreads / (kTileN / 4);           // 4
static_assert(kAFloatsPerThread * kARowsApart == kTileM && kBChunksPerThread * kBRowsApart == kTileK,
              "rung 4: every float of A and every chunk of B is copied once");

struct StageCopyPlan {
  const float* a_src;      ///< A[m0 + a_row][a_col]: this thread's first float of A at k0 = 0
  const float* b_src;      ///< B[b_row][n0 + b_col]: its first chunk of B at k0 = 0
  std::size_t a_ld;        ///< leading dimensions (k of A, n of B), in floats
  std::size_t b_ld;
  unsigned a_rows_inside;  ///< bit e: row m0 + a_row + 32 e is a row of A
  unsigned b_chunk_bytes;  ///< bytes of the chunk's 16 inside B's columns (chunk_bytes)
  int a_row, a_col;        ///< where the floats of A land: stage.a[a_col][a_row + 32 e]
  int b_row, b_col;        ///< where the chunks of B land: stage.b[b_row + 4 p][b_col]
};

__device__ inline StageCopyPlan plan_stage_copies(const float* a, const float* b, int m, int n,
                                                  int k, int m0, int n0, int t) {
  StageCopyPlan plan;
  plan.a_row = t / kTileK;
  plan.a_col = t % kTileK;
  plan.b_row = t / (kTileN / 4);
  plan.b_col = (t % (kTileN / 4)) * 4;
  plan.a_ld = static_cast<std::size_t>(k);
  plan.b_ld = static_cast<std::size_t>(n);
  plan.a_src = a + (m0 + plan.a_row) * plan.a_ld + plan.a_col;
  plan.b_src = b + plan.b_row * plan.b_ld + n0 + plan.b_col;
  plan.a_rows_inside = 0;
#pragma unroll
  for (int e = 0; e < kAFloatsPerThread; ++e) {
    plan.a_rows_inside |= (m0 + plan.a_row + kARowsApart * e < m ? 1u : 0u) << e;
  }
  plan.b_chunk_bytes = chunk_bytes(n0 + plan.b_col, n);
  return plan;
}

/// Starts this thread's copies of the stage at k0 (see StageCopyPlan). Copies outside the
/// matrices are zero-filled: src-size 0 reads nothing, and their source is then the matrix's
/// first element, a valid address. Vec: rows of B are 16-byte aligned, so one 16-byte copy
/// per chunk; otherwise four 4-byte copies.
template <bool Vec>
__device__ inline void copy_stage(StageBuffer& stage, const StageCopyPlan& plan, const float* a,
                                  const float* b, int k, int k0) {
  const bool a_col_inside = k0 + plan.a_col < k;
#pragma unroll
  for (int e = 0; e < kAFloatsPerThread; ++e) {
    const bool inside = a_col_inside && ((plan.a_rows_inside >> e) & 1u);
    const float* src = plan.a_src + k0 + e * kARowsApart * plan.a_ld;
    cp_async4_zfill(&stage.a[plan.a_col][plan.a_row + kARowsApart * e], inside ? src : a, inside);
  }
#pragma unroll
  for (int p = 0; p < kBChunksPerThread; ++p) {
    const int row = plan.b_row + kBRowsApart * p;
    const unsigned bytes = k0 + row < k ? plan.b_chunk_bytes : 0u;
    const float* src = plan.b_src + (k0 + kBRowsApart * p) * plan.b_ld;
    float* dst = &stage.b[row][plan.b_col];
    if constexpr (Vec) {
      cp_async16_zfill(dst, bytes != 0 ? src : b, bytes);
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const bool inside = 4u * e < bytes;
        cp_async4_zfill(dst + e, inside ? src + e : b, inside);
      }
    }
  }
}

// ---- mbarriers (lessons 10 and 11), for rung 5 ---------------------------------------------

/// The mbarriers of one stage of rung 5.
struct StageBarriers {
  std::uint64_t a_landed;  ///< the box of A is in a_rows: one arrival (with its bytes)
  std::uint64_t full;      ///< A^T and B are in the stage: 1 + kTransposeThreads arrivals
  std::uint64_t empty;     ///< the computing threads are done with it: kThreads arrivals
};

/// `p` moved up to the next shared-memory address that is a multiple of `alignment`.
__device__ inline unsigned char* align_shared(unsigned char* p, std::uint32_t alignment) {
  return p + (alignment - shared_address(p) % alignment) % alignment;
}

/// The course's bounded wait (course/mbarrier.cuh): waits for the phase of `bar` with
/// parity `parity` for at most 2 s; a wait that gives up is counted (take_wait_timeouts()
/// reports it) and returns, so a missing arrival or a wrong parity ends the kernel with
/// wrong results instead of hanging the GPU.
using course::mbarrier::wait_parity;

/// setmaxnreg (sm_90a): this warpgroup's threads own `Count` registers each from here on (a
/// producer gives registers back, the computing warps take them). Every warp of the
/// warpgroup executes it. The kernel's code after it is compiled for that many registers.
template <int Count>
__device__ inline void give_back_registers() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Count));
#endif
}

template <int Count>
__device__ inline void take_registers() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Count));
#endif
}

// ---- Defined in capstone.cu (your file) ----------------------------------------------------
// Declared here for capstone_launch.cu, so that it compiles on its own (tools/compile_alone.py
// checks that it does); the build compiles your file and capstone_launch.cu as one unit, where the
// definitions are.

/// Rung 4: a multi-stage cp.async pipeline. Vec: the matrices' rows are 16-byte aligned and
/// their widths multiples of 4 (as for load_chunk).
template <bool Vec, int Stages>
__global__ void __launch_bounds__(kThreads, 1)
    sgemm_cp_async_kernel(int m, int n, int k, float alpha, const float* a, const float* b,
                          float beta, float* c);

/// Rung 5: a producer warpgroup fills each stage with TMA tensor loads.
template <int Stages>
__global__ void __launch_bounds__(kTmaThreads, 1)
    sgemm_tma_kernel(const __grid_constant__ CUtensorMap a_map,
                     const __grid_constant__ CUtensorMap b_map, int m, int n, int k, float alpha,
                     float beta, float* c);

}  // namespace
}  // namespace capstone
