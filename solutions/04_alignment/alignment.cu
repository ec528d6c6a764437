// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
//
// Lesson 04: alignment and trivially copyable types. Each batch of 16 KB: 1. issue the
// global -> shared copy with memcpy_async (the line this lesson studies), 2. wait for it,
// 3. write the stage back (out[i] = in[i]), 4. sync before the stage is overwritten. What
// step 1 compiles to depends only on what the compiler knows (the README's table).
// given/alignment_launch.cu instantiates staged_copy_body once per method, as its own kernel.
#include "alignment.cuh"

#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/barrier>
#include <cuda/ptx>
#include <nv/target>

#include <type_traits>

namespace alignment {
namespace {

namespace cg = cooperative_groups;
using Barrier = cuda::barrier<cuda::thread_scope_block>;

__device__ std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

/// Cuts a byte range at `alignment` boundaries (the public split_at_alignment calls it).
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
  // STARTER: (void)first; (void)alignment;
  // STARTER: return Split{count, 0, 0};
  // END SOLUTION
}

/// Synchronous block-strided copy of `count` bytes with ordinary loads and stores.
__device__ void copy_bytes(const cg::thread_block& block, std::uint8_t* dst,
                           const std::uint8_t* src, std::size_t count) {
  // dst[i] = src[i] : (count), i = r, r + B, ... (r: rank, B: block size)
  for (std::size_t i = block.thread_rank(); i < count; i += block.size()) dst[i] = src[i];
}

/// Writes the staged batch back: bytes up to `out`'s first W-byte boundary, W-byte words,
/// bytes for the rest. Valid when `out` and `stage` are equal modulo W.
template <class Word>
__device__ void write_back_as(const cg::thread_block& block, std::uint8_t* out,
                              const std::uint8_t* stage, std::size_t count) {
  const Split s = split_range(address(out), count, sizeof(Word));
  copy_bytes(block, out, stage, s.head);
  const Word* from = reinterpret_cast<const Word*>(stage + s.head);
  Word* to = reinterpret_cast<Word*>(out + s.head);
  // to[i] = from[i] : (body / sizeof(Word)) words past the head
  for (std::size_t i = block.thread_rank(); i < s.body / sizeof(Word); i += block.size()) {
    to[i] = from[i];
  }
  copy_bytes(block, out + s.head + s.body, stage + s.head + s.body, s.tail);
}

/// Step 3, the same for every method: the widest words that both addresses allow.
__device__ void write_back(const cg::thread_block& block, std::uint8_t* out,
                           const std::uint8_t* stage, std::size_t count) {
  const unsigned mismatch = (address(out) ^ address(stage)) % 16;
  if (mismatch == 0) return write_back_as<uint4>(block, out, stage, count);
  if (mismatch % 4 == 0) return write_back_as<std::uint32_t>(block, out, stage, count);
  copy_bytes(block, out, stage, count);
}

// [[maybe_unused]]: the starter calls it only once TODO 2 is done.
[[maybe_unused]] __device__ unsigned returned_flag(cuda::async_contract_fulfillment fulfillment) {
  return fulfillment == cuda::async_contract_fulfillment::async ? kReturnedAsync : kReturnedNone;
}

/// Step 1: the block's copy of `bytes` bytes from `batch_in` (global) to `stage` (shared)
/// through T*, with a size_t (Promise == 0) or cuda::aligned_size_t<Promise>.
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
  // STARTER: (void)block; (void)dst; (void)src; (void)bytes; (void)bar;
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
  // [0, count) = head [0, h) | body [h, h + b), Alignment-aligned | tail [h + b, count)
  const Split s = split_range(address(src), count, Alignment);
  copy_bytes(block, dst, src, s.head);
  unsigned returned = 0;
  if (s.body > 0) {
    returned = returned_flag(cuda::memcpy_async(block, dst + s.head, src + s.head,
                                                cuda::aligned_size_t<Alignment>(s.body), bar));
  }
  copy_bytes(block, dst + s.head + s.body, src + s.head + s.body, s.tail);
  return returned;
  // STARTER: (void)block; (void)dst; (void)src; (void)count; (void)bar;
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
  // STARTER: (void)block; (void)dst; (void)src; (void)count; (void)bar;
  // STARTER: return 0;
  // END SOLUTION
}

/// Step 2: the wait that belongs to the API.
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
  // STARTER: (void)block; (void)bar;
  // END SOLUTION
}

// ---- The kernel body (one kernel per method instantiates it: given/alignment_launch.cu) --------

/// Moves a shared-memory pointer up to the next kStageBoundary boundary. Pointer
/// arithmetic, not integer arithmetic: the compiler must still see that the result points
/// into shared memory, or memcpy_async keeps a fallback path for "dst is not shared".
__device__ std::uint8_t* align_to_boundary(void* p) {
  std::uint8_t* bytes = static_cast<std::uint8_t*>(p);
  return bytes + (kStageBoundary - address(p) % kStageBoundary) % kStageBoundary;
}

// A __shared__ cuda::barrier is never constructed: init() sets it up (as CCCL's docs do).
#pragma nv_diag_suppress static_var_with_dynamic_init

template <Api A, class T, std::size_t Promise>
__device__ void staged_copy_body(const StageArgs& args) {
  extern __shared__ uint4 dynamic_shared[];
  __shared__ Barrier bar;
  const cg::thread_block block = cg::this_thread_block();
  // stage[i] : (kBatchBytes) bytes, at stage_offset past a kStageBoundary boundary
  std::uint8_t* stage = align_to_boundary(dynamic_shared) + args.stage_offset;
  if (block.thread_rank() == 0) {
    init(&bar, block.size());
    // sm_90: a bulk copy signals the barrier from the async proxy (the TMA unit). Make the
    // initialised barrier visible to that proxy before the first copy is issued.
    NV_IF_TARGET(NV_PROVIDES_SM_90, (cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);));
  }
  block.sync();
  // Tests only: all of the dynamic shared memory.
  course::batches::poison_shared(dynamic_shared, shared_bytes(), args.hold_ns);

  unsigned returned = 0;
  const std::size_t batches = (args.n + kBatchBytes - 1) / kBatchBytes;
  // Blocks take batches in turn (a grid-stride loop over batches), so any grid size works.
  for (std::size_t b = blockIdx.x; b < batches; b += gridDim.x) {
    const std::size_t first = b * kBatchBytes;  // in[first + i] : (count) -> stage[i]
    const std::size_t count = args.n - first < kBatchBytes ? args.n - first : kBatchBytes;
    course::batches::hold_back(args.hold_ns);  // tests only: every warp but one copies late
    if constexpr (A == Api::peeled) {
      returned |= copy_peeled(block, stage, args.in + first, count, bar);
    } else {
      returned |= issue_copy<A, T, Promise>(block, stage, args.in + first, count, bar);
    }
    wait_for_copy<A>(block, bar);
    course::batches::hold_back(args.hold_ns);  // tests only: every warp but one reads late
    write_back(block, args.out + first, stage, count);
    block.sync();  // nobody reads the stage any more: the next batch may overwrite it
  }
  if (args.returned != nullptr && block.thread_rank() == 0 && returned != 0) {
    atomicOr(args.returned, returned);
  }
}

}  // namespace

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

}  // namespace alignment
