// Lesson 04's launchers: one kernel per method, the method -> kernel dispatch, the checks of
// every alignment promise before a launch, and the occupancy query. Read-only: the build
// compiles this file in one unit with alignment.cu (yours, and separately the solution's),
// which defines staged_copy_body and split_range; alignment.cuh declares them.
#include <stdexcept>
#include <string>

#include "alignment.cuh"
#include "course/check.h"
#include "course/launch.h"

namespace alignment {
namespace {

// One kernel per method, each with its own name, so that its PTX and SASS can be found
// (MethodInfo::kernel_name) and read on their own.
// clang-format off
__global__ void stage_cuda_char_size_t(StageArgs a) { staged_copy_body<Api::cuda_barrier, char, 0>(a); }
__global__ void stage_cuda_short_size_t(StageArgs a) { staged_copy_body<Api::cuda_barrier, short, 0>(a); }
__global__ void stage_cuda_int_size_t(StageArgs a) { staged_copy_body<Api::cuda_barrier, int, 0>(a); }
__global__ void stage_cuda_int2_size_t(StageArgs a) { staged_copy_body<Api::cuda_barrier, int2, 0>(a); }
__global__ void stage_cuda_int4_size_t(StageArgs a) { staged_copy_body<Api::cuda_barrier, int4, 0>(a); }
__global__ void stage_cuda_char_aligned2(StageArgs a) { staged_copy_body<Api::cuda_barrier, char, 2>(a); }
__global__ void stage_cuda_char_aligned4(StageArgs a) { staged_copy_body<Api::cuda_barrier, char, 4>(a); }
__global__ void stage_cuda_char_aligned8(StageArgs a) { staged_copy_body<Api::cuda_barrier, char, 8>(a); }
__global__ void stage_cuda_char_aligned16(StageArgs a) { staged_copy_body<Api::cuda_barrier, char, 16>(a); }
__global__ void stage_cg_char_size_t(StageArgs a) { staged_copy_body<Api::cooperative_groups, char, 0>(a); }
__global__ void stage_cg_short_size_t(StageArgs a) { staged_copy_body<Api::cooperative_groups, short, 0>(a); }
__global__ void stage_cg_int_size_t(StageArgs a) { staged_copy_body<Api::cooperative_groups, int, 0>(a); }
__global__ void stage_cg_int2_size_t(StageArgs a) { staged_copy_body<Api::cooperative_groups, int2, 0>(a); }
__global__ void stage_cg_int4_size_t(StageArgs a) { staged_copy_body<Api::cooperative_groups, int4, 0>(a); }
__global__ void stage_cg_char_aligned2(StageArgs a) { staged_copy_body<Api::cooperative_groups, char, 2>(a); }
__global__ void stage_cg_char_aligned4(StageArgs a) { staged_copy_body<Api::cooperative_groups, char, 4>(a); }
__global__ void stage_cg_char_aligned8(StageArgs a) { staged_copy_body<Api::cooperative_groups, char, 8>(a); }
__global__ void stage_cg_char_aligned16(StageArgs a) { staged_copy_body<Api::cooperative_groups, char, 16>(a); }
__global__ void stage_peeled(StageArgs a) { staged_copy_body<Api::peeled, char, 0>(a); }
// clang-format on

using Kernel = void (*)(StageArgs);

Kernel kernel_for(Method method) {
  // clang-format off
  switch (method) {
    case Method::cuda_char_size_t: return stage_cuda_char_size_t;
    case Method::cuda_short_size_t: return stage_cuda_short_size_t;
    case Method::cuda_int_size_t: return stage_cuda_int_size_t;
    case Method::cuda_int2_size_t: return stage_cuda_int2_size_t;
    case Method::cuda_int4_size_t: return stage_cuda_int4_size_t;
    case Method::cuda_char_aligned2: return stage_cuda_char_aligned2;
    case Method::cuda_char_aligned4: return stage_cuda_char_aligned4;
    case Method::cuda_char_aligned8: return stage_cuda_char_aligned8;
    case Method::cuda_char_aligned16: return stage_cuda_char_aligned16;
    case Method::cg_char_size_t: return stage_cg_char_size_t;
    case Method::cg_short_size_t: return stage_cg_short_size_t;
    case Method::cg_int_size_t: return stage_cg_int_size_t;
    case Method::cg_int2_size_t: return stage_cg_int2_size_t;
    case Method::cg_int4_size_t: return stage_cg_int4_size_t;
    case Method::cg_char_aligned2: return stage_cg_char_aligned2;
    case Method::cg_char_aligned4: return stage_cg_char_aligned4;
    case Method::cg_char_aligned8: return stage_cg_char_aligned8;
    case Method::cg_char_aligned16: return stage_cg_char_aligned16;
    case Method::peeled: return stage_peeled;
  }
  // clang-format on
  throw std::invalid_argument("alignment: unknown method " +
                              std::to_string(static_cast<int>(method)));
}

}  // namespace

Split split_at_alignment(std::uintptr_t first, std::size_t count, std::size_t alignment) {
  return split_range(first, count, alignment);
}

course::Launch prepare_staged_copy(Method method, cuda::std::span<const std::uint8_t> in,
                                   cuda::std::span<std::uint8_t> out, std::size_t stage_offset,
                                   LaunchShape shape, unsigned* returned, HoldBack hold) {
  const Kernel kernel = kernel_for(method);  // throws for a method that does not exist
  const std::string where = std::string("alignment::staged_copy(") + info(method).name + ")";
  course::require_copy_launch(where, in.size(), out.size(), shape.blocks, shape.threads_per_block,
                              "bytes");
  course::require(
      stage_offset == kMatchSource || stage_offset < kStageBoundary, where,
      "stage_offset must be below " + std::to_string(kStageBoundary) + " or kMatchSource");
  const std::size_t offset = stage_offset_for(in.data(), stage_offset);
  course::require(offset < kStageBoundary, where,
                  "stage_offset_for() placed the stage " + std::to_string(offset) +
                      " bytes past the boundary: it must be below " +
                      std::to_string(kStageBoundary));
  const std::size_t source = reinterpret_cast<std::uintptr_t>(in.data());
  // The type and the promise are what the kernel was compiled for; data that breaks them is
  // undefined behaviour (a misaligned cp.async, or a copy past the end): refuse it here.
  const std::size_t alignment = required_alignment(method);
  course::require(source % alignment == 0, where,
                  "the source must be " + std::to_string(alignment) + "-byte aligned");
  course::require(offset % alignment == 0, where,
                  "the stage offset must be a multiple of " + std::to_string(alignment));
  course::require(in.size() % alignment == 0, where,
                  "the size must be a multiple of " + std::to_string(alignment) + " bytes");
  if (method == Method::cg_char_size_t) {
    // CCCL 3.0.1's cooperative_groups::memcpy_async picks 2-byte words for char data whose
    // two addresses differ by 2 modulo 4, without first aligning them: for odd addresses
    // that is a misaligned access, and an odd byte count loses its last byte.
    course::require((source ^ offset) % 4 != 2, where,
                    "source and stage differ by 2 modulo 4: CCCL 3.0.1 copies such char data "
                    "wrongly");
  }
  if (in.empty()) return [](cudaStream_t) {};
  const StageArgs args{in.data(), out.data(),      in.size(), static_cast<unsigned>(offset),
                       returned,  course::batches::hold_back_nanoseconds(hold)};
  return [=](cudaStream_t stream) {
    kernel<<<shape.blocks, shape.threads_per_block, shared_bytes(), stream>>>(args);
    COURSE_CHECK_LAUNCH();
  };
}

void staged_copy(Method method, cuda::std::span<const std::uint8_t> in,
                 cuda::std::span<std::uint8_t> out, std::size_t stage_offset, LaunchShape shape,
                 cudaStream_t stream, unsigned* returned) {
  prepare_staged_copy(method, in, out, stage_offset, shape, returned)(stream);
}

int max_blocks_per_sm(Method method, int threads_per_block) {
  int blocks = 0;
  COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel_for(method),
                                                             threads_per_block, shared_bytes()));
  return blocks;
}

}  // namespace alignment
