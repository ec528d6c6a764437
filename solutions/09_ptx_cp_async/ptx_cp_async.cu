// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
//
// Lesson 09: cp.async in inline PTX. Lessons 02-08 reached the asynchronous copy through CCCL
// and the pipeline primitives, and each of them chose an instruction form for you. Here you
// write the instructions yourself, each wrapper one inline-assembly statement, and every
// choice the libraries hid becomes yours: whether a copy goes through L1, how many bytes it
// moves, how much L2 prefetches around it, a zero fill that ends a ragged row without a
// branch, completion through an mbarrier instead of per-thread groups, and an L2 eviction
// priority. The README's "The concept" lists the instructions and their operands; the tests
// read the PTX and the SASS your wrappers become.
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
  // TODO 1: afterwards one asynchronous copy of Size bytes from global src to shared dst is
  //         in flight (not waited for), cached as Op says (L1 and L2, or L2 only) and with the
  //         L2 prefetch size P asks for (none, 64, 128 or 256 bytes). The compiler may neither
  //         drop it nor move shared-memory accesses across it. No run-time branch: Op, Size
  //         and P are compile-time constants, and so is all of the instruction's text.
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

// TODO 2: the three group functions below. Afterwards the first has closed every copy this
//         thread issued since its last close into one group (possibly empty); the second has
//         returned once at most N of this thread's most recent groups are still pending (N
//         reaches the instruction as a constant, not a register); the third once every copy
//         of this thread has arrived. None of them waits for another thread's copies, and
//         no shared-memory access moves across them.
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
  // TODO 3: afterwards the same copy as TODO 1's (no prefetch size) is in flight, except
  //         that it reads only the first src_size bytes at src (a run-time value, 0 to Size:
  //         0 reads nothing) and writes zeros over the rest of the Size bytes at dst.
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
  // TODO 4: afterwards the same copy as TODO 1's (no prefetch size) is in flight, except
  //         that when `ignore` holds it reads nothing and writes Size zero bytes at dst. A C++
  //         bool cannot be handed to the instruction as it is: the one statement derives
  //         what the instruction needs from `ignore` itself.
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

// TODO 5: the four mbarrier functions below, on a 64-bit mbarrier in shared memory.
//         Afterwards the first has set how many arrivals each phase expects; the second has
//         made the current phase also wait until every copy this thread issued so far has
//         arrived (with NoInc that completion is one of the expected arrivals; without it,
//         it is not, and the thread still arrives itself); the third has arrived once; the
//         fourth has returned, without waiting for it, whether the phase of that parity has
//         completed. Everything builds for sm_80 and for sm_90, each with the test of a
//         phase that its architecture offers.
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
  // TODO 6: afterwards, if the block has a batch k, that is if k < mine, this thread's share
  //         of it is in flight into `buffer`: the batch is cut into pieces of the form's
  //         cp-size, every thread copies vectors_per_thread x 16 bytes of them, and in each
  //         round a warp's threads take neighbouring pieces. Every copy has the form's cache
  //         operator and prefetch size (given per form). A partial last batch reads nothing
  //         past the input: a piece wholly past the data is zero-filled without being read
  //         (its source still a valid address, the batch's start), and the piece the data
  //         ends in goes through the given word-by-word helper. Then the copies are closed:
  //         a group form closes exactly one group per call, batch or no batch, so that every
  //         thread counts the same groups; an mbarrier form, only when there was a batch,
  //         makes `bar`'s current phase wait for them and count this thread exactly once.
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
  // TODO 7 (bug hunt): written, with one bug. Once TODO 2's group functions are written,
  //         `./course check 09` fails the PTX test EachFormEmitsItsCopyAndItsCompletion for
  //         the group forms (no GPU needed); on a GPU the values and racecheck may show it
  //         too, or not: a batch has often landed before anyone reads it. Contract of the
  //         fix: afterwards batch k is in shared memory and visible to every thread of the
  //         block, and every thread has finished computing batch k - 1, whose buffer (and
  //         barrier) is reused next. Group forms wait no further than batch k needs: the
  //         groups of the later batches, started Stages - 1 ahead, stay in flight. mbarrier
  //         forms wait for the phase that batch k completes on its stage's barrier. At most
  //         one line changes.
  // BEGIN SOLUTION
  if constexpr (uses_mbarrier(F)) {
    mbarrier_wait_parity(&barriers[k % Stages], batch_parity(k, Stages));
  } else {
    wait_group<groups_allowed_pending(Stages - 1)>();
  }
  __syncthreads();
  // STARTER: if constexpr (uses_mbarrier(F)) {
  // STARTER:   mbarrier_wait_parity(&barriers[k % Stages], batch_parity(k, Stages));
  // STARTER: } else {
  // STARTER:   wait_group<Stages - 1>();
  // STARTER: }
  // STARTER: __syncthreads();
  // END SOLUTION
}

/// The tail kernel's branch-free copy of one 16-byte chunk of a row into dst.
__device__ inline void copy_chunk_branch_free(uint4* dst, const std::uint32_t* in, std::size_t row,
                                              std::size_t column, Rows shape) {
  // TODO 8: afterwards the chunk is on its way into dst as ONE 16-byte copy, without an
  //         `if`: it reads only the chunk's bytes that lie inside its row, none for a row
  //         past the last one, and zero-fills the rest (a given helper of ptx_cp_async.cuh
  //         counts those bytes). The source is a valid address even when nothing is read:
  //         then it is the input's start.
  // BEGIN SOLUTION
  const bool inside = row < shape.rows;
  const std::uint32_t* src = in + (inside ? row * pitch(shape.length) + column : 0);
  cp_async_zero_fill<CacheOp::cg, 16>(dst, src,
                                      inside ? valid_chunk_bytes(column, shape.length) : 0u);
  // STARTER: (void)dst; (void)in; (void)row; (void)column; (void)shape;
  // END SOLUTION
}

// TODO 9: afterwards the first function returns an L2 cache policy, made on the device,
//         that gives every line it is applied to (all of them, not a fraction) the eviction
//         priority its template argument asks for: kept longest (EvictLast) or evicted
//         first; the second has one 16-byte copy in flight that bypasses L1 and carries
//         that policy, so that L2 applies it to the lines the copy brings in.
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
