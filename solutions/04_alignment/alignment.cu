// Lesson 04: alignment and trivially copyable types.
//
// Every kernel here copies a byte array global -> shared -> global in 16 KB batches. For
// each batch a block
//   1. issues the global -> shared copy with memcpy_async (the one line this lesson studies),
//   2. waits for it,
//   3. writes the staged bytes back to global memory (out[i] = in[i]),
//   4. waits at a block barrier before the next batch may overwrite shared memory.
//
// What memcpy_async can do in step 1 is decided at COMPILE time from what the compiler
// knows about alignment: alignof of the element type the pointers have, and the N of a
// cuda::aligned_size_t<N> byte count. cuda::memcpy_async takes max(alignof(T), N):
//   1 or 2  -> no cp.async at all: a synchronous loop of 1- or 2-byte loads and stores,
//              and the call returns async_contract_fulfillment::none;
//   4 or 8  -> cp.async of 4 or 8 bytes per thread (LDGSTS);
//   16      -> cp.async.cg of 16 bytes on sm_80, and on sm_90 one bulk copy (TMA) for the
//              whole batch, when the barrier is a block-scope cuda::barrier in shared memory.
// cooperative_groups::memcpy_async checks the pointers at RUN time when it only knows 1 or
// 2 bytes, and never uses a bulk copy. The `peeled` method shows how to get 16-byte copies
// for data that really is misaligned: copy a few bytes by hand until both pointers reach a
// boundary, promise aligned_size_t<16> for the middle, and copy the rest by hand.
#include "alignment.cuh"

#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/barrier>
#include <cuda/ptx>
#include <nv/target>

#include <stdexcept>
#include <string>
#include <type_traits>

#include "course/check.h"

