// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
//
// Lesson 05: a single-stage cuda::pipeline, at thread scope and at block scope.
//
// What this file adds over lessons 01-03: the copy of each batch goes through a
// `cuda::pipeline`, the object lesson 06 uses to keep several batches in flight. Its
// protocol has five calls, in this order, for every batch:
//
//   producer_acquire()            wait until the stage's buffer may be overwritten
//   cuda::memcpy_async(..., pipe) start copies, bound to the acquired stage
//   producer_commit()             close the stage: "these are all my copies for it"
//   consumer_wait()               wait until the stage's copies have landed
//   ... compute from the buffer ...
//   consumer_release()            "I no longer read the stage's buffer"
//
// With ONE stage (one buffer) the next batch can only be acquired after this batch was
// released, that is after its compute: copy and compute alternate and never overlap.
// The lesson is about what the two scopes do with the same five calls:
//
// 1. thread_scope_kernel: `cuda::make_pipeline()` makes a pipeline that belongs to one
//    thread. No shared state, nothing to initialise: producer_acquire and consumer_release
//    compile to nothing, producer_commit to `cp.async.commit_group`, consumer_wait to
//    `cp.async.wait_group N` over THIS thread's copies. The compute reads elements that
//    other threads copied, so the block needs __syncthreads() after the wait (and again
//    before the next batch overwrites the buffer): two block barriers per batch, as in
//    lesson 01, but the data no longer passes through registers.
// 2. block_scope_kernel: `cuda::make_pipeline(block, &state)` over a
//    `cuda::pipeline_shared_state<cuda::thread_scope_block, 1>` in shared memory (24 bytes:
//    a "produced" and a "consumed" mbarrier and a reference count). Every thread's
//    producer_commit arrives on "produced", and its copies arrive there too when they land
//    (`cp.async.mbarrier.arrive`); consumer_wait waits for that phase, so it covers every
//    thread's copies. Every thread's consumer_release arrives on "consumed", and the next
//    producer_acquire waits for that phase. The pipeline does both block barriers' jobs.
//
// Shapes, for 256 threads (the driver's default; course/batches.cuh cuts the batches and
// computes a staged one):
//   batch  = 256 threads x 4 vectors x 4 uint32 = 4096 elements = 16 KB of shared memory
//   thread t copies vectors v * 256 + t (v = 0..3): a warp's copies are 512 contiguous bytes
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

/// Starts this thread's copies of batch `b` into `staged`, bound to this thread's pipeline,
/// with the non-group overload `cuda::memcpy_async(dst, src, bytes, pipe)`: every call is
/// one copy by the calling thread alone. Typed `uint4`, the copy is 16-byte aligned by its
/// type (alignof(uint4) == 16), so each call is one 16-byte `cp.async`.
__device__ void copy_my_share(ThreadPipeline& pipe, std::uint32_t* staged, const std::uint32_t* in,
                              Batch b, std::size_t batch) {
  // TODO 1: start this thread's copies of the batch with the NON-group overload,
  //         cuda::memcpy_async(dst, src, bytes, pipe).
  //         A full batch (b.count == batch): kVectorsPerThread uint4 vectors, vector v of
  //         thread t being vector v * blockDim.x + t (the layout compute_batch reads, and a
  //         warp's copies are contiguous), sizeof(uint4) bytes each.
  //         The partial last batch: element by element, elements threadIdx.x,
  //         threadIdx.x + blockDim.x, ... below b.count, sizeof(std::uint32_t) bytes each.
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
  // uint4: the buffer is 16-byte aligned for the 16-byte copies and vector reads.
  extern __shared__ uint4 shared_storage[];
  std::uint32_t* staged = reinterpret_cast<std::uint32_t*>(shared_storage);  // (batch) uint32

  // This thread's own pipeline: a counter of its cp.async groups (2 bytes), no shared
  // state, no initialisation, no block-wide sync.
  ThreadPipeline pipe = cuda::make_pipeline();

  const std::size_t batch = batch_elements(blockDim.x);
  // Tests only (hold_ns > 0, else nothing): course::batches::hold_back.
  course::batches::poison_shared(staged, batch * sizeof(std::uint32_t), hold_ns);
  // Block b owns batches b, b + grid, ... (any grid size works). The count depends only on
  // the block: every thread runs the same iterations and reaches the same __syncthreads().
  const std::size_t mine =
      batches_of_block(course::batches::batch_count(n, batch), blockIdx.x, gridDim.x);
  for (std::size_t k = 0; k < mine; ++k) {
    const Batch b = batch_of_block(k, batch, n);
    course::batches::hold_back(hold_ns);  // tests only: every warp but one copies late

    // TODO 2: the producer side: acquire the stage before copy_my_share() starts this
    //         thread's copies, and commit them after it. At thread scope producer_acquire()
    //         has nothing to wait for (it compiles to nothing) but it keeps the protocol's
    //         shape; producer_commit() closes this thread's copies as one cp.async group.
    // BEGIN SOLUTION
    pipe.producer_acquire();
    copy_my_share(pipe, staged, in, b, batch);
    pipe.producer_commit();
    // STARTER: copy_my_share(pipe, staged, in, b, batch);
    // END SOLUTION

    // TODO 3: the consumer side: wait for this thread's copies (consumer_wait()). That
    //         covers THIS thread's copies only, and compute_batch reads each element's
    //         partner, which another thread copied: then make every thread's copies
    //         visible to the whole block with __syncthreads().
    // BEGIN SOLUTION
    pipe.consumer_wait();
    __syncthreads();
    // END SOLUTION

    course::batches::hold_back(hold_ns);  // tests only: every warp but one reads late
    compute_batch(staged, out, b, batch, n);

    // TODO 4: release the stage (consumer_release(), again nothing at thread scope), and
    //         keep the next iteration's copies from overwriting `staged` while a slower
    //         thread still reads its partner's element: __syncthreads().
    // BEGIN SOLUTION
    pipe.consumer_release();
    __syncthreads();
    // END SOLUTION
  }
}

