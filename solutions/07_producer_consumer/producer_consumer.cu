// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
//
// Lesson 07: producer and consumer warps.
//
// What this file adds over lesson 06: the block-scope cuda::pipeline is *partitioned*. In
// lesson 06 every thread did every step of every batch (a unified pipeline). Here the block
// splits by whole warps into two roles: the producer warps only move batches into shared
// memory, the consumer warps only compute them, and the pipeline's stages are how the two
// roles hand batches to each other. Shapes, for the driver's default (1 producer warp,
// 8 consumer warps, 4 stages of 16 KB):
//
//   block      = 1 producer warp (threads 0-31) + 8 consumer warps (threads 32-287)
//   batch      = 1024 vectors x 16 B = 4096 uint32 = 16 KB      (as in lessons 01 and 06)
//   shared     = 4 stages x 16 KB = 64 KB, plus the pipeline's state: 2 mbarriers per stage
//   producer   = its 32 threads share the copy of every batch: 1024 / 32 = 32 vectors each
//   consumers  = their 256 threads share the compute of every batch: 1024 / 256 = 4 each
//
//   producer warp:  fill s0 with b0 | fill s1 with b1 | ... s3 ... | s0 again, once every
//                   consumer has released b0: fill it with b4 | ...
//   consumer warps: b0 in s0 has landed: compute it, release s0 | b1 in s1 ...
//
// The kernel, producer_consumer_kernel in given/producer_consumer_launch.cu, is written: it
// makes the partitioned pipeline and runs both roles' loops, every hand-off included. What
// is left here is *which data* moves where: the buffer of a stage, the producers' copy, the
// consumers' share. So a mistake gives wrong values, never a hang.
#include "producer_consumer.cuh"

#include <cuda/pipeline>

#include "course/batches.cuh"

namespace producer_consumer {
namespace {

using course::batches::Batch;

/// The shared buffer that holds the block's k-th batch (k counts the block's batches from 0,
/// on both sides), the buffer of the stage the pipeline hands out for it.
/// buffers : (Stages, batch_vectors) uint4, one stage's batch after another.
template <int Stages>
__device__ uint4* stage_buffer(uint4* buffers, std::size_t k, int batch_vectors) {
  // TODO 1: return the first vector of the buffer that holds the block's k-th batch: the
  //         buffer of the stage the pipeline pairs with the k-th hand-off on either side,
  //         so that a consumer reads exactly what the producers filled for that stage.
  //         One line; no index may overflow for a large k or a large batch.
  // BEGIN SOLUTION
  return buffers + (k % Stages) * static_cast<std::size_t>(batch_vectors);
  // STARTER: (void)k; (void)batch_vectors;
  // STARTER: return buffers;
  // END SOLUTION
}

/// The producer warps' copy of one batch into `buffer`, bound to the pipeline's current
/// producer stage. Every producer thread calls it with the same arguments.
__device__ void copy_batch(const ProducerWarps& producers, uint4* buffer, const std::uint32_t* in,
                           Batch b, std::size_t batch,
                           cuda::pipeline<cuda::thread_scope_block>& pipe) {
  // TODO 2: afterwards the elements of batch `b` are on their way from the input into
  //         `buffer`, in order, shared out among exactly the threads that call this (the
  //         producers; a consumer never makes the call) and tied to `pipe`'s current stage,
  //         so that the stage completes only once they have landed. A full batch must move
  //         in 16-byte pieces: both ends are 16-byte aligned and its size is a multiple of
  //         16, and the copy can only use that if it is told. The last batch may be
  //         partial: not one byte past the input's end, and no promise that does not hold.
  // BEGIN SOLUTION
  std::uint32_t* dst = reinterpret_cast<std::uint32_t*>(buffer);  // dst[i] <- in[b.first + i]
  if (b.count == batch) {
    cuda::memcpy_async(producers, dst, in + b.first,
                       cuda::aligned_size_t<16>(batch * sizeof(std::uint32_t)), pipe);
  } else {
    cuda::memcpy_async(producers, dst, in + b.first, b.count * sizeof(std::uint32_t), pipe);
  }
  // STARTER: (void)producers; (void)buffer; (void)in; (void)b; (void)batch; (void)pipe;
  // END SOLUTION
}

/// This consumer thread's share of every batch: compute_batch deals a batch's vectors out
/// by {rank, count}. Producer warps come first in the block, then the consumer warps.
/// threadIdx.x : (P | C) -> consumer rank in [0, C) for the last C threads.
__device__ ConsumerShare consumer_share(unsigned producer_threads) {
  // TODO 3: give the consumer threads the ranks 0, 1, 2, ... in block order and the
  //         number of them, so that together they compute every vector of a batch exactly
  //         once. The producer threads never ask: they compute nothing. One line.
  // BEGIN SOLUTION
  return {threadIdx.x - producer_threads, blockDim.x - producer_threads};
  // STARTER: (void)producer_threads;
  // STARTER: return {threadIdx.x, blockDim.x};
  // END SOLUTION
}

}  // namespace
}  // namespace producer_consumer