namespace alignment {
namespace {

namespace cg = cooperative_groups;
using Barrier = cuda::barrier<cuda::thread_scope_block>;

/// What every kernel receives (by value).
struct StageArgs {
  const std::uint8_t* in;
  std::uint8_t* out;
  std::size_t n;
  unsigned stage_offset;  // where the staging buffer starts, past a 128-byte boundary
  unsigned* returned;     // Returned flags of every memcpy_async call, or nullptr
};

__device__ std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// ---- Cutting a byte range at an alignment boundary ----------------------------------------

__host__ __device__ constexpr Split split_range(std::uintptr_t first, std::size_t count,
                                                std::size_t alignment) {
  // TODO 1: split the `count` bytes starting at address `first` into a head (the bytes
  //         before the first multiple of `alignment`, at most `count`), a body (a whole
  //         number of `alignment`-byte chunks) and a tail (what is left, < alignment).
  //         `alignment` is a power of two. An already aligned range has no head.
  // BEGIN SOLUTION
  const std::size_t to_boundary = (alignment - first % alignment) % alignment;
  const std::size_t head = to_boundary < count ? to_boundary : count;
  const std::size_t body = (count - head) / alignment * alignment;
  return Split{head, body, count - head - body};
  // STARTER: (void)first;
  // STARTER: (void)alignment;
  // STARTER: return Split{count, 0, 0};
  // END SOLUTION
}

// ---- Plain copies (synchronous): any address, the slowest way -----------------------------

/// Block-strided copy of `count` bytes with ordinary loads and stores.
__device__ void copy_bytes(const cg::thread_block& block, std::uint8_t* dst,
                           const std::uint8_t* src, std::size_t count) {
  for (std::size_t i = block.thread_rank(); i < count; i += block.size()) dst[i] = src[i];
}

/// Writes the staged batch back to global memory: bytes up to `out`'s first W-byte
/// boundary, W-byte words for the middle, bytes for the rest. Valid when `out` and
/// `stage` have the same address modulo W (the caller checks).
template <class Word>
__device__ void write_back_as(const cg::thread_block& block, std::uint8_t* out,
                              const std::uint8_t* stage, std::size_t count) {
  const Split s = split_range(address(out), count, sizeof(Word));
  copy_bytes(block, out, stage, s.head);
  const Word* from = reinterpret_cast<const Word*>(stage + s.head);
  Word* to = reinterpret_cast<Word*>(out + s.head);
  for (std::size_t i = block.thread_rank(); i < s.body / sizeof(Word); i += block.size()) {
    to[i] = from[i];
  }
  copy_bytes(block, out + s.head + s.body, stage + s.head + s.body, s.tail);
}

/// Step 3, the same for every method: the widest words that both addresses allow.
__device__ void write_back(const cg::thread_block& block, std::uint8_t* out,
                           const std::uint8_t* stage, std::size_t count) {
  const unsigned mismatch = (address(out) ^ address(stage)) % 16;
  if (mismatch == 0) {
    write_back_as<uint4>(block, out, stage, count);
  } else if (mismatch % 4 == 0) {
    write_back_as<std::uint32_t>(block, out, stage, count);
  } else {
    copy_bytes(block, out, stage, count);
  }
}

// ---- Step 1: issuing the copy -------------------------------------------------------------

// [[maybe_unused]]: the starter calls it only once TODO 2 is done.
[[maybe_unused]] __device__ unsigned returned_flag(cuda::async_contract_fulfillment fulfillment) {
  return fulfillment == cuda::async_contract_fulfillment::async ? kReturnedAsync : kReturnedNone;
}

/// Issues the block's copy of `bytes` bytes from `batch_in` (global) to `stage` (shared)
/// through pointers to T, with a plain size_t count (Promise == 0) or with
/// cuda::aligned_size_t<Promise>. Returns the Returned flag of the call.
template <Api A, class T, std::size_t Promise>
__device__ unsigned issue_copy(const cg::thread_block& block, std::uint8_t* stage,
                               const std::uint8_t* batch_in, std::size_t bytes, Barrier& bar) {
  // memcpy_async copies the bytes of T objects without running any constructor: only
  // trivially copyable types may be copied that way (cuda::memcpy_async static_asserts it;
  // cooperative_groups::memcpy_async does not check, see the tests).
  static_assert(std::is_trivially_copyable_v<T>, "memcpy_async copies bytes");
  T* dst = reinterpret_cast<T*>(stage);
  const T* src = reinterpret_cast<const T*>(batch_in);
  // TODO 2: issue the copy of `bytes` bytes from src to dst by the whole block.
  //         A == Api::cuda_barrier: cuda::memcpy_async(group, dst, src, size, bar), which
  //         returns a cuda::async_contract_fulfillment (turn it into a flag with
  //         returned_flag). A == Api::cooperative_groups: cooperative_groups::memcpy_async
  //         (group, dst, src, size), which returns nothing (return kReturnedVoid).
  //         The size is `bytes` as a plain size_t when Promise == 0, otherwise
  //         cuda::aligned_size_t<Promise>(bytes): the promise is the whole point.
  // BEGIN SOLUTION
  if constexpr (A == Api::cuda_barrier) {
    if constexpr (Promise == 0) {
      return returned_flag(cuda::memcpy_async(block, dst, src, bytes, bar));
    } else {
      return returned_flag(
          cuda::memcpy_async(block, dst, src, cuda::aligned_size_t<Promise>(bytes), bar));
    }
  } else {
    if constexpr (Promise == 0) {
      cg::memcpy_async(block, dst, src, bytes);
    } else {
      cg::memcpy_async(block, dst, src, cuda::aligned_size_t<Promise>(bytes));
    }
    return kReturnedVoid;
  }
  // STARTER: (void)block;
  // STARTER: (void)dst;
  // STARTER: (void)src;
  // STARTER: (void)bytes;
  // STARTER: (void)bar;
  // STARTER: return 0;
  // END SOLUTION
}

/// The peeled copy at one alignment: bytes by hand up to the source's first `Alignment`
/// boundary, the aligned middle with one memcpy_async that promises `Alignment`, and the
/// last few bytes by hand. `dst` and `src` have the same address modulo `Alignment`.
template <std::size_t Alignment>
__device__ unsigned copy_peeled_at(const cg::thread_block& block, std::uint8_t* dst,
                                   const std::uint8_t* src, std::size_t count, Barrier& bar) {
  // TODO 4: split [src, src + count) at `Alignment` (split_range), copy the head and the
  //         tail with copy_bytes, and the body with cuda::memcpy_async and
  //         cuda::aligned_size_t<Alignment> on `bar`. Issue no memcpy_async for an empty
  //         body. Return the body's Returned flag (0 when there was none).
  // BEGIN SOLUTION
  const Split s = split_range(address(src), count, Alignment);
  copy_bytes(block, dst, src, s.head);
  unsigned returned = 0;
  if (s.body > 0) {
    returned = returned_flag(cuda::memcpy_async(block, dst + s.head, src + s.head,
                                                cuda::aligned_size_t<Alignment>(s.body), bar));
  }
  copy_bytes(block, dst + s.head + s.body, src + s.head + s.body, s.tail);
  return returned;
  // STARTER: (void)block;
  // STARTER: (void)dst;
  // STARTER: (void)src;
  // STARTER: (void)count;
  // STARTER: (void)bar;
  // STARTER: return 0;
  // END SOLUTION
}

/// Copies `count` bytes from any global address to any shared address, with the widest
/// copies that the two addresses allow together.
__device__ unsigned copy_peeled(const cg::thread_block& block, std::uint8_t* dst,
                                const std::uint8_t* src, std::size_t count, Barrier& bar) {
  // TODO 5: two addresses can both be moved to a multiple of A by the same head only when
  //         they are equal modulo A. Look at (dst ^ src) % 16 and use copy_peeled_at<16>,
  //         <8> or <4> for the widest A that works; with no common alignment of 4 bytes no
  //         cp.async can be used at all: copy_bytes everything and return 0.
  // BEGIN SOLUTION
  const unsigned mismatch = (address(dst) ^ address(src)) % 16;
  if (mismatch == 0) return copy_peeled_at<16>(block, dst, src, count, bar);
  if (mismatch % 8 == 0) return copy_peeled_at<8>(block, dst, src, count, bar);
  if (mismatch % 4 == 0) return copy_peeled_at<4>(block, dst, src, count, bar);
  copy_bytes(block, dst, src, count);
  return 0;
  // STARTER: (void)block;
  // STARTER: (void)dst;
  // STARTER: (void)src;
  // STARTER: (void)count;
  // STARTER: (void)bar;
  // STARTER: return 0;
  // END SOLUTION
}

// ---- Step 2: waiting for the copy ---------------------------------------------------------

template <Api A>
__device__ void wait_for_copy(const cg::thread_block& block, Barrier& bar) {
  // TODO 3: wait until this batch's copy has landed and every thread can read all of it.
  //         cooperative_groups::memcpy_async is waited for with cooperative_groups::wait;
  //         cuda::memcpy_async (and the peeled copy) completes on the barrier: every thread
  //         arrives and waits. (Both also make the plain stores of the byte loops visible.)
  // BEGIN SOLUTION
  if constexpr (A == Api::cooperative_groups) {
    cg::wait(block);
  } else {
    bar.arrive_and_wait();
  }
  // STARTER: (void)block;
  // STARTER: (void)bar;
  // END SOLUTION
}

// ---- The kernels ----------------------------------------------------------------------------

/// Moves a shared-memory pointer up to the next kStageBoundary boundary. Pointer
/// arithmetic, not integer arithmetic: the compiler must still see that the result points
/// into shared memory, or memcpy_async keeps a fallback path for "dst is not shared".
__device__ std::uint8_t* align_to_boundary(void* p) {
  std::uint8_t* bytes = static_cast<std::uint8_t*>(p);
  return bytes + (kStageBoundary - address(p) % kStageBoundary) % kStageBoundary;
}

// A __shared__ cuda::barrier has no constructor that runs: init() below sets it up. CCCL's
// documentation silences this warning the same way.
#pragma nv_diag_suppress static_var_with_dynamic_init

template <Api A, class T, std::size_t Promise>
__device__ void staged_copy_body(const StageArgs& args) {
  extern __shared__ uint4 dynamic_shared[];
  __shared__ Barrier bar;
  const cg::thread_block block = cg::this_thread_block();
  std::uint8_t* stage = align_to_boundary(dynamic_shared) + args.stage_offset;
  if (block.thread_rank() == 0) {
    init(&bar, block.size());
    // sm_90: a bulk copy signals the barrier from the async proxy (the TMA unit). Make the
    // initialised barrier visible to that proxy before the first copy is issued.
    NV_IF_TARGET(NV_PROVIDES_SM_90, (cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);));
  }
  block.sync();

