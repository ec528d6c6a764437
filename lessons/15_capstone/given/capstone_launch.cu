// Lesson 15's launchers: argument checks, the kernel for a rung, a path and a stage count, the
// shared-memory opt-in, rung 5's tensor maps, the cuBLAS reference, and the tolerance check.
// Read-only: the build compiles this file in one unit with capstone.cu (yours, and separately
// the solution's), which defines rungs 4 and 5; capstone_device.cuh declares them.
#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "capstone.cuh"
#include "capstone_device.cuh"
#include "capstone_register_staged.cuh"
#include "course/check.h"
#include "course/cublas_check.h"
#include "course/device.h"
#include "course/launch.h"
#include "tensor_map.h"  // lesson 11: describing a matrix to the tensor memory accelerator

namespace capstone {
namespace {

using Kernel = void (*)(int, int, int, float, const float*, const float*, float, float*);

constexpr const char* kWhere = "capstone::prepare_sgemm";

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

template <bool Vec>
Kernel kernel_for(const Config& config) {
  switch (config.rung) {
    case Rung::smem_tiled:
      return sgemm_smem_kernel;
    case Rung::register_blocked:
      return sgemm_regblock_kernel<Vec>;
    case Rung::warp_tiled:
      return sgemm_warptile_kernel<Vec>;
    case Rung::cp_async:
      return course::with_stage_count<kMinStages, kMaxStages>(config.stages, [](auto s) -> Kernel {
        return sgemm_cp_async_kernel<Vec, decltype(s)::value>;
      });
    case Rung::tma:
      break;  // a kernel of its own signature: prepare_tma()
  }
  throw std::invalid_argument(std::string(kWhere) + ": unknown rung");
}

using TmaKernel = void (*)(CUtensorMap, CUtensorMap, int, int, int, float, float, float*);

/// Rung 5: A in boxes of 128 rows x 8 columns (32-byte rows; the producer warpgroup
/// transposes them), B in boxes of 8 rows x 256 columns (1 KiB rows). No swizzle: the
/// computing warps read 64 or 128 contiguous bytes of a row at a time, which no bank sees
/// twice. Outside the matrix the boxes are filled with zeros, so a k that is not a multiple
/// of 8 needs no special case.
course::Launch prepare_tma(const Config& config, GemmShape shape, float alpha, const float* a,
                           const float* b, float beta, float* c) {
  namespace tm = tma_tensor_copy;
  const int m = shape.m, n = shape.n, k = shape.k;
  CUtensorMap a_map{}, b_map{};  // k == 0: no tile, no load; the maps are never read
  if (k > 0) {
    a_map = tm::encode_tensor_map(
        tm::matrix_spec(a, m, k, k, kTileM, kTileK, tm::Swizzle::none, tm::OobFill::zero),
        "capstone: the tensor map of A");
    b_map = tm::encode_tensor_map(
        tm::matrix_spec(b, k, n, n, kTileK, kTileN, tm::Swizzle::none, tm::OobFill::zero),
        "capstone: the tensor map of B");
  }
  const TmaKernel kernel = course::with_stage_count<kMinStages, kMaxStages>(
      config.stages, [](auto s) -> TmaKernel { return sgemm_tma_kernel<decltype(s)::value>; });
  const std::size_t shared = pipeline_shared_bytes(Rung::tma, config.stages);
  COURSE_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                    cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(shared)));
  const dim3 grid((n + kTileN - 1) / kTileN, (m + kTileM - 1) / kTileM);
  return [=](cudaStream_t stream) {
    kernel<<<grid, kTmaThreads, shared, stream>>>(a_map, b_map, m, n, k, alpha, beta, c);
    COURSE_CHECK_LAUNCH();
  };
}

__global__ void absolute_kernel(const float* in, float* out, std::size_t count) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    out[i] = fabsf(in[i]);
  }
}

__global__ void uniform_kernel(float* out, std::size_t count, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    out[i] = uniform_value(i, seed);
  }
}

unsigned grid_for(std::size_t count) {
  return static_cast<unsigned>(std::min<std::size_t>((count + 255) / 256, 65535u * 8));
}

}  // namespace

bool vector_path(GemmShape s, const float* a, const float* b, const float* c) {
  return s.k % 4 == 0 && s.n % 4 == 0 && aligned16(a) && aligned16(b) && aligned16(c);
}

namespace {

bool is_pipelined(Rung rung) { return rung == Rung::cp_async || rung == Rung::tma; }

/// The checks every rung shares, before any CUDA call (std::invalid_argument): the shape,
/// the rung, its stages, and the pointers an empty C does not need.
void check_sgemm(const Config& config, GemmShape shape, const float* a, const float* b,
                 const float* c) {
  const int m = shape.m, n = shape.n, k = shape.k;
  course::require(m >= 0 && n >= 0 && k >= 0, kWhere,
                  "m, n and k must be >= 0, got " + to_string(shape));
  course::require(
      m <= 65535 * kSmemTile, kWhere,
      "m must be at most " + std::to_string(65535 * kSmemTile) + " (the grid's y limit)");
  course::require(config.rung == Rung::smem_tiled || config.rung == Rung::register_blocked ||
                      config.rung == Rung::warp_tiled || config.rung == Rung::cp_async ||
                      config.rung == Rung::tma,
                  kWhere, "unknown rung");
  course::require(
      !is_pipelined(config.rung) || (config.stages >= kMinStages && config.stages <= kMaxStages),
      kWhere,
      "stages must be in [" + std::to_string(kMinStages) + ", " + std::to_string(kMaxStages) +
          "], got " + std::to_string(config.stages));
  const bool empty_c = m == 0 || n == 0;
  course::require(empty_c || c != nullptr, kWhere, "C is null");
  course::require(empty_c || k == 0 || (a != nullptr && b != nullptr), kWhere, "A or B is null");
}

/// The C tile of a block: 32 x 32 (rung 1), 128 x 128 (rung 2), 128 x 256 (rungs 3-5).
struct BlockTile {
  int m;
  int n;
};
BlockTile block_tile(Rung rung) {
  if (rung == Rung::smem_tiled) return {kSmemTile, kSmemTile};
  if (rung == Rung::register_blocked) return {kBlockM, kBlockN};
  return {kTileM, kTileN};
}

}  // namespace

