// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
//
// Lesson 06: multi-stage pipelines, written twice.
//
// What this file adds over lessons 01-05: a block keeps `Stages` batches of shared memory
// and starts the copies of the next batches *before* it computes the current one, so the
// block overlaps its own copies with its own compute. Shapes, for 256 threads and 4
// vectors per thread (the driver's default; course/batches.cuh):
//
//   batch      = 256 threads x 4 vectors x 4 uint32 = 4096 elements = 16 KB
//   shared     = Stages x 16 KB                     (4 stages: 64 KB, 8 stages: 128 KB)
//   in flight  = up to Stages - 1 batches while one batch is computed
//
//   buffer:      0        1        2        3        (Stages = 4)
//   k = 0:    compute   copy 1   copy 2   copy 3
//   k = 1:    copy 4    compute  copy 2   copy 3     buffer 0 refilled only after every
//   k = 2:    copy 4    copy 5   compute  copy 3     thread finished computing batch 0
//
// 1. pipeline_kernel<Stages>: a block-scope cuda::pipeline. producer_acquire waits until
//    a stage's buffer has been released by every thread, producer_commit closes the
//    stage's copies, consumer_wait waits until every thread's copies of the oldest stage
//    have landed, consumer_release frees it. The pipeline's shared state (two mbarriers
//    per stage) does the bookkeeping; completion travels through mbarriers
//    (cp.async.mbarrier.arrive), not through cp.async.wait_group.
// 2. primitives_kernel<Stages>: the same schedule with __pipeline_memcpy_async,
//    __pipeline_commit and __pipeline_wait_prior. These know nothing about buffers: each
//    thread only counts its own cp.async groups, so a __syncthreads() per batch makes the
//    whole batch visible and also proves that every thread is done with the buffer that
//    gets refilled next. The last, partial batch is zero-filled chunk by chunk.
// 3. one_stage_too_many_kernel<Stages>: DELIBERATELY BROKEN, kept to be caught by racecheck.
#include "pipeline_multi_stage.cuh"

#include <cooperative_groups.h>
#include <cuda_pipeline_primitives.h>
#include <cuda/pipeline>

#include "course/batches.cuh"

// A __shared__ cuda::pipeline_shared_state has no constructor that may run (shared memory
// is not initialised by constructors); make_pipeline() initialises it. Silence the
// warning that a dynamic initialisation is skipped, as the CCCL documentation does.
#pragma nv_diag_suppress static_var_with_dynamic_init

