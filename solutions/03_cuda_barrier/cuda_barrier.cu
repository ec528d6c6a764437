// Lesson 03: cuda::barrier and cuda::memcpy_async.
//
// Lesson 01 staged every batch global -> registers -> shared memory and needed two block
// barriers per batch. Here the copy is asynchronous: `cuda::memcpy_async(group, dst, src,
// size, barrier)` starts the copy and binds its completion to the current phase of a
// `cuda::barrier`. A phase completes when (1) every thread the barrier expects has arrived
// and (2) every copy bound to the phase has landed, so one `arrive_and_wait()` means both
// "the copy is done" and "everybody has issued their part of it".
//
// What a call turns into is decided at compile time from what the compiler can prove
// (CCCL 3.0.1, cuda/__memcpy_async/*.h):
//   block-scope barrier in shared memory, global -> shared, alignment >= 16 (from
//   aligned_size_t<16> or a 16-byte element type):
//       sm_90: ONE cp.async.bulk (a TMA copy) issued by thread_rank() 0, which also adds the
//              bytes to the barrier's transaction count (mbarrier.expect_tx)      -> async
//       sm_80: 16-byte cp.async by every thread + cp.async.mbarrier.arrive         -> async
//   the same with alignment 4 or 8: 4/8-byte cp.async on sm_80 and sm_90 alike     -> async
//   another scope (or a completion function), global -> shared:
//       cp.async, then cp.async.wait_all: the call itself blocks until it is done  -> async
//   any other direction (global -> global, ...): a plain synchronous copy loop     -> none
// The returned cuda::async_contract_fulfillment says which contract you got: `async` (wait
// on the barrier before reading) or `none` (the copy is already done when the call returns).
//
// The file builds up in this order: the group type, the copies (TODO 1-4), the compute
// step, the one-stage kernels (TODO 5-6), the system-scope kernel, the multi-stage kernel
// (TODO 7-8), the launchers.
#include "cuda_barrier.cuh"

#include <cooperative_groups.h>
#include <cuda/barrier>
#include <cuda/ptx>
#include <nv/target>

#include <stdexcept>
#include <string>
#include <utility>

#include "course/check.h"
#include "course/workload.h"

// A `__shared__` variable is never constructed: one thread initialises each barrier with
// init() instead. The front end warns that the barrier's constructor will not run (warning
// 20054, an error under -Werror); CCCL's own examples silence it the same way.
#pragma nv_diag_suppress static_var_with_dynamic_init