course::Launch prepare_sgemm(const Config& config, GemmShape shape, float alpha, const float* a,
                             const float* b, float beta, float* c) {
  check_sgemm(config, shape, a, b, c);
  const int m = shape.m, n = shape.n, k = shape.k;
  if (m == 0 || n == 0) return [](cudaStream_t) {};  // an empty C: nothing to compute

  const bool vec = vector_path(shape, a, b, c);
  if (config.rung == Rung::tma) {
    course::require(vec, kWhere,
                    "rung 5 (TMA) needs k and n multiples of 4 and 16-byte aligned A, B and C "
                    "(a tensor map's rows start 16-byte aligned), got " +
                        to_string(shape));
    course::require_current_device({9, 0}, kWhere, "rung 5 uses the tensor memory accelerator");
    return prepare_tma(config, shape, alpha, a, b, beta, c);
  }
  const Kernel kernel = vec ? kernel_for<true>(config) : kernel_for<false>(config);
  const BlockTile tile = block_tile(config.rung);
  const dim3 grid((n + tile.n - 1) / tile.n, (m + tile.m - 1) / tile.m);
  const dim3 block = config.rung == Rung::smem_tiled ? dim3(kSmemTile, kSmemTile) : dim3(kThreads);
  const std::size_t shared =
      is_pipelined(config.rung) ? pipeline_shared_bytes(config.rung, config.stages) : 0;
  if (shared > 0) {
    COURSE_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                      cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(shared)));
  }
  return [=](cudaStream_t stream) {
    kernel<<<grid, block, shared, stream>>>(m, n, k, alpha, a, b, beta, c);
    COURSE_CHECK_LAUNCH();
  };
}

unsigned long long take_wait_timeouts() { return course::mbarrier::take_wait_timeouts(); }

course::Launch prepare_cublas_sgemm(GemmShape shape, float alpha, const float* a, const float* b,
                                    float beta, float* c) {
  constexpr const char* where = "capstone::prepare_cublas_sgemm";
  course::require(shape.m >= 0 && shape.n >= 0 && shape.k >= 0, where,
                  "m, n and k must be >= 0, got " + to_string(shape));
  const bool empty_c = shape.m == 0 || shape.n == 0;
  course::require(empty_c || c != nullptr, where, "C is null");
  course::require(empty_c || shape.k == 0 || (a != nullptr && b != nullptr), where,
                  "A or B is null");
  if (empty_c) return [](cudaStream_t) {};
  cublasHandle_t raw = nullptr;
  course::check_cublas(cublasCreate(&raw), "cublasCreate");
  std::shared_ptr<cublasContext> handle(raw, [](cublasHandle_t h) { cublasDestroy(h); });
  // fp32 on the CUDA cores: no TF32 (CUBLAS_DEFAULT_MATH never converts fp32 inputs).
  course::check_cublas(cublasSetMathMode(raw, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  return [=](cudaStream_t stream) {
    course::check_cublas(cublasSetStream(handle.get(), stream), "cublasSetStream");
    // Row-major C = A B is column-major C^T = B^T A^T: swap the operands, keep the shapes.
    course::check_cublas(
        cublasSgemm(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, shape.n, shape.m, shape.k, &alpha, b,
                    std::max(1, shape.n), a, std::max(1, shape.k), &beta, c, std::max(1, shape.n)),
        "cublasSgemm");
  };
}

void absolute_values(cuda::std::span<const float> in, cuda::std::span<float> out,
                     cudaStream_t stream) {
  course::require(in.size() == out.size(), "capstone::absolute_values",
                  "in and out must have the same size");
  if (in.empty()) return;
  absolute_kernel<<<grid_for(in.size()), 256, 0, stream>>>(in.data(), out.data(), in.size());
  COURSE_CHECK_LAUNCH();
}

void fill_uniform(cuda::std::span<float> data, std::uint32_t seed, cudaStream_t stream) {
  if (data.empty()) return;
  uniform_kernel<<<grid_for(data.size()), 256, 0, stream>>>(data.data(), data.size(), seed);
  COURSE_CHECK_LAUNCH();
}

course::Comparison compare_gemm(cuda::std::span<const float> expected,
                                cuda::std::span<const float> bound,
                                cuda::std::span<const float> actual, int k) {
  course::require(expected.size() == actual.size() && bound.size() == actual.size(),
                  "capstone::compare_gemm", "expected, bound and actual must have the same size");
  const double factor = 2.0 * error_factor(k);
  course::Comparison result;
  result.checked = expected.size();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double e = expected[i], a = actual[i];
    // Written so that a NaN makes `close` false.
    const bool close =
        std::isfinite(a) && std::fabs(a - e) <= factor * static_cast<double>(bound[i]) + 1e-30;
    if (!close) {
      if (result.first.size() < course::kReportedMismatches) {
        result.first.push_back({i, std::to_string(expected[i]), std::to_string(actual[i])});
      }
      ++result.mismatches;
    }
  }
  return result;
}

}  // namespace capstone
