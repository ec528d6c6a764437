// Lesson 11: building a CUtensorMap on the host (read-only teaching code).
//
// The runtime API has no tensor-map call; cuTensorMapEncodeTiled is a driver function. A
// runtime program reaches it through cudaGetDriverEntryPointByVersion, which returns the
// driver's own function pointer: no -lcuda at link time, and the version (12000) pins the
// signature we call, PFN_cuTensorMapEncodeTiled_v12000 from <cudaTypedefs.h>.
#include "tensor_map.h"

#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled_v12000
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "course/check.h"

namespace tma_tensor_copy {

const char* name(Swizzle swizzle) {
  switch (swizzle) {
    case Swizzle::none:
      return "none";
    case Swizzle::b32:
      return "32B";
    case Swizzle::b64:
      return "64B";
    case Swizzle::b128:
      return "128B";
  }
  return "?";
}

const char* name(OobFill fill) { return fill == OobFill::nan ? "nan" : "zero"; }

std::string tensor_map_problem(const TensorMapSpec& spec) {
  const auto text = [](std::uint64_t v) { return std::to_string(v); };
  if (spec.base == nullptr) return "the global address is null";
  if (reinterpret_cast<std::uintptr_t>(spec.base) % 16 != 0) {
    return "the global address must be 16-byte aligned";
  }
  if (spec.rank < 1 || spec.rank > 3)
    return "rank must be 1, 2 or 3, got " + std::to_string(spec.rank);
  for (int d = 0; d < spec.rank; ++d) {
    const std::string dim = "dimension " + std::to_string(d);
    if (spec.dims[d] < 1 || spec.dims[d] > (std::uint64_t{1} << 32)) {
      return dim + " has " + text(spec.dims[d]) + " elements; it must be in [1, 2^32]";
    }
    if (spec.box[d] < 1 || spec.box[d] > 256) {
      return "the box's " + dim + " is " + text(spec.box[d]) + "; it must be in [1, 256]";
    }
  }
  for (int d = 0; d + 1 < spec.rank; ++d) {
    const std::string stride = "the stride of dimension " + std::to_string(d + 1);
    const std::uint64_t s = spec.strides_bytes[d];
    if (s % 16 != 0) {
      return stride + " is " + text(s) +
             " bytes; it must be a multiple of 16 (pad the rows: a leading dimension that is a "
             "multiple of 4 floats)";
    }
    if (s >= (std::uint64_t{1} << 40))
      return stride + " is " + text(s) + " bytes; it must be < 2^40";
    const std::uint64_t below =
        d == 0 ? spec.dims[0] * sizeof(float) : spec.strides_bytes[d - 1] * spec.dims[d];
    if (s < below) {
      return stride + " is " + text(s) + " bytes, less than the " + text(below) +
             " bytes the dimension below it spans";
    }
  }
  const std::uint64_t inner_bytes = std::uint64_t{spec.box[0]} * sizeof(float);
  if (inner_bytes % 16 != 0) {
    return "the box's inner dimension is " + text(inner_bytes) +
           " bytes; it must be a multiple of 16 (a multiple of 4 floats)";
  }
  const int span = swizzle_span_bytes(spec.swizzle);
  if (span != 0 && inner_bytes > static_cast<std::uint64_t>(span)) {
    return "the box's inner dimension is " + text(inner_bytes) + " bytes, more than the " +
           std::to_string(span) + "-byte swizzle span (at most " + std::to_string(span / 4) +
           " floats)";
  }
  return {};
}

namespace {

PFN_cuTensorMapEncodeTiled_v12000 encode_function() {
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult found{};
    COURSE_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &function, 12000,
                                                  cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || function == nullptr) {
      throw std::runtime_error(
          "cuTensorMapEncodeTiled (version 12000) is not available from this driver: "
          "the tensor memory accelerator needs a CUDA 12+ driver");
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(function);
  }();
  return encode;
}

std::string result_name(CUresult result) {
  switch (result) {
    case CUDA_ERROR_INVALID_VALUE:
      return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_NOT_INITIALIZED:
      return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_NOT_SUPPORTED:
      return "CUDA_ERROR_NOT_SUPPORTED";
    default:
      return "CUresult " + std::to_string(static_cast<int>(result));
  }
}

CUtensorMapSwizzle to_driver(Swizzle swizzle) {
  switch (swizzle) {
    case Swizzle::b32:
      return CU_TENSOR_MAP_SWIZZLE_32B;
    case Swizzle::b64:
      return CU_TENSOR_MAP_SWIZZLE_64B;
    case Swizzle::b128:
      return CU_TENSOR_MAP_SWIZZLE_128B;
    case Swizzle::none:
      break;
  }
  return CU_TENSOR_MAP_SWIZZLE_NONE;
}

}  // namespace

CUtensorMap encode_tensor_map(const TensorMapSpec& spec, const std::string& what) {
  if (const std::string problem = tensor_map_problem(spec); !problem.empty()) {
    throw std::invalid_argument(what + ": " + problem);
  }
  cuuint64_t dims[3];
  cuuint64_t strides[2];
  cuuint32_t box[3];
  cuuint32_t element_strides[3] = {1, 1, 1};  // every element of the box, no striding
  for (int d = 0; d < spec.rank; ++d) {
    dims[d] = spec.dims[d];
    box[d] = spec.box[d];
  }
  for (int d = 0; d + 1 < spec.rank; ++d) strides[d] = spec.strides_bytes[d];
  CUtensorMap map{};
  const CUresult result = encode_function()(
      &map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, static_cast<cuuint32_t>(spec.rank),
      const_cast<void*>(spec.base), dims, strides, box, element_strides,
      CU_TENSOR_MAP_INTERLEAVE_NONE, to_driver(spec.swizzle),
      // Promote L2 fills to 128-byte lines: a box row of 32 floats is one line.
      CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
      spec.fill == OobFill::nan ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
                                : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS) {
    throw std::runtime_error(what + ": cuTensorMapEncodeTiled returned " + result_name(result) +
                             " although the host checks passed");
  }
  return map;
}

TensorMapSpec matrix_spec(const float* base, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                          int box_rows, int box_cols, Swizzle swizzle, OobFill fill) {
  TensorMapSpec spec;
  spec.base = base;
  spec.rank = 2;
  // Negative values become huge unsigned ones and are refused by tensor_map_problem().
  spec.dims[0] = static_cast<std::uint64_t>(cols);
  spec.dims[1] = static_cast<std::uint64_t>(rows);
  spec.strides_bytes[0] = static_cast<std::uint64_t>(ld) * sizeof(float);
  spec.box[0] = static_cast<std::uint32_t>(box_cols);
  spec.box[1] = static_cast<std::uint32_t>(box_rows);
  spec.swizzle = swizzle;
  spec.fill = fill;
  return spec;
}

}  // namespace tma_tensor_copy
