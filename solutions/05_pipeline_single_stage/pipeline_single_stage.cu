// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
//
// Lesson 05: a single-stage cuda::pipeline, at thread scope and at block scope.
//
// Both kernels stage each batch in one shared buffer, as lessons 01 and 03 did, but now the
// copies and the waits for them go through a `cuda::pipeline`: the object lesson 06 uses to
// keep several batches in flight. Here it has ONE stage, that is one buffer. A batch can be
// copied in only once every thread is done with the batch before it, so inside a block copy
// and compute alternate and never overlap; only the other blocks on the SM hide the waits.
// The lesson measures what the pipeline's bookkeeping costs when nothing overlaps.
//
// The two kernels run the same protocol, with pipelines of a different scope, and the scope
// decides whom each step of the protocol counts:
//
// 1. thread_scope_kernel: every thread owns a pipeline of its own, in registers. It counts
//    that thread's copies and nobody else's. But a batch is a block's work: the compute step
//    reads elements that other threads copied, and the next batch overwrites elements that
//    other threads may still be reading. What the pipeline does not cover, the kernel must.
// 2. block_scope_kernel: one pipeline shared by the whole block, its state in shared memory.
//    Each of its steps counts every thread of the block, so it covers what the thread-scope
//    kernel has to add, and in return every thread must take part in every step.
//
// The README's concept section ("The protocol: five calls per batch") teaches the calls and
// what each one does at each scope; read it before the TODOs.
//
// Shapes, for 256 threads (the driver's default; course/batches.cuh cuts the batches and
// computes a staged one):
//   batch  = 256 threads x 4 vectors x 4 uint32 = 4096 elements = 16 KB of shared memory
#include "pipeline_single_stage.cuh"

#include <cooperative_groups.h>
#include <cuda/pipeline>

#include "course/batches.cuh"

// A __shared__ cuda::pipeline_shared_state is never constructed (shared memory has no
// constructors); make_pipeline() initialises it. The front end warns that the dynamic
// initialisation is skipped (warning 20054, an error under -Werror); CCCL's documentation
// silences it the same way.
#pragma nv_diag_suppress static_var_with_dynamic_init

