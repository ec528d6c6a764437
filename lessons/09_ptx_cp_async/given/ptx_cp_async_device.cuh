// Lesson 09: the declarations of the functions you write in ptx_cp_async.cu, with their
// contracts, and the small device helpers they use. Read-only.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "course/mbarrier.cuh"
#include "ptx_cp_async.cuh"

namespace ptx_cp_async {
namespace {

enum class CacheOp { ca, cg };                        ///< .ca: L1 and L2; .cg: L2 only
enum class Prefetch { none, l2_64, l2_128, l2_256 };  ///< the .L2::64B/128B/256B qualifier

/// The 32-bit shared-memory address of a generic pointer into shared memory: what a PTX
/// operand in the .shared state space expects.
__device__ inline std::uint32_t shared_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// ---- yours (ptx_cp_async.cu) --------------------------------------------------------------

/// TODO 1: starts copying Size bytes from global `src` to shared `dst`, both aligned to Size.
template <CacheOp Op, int Size, Prefetch P = Prefetch::none>
__device__ inline void cp_async(void* dst, const void* src);
/// TODO 2: close this thread's copies into a group; wait until at most N of its groups are
/// pending; wait for all of its copies.
__device__ inline void commit_group();
template <int N>
__device__ inline void wait_group();
__device__ inline void wait_all();
/// TODO 3: cp_async<Op, Size> that reads only `src_size` bytes (0 <= src_size <= Size; 0
/// reads nothing) and writes zeros over the rest of the Size bytes at dst.
template <CacheOp Op, int Size>
__device__ inline void cp_async_zero_fill(void* dst, const void* src, unsigned src_size);
/// TODO 4: cp_async<Op, Size> with ignore-src: when `ignore` holds nothing is read and dst
/// gets Size zero bytes (src must still be a valid address).
template <CacheOp Op, int Size>
__device__ inline void cp_async_ignore_src(void* dst, const void* src, bool ignore);
/// TODO 5: the mbarrier operations, on a 64-bit mbarrier in shared memory: set the expected
/// arrival count; track this thread's copies in the current phase; arrive; test a phase.
__device__ inline void mbarrier_init(std::uint64_t* bar, unsigned count);
template <bool NoInc>
__device__ inline void async_arrive(std::uint64_t* bar);
__device__ inline void mbarrier_arrive(std::uint64_t* bar);
__device__ inline bool mbarrier_try_wait_parity(std::uint64_t* bar, unsigned parity);
/// TODO 6: starts this thread's copies of the block's batch k into `buffer` (when the block
/// has a batch k) and closes them: one group, or one arrival on `bar`.
template <Form F>
__device__ void start_batch(uint4* buffer, const std::uint32_t* in, std::size_t k, std::size_t mine,
                            std::size_t batch, std::size_t n, int vectors_per_thread,
                            std::uint64_t* bar);
/// TODO 7: before the block computes batch k of a Stages-stage schedule: batch k has arrived
/// and every thread is done with batch k - 1.
template <Form F, int Stages>
__device__ void wait_for_batch(std::uint64_t* barriers, std::size_t k);
/// TODO 8: the tail kernel's branch-free copy of the 16-byte chunk at `column` of `row`.
__device__ inline void copy_chunk_branch_free(uint4* dst, const std::uint32_t* in, std::size_t row,
                                              std::size_t column, Rows shape);
/// TODO 9: an L2 eviction policy (kept longest or evicted first) and a 16-byte copy that
/// bypasses L1 and carries one.
template <bool EvictLast>
__device__ inline std::uint64_t make_policy();
__device__ inline void cp_async_cg16_hint(void* dst, const void* src, std::uint64_t policy);

// ---- given --------------------------------------------------------------------------------

/// Waits for the phase of `parity` with your mbarrier_try_wait_parity (TODO 5), bounded by
/// the course's wait (course/mbarrier.cuh): a phase that never completes is a bug, so after
/// 2 s the wait gives up, is counted, and returns; the kernel finishes with wrong values
/// (the checks fail) and take_wait_timeouts() says why, instead of hanging the GPU.
__device__ inline void mbarrier_wait_parity(std::uint64_t* bar, unsigned parity) {
  (void)course::mbarrier::wait_bounded([bar, parity] { return mbarrier_try_wait_parity(bar, parity); });
}

/// The cache operator of a form's copies (.ca for cp-sizes 4 and 8 and for ca16).
template <Form F>
inline constexpr CacheOp kCacheOpOf = copy_bytes(F) < 16 || F == Form::ca16 ? CacheOp::ca
                                                                            : CacheOp::cg;
/// The L2 prefetch size of a form.
template <Form F>
inline constexpr Prefetch kPrefetchOf = F == Form::cg16_l2_64    ? Prefetch::l2_64
                                        : F == Form::cg16_l2_128 ? Prefetch::l2_128
                                        : F == Form::cg16_l2_256 ? Prefetch::l2_256
                                                                 : Prefetch::none;

/// The piece of a partial batch that the data ends in, word by word, the words past the
/// end zero-filled: a wider zero-filling copy is legal PTX, but compute-sanitizer's memcheck
/// counts all its bytes as read, past the end of the input.
template <int Size>
__device__ inline void copy_last_piece(char* dst, const char* src, std::size_t valid_bytes) {
  for (int w = 0; w < Size; w += 4) {
    const bool inside = static_cast<std::size_t>(w) < valid_bytes;
    cp_async_zero_fill<CacheOp::ca, 4>(dst + w, inside ? src + w : src, inside ? 4u : 0u);
  }
}

}  // namespace
}  // namespace ptx_cp_async
