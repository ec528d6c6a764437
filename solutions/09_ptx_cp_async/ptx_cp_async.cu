// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
//
// Lesson 09: cp.async in inline PTX, the instructions CCCL and the primitives hid:
//
//   cp.async.{ca,cg}.shared.global{.L2::cache_hint}{.L2::64B|128B|256B}
//            [dst], [src], cp-size{, src-size | , ignore-src}{, cache-policy};
//   cp.async.commit_group;   cp.async.wait_group N;   cp.async.wait_all;
//   cp.async.mbarrier.arrive{.noinc}.shared.b64 [mbarrier];
//
// .ca caches in L1 and L2 (cp-size 4, 8 or 16), .cg in L2 only (cp-size 16). dst is a
// 32-bit shared-memory address, src a global address. Every asm here is `volatile` with a
// "memory" clobber, so the compiler neither drops it nor moves memory accesses across it.
#include <nv/target>

#include "course/batches.cuh"
#include "ptx_cp_async.cuh"
#include "given/ptx_cp_async_device.cuh"

namespace ptx_cp_async {
namespace {

using course::batches::Batch;
using course::batches::batch_of_block;

template <CacheOp Op, int Size, Prefetch P>
__device__ inline void cp_async(void* dst, const void* src) {
  static_assert(Size == 4 || Size == 8 || Size == 16, "cp-size is 4, 8 or 16");
  static_assert(Op == CacheOp::ca || Size == 16, "cp.async.cg copies 16 bytes only");
  static_assert(Op == CacheOp::cg || P == Prefetch::none, "this lesson prefetches with .cg only");
  // TODO 1: afterwards one cp.async of Size bytes from src to dst is in flight, with the
  //         cache operator Op and the L2 prefetch size P (none, .L2::64B, 128B or 256B).
  // BEGIN SOLUTION
  const std::uint32_t d = shared_address(dst);
  if constexpr (Op == CacheOp::ca) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(d), "l"(src), "n"(Size)
                 : "memory");
  } else if constexpr (P == Prefetch::none) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src) : "memory");
  } else if constexpr (P == Prefetch::l2_64) {
    asm volatile("cp.async.cg.shared.global.L2::64B [%0], [%1], 16;\n" ::"r"(d), "l"(src)
                 : "memory");
  } else if constexpr (P == Prefetch::l2_128) {
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;\n" ::"r"(d), "l"(src)
                 : "memory");
  } else {
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;\n" ::"r"(d), "l"(src)
                 : "memory");
  }
  // STARTER: (void)dst; (void)src;
  // END SOLUTION
}

// TODO 2: afterwards commit_group() has closed this thread's uncommitted copies into one
//         group; wait_group<N>() has returned once at most N of this thread's newest groups
//         are pending (N is an immediate); wait_all() once all its copies have landed.
// BEGIN SOLUTION
__device__ inline void commit_group() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ inline void wait_group() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
__device__ inline void wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }
// STARTER: __device__ inline void commit_group() {}
// STARTER: template <int N>
// STARTER: __device__ inline void wait_group() {}
// STARTER: __device__ inline void wait_all() {}
// END SOLUTION

template <CacheOp Op, int Size>
__device__ inline void cp_async_zero_fill(void* dst, const void* src, unsigned src_size) {
  static_assert(Op == CacheOp::ca || Size == 16, "cp.async.cg copies 16 bytes only");
  // TODO 3: afterwards the copy is in flight with src-size as its fourth operand.
  // BEGIN SOLUTION
  if constexpr (Op == CacheOp::ca) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(shared_address(dst)),
                 "l"(src), "n"(Size), "r"(src_size)
                 : "memory");
  } else {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)),
                 "l"(src), "r"(src_size)
                 : "memory");
  }
  // STARTER: (void)dst; (void)src; (void)src_size;
  // END SOLUTION
}

template <CacheOp Op, int Size>
__device__ inline void cp_async_ignore_src(void* dst, const void* src, bool ignore) {
  static_assert(Op == CacheOp::ca || Size == 16, "cp.async.cg copies 16 bytes only");
  // TODO 4: afterwards the copy is in flight with a predicate, set from `ignore`, as its
  //         fourth operand.
  // BEGIN SOLUTION
  const std::uint32_t d = shared_address(dst);
  const std::uint32_t flag = ignore ? 1u : 0u;
  if constexpr (Op == CacheOp::ca) {
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %3, 0;\n"
        " cp.async.ca.shared.global [%0], [%1], %2, p;\n}\n" ::"r"(d),
        "l"(src), "n"(Size), "r"(flag)
        : "memory");
  } else {
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %2, 0;\n"
        " cp.async.cg.shared.global [%0], [%1], 16, p;\n}\n" ::"r"(d),
        "l"(src), "r"(flag)
        : "memory");
  }
  // STARTER: (void)dst; (void)src; (void)ignore;
  // END SOLUTION
}