namespace pipeline_multi_stage {
namespace {

namespace cg = cooperative_groups;
using course::batches::Batch;
using course::batches::batch_of_block;
using course::batches::compute_batch;
using course::batches::copy_tail_chunk_zero_fill;

// ---- 1. cuda::pipeline, block scope -------------------------------------------------------

/// Issues the group's copy of one batch into `buffer`, bound to the pipeline's current
/// producer stage. Every thread of the group calls it with the same arguments.
template <class Group>
__device__ void copy_batch(const Group& block, std::uint32_t* buffer, const std::uint32_t* in,
                           Batch b, std::size_t batch,
                           cuda::pipeline<cuda::thread_scope_block>& pipe) {
  // TODO 1: afterwards the batch (b.count elements from in + b.first) is on its way into
  //         `buffer`, issued by the whole group and bound to `pipe`'s current stage, so
  //         that the stage completes only when it has landed. A full batch must go as
  //         16-byte cp.async (both pointers are 16-byte aligned and its size a multiple of
  //         16: tell the copy so); the last, partial batch must not read past the input.
  // BEGIN SOLUTION
  if (b.count == batch) {
    cuda::memcpy_async(block, buffer, in + b.first,
                       cuda::aligned_size_t<16>(batch * sizeof(std::uint32_t)), pipe);
  } else {
    cuda::memcpy_async(block, buffer, in + b.first, b.count * sizeof(std::uint32_t), pipe);
  }
  // STARTER: (void)block; (void)buffer; (void)in; (void)b; (void)batch; (void)pipe;
  // END SOLUTION
}

/// `hold_ns` (both kernels) is for tests only, 0 otherwise: course::batches::hold_back.
template <int Stages>
__global__ void pipeline_kernel(const std::uint32_t* __restrict__ in,
                                std::uint32_t* __restrict__ out, std::size_t n,
                                int vectors_per_thread, unsigned hold_ns) {
  extern __shared__ uint4 shared_storage[];  // Stages batches; uint4: 16-byte aligned
  std::uint32_t* buffers = reinterpret_cast<std::uint32_t*>(shared_storage);  // (Stages, batch)
  const std::size_t batch = batch_elements(blockDim.x, vectors_per_thread);
  const std::size_t mine = batches_of_block(batch_count(n, batch), blockIdx.x, gridDim.x);
  course::batches::poison_shared(buffers, Stages * batch * sizeof(std::uint32_t), hold_ns);

  // Two mbarriers per stage ("produced", "consumed") and a reference count. Every thread
  // of the block must call make_pipeline: thread 0 initialises the state, then the block
  // syncs. Every thread is both producer and consumer (a "unified" pipeline).
  const cg::thread_block block = cg::this_thread_block();
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, Stages> state;
  cuda::pipeline<cuda::thread_scope_block> pipe = cuda::make_pipeline(block, &state);

  std::size_t fetched = 0;  // batches whose copies have been issued (and committed)
  // batch j lives in buffers[j % Stages, :]: a ring of Stages buffers of `batch` elements
  for (std::size_t k = 0; k < mine; ++k) {
    course::batches::hold_back(hold_ns);  // tests only: every warp but one copies late
    // TODO 2: producer side. Afterwards every batch below min(k + Stages, mine) has been
    //         issued (into buffer fetched % Stages) and committed, each in its own stage,
    //         and no stage was refilled before every thread had released it.
    // BEGIN SOLUTION
    for (; fetched < mine && fetched < k + Stages; ++fetched) {
      pipe.producer_acquire();
      copy_batch(block, buffers + (fetched % Stages) * batch, in, batch_of_block(fetched, batch, n),
                 batch, pipe);
      pipe.producer_commit();
    }
    // STARTER: (void)fetched;
    // END SOLUTION

    // TODO 3: consumer side. Afterwards every thread's copies of batch k (the oldest
    //         stage) have landed in shared memory.
    // BEGIN SOLUTION
    pipe.consumer_wait();
    // END SOLUTION

    course::batches::hold_back(hold_ns);  // tests only: every warp but one reads late
    // buffers[k % Stages, :] : (batch), the oldest stage
    compute_batch(buffers + (k % Stages) * batch, out, batch_of_block(k, batch, n), batch, n);

    // TODO 4: this thread is done reading batch k: afterwards its stage may be refilled
    //         once every thread has let go of it.
    // BEGIN SOLUTION
    pipe.consumer_release();
    // END SOLUTION
  }
  // The pipeline's destructor quits it; the last thread out invalidates the mbarriers.
}

// ---- 2. the pipeline primitives -----------------------------------------------------------

/// Starts this thread's copies of the block's batch k into `buffer` (when the block has a
/// batch k) and closes them as one cp.async group.
__device__ void start_batch(uint4* buffer, const std::uint32_t* in, std::size_t k, std::size_t mine,
                            std::size_t batch, std::size_t n, int vectors_per_thread) {
  // TODO 5: afterwards, if k < mine, this thread's 16-byte chunks of batch k (chunk v of
  //         thread t is chunk v * blockDim.x + t) are on their way into `buffer` as
  //         asynchronous copies; in the last, partial batch the chunks past the data are
  //         zero-filled and nothing past the end of the input is read (course/batches.cuh
  //         has the helper for such a chunk). And, batch or no batch, this thread has
  //         closed exactly one more group: every thread must count the same groups, or
  //         __pipeline_wait_prior waits for the wrong batch.
  // BEGIN SOLUTION
  if (k < mine) {
    const Batch b = batch_of_block(k, batch, n);
    const uint4* src = reinterpret_cast<const uint4*>(in + b.first);
    for (int v = 0; v < vectors_per_thread; ++v) {
      const unsigned chunk = v * blockDim.x + threadIdx.x;  // (V, T) -> buffer, src : (V * T)
      if (b.count == batch) {
        __pipeline_memcpy_async(buffer + chunk, src + chunk, sizeof(uint4));
      } else {
        copy_tail_chunk_zero_fill(buffer, src, chunk, b.count);
      }
    }
  }
  __pipeline_commit();
  // STARTER: (void)buffer; (void)in; (void)k; (void)mine; (void)batch; (void)n;
  // STARTER: (void)vectors_per_thread;
  // END SOLUTION
}

/// The primitives schedule, keeping `Ahead` batches in flight in `Stages` buffers.
/// The correct kernel uses Ahead = Stages - 1; the broken one Ahead = Stages.
template <int Stages, int Ahead>
__device__ void primitives_schedule(const std::uint32_t* __restrict__ in,
                                    std::uint32_t* __restrict__ out, std::size_t n,
                                    int vectors_per_thread, unsigned hold_ns) {
  static_assert(Stages >= kMinStages && Stages <= kMaxStages, "2 to 8 stages");
  extern __shared__ uint4 shared_storage[];  // Stages batches of uint4
  const std::size_t batch = batch_elements(blockDim.x, vectors_per_thread);
  const std::size_t vectors_per_batch = batch / 4;
  const std::size_t mine = batches_of_block(batch_count(n, batch), blockIdx.x, gridDim.x);
  // buffer(k) = shared_storage[k % Stages, :] of (Stages, vectors_per_batch) uint4
  auto buffer = [&](std::size_t k) { return shared_storage + (k % Stages) * vectors_per_batch; };
  course::batches::poison_shared(shared_storage, Stages * batch * sizeof(std::uint32_t), hold_ns);

  // Prologue: start the first Ahead batches, one group each (empty when the block has
  // fewer batches: the group count stays the same in every thread).
  for (int k = 0; k < Ahead; ++k) {
    course::batches::hold_back(hold_ns);  // tests only: every warp but one copies late
    start_batch(buffer(k), in, k, mine, batch, n, vectors_per_thread);
  }

  for (std::size_t k = 0; k < mine; ++k) {
    // TODO 6: afterwards batch k is in shared memory and visible to every thread of the
    //         block, and every thread has finished computing batch k - 1, whose buffer is
    //         refilled next. __pipeline_wait_prior(N) lets this thread's N newest groups
    //         stay pending (groups_allowed_pending(Ahead) of them hold later batches), and
    //         it covers this thread's own copies only.
    // BEGIN SOLUTION
    __pipeline_wait_prior(groups_allowed_pending(Ahead));
    __syncthreads();
    // END SOLUTION

    // Refill buffer (k + Ahead) % Stages. With Ahead = Stages - 1 that is the buffer of
    // batch k - 1, which every thread finished reading before it passed the barrier.
    course::batches::hold_back(hold_ns);  // tests only: every warp but one copies late
    start_batch(buffer(k + Ahead), in, k + Ahead, mine, batch, n, vectors_per_thread);

    course::batches::hold_back(hold_ns);  // tests only: every warp but one reads late
    compute_batch(reinterpret_cast<const std::uint32_t*>(buffer(k)), out,
                  batch_of_block(k, batch, n), batch, n);
  }
}

template <int Stages>
__global__ void primitives_kernel(const std::uint32_t* __restrict__ in,
                                  std::uint32_t* __restrict__ out, std::size_t n,
                                  int vectors_per_thread, unsigned hold_ns) {
  primitives_schedule<Stages, batches_ahead(Stages)>(in, out, n, vectors_per_thread, hold_ns);
}

// ---- 3. DELIBERATELY BROKEN: one stage too many -------------------------------------------

/// Prefetches Stages batches with Stages buffers: the refill at step k targets buffer
/// (k + Stages) % Stages == k % Stages, the buffer the block is about to compute from, so
/// a copy overwrites data that other threads are still reading. Nothing stops it: the
/// primitives do not know about buffers (a cuda::pipeline would have blocked in
/// producer_acquire instead). The values are right whenever no block owns more batches
/// than there are stages (the extra copy is never issued), and often right even when it
/// is (the copy may land after the reads): a value check cannot be trusted to catch this.
/// compute-sanitizer --tool racecheck reports it. Never run by default.
template <int Stages>
__global__ void one_stage_too_many_kernel(const std::uint32_t* __restrict__ in,
                                          std::uint32_t* __restrict__ out, std::size_t n,
                                          int vectors_per_thread, unsigned hold_ns) {
  primitives_schedule<Stages, Stages>(in, out, n, vectors_per_thread, hold_ns);
}

}  // namespace
}  // namespace pipeline_multi_stage