namespace pipeline_single_stage {
namespace {

namespace cg = cooperative_groups;
using course::batches::Batch;
using course::batches::batch_of_block;
using course::batches::batches_of_block;
using course::batches::compute_batch;

using ThreadPipeline = cuda::pipeline<cuda::thread_scope_thread>;
using BlockPipeline = cuda::pipeline<cuda::thread_scope_block>;

// ---- 1. A pipeline per thread (TODO 1-4) -------------------------------------------------

/// Starts the calling thread's share of the asynchronous copies of batch `b` (the `b.count`
/// input elements that `b` describes) into `staged`, each copy bound to this thread's
/// pipeline `pipe`. Every thread of the block calls it; the batch is complete in `staged`
/// once every thread's share has arrived. Returns without waiting for anything.
__device__ void copy_my_share(ThreadPipeline& pipe, std::uint32_t* staged, const std::uint32_t* in,
                              Batch b, std::size_t batch) {
  // TODO 1: start this thread's share of the batch's copies, every copy bound to `pipe` and
  //         made by this thread alone. Once every thread's share has arrived, `staged`
  //         holds the batch's b.count input elements in order (its first element at the
  //         start of `staged`), and nothing else of `staged` was written. The data goes from
  //         global to shared memory without passing through registers.
  //         A full batch (b.count == batch): this thread copies kVectorsPerThread 16-byte
  //         vectors, one copy each, and each copy must be a single 16-byte transfer (the
  //         compiler has to know that both ends are 16-byte aligned); the threads' shares
  //         cover the batch exactly once, and the 32 threads of a warp copy 32 neighbouring
  //         vectors. The partial last batch: one 4-byte element per copy, the block's threads
  //         sharing its b.count elements; no copy reads past them.
  // BEGIN SOLUTION
  const std::uint32_t* src = in + b.first;
  if (b.count == batch) {
    const uint4* src4 = reinterpret_cast<const uint4*>(src);
    uint4* staged4 = reinterpret_cast<uint4*>(staged);
#pragma unroll
    for (int v = 0; v < kVectorsPerThread; ++v) {
      const unsigned vector = v * blockDim.x + threadIdx.x;  // (V, T) -> src4, staged4 : (V * T)
      cuda::memcpy_async(staged4 + vector, src4 + vector, sizeof(uint4), pipe);
    }
  } else {
    for (std::size_t i = threadIdx.x; i < b.count; i += blockDim.x) {  // i = t + j * T < count
      cuda::memcpy_async(staged + i, src + i, sizeof(std::uint32_t), pipe);
    }
  }
  // STARTER: (void)pipe; (void)staged; (void)in; (void)b; (void)batch;
  // END SOLUTION
}

__global__ void __launch_bounds__(kMaxThreads)
    thread_scope_kernel(const std::uint32_t* __restrict__ in, std::uint32_t* __restrict__ out,
                        std::size_t n, unsigned hold_ns) {
  const course::batches::TestHooks hooks{hold_ns};  // nothing outside the tests
  // uint4: the buffer is 16-byte aligned for the 16-byte copies and vector reads.
  extern __shared__ uint4 shared_storage[];
  std::uint32_t* staged = reinterpret_cast<std::uint32_t*>(shared_storage);  // (batch) uint32

  // This thread's own pipeline (2 bytes, in registers): no shared state, nothing to
  // initialise, and it knows nothing of the other threads.
  ThreadPipeline pipe = cuda::make_pipeline();

  const std::size_t batch = batch_elements(blockDim.x);
  hooks.poison(staged, batch * sizeof(std::uint32_t));
  // Block b owns batches b, b + grid, ... (any grid size works). The count depends only on
  // the block: every thread runs the same iterations, so whatever in the loop waits for the
  // whole block is reached by every thread.
  const std::size_t mine =
      batches_of_block(course::batches::batch_count(n, batch), blockIdx.x, gridDim.x);
  for (std::size_t k = 0; k < mine; ++k) {
    const Batch b = batch_of_block(k, batch, n);
    hooks.before_copy();

    // TODO 2: the producer side of the stage. Before the call below starts this thread's
    //         copies of batch b, the stage is claimed for them; after it, they are closed off
    //         as this stage's copies, so that a later wait covers exactly them. Every thread
    //         takes both steps in every iteration (here they wait for nobody else).
    // BEGIN SOLUTION
    pipe.producer_acquire();
    copy_my_share(pipe, staged, in, b, batch);
    pipe.producer_commit();
    // STARTER: copy_my_share(pipe, staged, in, b, batch);
    // END SOLUTION

    // TODO 3 (bug hunt): this region is written and holds one bug. `./course check` fails
    //         in the PTX tests of this kernel (ThreadScopeComputeSeesEveryThreadsCopies
    //         among them), and racecheck (the README's "How to check") reports a shared-memory
    //         hazard between a copy into `staged` and compute_batch's read of it: a thread
    //         reads an element that another thread copied. The value tests may well pass: in
    //         this workload that other thread is in the reader's own warp. Contract of the
    //         fix: when the region is done, the copies of EVERY thread of the block, not only
    //         this thread's, have arrived and are visible to every thread. At most one line
    //         changes or is added.
    // BEGIN SOLUTION
    pipe.consumer_wait();
    __syncthreads();
    // STARTER: pipe.consumer_wait();
    // END SOLUTION

    hooks.before_read();
    compute_batch(staged, out, b, batch, n);

    // TODO 4: this thread has finished reading the stage: give it back to the pipeline.
    //         When the region is done, no thread of the block still reads `staged`, so the
    //         next iteration's copies may overwrite it (a slower thread may still be reading
    //         an element that this thread will copy next).
    // BEGIN SOLUTION
    pipe.consumer_release();
    __syncthreads();
    // END SOLUTION
  }
}

// ---- 2. A pipeline shared by the block (TODO 5-8) ----------------------------------------

/// Starts the block's asynchronous copy of batch `b` (the `b.count` input elements that `b`
/// describes) into `staged`, bound to the block's pipeline `pipe`. Every thread of
/// `block` calls it with the same arguments, and together they copy the batch once.
/// Returns without waiting for anything.
template <class Group>
__device__ void copy_batch(const Group& block, BlockPipeline& pipe, std::uint32_t* staged,
                           const std::uint32_t* in, Batch b, std::size_t batch) {
  // TODO 5: start the block's copy of the batch, bound to `pipe`: one copy that the whole
  //         block makes together (not one per thread, not a loop), after which `staged`
  //         holds the batch's b.count input elements in order. A full batch is 16 KB
  //         between 16-byte aligned addresses: tell the copy so, so that it moves 16 bytes
  //         per transfer. The partial last batch need not be a multiple of 16 bytes: its copy
  //         moves exactly its b.count elements and reads nothing past them.
  // BEGIN SOLUTION
  const std::uint32_t* src = in + b.first;  // src[i] = in[b.first + i] : (b.count)
  if (b.count == batch) {
    cuda::memcpy_async(block, staged, src, cuda::aligned_size_t<16>(batch * sizeof(std::uint32_t)),
                       pipe);
  } else {
    cuda::memcpy_async(block, staged, src, b.count * sizeof(std::uint32_t), pipe);
  }
  // STARTER: (void)block; (void)pipe; (void)staged; (void)in; (void)b; (void)batch;
  // END SOLUTION
}

__global__ void __launch_bounds__(kMaxThreads)
    block_scope_kernel(const std::uint32_t* __restrict__ in, std::uint32_t* __restrict__ out,
                       std::size_t n, unsigned hold_ns) {
  const course::batches::TestHooks hooks{hold_ns};  // nothing outside the tests
  extern __shared__ uint4 shared_storage[];
  std::uint32_t* staged = reinterpret_cast<std::uint32_t*>(shared_storage);  // (batch) uint32

  // One stage of shared state: two mbarriers and a reference count (24 bytes). Every
  // thread must call make_pipeline(): thread 0 initialises the state to expect
  // block.size() threads, then the block syncs. Every thread is both a producer and a
  // consumer (a "unified" pipeline).
  const cg::thread_block block = cg::this_thread_block();
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, kStages> state;
  BlockPipeline pipe = cuda::make_pipeline(block, &state);

  const std::size_t batch = batch_elements(blockDim.x);
  hooks.poison(staged, batch * sizeof(std::uint32_t));
  // As above: the loop depends only on the block, so every thread runs every iteration.
  // The stage's barriers count threads: one thread that skips a step of the protocol, and
  // everybody waits for ever.
  const std::size_t mine =
      batches_of_block(course::batches::batch_count(n, batch), blockIdx.x, gridDim.x);
  for (std::size_t k = 0; k < mine; ++k) {
    const Batch b = batch_of_block(k, batch, n);
    hooks.before_copy();

    // TODO 6: the producer side of the stage, at block scope. Before the call below starts
    //         the block's copy of batch b, the stage is claimed (with one stage, that returns
    //         only once every thread has given the previous batch back); after it, this
    //         thread's part of the copy is closed off as this stage's. Do TODOs 6, 7 and 8
    //         together: a claim with no give-back before it waits for ever once a block has a
    //         second batch.
    // BEGIN SOLUTION
    pipe.producer_acquire();
    copy_batch(block, pipe, staged, in, b, batch);
    pipe.producer_commit();
    // STARTER: copy_batch(block, pipe, staged, in, b, batch);
    // END SOLUTION

    // TODO 7: the consumer side: when the region is done, the copies of every thread of
    //         the block into this stage have arrived and are visible to this thread. One
    //         line, and no block-wide barrier: the stage's shared state counts every thread.
    // BEGIN SOLUTION
    pipe.consumer_wait();
    // END SOLUTION

    hooks.before_read();
    compute_batch(staged, out, b, batch, n);

    // TODO 8: this thread no longer reads `staged`: when the region is done it has given
    //         the stage back, and the next claim of the stage (TODO 6) returns once every
    //         thread of the block has. One line, and no block-wide barrier.
    // BEGIN SOLUTION
    pipe.consumer_release();
    // END SOLUTION
  }
  // The pipeline's destructor quits it; the last thread to quit invalidates the mbarriers.
}

}  // namespace
}  // namespace pipeline_single_stage