// TODO 5: the mbarrier operations on a 64-bit mbarrier in shared memory. Afterwards:
//         mbarrier_init() has set the expected arrival count; async_arrive<NoInc>() has made
//         the current phase also wait for every cp.async this thread issued so far (with
//         .noinc that arrival counts towards the expected count; without it the pending
//         count is raised by one first, so it does not); mbarrier_arrive() has arrived once;
//         mbarrier_try_wait_parity() says whether the phase of that parity has completed.
//         It must build for sm_80 (test_wait) and sm_90 (try_wait).
// BEGIN SOLUTION
__device__ inline void mbarrier_init(std::uint64_t* bar, unsigned count) {
  asm volatile("mbarrier.init.shared.b64 [%0], %1;\n" ::"r"(shared_address(bar)), "r"(count)
               : "memory");
}
template <bool NoInc>
__device__ inline void async_arrive(std::uint64_t* bar) {
  if constexpr (NoInc) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];\n" ::"r"(shared_address(bar))
                 : "memory");
  } else {
    asm volatile("cp.async.mbarrier.arrive.shared.b64 [%0];\n" ::"r"(shared_address(bar))
                 : "memory");
  }
}
__device__ inline void mbarrier_arrive(std::uint64_t* bar) {
  asm volatile("{\n .reg .b64 state;\n mbarrier.arrive.shared.b64 state, [%0];\n}\n" ::"r"(
                   shared_address(bar))
               : "memory");
}
__device__ inline bool mbarrier_try_wait_parity(std::uint64_t* bar, unsigned parity) {
  std::uint32_t done = 0;
  NV_IF_ELSE_TARGET(
      NV_PROVIDES_SM_90,
      (asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared.b64 p, [%1], %2;\n"
                    " selp.u32 %0, 1, 0, p;\n}\n"
                    : "=r"(done)
                    : "r"(shared_address(bar)), "r"(parity)
                    : "memory");),
      (asm volatile("{\n .reg .pred p;\n mbarrier.test_wait.parity.shared.b64 p, [%1], %2;\n"
                    " selp.u32 %0, 1, 0, p;\n}\n"
                    : "=r"(done)
                    : "r"(shared_address(bar)), "r"(parity)
                    : "memory");));
  return done != 0;
}
// STARTER: __device__ inline void mbarrier_init(std::uint64_t*, unsigned) {}
// STARTER: template <bool NoInc>
// STARTER: __device__ inline void async_arrive(std::uint64_t*) {}
// STARTER: __device__ inline void mbarrier_arrive(std::uint64_t*) {}
// STARTER: __device__ inline bool mbarrier_try_wait_parity(std::uint64_t*, unsigned) {
// STARTER:   return true;
// STARTER: }
// END SOLUTION