  unsigned returned = 0;
  const std::size_t batches = (args.n + kBatchBytes - 1) / kBatchBytes;
  // Blocks take batches in turn (a grid-stride loop over batches), so any grid size works.
  for (std::size_t b = blockIdx.x; b < batches; b += gridDim.x) {
    const std::size_t first = b * kBatchBytes;
    const std::size_t count = args.n - first < kBatchBytes ? args.n - first : kBatchBytes;
    if constexpr (A == Api::peeled) {
      returned |= copy_peeled(block, stage, args.in + first, count, bar);
    } else {
      returned |= issue_copy<A, T, Promise>(block, stage, args.in + first, count, bar);
    }
    wait_for_copy<A>(block, bar);
    write_back(block, args.out + first, stage, count);
    block.sync();  // nobody reads the stage any more: the next batch may overwrite it
  }
  if (args.returned != nullptr && block.thread_rank() == 0 && returned != 0) {
    atomicOr(args.returned, returned);
  }
}

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

void require(bool condition, const std::string& message, Method method) {
  if (!condition) {
    throw std::invalid_argument(std::string("alignment::staged_copy(") + info(method).name +
                                "): " + message);
  }
}

}  // namespace

Split split_at_alignment(std::uintptr_t first, std::size_t count, std::size_t alignment) {
  return split_range(first, count, alignment);
}

