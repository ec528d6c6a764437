// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
//
// Lesson 06: multi-stage pipelines, written twice.
//
// The idea: one block alone can keep the memory system busy if it never waits for the batch
// it is about to compute with nothing else on the way. It keeps a ring of `Stages` batch
// buffers in shared memory and starts the copies of the next batches *before* it computes
// the current one, so that its own copies overlap its own compute. Shapes, for 256 threads
// and 4 vectors per thread (the driver's default; course/batches.cuh):
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
// Two rules keep the ring correct: a batch is read only once every thread's part of it has
// arrived, and a buffer is refilled only once every thread has finished reading it. The
// two kernels differ in who keeps them (the README's concept section compares them):
// 1. pipeline_kernel<Stages>: a block-scope cuda::pipeline, whose shared state counts the
//    stages for the whole block, so both rules are kept by the pipeline's own waits.
// 2. primitives_kernel<Stages>: the same schedule with the pipeline primitives, which know
//    nothing about buffers or other threads: each thread only counts its own groups of
//    copies, and proving both rules for the block is up to you. The last, partial batch is
//    zero-filled chunk by chunk.
// (given/pipeline_multi_stage_launch.cu runs your primitives schedule one batch too far
// ahead, DELIBERATELY BROKEN, for racecheck to catch.)
#include "pipeline_multi_stage.cuh"

#include <cooperative_groups.h>
#include <cuda_pipeline_primitives.h>
#include <cuda/pipeline>

#include "course/batches.cuh"
#include "stages_in_flight.cuh"  // tests only: given/stages_in_flight.cuh

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
using stages_in_flight::note_short_prefetch;

// ---- 1. cuda::pipeline, block scope -------------------------------------------------------