/// Starts this thread's copies of the block's batch k into `buffer` (when the block has a
/// batch k) and closes them: one group, or one arrival on `bar`.
template <Form F>
__device__ void start_batch(uint4* buffer, const std::uint32_t* in, std::size_t k, std::size_t mine,
                            std::size_t batch, std::size_t n, int vectors_per_thread,
                            std::uint64_t* bar) {
  constexpr int kSize = copy_bytes(F);
  // TODO 6: afterwards, if k < mine, this thread's pieces of batch k are in flight into
  //         `buffer`: kSize bytes each, piece p of thread t being piece p * blockDim.x + t
  //         of the batch (a warp copies neighbours), vectors_per_thread * 16 / kSize of
  //         them, with the form's cache operator and prefetch size. In the partial last
  //         batch a piece past the data is zero-filled without being read (ignore-src, its
  //         source the batch start) and the piece the data ends in goes through
  //         copy_last_piece. Then the copies are closed: group forms commit one group,
  //         batch or no batch (every thread the same count); mbarrier forms make `bar`
  //         track them, only if k < mine (cg16_mbarrier adds an ordinary arrival).
  // BEGIN SOLUTION
  if (k < mine) {
    const Batch b = batch_of_block(k, batch, n);
    char* dst = reinterpret_cast<char*>(buffer);
    const char* src = reinterpret_cast<const char*>(in + b.first);
    const std::size_t valid = b.count * sizeof(std::uint32_t);
    for (int p = 0; p < vectors_per_thread * 16 / kSize; ++p) {
      const std::size_t offset = (static_cast<std::size_t>(p) * blockDim.x + threadIdx.x) * kSize;
      if (b.count == batch) {
        cp_async<kCacheOpOf<F>, kSize, kPrefetchOf<F>>(dst + offset, src + offset);
      } else if (offset + kSize <= valid || offset >= valid) {
        const bool past = offset >= valid;
        cp_async_ignore_src<kCacheOpOf<F>, kSize>(dst + offset, past ? src : src + offset, past);
      } else {
        copy_last_piece<kSize>(dst + offset, src + offset, valid - offset);
      }
    }
  }
  if constexpr (!uses_mbarrier(F)) {
    commit_group();
  } else if (k < mine) {
    async_arrive<F == Form::cg16_mbarrier_noinc>(bar);
    if constexpr (F == Form::cg16_mbarrier) mbarrier_arrive(bar);
  }
  // STARTER: (void)buffer; (void)in; (void)k; (void)mine; (void)batch; (void)n;
  // STARTER: (void)vectors_per_thread; (void)bar; (void)kSize;
  // END SOLUTION
}

/// Before the block computes batch k of a Stages-stage schedule (Stages - 1 batches ahead).
template <Form F, int Stages>
__device__ void wait_for_batch(std::uint64_t* barriers, std::size_t k) {
  // TODO 7: afterwards batch k is in shared memory and visible to every thread of the
  //         block, and every thread has finished computing batch k - 1, whose buffer (and
  //         barrier) is reused next. Group forms: this thread's newest
  //         groups_allowed_pending(Stages - 1) groups may still be pending. mbarrier forms:
  //         barrier k % Stages completes a phase per use; batch_parity() gives its parity.
  // BEGIN SOLUTION
  if constexpr (uses_mbarrier(F)) {
    mbarrier_wait_parity(&barriers[k % Stages], batch_parity(k, Stages));
  } else {
    wait_group<groups_allowed_pending(Stages - 1)>();
  }
  __syncthreads();
  // STARTER: (void)barriers; (void)k;
  // END SOLUTION
}

/// The tail kernel's branch-free copy of the 16-byte chunk at `column` of `row` into `dst`.
__device__ inline void copy_chunk_branch_free(uint4* dst, const std::uint32_t* in, std::size_t row,
                                              std::size_t column, Rows shape) {
  // TODO 8: afterwards the chunk is on its way as ONE 16-byte copy, without an `if`: its
  //         src-size is the number of the chunk's bytes inside the row (valid_chunk_bytes),
  //         0 for a row past the last one, and the rest is zero-filled. The source must be
  //         a valid address even when nothing is read (the input's start).
  // BEGIN SOLUTION
  const bool inside = row < shape.rows;
  const std::uint32_t* src = in + (inside ? row * pitch(shape.length) + column : 0);
  cp_async_zero_fill<CacheOp::cg, 16>(dst, src,
                                      inside ? valid_chunk_bytes(column, shape.length) : 0u);
  // STARTER: (void)dst; (void)in; (void)row; (void)column; (void)shape;
  // END SOLUTION
}

// TODO 9: afterwards make_policy<EvictLast>() returns an L2 cache policy made by
//         createpolicy (fractional, covering all the data it is used for) with priority
//         evict_last or evict_first, and cp_async_cg16_hint() has a 16-byte .cg copy in
//         flight that carries the policy (.L2::cache_hint).
// BEGIN SOLUTION
template <bool EvictLast>
__device__ inline std::uint64_t make_policy() {
  std::uint64_t policy = 0;
  if constexpr (EvictLast) {
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(policy));
  } else {
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  }
  return policy;
}
__device__ inline void cp_async_cg16_hint(void* dst, const void* src, std::uint64_t policy) {
  asm volatile(
      "cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)),
      "l"(src), "l"(policy)
      : "memory");
}
// STARTER: template <bool EvictLast>
// STARTER: __device__ inline std::uint64_t make_policy() { return 0; }
// STARTER: __device__ inline void cp_async_cg16_hint(void*, const void*, std::uint64_t) {}
// END SOLUTION

}  // namespace
}  // namespace ptx_cp_async
