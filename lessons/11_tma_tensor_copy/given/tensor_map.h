/// \file tensor_map.h
/// \brief Lesson 11: describing a matrix to the tensor memory accelerator (a CUtensorMap),
/// on the host, without linking the driver library.
///
/// A tensor map is a 128-byte descriptor the driver builds (cuTensorMapEncodeTiled) and the
/// kernel receives as a `const __grid_constant__ CUtensorMap` parameter. It holds the global
/// address, the size and strides of each dimension, the box (tile) one copy moves, the
/// shared-memory swizzle and what out-of-bounds elements are filled with. The rules the
/// driver enforces are checked here first, so a bad shape is a clear message on the host
/// (std::invalid_argument) instead of a bare CUDA_ERROR_INVALID_VALUE.
#pragma once

#include <cuda.h>          // CUtensorMap (alignas(128) in CUDA 13) and its enums; header only
#include <cuda_runtime.h>  // __host__ __device__

#include <cstddef>
#include <cstdint>
#include <string>

namespace tma_tensor_copy {

/// How the tensor memory accelerator lays a box out in shared memory.
enum class Swizzle {
  none,  ///< row after row, as in global memory
  b32,   ///< 16-byte chunks XOR-permuted within 32-byte rows (pattern repeats every 256 B)
  b64,   ///< ... within 64-byte rows (pattern repeats every 512 B)
  b128,  ///< ... within 128-byte rows (pattern repeats every 1024 B)
};

/// "none", "32B", "64B", "128B".
const char* name(Swizzle swizzle);

/// The swizzle span: the most bytes the box's inner dimension may have with this swizzle
/// (32, 64, 128); 0 for none (no limit from the swizzle).
__host__ __device__ constexpr int swizzle_span_bytes(Swizzle swizzle) {
  return swizzle == Swizzle::b32    ? 32
         : swizzle == Swizzle::b64  ? 64
         : swizzle == Swizzle::b128 ? 128
                                    : 0;
}

/// The shared-memory alignment a box needs so that the hardware's swizzle pattern starts at
/// the box: 256, 512, 1024 bytes for the 32, 64, 128-byte swizzles (the pattern is computed
/// from address bits, not from the box's start); 128 bytes without swizzle.
__host__ __device__ constexpr std::size_t swizzle_alignment(Swizzle swizzle) {
  return swizzle == Swizzle::b32    ? 256
         : swizzle == Swizzle::b64  ? 512
         : swizzle == Swizzle::b128 ? 1024
                                    : 128;
}

/// What a load writes into shared memory for box elements outside the tensor.
enum class OobFill {
  zero,  ///< CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: zeros
  nan,   ///< CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA: a canonical NaN
};

/// "zero" or "nan".
const char* name(OobFill fill);

/// Everything a tiled fp32 tensor map says, innermost dimension first (dims[0] is the number
/// of columns of a row-major matrix).
struct TensorMapSpec {
  const void* base = nullptr;                 ///< global address, 16-byte aligned
  int rank = 2;                               ///< 1 to 3 here (the hardware allows 5)
  std::uint64_t dims[3] = {1, 1, 1};          ///< elements per dimension, each in [1, 2^32]
  std::uint64_t strides_bytes[2] = {16, 16};  ///< bytes from one index of dimension d+1 to the next
  std::uint32_t box[3] = {1, 1, 1};           ///< box (tile) size per dimension, each in [1, 256]
  Swizzle swizzle = Swizzle::none;
  OobFill fill = OobFill::zero;
};

/// Why `spec` would be refused (an empty string when it is fine). Refused: a null or not
/// 16-byte aligned base; a rank outside [1, 3]; a dimension of 0 or above 2^32; a stride
/// that is not a multiple of 16 bytes, is 2^40 or more, or is shorter than the dimension
/// below it; a box size outside [1, 256]; a box inner dimension whose bytes are not a
/// multiple of 16, or (with a swizzle) exceed the swizzle span. Pure host code: no CUDA call.
std::string tensor_map_problem(const TensorMapSpec& spec);

/// Checks `spec` (std::invalid_argument with tensor_map_problem()'s message, prefixed by
/// `what`), then encodes it with cuTensorMapEncodeTiled, reached through
/// cudaGetDriverEntryPointByVersion (no -lcuda). A CUresult other than CUDA_SUCCESS throws
/// std::runtime_error naming it.
CUtensorMap encode_tensor_map(const TensorMapSpec& spec, const std::string& what);

/// The spec of a row-major fp32 matrix of `rows` x `cols` whose rows are `ld` elements apart
/// (ld >= cols; ld * 4 must be a multiple of 16), moved in boxes of box_rows x box_cols.
TensorMapSpec matrix_spec(const float* base, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                          int box_rows, int box_cols, Swizzle swizzle, OobFill fill);

}  // namespace tma_tensor_copy
