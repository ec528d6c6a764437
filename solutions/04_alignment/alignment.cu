// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
//
// Lesson 04: alignment and trivially copyable types. Every kernel here stages 16 KB batches
// global -> shared -> global; only the line that issues the global -> shared copy differs.
// What that line becomes (a byte loop, a 4/8/16-byte cp.async, one bulk copy) is decided at
// compile time from what the compiler is told about alignment, never from the addresses at
// run time (the README's table). Data that starts at any byte can still get wide copies:
// cut it where both addresses allow, and place the shared buffer to suit the source.
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
  // TODO 1: return the cut of the `count` bytes that start at address `first`:
  //         head + body + tail == count; the head is every byte before the first multiple
  //         of `alignment` (all of them when the range ends before it, none when `first`
  //         is one); the body starts on a multiple of `alignment` and is whole chunks of
  //         it; the tail is shorter than `alignment`. `alignment` is a power of two.
  //         Constant time: no loop over the bytes.
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

// [[maybe_unused]]: nothing calls it until the TODOs that report a result are done.
[[maybe_unused]] __device__ unsigned returned_flag(cuda::async_contract_fulfillment fulfillment) {
  return fulfillment == cuda::async_contract_fulfillment::async ? kReturnedAsync : kReturnedNone;
}

/// Step 1: the whole block's copy of `bytes` bytes from `batch_in` (global) to `stage`
/// (shared), made with the library `A` names, through T pointers, and promising an
/// alignment of `Promise` bytes (0: no promise). Returns what the copy reported (Returned).
template <Api A, class T, std::size_t Promise>
__device__ unsigned issue_copy(const cg::thread_block& block, std::uint8_t* stage,
                               const std::uint8_t* batch_in, std::size_t bytes, Barrier& bar) {
  // The copy moves the bytes of T objects without running any constructor: only trivially
  // copyable types may be copied that way (one library static_asserts it, the other does
  // not check: see the README and the tests).
  static_assert(std::is_trivially_copyable_v<T>, "memcpy_async copies bytes");
  T* dst = reinterpret_cast<T*>(stage);
  const T* src = reinterpret_cast<const T*>(batch_in);
  // TODO 2: the whole block issues one asynchronous copy of `bytes` bytes from src to dst,
  //         typed as dst and src are, with the library that `A` names: the
  //         cooperative-groups copy, or the libcu++ copy that completes on `bar`. A non-zero
  //         Promise must reach the copy as an alignment promise of that many bytes; with 0
  //         the copy is told nothing beyond the type (the promise is what this lesson
  //         measures). A, T and Promise are compile-time: each kernel must compile only its
  //         own call (its PTX is tested). Return what the copy reported, as a Returned
  //         flag (the cooperative-groups copy reports nothing: a flag says just that).
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

/// The peeled copy at one alignment: copies `count` bytes from `src` (global) to `dst`
/// (shared), as much of it as possible with `Alignment`-byte asynchronous copies.
/// Precondition: `dst` and `src` are equal modulo `Alignment`.
template <std::size_t Alignment>
__device__ unsigned copy_peeled_at(const cg::thread_block& block, std::uint8_t* dst,
                                   const std::uint8_t* src, std::size_t count, Barrier& bar) {
  // TODO 4: afterwards dst holds [src, src + count) once the caller has waited on `bar`.
  //         The bytes before src's first `Alignment` boundary and those after the last one
  //         go with ordinary loads and stores by the block; everything between them goes
  //         in ONE libcu++ asynchronous copy on `bar` that promises `Alignment` bytes, and
  //         that promise must hold (both addresses and the size). No asynchronous copy when
  //         nothing lies between two boundaries. Return the Returned flag of that copy, or
  //         0 when there was none. Use this file's helpers; no wait here.
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
  // TODO 5: copy `count` bytes between any two addresses with the peeled copy at the
  //         widest width, 16, 8 or 4 bytes, at which ONE head brings both addresses to a
  //         boundary together. When no width of 4 bytes or more works for this pair, move
  //         every byte synchronously and return 0; otherwise return what the peeled copy
  //         returned. Decide from the two addresses alone, before any byte moves.
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
  // TODO 3: on return, all of this batch's stage has arrived and every thread of the
  //         block may read every byte of it, whichever thread copied it and however (an
  //         asynchronous copy, or the plain stores of a byte loop). Each library has its own
  //         completion: use the one that belongs to the library the copy of `A` was issued
  //         with (the peeled copy completes like the libcu++ one). One wait per library, no
  //         extra barrier; a wait that covers only this warp is wrong.
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
  const course::batches::TestHooks hooks{args.hold_ns};  // nothing outside the tests
  hooks.poison(dynamic_shared, shared_bytes());  // all of the dynamic shared memory

  unsigned returned = 0;
  const std::size_t batches = (args.n + kBatchBytes - 1) / kBatchBytes;
  // Blocks take batches in turn (a grid-stride loop over batches), so any grid size works.
  for (std::size_t b = blockIdx.x; b < batches; b += gridDim.x) {
    const std::size_t first = b * kBatchBytes;  // in[first + i] : (count) -> stage[i]
    const std::size_t count = args.n - first < kBatchBytes ? args.n - first : kBatchBytes;
    hooks.before_copy();
    if constexpr (A == Api::peeled) {
      returned |= copy_peeled(block, stage, args.in + first, count, bar);
    } else {
      returned |= issue_copy<A, T, Promise>(block, stage, args.in + first, count, bar);
    }
    wait_for_copy<A>(block, bar);
    hooks.before_read();
    write_back(block, args.out + first, stage, count);
    block.sync();  // nobody reads the stage any more: the next batch may overwrite it
  }
  if (args.returned != nullptr && block.thread_rank() == 0 && returned != 0) {
    atomicOr(args.returned, returned);
  }
}

}  // namespace

std::size_t stage_offset_for(const void* source, std::size_t requested) {
  // TODO 6: you own shared memory, so you choose where the staging buffer starts (bytes
  //         past a kStageBoundary boundary). For kMatchSource, choose the offset at which
  //         source and stage reach a 16-byte boundary after the same head, so that a
  //         misaligned source still gets a 16-byte body; any other `requested` is used as
  //         it is. Host code, at most 2 lines.
  // BEGIN SOLUTION
  if (requested == kMatchSource) return reinterpret_cast<std::uintptr_t>(source) % 16;
  return requested;
  // STARTER: (void)source;
  // STARTER: return requested == kMatchSource ? 0 : requested;
  // END SOLUTION
}

}  // namespace alignment