namespace cuda_barrier {
namespace {

namespace cg = cooperative_groups;
using course::workload::combine;
using course::workload::combine_elements;
using course::workload::combine_vectors;
using course::workload::mirror_vector;
using course::workload::partner_index;

using BlockBarrier = cuda::barrier<cuda::thread_scope_block>;    // an 8-byte mbarrier
using SystemBarrier = cuda::barrier<cuda::thread_scope_system>;  // atomics, in any memory

static_assert(static_cast<std::uint32_t>(cuda::async_contract_fulfillment::none) != kNotCalled &&
                  static_cast<std::uint32_t>(cuda::async_contract_fulfillment::async) != kNotCalled,
              "the report's 'not called' marker must differ from both contract values");

constexpr int kVectorsPerThread = kElementsPerThread / 4;  // uint4 per thread per full batch

// The launcher accepts blocks of up to 1024 threads; telling the compiler so keeps every
// kernel within 64 registers per thread (system_scope would use more without it).
constexpr int kMaxThreads = 1024;

// ---- A group of our own ------------------------------------------------------------------

/// The smallest group `cuda::memcpy_async` accepts in place of `this_thread_block()`, for a
/// 1-D block. What CCCL 3.0.1 needs (cuda/__memcpy_async/*.h): the barrier overloads call
/// `size()` (the stride of the per-thread cp.async loop) and `thread_rank()` (each thread's
/// offset; rank 0 alone issues a bulk copy and its expect_tx), and copy the group by value.
/// They never call `sync()`; `cuda::make_pipeline` does (lesson 05), and our kernels use it
/// for their own block-wide syncs. A `thread_scope` member is not read by 3.0.1.
struct OneDimensionalBlock {
  __device__ unsigned size() const { return blockDim.x; }
  __device__ unsigned thread_rank() const { return threadIdx.x; }
  __device__ void sync() const { __syncthreads(); }
};

// ---- Bookkeeping: batches and the report -------------------------------------------------

/// Batch `index` of an input of `n` elements: where it starts and how many elements it has
/// (`batch`, or fewer for the last one).
struct BatchRange {
  std::size_t index;
  std::size_t first;
  std::size_t count;
};

__device__ BatchRange batch_range(std::size_t index, std::size_t batch, std::size_t n) {
  const std::size_t first = index * batch;
  return {index, first, n - first < batch ? n - first : batch};
}

/// The report pointer for thread 0 of the block that copies batch 0 (the full-batch slots)
/// or the partial last batch (the tail slot); nullptr for every other thread and batch, so
/// each slot has exactly one writer.
__device__ std::uint32_t* report_for(std::uint32_t* report, BatchRange r, std::size_t batch) {
  return report != nullptr && threadIdx.x == 0 && (r.index == 0 || r.count < batch) ? report
                                                                                    : nullptr;
}

/// Keeps what one memcpy_async call promised, when this thread writes the report.
__device__ void record(std::uint32_t* report, ReportSlot slot,
                       cuda::async_contract_fulfillment promised) {
  if (report != nullptr) report[slot] = static_cast<std::uint32_t>(promised);
}

/// Initialises `count` block-scope barriers, each expecting every thread of the group.
/// Exactly one thread initialises; nobody may touch a barrier before the group syncs.
template <class Group>
__device__ void init_block_barriers(const Group& group, BlockBarrier* barriers, int count) {
  if (group.thread_rank() == 0) {
    for (int i = 0; i < count; ++i) init(&barriers[i], group.size());
    // sm_90: bulk copies signal the barrier from the async proxy (the TMA unit). Make the
    // initialised barriers visible to that proxy before the first copy is issued.
    NV_IF_TARGET(NV_PROVIDES_SM_90, (cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);));
  }
  group.sync();
}

// ---- The copies (TODO 1-4) ---------------------------------------------------------------
// Each helper is a cooperative call: every thread of `group` calls it with the same
// arguments, and the copy counts towards the barrier's current phase.

/// Copies `count` uint32 with a plain byte count. CCCL then knows only alignof(uint32_t) = 4,
/// so every thread of the group issues 4-byte cp.async instructions, on sm_80 and sm_90
/// alike. Works for any `count`.
template <class Group, class Barrier>
__device__ cuda::async_contract_fulfillment copy_words(const Group& group, std::uint32_t* dst,
                                                       const std::uint32_t* src, std::size_t count,
                                                       Barrier& barrier) {
  // TODO 1: start copying `count` uint32 from `src` to `dst` with cuda::memcpy_async(group,
  //         dst, src, size, barrier), the size a plain byte count (std::size_t), and return
  //         what the call returns.
  // BEGIN SOLUTION
  return cuda::memcpy_async(group, dst, src, count * sizeof(std::uint32_t), barrier);
  // STARTER: (void)group; (void)dst; (void)src; (void)count; (void)barrier;
  // STARTER: return cuda::async_contract_fulfillment::none;
  // END SOLUTION
}

/// Copies `count` uint32, a multiple of 4, promising with cuda::aligned_size_t<16> that both
/// pointers are 16-byte aligned and the size is a multiple of 16 bytes. With a block-scope
/// barrier in shared memory on sm_90 this is ONE cp.async.bulk issued by thread_rank() 0 (a
/// TMA copy); on sm_80, 16-byte cp.async by every thread. A broken promise is undefined
/// behaviour, not a slower copy.
template <class Group, class Barrier>
__device__ cuda::async_contract_fulfillment copy_aligned(const Group& group, std::uint32_t* dst,
                                                         const std::uint32_t* src,
                                                         std::size_t count, Barrier& barrier) {
  // TODO 2: the same copy, but pass the size as cuda::aligned_size_t<16>(bytes).
  // BEGIN SOLUTION
  return cuda::memcpy_async(group, dst, src,
                            cuda::aligned_size_t<16>(count * sizeof(std::uint32_t)), barrier);
  // STARTER: (void)group; (void)dst; (void)src; (void)count; (void)barrier;
  // STARTER: return cuda::async_contract_fulfillment::none;
  // END SOLUTION
}

/// Copies the partial last batch, `count` elements (fewer than a batch, any number): the
/// whole 16-byte chunks as one aligned copy, the 1-3 elements after them as a word copy.
/// Both copies are bound to the same barrier phase; one wait covers both.
template <class Group, class Barrier>
__device__ void copy_partial_batch(const Group& group, std::uint32_t* dst, const std::uint32_t* src,
                                   std::size_t count, Barrier& barrier, std::uint32_t* report) {
  // TODO 3: copy the first count / 4 * 4 elements with copy_aligned (only when there are
  //         some: a bulk copy of 0 bytes is not a copy), then the remaining count % 4
  //         elements with copy_words (only when there are some), and record what that
  //         second call returned in report slot kTailCopy.
  // BEGIN SOLUTION
  const std::size_t chunked = count / 4 * 4;  // elements in whole 16-byte chunks
  if (chunked > 0) copy_aligned(group, dst, src, chunked, barrier);
  if (chunked < count) {
    record(report, kTailCopy,
           copy_words(group, dst + chunked, src + chunked, count - chunked, barrier));
  }
  // STARTER: (void)group; (void)dst; (void)src; (void)count; (void)barrier; (void)report;
  // END SOLUTION
}

/// two_buffers: a full batch as two buffers of different element types, both bound to one
/// barrier (its phase completes when both copies have landed). The first half is typed
/// uint4: alignof(uint4) = 16, so a plain byte count already gets the aligned path. The
/// second half is uint32 with the promise spelled out: aligned_size_t<16>.
template <class Group, class Barrier>
__device__ void copy_two_buffers(const Group& group, std::uint32_t* dst, const std::uint32_t* src,
                                 std::size_t batch, Barrier& barrier, std::uint32_t* report) {
  const std::size_t half = batch / 2;  // elements; a multiple of 16 (batch = 16 x threads)
  uint4* vectors = reinterpret_cast<uint4*>(dst);  // buffer 1: half / 4 uint4
  const uint4* vectors_src = reinterpret_cast<const uint4*>(src);
  std::uint32_t* words = dst + half;  // buffer 2: half uint32
  const std::uint32_t* words_src = src + half;
  // TODO 4: copy buffer 1 with cuda::memcpy_async and a plain byte count of uint4 (record
  //         the result in kBatchCopy), then buffer 2 with copy_aligned (record it in
  //         kSecondCopy). Same group, same barrier.
  // BEGIN SOLUTION
  record(report, kBatchCopy,
         cuda::memcpy_async(group, vectors, vectors_src, half * sizeof(std::uint32_t), barrier));
  record(report, kSecondCopy, copy_aligned(group, words, words_src, half, barrier));
  // STARTER: (void)group; (void)barrier; (void)report;
  // STARTER: (void)vectors; (void)vectors_src; (void)words; (void)words_src;
  // END SOLUTION
}

/// How a kernel copies its full batches.
enum class Copy { words, aligned, two_buffers };

/// Starts the copy of batch `r` into `staged`, bound to `barrier`.
template <Copy C, class Group, class Barrier>
__device__ void copy_batch(const Group& group, std::uint32_t* staged, const std::uint32_t* in,
                           BatchRange r, std::size_t batch, Barrier& barrier,
                           std::uint32_t* report) {
  const std::uint32_t* src = in + r.first;
  if constexpr (C == Copy::words) {
    // A plain byte count works for any count: the last batch needs no special case.
    const auto promised = copy_words(group, staged, src, r.count, barrier);
    if (r.count == batch) record(report, kBatchCopy, promised);
    if (r.count < batch && r.count % 4 != 0) record(report, kTailCopy, promised);
  } else if (r.count < batch) {
    copy_partial_batch(group, staged, src, r.count, barrier, report);
  } else if constexpr (C == Copy::aligned) {
    record(report, kBatchCopy, copy_aligned(group, staged, src, batch, barrier));
  } else {
    copy_two_buffers(group, staged, src, batch, barrier, report);
  }
}

// ---- The compute step (as in lesson 01) --------------------------------------------------

/// Computes the outputs of one staged batch. A full batch moves 16-byte vectors: thread t
/// owns vectors v * blockDim.x + t, and elements 4k..4k+3 mirror onto vector k ^ 7 in
/// reverse order ((4k + j) ^ 31 == ((4k) ^ 28) + 3 - j). The partial last batch goes element
/// by element and reads only its first `count` elements (partners never leave the batch).
__device__ void compute_batch(const std::uint32_t* staged, std::uint32_t* __restrict__ out,
                              BatchRange r, std::size_t batch, std::size_t n) {
  std::uint32_t* batch_out = out + r.first;
  if (r.count == batch) {
    const uint4* staged4 = reinterpret_cast<const uint4*>(staged);
    uint4* out4 = reinterpret_cast<uint4*>(batch_out);
#pragma unroll
    for (int v = 0; v < kVectorsPerThread; ++v) {
      const unsigned vector = v * blockDim.x + threadIdx.x;
      // The partners of this vector's four elements fill one other vector, in reverse
      // order (course/workload.h); another thread staged it.
      out4[vector] = combine_vectors(staged4[vector], staged4[mirror_vector(vector)]);
    }
  } else {
    combine_elements(staged, batch_out, r.first, r.count, n, threadIdx.x, blockDim.x);
  }
}

// ---- One stage: one buffer, one barrier (TODO 5-6) ---------------------------------------

/// The Programming Guide's cuda::barrier example, re-done: per batch, start the copy, arrive
/// and wait, compute, sync before the buffer is reused. Nothing overlaps inside the block;
/// what changes from lesson 01 is that no registers stage the data and, with an aligned
/// copy on sm_90, one thread issues the whole batch as one bulk copy.
template <Copy C, class Group>
__device__ void one_stage(const Group& group, const std::uint32_t* __restrict__ in,
                          std::uint32_t* __restrict__ out, std::size_t n, std::uint32_t* report) {
  // uint4: the buffer must be 16-byte aligned for bulk copies and vector reads.
  extern __shared__ uint4 shared_storage[];
  std::uint32_t* staged = reinterpret_cast<std::uint32_t*>(shared_storage);
  __shared__ BlockBarrier batch_landed;  // the constructor does not run: init() below
  init_block_barriers(group, &batch_landed, 1);

  const std::size_t batch = batch_elements(blockDim.x);
  const std::size_t batches = (n + batch - 1) / batch;
  // Blocks take batches in turn (a grid-stride loop over batches), so any grid size works.
  for (std::size_t b = blockIdx.x; b < batches; b += gridDim.x) {
    const BatchRange r = batch_range(b, batch, n);
    copy_batch<C>(group, staged, in, r, batch, batch_landed, report_for(report, r, batch));

    // TODO 5: wait until the batch has landed in `staged` (and every thread has issued its
    //         part of the copy): arrive on the barrier and wait for the phase to complete.
    // BEGIN SOLUTION
    batch_landed.arrive_and_wait();
    // END SOLUTION

    compute_batch(staged, out, r, batch, n);

    // TODO 6: the next iteration's copy must not overwrite `staged` while a slower thread
    //         still reads its partner's element: a block-wide sync through the group.
    // BEGIN SOLUTION
    group.sync();
    // END SOLUTION
  }
}

__global__ void __launch_bounds__(kMaxThreads)
    one_stage_words_kernel(const std::uint32_t* __restrict__ in, std::uint32_t* __restrict__ out,
                           std::size_t n, std::uint32_t* report) {
  one_stage<Copy::words>(cg::this_thread_block(), in, out, n, report);
}

__global__ void __launch_bounds__(kMaxThreads)
    one_stage_kernel(const std::uint32_t* __restrict__ in, std::uint32_t* __restrict__ out,
                     std::size_t n, std::uint32_t* report) {
  one_stage<Copy::aligned>(cg::this_thread_block(), in, out, n, report);
}

__global__ void __launch_bounds__(kMaxThreads)
    custom_group_kernel(const std::uint32_t* __restrict__ in, std::uint32_t* __restrict__ out,
                        std::size_t n, std::uint32_t* report) {
  one_stage<Copy::aligned>(OneDimensionalBlock{}, in, out, n, report);
}

__global__ void __launch_bounds__(kMaxThreads)
    two_buffers_kernel(const std::uint32_t* __restrict__ in, std::uint32_t* __restrict__ out,
                       std::size_t n, std::uint32_t* report) {
  one_stage<Copy::two_buffers>(cg::this_thread_block(), in, out, n, report);
}

// ---- A system-scope barrier, copying inside global memory --------------------------------

/// system_scope: the same calls with a cuda::barrier<cuda::thread_scope_system> (a software
/// barrier made of system-scope atomics, not an mbarrier), staging each batch in global
/// memory: in the batch's own elements of `out`. For global -> global CCCL has no
/// asynchronous mechanism, whatever the barrier: memcpy_async copies synchronously (each
/// thread its 16-byte chunks) and returns `none`. The barrier still synchronises the block:
/// its arrive releases and its wait acquires, so after arrive_and_wait every thread sees
/// every other thread's chunks.
__global__ void __launch_bounds__(kMaxThreads)
    system_scope_kernel(const std::uint32_t* __restrict__ in, std::uint32_t* out, std::size_t n,
                        std::uint32_t* report) {
  __shared__ SystemBarrier block_barrier;  // initialised below, by one thread
  const auto block = cg::this_thread_block();
  if (block.thread_rank() == 0) init(&block_barrier, block.size());
  block.sync();

  const std::size_t batch = batch_elements(blockDim.x);
  const std::size_t batches = (n + batch - 1) / batch;
  for (std::size_t b = blockIdx.x; b < batches; b += gridDim.x) {
    const BatchRange r = batch_range(b, batch, n);
    std::uint32_t* staged = out + r.first;  // global memory
    copy_batch<Copy::aligned>(block, staged, in, r, batch, block_barrier,
                              report_for(report, r, batch));
    block_barrier.arrive_and_wait();  // phase 1: every thread's chunks are written and visible

    // The batch is computed in place, so a thread must not store a result over an element
    // that another thread still has to read: results go to registers first.
    std::uint32_t results[kElementsPerThread] = {};
#pragma unroll
    for (int k = 0; k < kElementsPerThread; ++k) {
      const std::size_t i = static_cast<std::size_t>(k) * blockDim.x + threadIdx.x;
      if (i < r.count)
        results[k] = combine(staged[i], staged[partner_index(r.first + i, n) - r.first]);
    }
    block_barrier.arrive_and_wait();  // phase 2: nobody reads this batch any more
#pragma unroll
    for (int k = 0; k < kElementsPerThread; ++k) {
      const std::size_t i = static_cast<std::size_t>(k) * blockDim.x + threadIdx.x;
      if (i < r.count) staged[i] = results[k];
    }
    // The next batch is another range of `out`: no sync needed before copying it.
  }
}

// ---- Multi-stage: one barrier per stage (TODO 7-8) ---------------------------------------

/// multi_stage: `Stages` buffers, each with its own barrier. While the block computes one
/// batch, the next Stages - 1 batches are in flight, so one block per SM can keep the memory
/// system busy (lesson 01's kernel needs other blocks for that).
///
/// Each stage's barrier goes through two kinds of phases, in turn:
///   fill     completes when the stage's copy has landed and every thread has arrived
///            (arrive_and_wait just before computing from it);
///   release  completes when every thread has arrived after computing from the stage
///            (arrive, keep the token, and wait with it only just before the refill).
/// Invariants (they make the kernel race-free and hang-free):
///   1. A refill is issued only after the stage's release phase completed: nobody reads the
///      buffer any more when the copy starts writing it.
///   2. Every thread arrives on a barrier at most once before it waits for that phase, so an
///      arrival never lands in the wrong phase, and a copy issued after a release phase
///      completed counts towards the next fill phase.
///   3. Every thread of the block runs the same iterations and calls every copy: the group
///      calls are uniform and every phase gets all of its arrivals.
/// Between a thread's release arrive (start of iteration j) and its wait (before the
/// refill) lies independent work: waiting for batch j. When that fill phase completes,
/// every thread has also arrived on the release (each arrived there first), so the release
/// wait costs nothing: the barrier's phase tells us the buffer is free.
template <int Stages>
__global__ void __launch_bounds__(kMaxThreads)
    multi_stage_kernel(const std::uint32_t* __restrict__ in, std::uint32_t* __restrict__ out,
                       std::size_t n, std::uint32_t* report) {
  static_assert(kMinStages <= Stages && Stages <= kMaxStages,
                "2..4 stages: with one stage, the refill of iteration j would wait for itself");
  extern __shared__ uint4 shared_storage[];  // Stages buffers of one batch each
  __shared__ BlockBarrier stage_barrier[Stages];
  const auto block = cg::this_thread_block();
  init_block_barriers(block, stage_barrier, Stages);

  const std::size_t batch = batch_elements(blockDim.x);
  const std::size_t batches = (n + batch - 1) / batch;
  // This block's batches in order: local batch j is global batch blockIdx.x + j * gridDim.x
  // and lives in stage j % Stages.
  const std::size_t my_batches =
      blockIdx.x < batches ? (batches - 1 - blockIdx.x) / gridDim.x + 1 : 0;
  const auto range = [&](std::size_t j) {
    return batch_range(blockIdx.x + j * gridDim.x, batch, n);
  };
  const auto buffer = [&](std::size_t j) {
    return reinterpret_cast<std::uint32_t*>(shared_storage) + (j % Stages) * batch;
  };
  const auto fill = [&](std::size_t j) {
    const BatchRange r = range(j);
    copy_batch<Copy::aligned>(block, buffer(j), in, r, batch, stage_barrier[j % Stages],
                              report_for(report, r, batch));
  };

  // Prologue: every stage starts filling.
  for (std::size_t j = 0; j < Stages && j < my_batches; ++j) fill(j);

  for (std::size_t j = 0; j < my_batches; ++j) {
    // TODO 7: this thread is done with local batch j - 1 (computed in the previous
    //         iteration, in stage `previous` = (j - 1) % Stages). For j >= 1, arrive on that
    //         stage's barrier and keep the arrival token in `released`
    //         (a BlockBarrier::arrival_token). Do not wait yet.
    // BEGIN SOLUTION
    const std::size_t previous = (j + Stages - 1) % Stages;
    BlockBarrier::arrival_token released{};
    if (j >= 1) released = stage_barrier[previous].arrive();
    // END SOLUTION

    // Meanwhile: wait for batch j (its fill phase).
    stage_barrier[j % Stages].arrive_and_wait();

    // Refill the stage batch j - 1 used with local batch j - 1 + Stages, if this block has it.
    if (j >= 1 && j - 1 + Stages < my_batches) {
      // TODO 8: only when EVERY thread has released the stage may the copy overwrite it:
      //         wait on the stage's barrier with your token.
      // BEGIN SOLUTION
      stage_barrier[previous].wait(std::move(released));
      // END SOLUTION
      fill(j - 1 + Stages);
    }

    compute_batch(buffer(j), out, range(j), batch, n);
  }
  // The last release phase is never waited for: no copy follows it.
}

// ---- Launchers ---------------------------------------------------------------------------

using KernelFunction = void (*)(const std::uint32_t*, std::uint32_t*, std::size_t, std::uint32_t*);

KernelFunction kernel_function(Kernel kernel, int stages) {
  switch (kernel) {
    case Kernel::one_stage_words:
      return one_stage_words_kernel;
    case Kernel::one_stage:
      return one_stage_kernel;
    case Kernel::custom_group:
      return custom_group_kernel;
    case Kernel::two_buffers:
      return two_buffers_kernel;
    case Kernel::system_scope:
      return system_scope_kernel;
    case Kernel::multi_stage:
      if (stages == 2) return multi_stage_kernel<2>;
      if (stages == 3) return multi_stage_kernel<3>;
      return multi_stage_kernel<4>;
  }
  throw std::invalid_argument("cuda_barrier: unknown kernel");
}

void require(bool condition, const std::string& message) {
  if (!condition) throw std::invalid_argument("cuda_barrier::copy_and_compute: " + message);
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

/// Lets `f` use `shared` bytes of dynamic shared memory (beyond 48 KB a kernel must opt in).
void allow_shared(KernelFunction f, std::size_t shared) {
  COURSE_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(f),
                                    cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(shared)));
}

}  // namespace