std::size_t stage_offset_for(const void* source, std::size_t requested) {
  // TODO 6: you own shared memory, so you choose where the staging buffer starts. For
  //         kMatchSource, start it at the source's own offset modulo 16, so that source and
  //         stage reach a 16-byte boundary after the same head. Otherwise use `requested`.
  // BEGIN SOLUTION
  if (requested == kMatchSource) return reinterpret_cast<std::uintptr_t>(source) % 16;
  return requested;
  // STARTER: (void)source;
  // STARTER: return requested == kMatchSource ? 0 : requested;
  // END SOLUTION
}

void staged_copy(Method method, cuda::std::span<const std::uint8_t> in,
                 cuda::std::span<std::uint8_t> out, std::size_t stage_offset, LaunchShape shape,
                 cudaStream_t stream, unsigned* returned) {
  require(in.size() == out.size(),
          "in has " + std::to_string(in.size()) + " bytes, out " + std::to_string(out.size()),
          method);
  require(shape.threads_per_block >= 32 && shape.threads_per_block <= 1024 &&
              shape.threads_per_block % 32 == 0,
          "threads_per_block must be a multiple of 32 in [32, 1024], got " +
              std::to_string(shape.threads_per_block),
          method);
  require(shape.blocks >= 1, "blocks must be >= 1, got " + std::to_string(shape.blocks), method);
  require(stage_offset == kMatchSource || stage_offset < kStageBoundary,
          "stage_offset must be below " + std::to_string(kStageBoundary) + " or kMatchSource",
          method);
  const std::size_t offset = stage_offset_for(in.data(), stage_offset);
  const std::size_t source = reinterpret_cast<std::uintptr_t>(in.data());
  // The type and the promise are what the kernel was compiled for; data that breaks them is
  // undefined behaviour (a misaligned cp.async, or a copy past the end): refuse it here.
  const std::size_t alignment = required_alignment(method);
  require(source % alignment == 0,
          "the source must be " + std::to_string(alignment) + "-byte aligned", method);
  require(offset % alignment == 0,
          "the stage offset must be a multiple of " + std::to_string(alignment), method);
  require(in.size() % alignment == 0,
          "the size must be a multiple of " + std::to_string(alignment) + " bytes", method);
  if (method == Method::cg_char_size_t) {
    // CCCL 3.0.1's cooperative_groups::memcpy_async picks 2-byte words for char data whose
    // two addresses differ by 2 modulo 4, without first aligning them: for odd addresses
    // that is a misaligned access, and an odd byte count loses its last byte.
    require((source ^ offset) % 4 != 2,
            "source and stage differ by 2 modulo 4: CCCL 3.0.1 copies such char data wrongly",
            method);
  }
  if (in.empty()) return;
  const StageArgs args{in.data(), out.data(), in.size(), static_cast<unsigned>(offset), returned};
  kernel_for(method)<<<shape.blocks, shape.threads_per_block, shared_bytes(), stream>>>(args);
  COURSE_CHECK_LAUNCH();
}

int max_blocks_per_sm(Method method, int threads_per_block) {
  int blocks = 0;
  COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel_for(method),
                                                             threads_per_block, shared_bytes()));
  return blocks;
}

}  // namespace alignment
