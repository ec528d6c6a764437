/// \file producer_consumer.cuh
/// \brief Lesson 07: a partitioned cuda::pipeline, with producer warps and consumer warps.
///
/// The API the driver (main.cu) and the tests call. The student's helpers live in
/// producer_consumer.cu (the starter in lessons/, the complete version in solutions/); the
/// kernel and the launchers in producer_consumer_launch.cu (read-only).
///
/// Lesson 06's block-scope pipeline is *unified*: every thread copies, waits, computes and
/// releases. Here the block is *partitioned* by warps: the first `producer_warps` warps
/// only copy (producer_acquire, cuda::memcpy_async, producer_commit) and the other
/// `consumer_warps` warps only compute (consumer_wait, compute, consumer_release). The
/// pipeline's stage barriers count the two sides separately: "produced" expects the
/// producer threads, "consumed" the consumer threads. This is warp specialisation, the
/// pattern Hopper kernels use with a TMA producer warp.
#pragma once

#include <cuda_runtime.h>
#include <cuda/pipeline>
#include <cuda/std/span>

#include <cstddef>
#include <cstdint>
#include <string>

#include "course/batches.cuh"
#include "course/launch.h"
#include "pipeline_multi_stage.cuh"

namespace producer_consumer {

/// Batches are dealt to blocks exactly as in lesson 06: block b owns b, b + grid, ...
using pipeline_multi_stage::batch_count;
using pipeline_multi_stage::batches_of_block;

/// How the block tells `cuda::make_pipeline` who produces. Both give the same stage
/// barriers (produced: one arrival per producer thread; consumed: one per consumer thread);
/// they differ in who counts the producers.
enum class Partition {
  /// `make_pipeline(block, &state, pipeline_role)`: every thread passes its own role and the
  /// pipeline counts the producers itself (one `__match_any_sync` and one shared atomic per
  /// producer warp, and three block syncs instead of one).
  role,
  /// `make_pipeline(block, &state, producer_count)`: the kernel passes the number of
  /// producer threads and must make exactly that many threads produce.
  producer_count,
};

/// "role" or "producer-count".
inline const char* name(Partition partition) {
  switch (partition) {
    case Partition::role:
      return "role";
    case Partition::producer_count:
      return "producer-count";
  }
  return "?";
}

inline constexpr int kWarpSize = 32;
/// Stage counts the kernel is compiled for (`pipeline_shared_state<scope, uint8_t Stages>`
/// takes the count as a template argument): the same range as lesson 06.
inline constexpr int kMinStages = pipeline_multi_stage::kMinStages;
inline constexpr int kMaxStages = pipeline_multi_stage::kMaxStages;
/// A block has at most 1024 threads: producer warps + consumer warps <= 32.
inline constexpr int kMaxWarps = 1024 / kWarpSize;
/// 16-byte vectors of one batch by default: 1024 x 16 B = 16 KB, lesson 01's coarse batch
/// and lesson 06's default (256 threads x 4 vectors).
inline constexpr int kDefaultBatchVectors = 1024;
/// The largest batch the launcher accepts: 4096 vectors = 64 KB.
inline constexpr int kMaxBatchVectors = 4096;
static_assert(kDefaultBatchVectors % 8 == 0 && kMaxBatchVectors % 8 == 0,
              "a batch must be a multiple of 8 vectors (32 elements), or a partner leaves its "
              "batch and the consumers read an element nobody staged");
static_assert(kDefaultBatchVectors <= kMaxBatchVectors,
              "the default batch must be one the launcher accepts");

/// What one launch does. The block has (producer_warps + consumer_warps) x 32 threads;
/// the batch size does not depend on them, so 1 producer + 4 consumers and 1 producer +
/// 8 consumers move the same 16 KB batches as lesson 06's 256-thread unified pipeline.
struct Config {
  Partition partition = Partition::role;
  int stages = 4;
  int producer_warps = 1;
  int consumer_warps = 8;
  int batch_vectors = kDefaultBatchVectors;  ///< 16-byte vectors per batch (multiple of 8)
};

/// Threads of one block: producer warps first, then consumer warps.
__host__ __device__ constexpr int threads_per_block(const Config& config) {
  return (config.producer_warps + config.consumer_warps) * kWarpSize;
}

/// Threads that copy, and threads that compute.
__host__ __device__ constexpr int producer_threads(const Config& config) {
  return config.producer_warps * kWarpSize;
}
__host__ __device__ constexpr int consumer_threads(const Config& config) {
  return config.consumer_warps * kWarpSize;
}

/// Elements of one batch: batch_vectors x 4 uint32 (1024 vectors: 4096 elements, 16 KB).
/// batch_vectors is a multiple of 8, so a batch holds whole 32-element groups and a
/// partner never leaves its batch.
__host__ __device__ constexpr std::size_t batch_elements(const Config& config) {
  return static_cast<std::size_t>(config.batch_vectors) * 4;
}

/// Bytes of one batch, and of the block's dynamic shared memory: `stages` batches.
__host__ __device__ constexpr std::size_t batch_bytes(const Config& config) {
  return batch_elements(config) * sizeof(std::uint32_t);
}
__host__ __device__ constexpr std::size_t shared_bytes(const Config& config) {
  return static_cast<std::size_t>(config.stages) * batch_bytes(config);
}
static_assert(threads_per_block(Config{}) <= kMaxWarps * kWarpSize,
              "the default producer and consumer warps must fit one block of 1024 threads");
static_assert(shared_bytes(Config{}) <= 163 * 1024,
              "the default stages of the default batch must fit the 163 KB a block may opt in "
              "to on sm_80, or the driver's default launch fails there");

/// 16-byte cp.async instructions each producer thread issues for one full batch: the
/// producer warps share the whole batch. 16 KB with one producer warp: 32 per thread and
/// batch (lesson 06's unified pipeline spreads the same batch over 256 threads: 4 each).
__host__ __device__ constexpr int copies_per_producer_thread(const Config& config) {
  return (config.batch_vectors + producer_threads(config) - 1) / producer_threads(config);
}

/// "1 producer warp + 8 consumer warps (288 threads), 4 stages of 16 KB, role".
std::string describe(const Config& config);

/// Why `config` cannot be launched, or "" when it can: stages in [kMinStages, kMaxStages],
/// producer_warps >= 1, consumer_warps >= 1, producer_warps + consumer_warps <= kMaxWarps,
/// batch_vectors a multiple of 8 in [8, kMaxBatchVectors], a known partition.
std::string invalid_reason(const Config& config);

/// Validates the arguments, sets the kernel's shared-memory attribute and picks the kernel
/// instantiation, then returns the launch: calling it with a stream runs the
/// copy-and-compute workload (course/workload.h) on that stream with `blocks` blocks of
/// threads_per_block(config) threads: out[i] = combine(in[i], in[partner_index(i, n)]) for
/// every i, through a partitioned `config.stages`-stage block-scope cuda::pipeline.
///
/// Preconditions, checked before any CUDA call (std::invalid_argument otherwise):
/// `in` and `out` have the same size; invalid_reason(config) is empty; blocks >= 1; both
/// pointers are 16-byte aligned (the full batches are copied with aligned_size_t<16>).
/// The block's shared memory (shared_bytes()) must fit the device, or the attribute call
/// throws course::CudaError. For an empty input the launch does nothing. Any number of
/// blocks works: a block that owns no batch makes its pipeline, produces and consumes
/// nothing, and exits.
course::Launch prepare_copy_and_compute(cuda::std::span<const std::uint32_t> in,
                                        cuda::std::span<std::uint32_t> out, const Config& config,
                                        int blocks);

/// prepare_copy_and_compute(in, out, config, blocks), launched at once on `stream`.
void copy_and_compute(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out,
                      const Config& config, int blocks, cudaStream_t stream);

/// The most blocks one SM holds at once for this config
/// (cudaOccupancyMaxActiveBlocksPerMultiprocessor, after opting in to the shared memory);
/// 0 when one block does not fit. Throws std::invalid_argument for an invalid config.
int max_blocks_per_sm(const Config& config);

/// The producer warps as a group for cuda::memcpy_async. The group overload splits a copy
/// among size() threads: thread thread_rank() issues the 16-byte chunks rank, rank +
/// size(), ... So the group must be exactly the threads that make the call, here threads
/// 0 .. producer_threads - 1 (with one producer warp, cg::tiled_partition<32>(block) would
/// do the same; this type also covers two or four producer warps).
struct ProducerWarps {
  unsigned threads;
  __device__ unsigned size() const { return threads; }
  __device__ unsigned thread_rank() const { return threadIdx.x; }
};

namespace {

/// Which part of a batch one consumer thread computes: vectors rank, rank + count, ...
struct ConsumerShare {
  unsigned rank;   ///< this thread's index among the consumer threads
  unsigned count;  ///< how many consumer threads share the batch
};

// ---- Defined in producer_consumer.cu (your file) -----------------------------------------
// Declared here for producer_consumer_launch.cu, so that it compiles on its own
// (tools/compile_alone.py checks that it does); the build compiles your file and
// producer_consumer_launch.cu as one unit, where the definitions are.

/// The shared buffer that holds the block's k-th batch.
template <int Stages>
__device__ uint4* stage_buffer(uint4* buffers, std::size_t k, int batch_vectors);

/// The producer warps' copy of one batch into `buffer`, bound to the pipeline's current
/// producer stage. Every producer thread calls it with the same arguments.
__device__ void copy_batch(const ProducerWarps& producers, uint4* buffer, const std::uint32_t* in,
                           course::batches::Batch b, std::size_t batch,
                           cuda::pipeline<cuda::thread_scope_block>& pipe);

/// This consumer thread's share of every batch.
__device__ ConsumerShare consumer_share(unsigned producer_threads);

}  // namespace

}  // namespace producer_consumer
