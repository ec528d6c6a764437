// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
//
// Lesson 07: producer and consumer warps.
//
// What this file adds over lesson 06: the block-scope cuda::pipeline is *partitioned*. In
// lesson 06 every thread acquired, copied, committed, waited, computed and released (a
// unified pipeline). Here the first warps of the block only produce and the other warps
// only consume. Shapes, for the driver's default (1 producer warp, 8 consumer warps,
// 4 stages of 16 KB):
//
//   block      = 1 producer warp (threads 0-31) + 8 consumer warps (threads 32-287)
//   batch      = 1024 vectors x 16 B = 4096 uint32 = 16 KB      (as in lessons 01 and 06)
//   shared     = 4 stages x 16 KB = 64 KB, plus the pipeline's state: 2 mbarriers per stage
//   producer   = each of its 32 threads issues 1024 / 32 = 32 16-byte cp.async per batch
//   consumers  = each of their 256 threads computes 1024 / 256 = 4 vectors per batch
//
//   producer warp:  acquire s0, copy b0, commit | acquire s1, copy b1, commit | ... s3 ...
//                   | acquire s0 (waits until all 256 consumers released b0), copy b4 ...
//   consumer warps: wait s0 (b0 landed), compute b0, release s0 | wait s1, compute b1 ...
//
// The kernel, producer_consumer_kernel in given/producer_consumer_launch.cu, is written: it makes
// the partitioned pipeline and runs both roles' loops with every producer_acquire,
// producer_commit, consumer_wait and consumer_release. What is left here is *which data*
// moves where: the buffer of a stage, the producers' copy, the consumers' share. So a
// mistake gives wrong values, never a hang.
#include "producer_consumer.cuh"

#include <cuda/pipeline>

#include "course/batches.cuh"

namespace producer_consumer {
namespace {

using course::batches::Batch;

/// The shared buffer that holds the block's k-th batch. The pipeline hands out its stages
/// in order, round and round: the k-th producer_acquire/producer_commit fill stage
/// k % Stages and the k-th consumer_wait/consumer_release drain the same stage.
/// buffers : (Stages, batch_vectors) uint4; the k-th batch is buffers[k % Stages, :].
template <int Stages>
__device__ uint4* stage_buffer(uint4* buffers, std::size_t k, int batch_vectors) {
  // TODO 1: return the buffer of the block's k-th batch, chosen by the same rule on the
  //         producer and the consumer side, so that a consumer reads the buffer of the
  //         stage it waited for. The stages hold Stages batches of batch_vectors uint4
  //         each, one after another.
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
  // TODO 2: afterwards the batch (b.count elements from in + b.first) is on its way into
  //         `buffer`, issued by exactly the threads that call this (the producers, never
  //         the whole block) and bound to `pipe`'s current stage. A full batch must go as
  //         16-byte cp.async (both pointers are 16-byte aligned and its size a multiple of
  //         16: tell the copy so); the last, partial batch must not read past the input.
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

/// This consumer thread's share of every batch. Producer warps come first in the block:
/// threads 0 .. producer_threads - 1 produce, the rest consume.
/// threadIdx.x : (P | C) -> consumer rank in [0, C) for the last C threads.
__device__ ConsumerShare consumer_share(unsigned producer_threads) {
  // TODO 3: number the consumer threads from 0 and count them, so that together they
  //         cover every vector of a batch. Lesson 06 used {threadIdx.x, blockDim.x}
  //         because every thread computed; here the producer threads compute nothing.
  // BEGIN SOLUTION
  return {threadIdx.x - producer_threads, blockDim.x - producer_threads};
  // STARTER: (void)producer_threads;
  // STARTER: return {threadIdx.x, blockDim.x};
  // END SOLUTION
}

}  // namespace
}  // namespace producer_consumer