const char* contract_name(std::uint32_t value) {
  if (value == static_cast<std::uint32_t>(cuda::async_contract_fulfillment::none)) return "none";
  if (value == static_cast<std::uint32_t>(cuda::async_contract_fulfillment::async)) return "async";
  if (value == kNotCalled) return "not called";
  return "invalid";
}

const char* kernel_name(Kernel kernel) {
  switch (kernel) {
    case Kernel::one_stage_words:
      return "one_stage_words";
    case Kernel::one_stage:
      return "one_stage";
    case Kernel::custom_group:
      return "custom_group";
    case Kernel::two_buffers:
      return "two_buffers";
    case Kernel::system_scope:
      return "system_scope";
    case Kernel::multi_stage:
      return "multi_stage";
  }
  return "unknown";
}

void copy_and_compute(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out,
                      Kernel kernel, LaunchShape shape, cudaStream_t stream,
                      cuda::std::span<std::uint32_t> report) {
  require(in.size() == out.size(),
          "in has " + std::to_string(in.size()) + " elements, out " + std::to_string(out.size()));
  require(shape.threads_per_block >= 32 && shape.threads_per_block <= 1024 &&
              shape.threads_per_block % 32 == 0,
          "threads_per_block must be a multiple of 32 in [32, 1024], got " +
              std::to_string(shape.threads_per_block));
  require(shape.blocks >= 1, "blocks must be >= 1, got " + std::to_string(shape.blocks));
  if (kernel == Kernel::multi_stage) {
    require(shape.stages >= kMinStages && shape.stages <= kMaxStages,
            "multi_stage takes 2..4 stages, got " + std::to_string(shape.stages));
  } else {
    require(shape.stages == 1, std::string(kernel_name(kernel)) + " has one stage, got " +
                                   std::to_string(shape.stages));
  }
  require(aligned16(in.data()) && aligned16(out.data()),
          "the aligned copies and vector accesses need 16-byte aligned arrays");
  require(report.empty() || report.size() >= static_cast<std::size_t>(kReportSlots),
          "a report holds " + std::to_string(kReportSlots) + " elements, got " +
              std::to_string(report.size()));
  if (in.empty()) return;

  const KernelFunction f = kernel_function(kernel, shape.stages);
  const std::size_t shared = shared_bytes(kernel, shape.threads_per_block, shape.stages);
  int device = 0;
  int optin = 0;
  cudaFuncAttributes attributes{};
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  COURSE_CHECK(cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(f)));
  require(shared + attributes.sharedSizeBytes <= static_cast<std::size_t>(optin),
          std::to_string(shape.stages) + " stage(s) of " +
              std::to_string(batch_elements(shape.threads_per_block) * sizeof(std::uint32_t)) +
              " bytes do not fit the " + std::to_string(optin) +
              " bytes of shared memory a block may have");
  allow_shared(f, shared);
  f<<<shape.blocks, shape.threads_per_block, shared, stream>>>(
      in.data(), out.data(), in.size(), report.empty() ? nullptr : report.data());
  COURSE_CHECK_LAUNCH();
}

int max_blocks_per_sm(Kernel kernel, int threads_per_block, int stages) {
  if (kernel == Kernel::multi_stage ? stages < kMinStages || stages > kMaxStages : stages != 1) {
    throw std::invalid_argument("cuda_barrier::max_blocks_per_sm: " + std::to_string(stages) +
                                " stages for " + kernel_name(kernel));
  }
  const KernelFunction f = kernel_function(kernel, stages);
  const std::size_t shared = shared_bytes(kernel, threads_per_block, stages);
  allow_shared(f, shared);  // the occupancy query honours the opt-in
  int blocks = 0;
  COURSE_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, threads_per_block, shared));
  return blocks;
}

}  // namespace cuda_barrier