// ---- 2. A pipeline shared by the block (TODO 5-8) ----------------------------------------

/// Starts the block's copy of batch `b` into `staged`, bound to the block's pipeline, with
/// the group overload `cuda::memcpy_async(group, dst, src, size, pipe)`: every thread of the
/// group calls it with the same arguments and the group shares the work.
template <class Group>
__device__ void copy_batch(const Group& block, BlockPipeline& pipe, std::uint32_t* staged,
                           const std::uint32_t* in, Batch b, std::size_t batch) {
  // TODO 5: copy the batch with the group overload. A full batch is 16 KB from a 16-byte
  //         aligned address: promise it with cuda::aligned_size_t<16>(bytes), which selects
  //         16-byte cp.async. The partial last batch may not be a multiple of 16 bytes:
  //         give its exact byte count (b.count * sizeof(std::uint32_t)): 4-byte cp.async.
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
  extern __shared__ uint4 shared_storage[];
  std::uint32_t* staged = reinterpret_cast<std::uint32_t*>(shared_storage);  // (batch) uint32

  // One stage of shared state: a "produced" and a "consumed" mbarrier and a reference
  // count (24 bytes). Every thread must call make_pipeline(): thread 0 initialises both
  // barriers to expect block.size() arrivals, then the block syncs. Every thread is both a
  // producer and a consumer (a "unified" pipeline).
  const cg::thread_block block = cg::this_thread_block();
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, kStages> state;
  BlockPipeline pipe = cuda::make_pipeline(block, &state);

  const std::size_t batch = batch_elements(blockDim.x);
  course::batches::poison_shared(staged, batch * sizeof(std::uint32_t), hold_ns);  // tests only
  // As above: the loop depends only on the block, so every thread acquires, commits, waits
  // and releases the same number of times. The stage barriers count threads: one thread
  // short, and everybody waits for ever.
  const std::size_t mine =
      batches_of_block(course::batches::batch_count(n, batch), blockIdx.x, gridDim.x);
  for (std::size_t k = 0; k < mine; ++k) {
    const Batch b = batch_of_block(k, batch, n);
    course::batches::hold_back(hold_ns);  // tests only: every warp but one copies late

    // TODO 6: the producer side: producer_acquire() before copy_batch() (with one stage it
    //         waits until EVERY thread released the previous batch), producer_commit()
    //         after it. Do TODOs 6, 7 and 8 together: an acquire with no release before it
    //         waits for ever once a block has a second batch.
    // BEGIN SOLUTION
    pipe.producer_acquire();
    copy_batch(block, pipe, staged, in, b, batch);
    pipe.producer_commit();
    // STARTER: copy_batch(block, pipe, staged, in, b, batch);
    // END SOLUTION

    // TODO 7: the consumer side: consumer_wait() until every thread's copies of the stage
    //         have landed. No __syncthreads(): the stage barrier counted every thread.
    // BEGIN SOLUTION
    pipe.consumer_wait();
    // END SOLUTION

    course::batches::hold_back(hold_ns);  // tests only: every warp but one reads late
    compute_batch(staged, out, b, batch, n);

    // TODO 8: this thread no longer reads `staged`: consumer_release(). The next
    //         producer_acquire() returns once every thread has released it.
    // BEGIN SOLUTION
    pipe.consumer_release();
    // END SOLUTION
  }
  // The pipeline's destructor quits it; the last thread to quit invalidates the mbarriers.
}

}  // namespace
}  // namespace pipeline_single_stage
