/// \file capstone.cuh
/// \brief Lesson 15 (capstone): a single-precision GEMM, C = alpha A B + beta C, climbed
/// rung by rung from shared-memory tiling to a multi-stage cp.async pipeline and to TMA
/// tensor loads fed by a producer warp, and checked against cuBLAS.
///
/// API the driver (main.cu) and the tests call. The asynchronous rungs (4 and 5) live in
/// capstone.cu (the student's file: the starter in lessons/, the complete version in
/// solutions/); rungs 1-3, which stage every tile through registers, in
/// capstone_register_staged.cuh; the device helpers they share in capstone_device.cuh; the
/// launchers and the cuBLAS reference in capstone_launch.cu (all read-only).
///
/// Every matrix is row-major and dense: A is m x k (leading dimension k), B is k x n
/// (leading dimension n), C is m x n (leading dimension n). All arithmetic is fp32 fused
/// multiply-add on the CUDA cores: no tensor cores, no TF32.
#pragma once

#include <cuda_runtime.h>
#include <cuda/std/span>

#include <cstddef>  // offsetof
#include <cstdint>
#include <string>

#include "course/data.h"
#include "course/device.h"
#include "course/launch.h"

namespace capstone {

/// The rungs of the ladder, each one kernel that adds one idea to the rung before it.
enum class Rung {
  smem_tiled = 1,        ///< "1-smem": 32 x 32 tiles staged through registers into shared memory
  register_blocked = 2,  ///< "2-regblock": 128 x 128 tiles, an 8 x 8 micro-tile per thread, float4
  warp_tiled = 3,        ///< "3-warptile": 128 x 256 tiles, 64 x 64 warp tiles, 8 x 16 per thread;
                         ///< double-buffered through registers
  cp_async = 4,  ///< "4-cp-async": the same tiles land through a multi-stage cp.async pipeline
  tma = 5,       ///< "5-tma": the same tiles as TMA tensor loads from a producer warp (sm_90)
};

/// Every rung, in ladder order.
inline constexpr Rung kRungs[] = {Rung::smem_tiled, Rung::register_blocked, Rung::warp_tiled,
                                  Rung::cp_async, Rung::tma};

/// The variant name of a rung: "1-smem", "2-regblock", "3-warptile", "4-cp-async", "5-tma".
inline const char* name(Rung rung) {
  switch (rung) {
    case Rung::smem_tiled:
      return "1-smem";
    case Rung::register_blocked:
      return "2-regblock";
    case Rung::warp_tiled:
      return "3-warptile";
    case Rung::cp_async:
      return "4-cp-async";
    case Rung::tma:
      return "5-tma";
  }
  return "?";
}

/// The compute capability a rung needs: 9.0 for the tensor memory accelerator (rung 5), 8.0
/// (cp.async) for the others.
inline course::ComputeCapability min_compute_capability(Rung rung) {
  return rung == Rung::tma ? course::ComputeCapability{9, 0} : course::ComputeCapability{8, 0};
}

/// The problem size: C is m x n, the inner dimension is k.
struct GemmShape {
  int m = 0;
  int n = 0;
  int k = 0;
};

/// Floating-point operations of one GEMM: 2 m n k (one multiply and one add per term).
/// The beta C term is not counted, as cuBLAS and every GEMM benchmark do.
inline double flops(GemmShape s) {
  return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
}

/// "4096x4096x4096" (m x n x k).
inline std::string to_string(GemmShape s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
}

// ---- Tile geometry, shared by the kernels, the launchers and the tests -------------------

/// Rung 1: a 32 x 32 tile of C per block of 32 x 32 threads, one element per thread.
inline constexpr int kSmemTile = 32;

/// Rung 2: a 128 x 128 tile of C per block of 256 threads, an 8 x 8 micro-tile each, 8-deep
/// tiles of A and B.
inline constexpr int kBlockM = 128;
inline constexpr int kBlockN = 128;
inline constexpr int kThreads = 256;
inline constexpr int kMicroM = 8;
inline constexpr int kMicroN = 8;
inline constexpr int kBlockK = 8;
static_assert(kBlockM * kBlockN == kThreads * kMicroM * kMicroN, "rung 2: 64 results per thread");
static_assert(kBlockM * kBlockK == kThreads * 4 && kBlockK * kBlockN == kThreads * 4,
              "rung 2: each thread loads one float4 of the A tile and one of the B tile per step");
static_assert(kBlockK % 4 == 0 && kBlockN % 4 == 0,
              "rung 2: a row of the A or B tile is whole float4s, or a float4 straddles two rows");

/// Rungs 3-5 share one tile, the shape that can keep up with cuBLAS: a 128 x 256 tile of C per
/// block of 256 computing threads; 8 warps of 64 x 64 (2 down, 4 across); 16 x 8 results per
/// thread (lanes 4 down, 8 across). Per k-step a thread reads 16 values of A and 8 of B from
/// shared memory for 128 fused multiply-adds: 5.3 FMAs per value read, against rung 2's 4.
inline constexpr int kTileM = 128;
inline constexpr int kTileN = 256;
/// The k-depth of one stage: 8, as in rung 2. A stage holds about 12 KiB of A and B.
inline constexpr int kTileK = 8;
inline constexpr int kWarpTileM = 64;
inline constexpr int kWarpTileN = 64;
inline constexpr int kThreadTileM = 16;
inline constexpr int kThreadTileN = 8;
/// A lane's rows and columns come in runs of 4 (one float4 of shared memory each).
inline constexpr int kLanesDown = 4;
inline constexpr int kLanesAcross = 8;
static_assert((kTileM / kWarpTileM) * (kTileN / kWarpTileN) == kThreads / 32,
              "rungs 3-5: one warp tile per computing warp");
static_assert(kLanesDown * kLanesAcross == 32, "a warp's lanes");
static_assert(kWarpTileM == kLanesDown * kThreadTileM && kWarpTileN == kLanesAcross * kThreadTileN,
              "rungs 3-5: one thread tile per lane");
static_assert(kThreadTileM % 4 == 0 && kThreadTileN % 4 == 0, "thread tiles of float4 runs");
static_assert(kTileK % 4 == 0, "a row of the A tile is whole 16-byte chunks");
/// Rung 5's block: the 8 computing warps (two warpgroups of 4) and one producer warpgroup. The
/// warps of a block are dealt out to the SM's 4 schedulers, each with a quarter of the
/// register file (16384 registers): 12 warps put 3 on each scheduler, which leaves 168
/// registers per thread at launch. The producer warpgroup then gives registers back
/// (setmaxnreg.dec to 56) and the computing warpgroups take them (setmaxnreg.inc to 224):
/// per scheduler 56 x 32 + 2 x 224 x 32 = 16128 <= 16384.
inline constexpr int kProducerThreads = 128;
/// Of the producer warpgroup, one thread issues the tensor loads and the three other warps
/// transpose the boxes of A (rung 5's TmaStageBuffer).
inline constexpr int kTransposeThreads = kProducerThreads - 32;
inline constexpr int kTmaThreads = kThreads + kProducerThreads;
inline constexpr int kProducerRegisters = 56;
inline constexpr int kComputeRegisters = 224;
static_assert((kProducerRegisters + 2 * kComputeRegisters) * 32 <= 16384,
              "one producer warp and two computing warps share a scheduler's registers");

/// Stage counts rungs 4 and 5 are compiled for.
inline constexpr int kMinStages = 2;
inline constexpr int kMaxStages = 4;
inline constexpr int kDefaultStages = 4;

/// One stage of rungs 3-5 in shared memory. A is stored transposed, k-major (as in rung 2):
/// the 16 values of A a thread needs at a k-step are then four float4 of one row of `a`.
/// Rows of `a` are padded by 4 floats so that the transposing stores of a warp fall in
/// different banks; every row stays 16-byte aligned.
inline constexpr int kAStrideK = kTileM + 4;
struct StageBuffer {
  float a[kTileK][kAStrideK];  ///< (k, m): A transposed, A[m0 + m][k0 + k] at a[k][m]
  float b[kTileK][kTileN];     ///< (k, n): B[k0 + k][n0 + n] at b[k][n]
};
inline constexpr std::size_t kStageBytes = sizeof(StageBuffer);
static_assert(sizeof(StageBuffer) % 128 == 0 && offsetof(StageBuffer, b) % 128 == 0,
              "stages and their B tiles start 128-byte aligned (a tensor load's destination)");

/// Rung 5's stage: the tensor memory accelerator cannot transpose, so the box of A lands
/// row-major in `a_rows` and the producer warpgroup writes it transposed into `stage.a`.
struct TmaStageBuffer {
  StageBuffer stage;
  float a_rows[kTileM][kTileK];  ///< (m, k): the tensor load of A, as in global memory
};
static_assert(sizeof(TmaStageBuffer) % 128 == 0, "every rung 5 stage starts 128-byte aligned");
/// Rung 5's two tensor maps: the box of A is kTileK x kTileM (columns x rows), the box of B
/// kTileN x kTileK. A box is at most 256 elements per dimension, and its inner dimension is
/// whole 16-byte chunks; otherwise cuTensorMapEncodeTiled rejects the map.
static_assert(kTileM <= 256 && kTileN <= 256 && kTileK <= 256,
              "rung 5: a box dimension over 256 elements, the tensor map is rejected");
static_assert(kTileK * sizeof(float) % 16 == 0 && kTileN * sizeof(float) % 16 == 0,
              "rung 5: a box row that is not whole 16-byte chunks, the tensor map is rejected");
static_assert(offsetof(TmaStageBuffer, a_rows) % 128 == 0,
              "rung 5: the box of A lands in a_rows, which must start 128-byte aligned");

/// Where a tensor load's destination may start: a 128-byte boundary. Dynamic shared memory is
/// only 16-byte aligned, so rung 5 asks for this much more and moves its stages up to the next
/// boundary (align_shared in sgemm_tma_kernel).
inline constexpr std::size_t kTmaStageAlignment = 128;

/// Dynamic shared memory of rung 4 or 5 with `stages` stages, plus (rung 5) the slack that
/// lets the kernel start them 128-byte aligned.
__host__ __device__ constexpr std::size_t pipeline_shared_bytes(Rung rung, int stages) {
  return rung == Rung::tma ? static_cast<std::size_t>(stages) * sizeof(TmaStageBuffer) +
                                 kTmaStageAlignment
                           : static_cast<std::size_t>(stages) * sizeof(StageBuffer);
}
/// Rung 5's mbarriers are 3 x 8 bytes of static shared memory per stage (StageBarriers).
static_assert(pipeline_shared_bytes(Rung::tma, kMaxStages) +
                          kMaxStages * sizeof(std::uint64_t[3]) <= 227 * 1024 &&
                  pipeline_shared_bytes(Rung::cp_async, kMaxStages) <= 227 * 1024,
              "kMaxStages stages must fit in the 227 KB of shared memory a block may have, or "
              "the launch of rungs 4-5 fails");

/// Whether the 16-byte paths apply: every row of A and B starts 16-byte aligned (k and n
/// multiples of 4, all three base pointers 16-byte aligned). Otherwise rungs 2-4 read
/// element by element (rungs 2-3: scalar loads; rung 4: 4-byte cp.async with zero fill),
/// and rung 5 cannot run: a tensor map needs 16-byte aligned rows.
bool vector_path(GemmShape s, const float* a, const float* b, const float* c);

/// The number of bytes of the 16-byte chunk that starts at element `col` of a row of `len`
/// valid elements: 16 inside the row, 4, 8 or 12 for the last partial chunk, 0 past it.
/// The cp.async rung passes it as src-size: the rest of the chunk is zero-filled.
__host__ __device__ constexpr unsigned chunk_bytes(int col, int len) {
  return col >= len ? 0u : len - col >= 4 ? 16u : static_cast<unsigned>((len - col) * 4);
}

// ---- Launching ---------------------------------------------------------------------------

/// What one launch of a rung does beyond the shape.
struct Config {
  Rung rung = Rung::cp_async;
  int stages = kDefaultStages;  ///< rungs 4 and 5 only: kMinStages..kMaxStages
};

/// Validates the arguments, sets the kernel's shared-memory attribute and picks the kernel,
/// then returns the launch: calling it with a stream computes C = alpha A B + beta C.
/// When beta == 0, C is not read (it may hold NaN), as in BLAS.
///
/// Preconditions, checked before any CUDA call (std::invalid_argument otherwise): m, n, k
/// >= 0; m at most 65535 x 32 (the grid's y limit); every pointer non-null when its matrix
/// is not empty; a known rung; stages in range; for rung 5 the 16-byte path (vector_path).
/// Then rung 5 needs a compute capability 9.0 device (course::NoDevice otherwise). k == 0
/// gives C = beta C; an empty C gives a launch that does nothing.
course::Launch prepare_sgemm(const Config& config, GemmShape shape, float alpha, const float* a,
                             const float* b, float beta, float* c);

/// The number of rung 5's mbarrier waits that gave up (after 2 s each: course/mbarrier.cuh)
/// since the last call, and resets it to 0 (synchronises the device first). A kernel whose wait gave up still finishes, with
/// wrong results: the driver and the tests ask after every checked run.
unsigned long long take_wait_timeouts();

/// The reference: the same product through cublasSgemm (CUBLAS_DEFAULT_MATH: fp32, no TF32).
/// The launch holds its own cuBLAS handle. Every cuBLAS status is checked: a failure throws
/// std::runtime_error naming the call and the status.
course::Launch prepare_cublas_sgemm(GemmShape shape, float alpha, const float* a, const float* b,
                                    float beta, float* c);

/// out[i] = |in[i]| on the device (in and out may be the same array), on `stream`.
void absolute_values(cuda::std::span<const float> in, cuda::std::span<float> out,
                     cudaStream_t stream);

// ---- Checking: the tolerance model -------------------------------------------------------

/// The unit roundoff of fp32: 2^-24.
inline constexpr double kUnitRoundoff = 1.0 / 16777216.0;

/// The factor of the error bound: gamma(k + 2) = (k + 2) u / (1 - (k + 2) u), the classic
/// bound on the relative rounding error of a k-term dot product, plus the alpha product and
/// the beta C sum. Any summation order obeys it, so two correct GEMMs differ by at most
/// twice that times |alpha| |A| |B| + |beta| |C| (element-wise absolute values).
inline double error_factor(int k) {
  const double nu = (static_cast<double>(k) + 2.0) * kUnitRoundoff;
  return nu / (1.0 - nu);
}

/// Compares every element: |actual - expected| <= 2 error_factor(k) bound[i] + 1e-30, where
/// bound = |alpha| |A| |B| + |beta| |C_in| (computed by prepare_cublas_sgemm on absolute
/// values). A NaN or infinity in `actual` never passes.
course::Comparison compare_gemm(cuda::std::span<const float> expected,
                                cuda::std::span<const float> bound,
                                cuda::std::span<const float> actual, int k);

/// Fills `data` on the device with values in [-1, 1): hash32(i, seed) mapped to a multiple of
/// 2^-11 (12 significant bits, so every product of two inputs is exact in fp32 and only the
/// sums round).
void fill_uniform(cuda::std::span<float> data, std::uint32_t seed, cudaStream_t stream);

/// The value fill_uniform() writes at index i (host side, for the tests).
__host__ __device__ inline float uniform_value(std::uint64_t i, std::uint32_t seed) {
  const std::uint32_t h = course::hash32(i, seed) >> 20;  // 12 bits
  return static_cast<float>(static_cast<int>(h) - 2048) * (1.0f / 2048.0f);
}

}  // namespace capstone