/// Starts the group's copy of batch `b` of the input into `buffer`, as part of the stage the
/// producer side is filling. Every thread of the group calls it with the same arguments.
template <class Group>
__device__ void copy_batch(const Group& block, std::uint32_t* buffer, const std::uint32_t* in,
                           Batch b, std::size_t batch,
                           cuda::pipeline<cuda::thread_scope_block>& pipe) {
  // TODO 1: afterwards the valid elements of batch `b` are on their way from the input
  //         into `buffer`: one copy shared by the whole group, part of the pipeline's stage
  //         being filled, so that the stage completes only once they have arrived. A full
  //         batch must become 16-byte, L1-bypassing copies, which the copy may only choose
  //         when it is promised an alignment that holds for a full batch alone; the last,
  //         partial batch copies exactly its valid elements and reads nothing past the input.
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

/// `hold_ns` (both kernels) is for tests only, 0 otherwise: course::batches::TestHooks.
template <int Stages>
__global__ void pipeline_kernel(const std::uint32_t* __restrict__ in,
                                std::uint32_t* __restrict__ out, std::size_t n,
                                int vectors_per_thread, unsigned hold_ns) {
  const course::batches::TestHooks hooks{hold_ns};  // nothing outside the tests
  extern __shared__ uint4 shared_storage[];  // Stages batches; uint4: 16-byte aligned
  std::uint32_t* buffers = reinterpret_cast<std::uint32_t*>(shared_storage);  // (Stages, batch)
  const std::size_t batch = batch_elements(blockDim.x, vectors_per_thread);
  const std::size_t mine = batches_of_block(batch_count(n, batch), blockIdx.x, gridDim.x);
  hooks.poison(buffers, Stages * batch * sizeof(std::uint32_t));

  // Two mbarriers per stage ("produced", "consumed") and a reference count. Every thread
  // of the block must call make_pipeline: thread 0 initialises the state, then the block
  // syncs. Every thread is both producer and consumer (a "unified" pipeline).
  const cg::thread_block block = cg::this_thread_block();
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, Stages> state;
  cuda::pipeline<cuda::thread_scope_block> pipe = cuda::make_pipeline(block, &state);

  std::size_t fetched = 0;  // batches of this block issued (and committed) so far, in order
  // batch j lives in buffers[j % Stages, :]: a ring of Stages buffers of `batch` elements
  for (std::size_t k = 0; k < mine; ++k) {
    hooks.before_copy();
    // TODO 2: producer side. Afterwards the pipeline is full: it holds batch k and the
    //         batches after it, one per stage, in as many stages as it has, or the block has
    //         issued all of its batches. Only the missing ones are issued here (those of
    //         earlier steps stay in flight), each into its own buffer of the ring and closed
    //         as its own stage, and `fetched` still counts every batch issued (the test
    //         programs read it right after this region). No buffer is refilled before every
    //         thread has let go of the batch it held.
    // BEGIN SOLUTION
    for (; fetched < mine && fetched < k + Stages; ++fetched) {
      pipe.producer_acquire();
      copy_batch(block, buffers + (fetched % Stages) * batch, in, batch_of_block(fetched, batch, n),
                 batch, pipe);
      pipe.producer_commit();
    }
    // STARTER: (void)fetched;
    // END SOLUTION
    note_short_prefetch(fetched, k, mine, Stages);  // tests only: given/stages_in_flight.cuh

    // TODO 3: consumer side. Afterwards batch k, the oldest stage, is in shared memory:
    //         the copies of every thread of the block have arrived, not only this thread's,
    //         since the compute reads elements other threads copied. One line.
    // BEGIN SOLUTION
    pipe.consumer_wait();
    // END SOLUTION

    hooks.before_read();
    // buffers[k % Stages, :] : (batch), the oldest stage
    compute_batch(buffers + (k % Stages) * batch, out, batch_of_block(k, batch, n), batch, n);

    // TODO 4: this thread is done reading batch k. Afterwards it has let go of batch k's
    //         stage, so that the producer side may refill it once every thread has; this
    //         thread does not wait for the others here. One line.
    // BEGIN SOLUTION
    pipe.consumer_release();
    // END SOLUTION
  }
  // The pipeline's destructor quits it; the last thread out invalidates the mbarriers.
}

// ---- 2. the pipeline primitives -----------------------------------------------------------

/// Starts this thread's share of the block's batch k into `buffer` (when the block has a
/// batch k) and closes this step's group of copies.
__device__ void start_batch(uint4* buffer, const std::uint32_t* in, std::size_t k, std::size_t mine,
                            std::size_t batch, std::size_t n, int vectors_per_thread) {
  // TODO 5: afterwards, if the block has a batch k, this thread's share of its 16-byte
  //         chunks is on its way into `buffer` as asynchronous copies: the threads split
  //         the chunks so that each is copied once and a warp's lanes take neighbouring
  //         chunks (coalesced), in the layout of course/batches.cuh. In the last, partial
  //         batch every byte past the data is written as zero and nothing past the end of
  //         the input is read (memcheck counts a 16-byte read of the last chunk). And,
  //         batch or no batch, this thread has closed exactly one more group of copies:
  //         every thread must count the same groups, or the wait of TODO 6 waits for the
  //         wrong batch.
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
/// The correct kernel uses Ahead = Stages - 1; the broken one (given) Ahead = Stages.
template <int Stages, int Ahead>
__device__ void primitives_schedule(const std::uint32_t* __restrict__ in,
                                    std::uint32_t* __restrict__ out, std::size_t n,
                                    int vectors_per_thread, unsigned hold_ns) {
  const course::batches::TestHooks hooks{hold_ns};  // nothing outside the tests
  static_assert(Stages >= kMinStages && Stages <= kMaxStages, "2 to 8 stages");
  extern __shared__ uint4 shared_storage[];  // Stages batches of uint4
  const std::size_t batch = batch_elements(blockDim.x, vectors_per_thread);
  const std::size_t vectors_per_batch = batch / 4;
  const std::size_t mine = batches_of_block(batch_count(n, batch), blockIdx.x, gridDim.x);
  // buffer(k) = shared_storage[k % Stages, :] of (Stages, vectors_per_batch) uint4
  auto buffer = [&](std::size_t k) { return shared_storage + (k % Stages) * vectors_per_batch; };
  hooks.poison(shared_storage, Stages * batch * sizeof(std::uint32_t));

  // Prologue: start the first Ahead batches, one group each (empty when the block has
  // fewer batches: the group count stays the same in every thread).
  for (int k = 0; k < Ahead; ++k) {
    hooks.before_copy();
    start_batch(buffer(k), in, k, mine, batch, n, vectors_per_thread);
  }

  for (std::size_t k = 0; k < mine; ++k) {
    // TODO 6: afterwards batch k is in shared memory and visible to every thread of the
    //         block, and every thread has finished computing batch k - 1, whose buffer is
    //         refilled next. The copies of the later batches this thread has started stay
    //         in flight: wait for no more than batch k needs (the PTX test checks it). At
    //         most 2 lines.
    // BEGIN SOLUTION
    __pipeline_wait_prior(groups_allowed_pending(Ahead));
    __syncthreads();
    // END SOLUTION

    // Refill buffer (k + Ahead) % Stages. With Ahead = Stages - 1 that is the buffer of
    // batch k - 1, which every thread has finished reading once TODO 6's contract holds.
    hooks.before_copy();
    start_batch(buffer(k + Ahead), in, k + Ahead, mine, batch, n, vectors_per_thread);

    hooks.before_read();
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

}  // namespace
}  // namespace pipeline_multi_stage
