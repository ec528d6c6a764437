// Your exercise: fill in the TODOs of this file only; the rest of the lesson is read-only (generated from solutions/07_producer_consumer/producer_consumer.cu by ./course sync).
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
// The stage barriers count each side separately. "produced" expects one arrival per
// producer thread (producer_commit; its cp.async.mbarrier.arrive also holds the phase open
// until this thread's copies have landed); "consumed" expects one per consumer thread
// (consumer_release). So the producer
// refills a buffer only after every consumer finished it, and a consumer reads a buffer
// only after every producer thread's copies into it landed.
//
// Ending cleanly: the producer and the consumers run the same number of pipeline steps
// (the batches this block owns, computed from the block index alone, before the roles
// split), so every commit is matched by a wait and every release by an acquire or by the
// end. A block with no batch makes its pipeline, does nothing else, and exits. At the end
// each thread's pipeline destructor calls quit(): a reference count in the shared state
// drops, and the last thread out invalidates the mbarriers. Nobody waits at that point:
// every consumer has waited for every batch, so every copy has landed.
#include "producer_consumer.cuh"

#include <cooperative_groups.h>
#include <cuda/pipeline>

#include <stdexcept>
#include <string>

#include "course/check.h"
#include "course/workload.h"

// A __shared__ cuda::pipeline_shared_state has no constructor that may run (shared memory
// is not initialised by constructors); make_pipeline() initialises it. Silence the
// warning that a dynamic initialisation is skipped, as the CCCL documentation does.
#pragma nv_diag_suppress static_var_with_dynamic_init

namespace producer_consumer {

/// The producer warps as a group for cuda::memcpy_async. The group overload splits a copy
/// among size() threads: thread thread_rank() issues the 16-byte chunks rank, rank +
/// size(), ... So the group must be exactly the threads that make the call, here threads
/// 0 .. producer_threads - 1: passing the whole block would leave most chunks to consumer
/// threads that never call it. (With one producer warp, cg::tiled_partition<32>(block)
/// would do the same; this type also covers two or four producer warps.) It sits outside
/// the anonymous namespace only so that the starter, which does not call it yet, compiles
/// without an unused-function warning.
struct ProducerWarps {
  unsigned threads;
  __device__ unsigned size() const { return threads; }
  __device__ unsigned thread_rank() const { return threadIdx.x; }
};

namespace {

namespace cg = cooperative_groups;
using course::workload::combine_elements;
using course::workload::combine_vectors;
using course::workload::mirror_vector;

/// Where one of the block's batches lies in the input.
struct Batch {
  std::size_t first;  ///< global index of its first element
  std::size_t count;  ///< valid elements: the batch size, or fewer for the input's last batch
};

/// The block's k-th batch (blocks take batches in turn: block b owns b, b + grid, ...).
__device__ Batch batch_of_block(std::size_t k, std::size_t batch, std::size_t n) {
  const std::size_t first = (blockIdx.x + k * gridDim.x) * batch;
  return {first, n - first < batch ? n - first : batch};
}

/// Which part of a batch one consumer thread computes: vectors rank, rank + count, ...
struct ConsumerShare {
  unsigned rank;   ///< this thread's index among the consumer threads
  unsigned count;  ///< how many consumer threads share the batch
};

/// The shared buffer that holds the block's k-th batch. The pipeline hands out its stages
/// in order, round and round: the k-th producer_acquire/producer_commit fill stage
/// k % Stages and the k-th consumer_wait/consumer_release drain the same stage. The buffer
/// must follow the same rule on both sides, or a consumer reads a buffer that the stage it
/// waited for says nothing about.
template <int Stages>
__device__ uint4* stage_buffer(uint4* buffers, std::size_t k, int batch_vectors) {
  // TODO 1: return the buffer of the block's k-th batch: the stages hold Stages batches of
  //         batch_vectors uint4 each, one after another, and batch k lives in stage
  //         k % Stages.
  (void)k; (void)batch_vectors;
  return buffers;
}

/// The producer warps' copy of one batch into `buffer`, bound to the pipeline's current
/// producer stage. Every producer thread calls it with the same arguments.
__device__ void copy_batch(const ProducerWarps& producers, uint4* buffer, const std::uint32_t* in,
                           Batch b, std::size_t batch,
                           cuda::pipeline<cuda::thread_scope_block>& pipe) {
  // TODO 2: copy the batch (b.count elements from in + b.first) into `buffer` with the
  //         group overload of cuda::memcpy_async, the group being `producers` (only the
  //         producer threads get here), bound to `pipe`. A full batch: both pointers are
  //         16-byte aligned and its size a multiple of 16, so say so with
  //         cuda::aligned_size_t<16> (16-byte cp.async). The last, partial batch may not
  //         be: give it its exact byte count (4-byte cp.async per element).
  (void)producers; (void)buffer; (void)in; (void)b; (void)batch; (void)pipe;
}

/// This consumer thread's share of every batch. Producer warps come first in the block:
/// threads 0 .. producer_threads - 1 produce, the rest consume.
__device__ ConsumerShare consumer_share(unsigned producer_threads) {
  // TODO 3: number the consumer threads from 0 and count them. Lesson 06 used
  //         {threadIdx.x, blockDim.x} because every thread computed; here the producer
  //         threads compute nothing, so with that share the vectors they would have
  //         computed are never written.
  (void)producer_threads;
  return {threadIdx.x, blockDim.x};
}

/// Computes this consumer thread's outputs of one staged batch. A full batch is read as
/// 16-byte vectors (vector v holds elements 4v .. 4v+3); a partial batch element by
/// element, reading only its `count` valid elements (the rest of the buffer was never
/// written in this round).
__device__ void compute_batch(const uint4* staged, std::uint32_t* __restrict__ out, Batch b,
                              std::size_t batch, std::size_t n, ConsumerShare share) {
  if (b.count == batch) {
    const std::size_t vectors = batch / 4;
    uint4* out4 = reinterpret_cast<uint4*>(out + b.first);
    for (std::size_t v = share.rank; v < vectors; v += share.count) {
      // The partners of this vector's four elements fill one other vector, in reverse
      // order (course/workload.h); another thread staged it.
      out4[v] = combine_vectors(staged[v], staged[mirror_vector(v)]);
    }
  } else {
    const std::uint32_t* staged1 = reinterpret_cast<const std::uint32_t*>(staged);
    combine_elements(staged1, out + b.first, b.first, b.count, n, share.rank, share.count);
  }
}

/// Makes the block's partitioned pipeline. Every thread of the block must call it: it
/// initialises the shared state in one thread and syncs the block (three times for the
/// role overload, which first counts the producers with an atomic). Both branches return
/// the prvalue make_pipeline gives, so C++17 constructs the caller's pipeline in place:
/// never std::move a cuda::pipeline, because a moved-from pipeline still quits in its
/// destructor and the reference count would drop twice for one thread.
template <Partition P, int Stages>
__device__ cuda::pipeline<cuda::thread_scope_block> make_partitioned_pipeline(
    const cg::thread_block& block,
    cuda::pipeline_shared_state<cuda::thread_scope_block, Stages>* state, bool is_producer,
    unsigned producer_threads) {
  if constexpr (P == Partition::role) {
    return cuda::make_pipeline(
        block, state, is_producer ? cuda::pipeline_role::producer : cuda::pipeline_role::consumer);
  } else {
    // The count must be exactly the number of threads that take the producer branch.
    return cuda::make_pipeline(block, state, static_cast<std::size_t>(producer_threads));
  }
}

template <int Stages, Partition P>
__global__ void producer_consumer_kernel(const std::uint32_t* __restrict__ in,
                                         std::uint32_t* __restrict__ out, std::size_t n,
                                         int producer_warps, int batch_vectors) {
  extern __shared__ uint4 shared_storage[];  // Stages batches of uint4: 16-byte aligned
  const std::size_t batch = static_cast<std::size_t>(batch_vectors) * 4;
  // Computed by every thread from the block index alone, BEFORE the roles split: the
  // producer and the consumers agree on the number of pipeline steps, so every commit
  // has its wait and every release its acquire (or the end of the kernel).
  const std::size_t mine = batches_of_block(batch_count(n, batch), blockIdx.x, gridDim.x);

  // Whole warps take one role: a producer warp's 32 threads stay converged for the copy
  // and the commit, and no warp mixes roles.
  const unsigned producer_threads = static_cast<unsigned>(producer_warps) * kWarpSize;
  const bool is_producer = threadIdx.x < producer_threads;

  const cg::thread_block block = cg::this_thread_block();
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, Stages> state;
  cuda::pipeline<cuda::thread_scope_block> pipe =
      make_partitioned_pipeline<P, Stages>(block, &state, is_producer, producer_threads);

  if (is_producer) {
    const ProducerWarps producers{producer_threads};
    for (std::size_t k = 0; k < mine; ++k) {
      // Blocks until every consumer thread released this stage's previous batch (the
      // first Stages acquires find their stages free).
      pipe.producer_acquire();
      copy_batch(producers, stage_buffer<Stages>(shared_storage, k, batch_vectors), in,
                 batch_of_block(k, batch, n), batch, pipe);
      // Closes the stage: cp.async.mbarrier.arrive adds one pending arrival that this
      // thread's copies deliver when they land, then the thread arrives itself.
      pipe.producer_commit();
    }
  } else {
    const ConsumerShare share = consumer_share(producer_threads);
    for (std::size_t k = 0; k < mine; ++k) {
      // Blocks until every producer thread committed batch k and all its copies landed.
      pipe.consumer_wait();
      compute_batch(stage_buffer<Stages>(shared_storage, k, batch_vectors), out,
                    batch_of_block(k, batch, n), batch, n, share);
      // This thread is done reading the buffer; the producer may refill it once every
      // consumer thread has released it.
      pipe.consumer_release();
    }
  }
  // ~pipeline() calls pipe.quit(): the last thread out invalidates the stage barriers.
}

// ---- launching ----------------------------------------------------------------------------

using Kernel = void (*)(const std::uint32_t*, std::uint32_t*, std::size_t, int, int);

template <int Stages>
Kernel kernel_for_stages(Partition partition) {
  switch (partition) {
    case Partition::role:
      return producer_consumer_kernel<Stages, Partition::role>;
    case Partition::producer_count:
      return producer_consumer_kernel<Stages, Partition::producer_count>;
  }
  throw std::invalid_argument("producer_consumer: unknown partition");
}

/// The kernel instantiation for a config (the stage count is a template parameter).
Kernel kernel_for(const Config& config) {
  switch (config.stages) {
    case 2:
      return kernel_for_stages<2>(config.partition);
    case 3:
      return kernel_for_stages<3>(config.partition);
    case 4:
      return kernel_for_stages<4>(config.partition);
    case 5:
      return kernel_for_stages<5>(config.partition);
    case 6:
      return kernel_for_stages<6>(config.partition);
    case 7:
      return kernel_for_stages<7>(config.partition);
    case 8:
      return kernel_for_stages<8>(config.partition);
  }
  throw std::invalid_argument("producer_consumer: stages must be in [2, 8], got " +
                              std::to_string(config.stages));
}

void require(bool condition, const std::string& message) {
  if (!condition) throw std::invalid_argument("producer_consumer: " + message);
}

}  // namespace

std::string describe(const Config& config) {
  auto plural = [](int count, const char* what) {
    return std::to_string(count) + " " + what + (count == 1 ? "" : "s");
  };
  const std::size_t bytes = batch_bytes(config);
  const std::string batch =
      bytes % 1024 == 0 ? std::to_string(bytes / 1024) + " KB" : std::to_string(bytes) + " B";
  return plural(config.producer_warps, "producer warp") + " + " +
         plural(config.consumer_warps, "consumer warp") + " (" +
         std::to_string(threads_per_block(config)) + " threads), " +
         plural(config.stages, "stage") + " of " + batch + ", " + name(config.partition);
}

std::string invalid_reason(const Config& config) {
  if (config.partition != Partition::role && config.partition != Partition::producer_count) {
    return "unknown partition";
  }
  if (config.stages < kMinStages || config.stages > kMaxStages) {
    return "stages must be in [" + std::to_string(kMinStages) + ", " + std::to_string(kMaxStages) +
           "], got " + std::to_string(config.stages);
  }
  if (config.producer_warps < 1) {
    return "producer_warps must be >= 1, got " + std::to_string(config.producer_warps);
  }
  if (config.consumer_warps < 1) {
    return "consumer_warps must be >= 1, got " + std::to_string(config.consumer_warps);
  }
  if (config.producer_warps > kMaxWarps - config.consumer_warps) {
    return "producer_warps + consumer_warps must be <= " + std::to_string(kMaxWarps) + ", got " +
           std::to_string(config.producer_warps) + " + " + std::to_string(config.consumer_warps);
  }
  if (config.batch_vectors < 8 || config.batch_vectors > kMaxBatchVectors ||
      config.batch_vectors % 8 != 0) {
    return "batch_vectors must be a multiple of 8 in [8, " + std::to_string(kMaxBatchVectors) +
           "], got " + std::to_string(config.batch_vectors);
  }
  return "";
}

void copy_and_compute(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out,
                      const Config& config, int blocks, cudaStream_t stream) {
  require(in.size() == out.size(),
          "in has " + std::to_string(in.size()) + " elements, out " + std::to_string(out.size()));
  const std::string reason = invalid_reason(config);
  require(reason.empty(), reason);
  require(blocks >= 1, "blocks must be >= 1, got " + std::to_string(blocks));
  require(reinterpret_cast<std::uintptr_t>(in.data()) % 16 == 0 &&
              reinterpret_cast<std::uintptr_t>(out.data()) % 16 == 0,
          "16-byte copies (aligned_size_t<16>) need both arrays 16-byte aligned");
  if (in.empty()) return;

  const Kernel kernel = kernel_for(config);
  const std::size_t shared = shared_bytes(config);
  // Beyond 48 KB a kernel must opt in to more dynamic shared memory.
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(shared)));
  kernel<<<blocks, threads_per_block(config), shared, stream>>>(
      in.data(), out.data(), in.size(), config.producer_warps, config.batch_vectors);
  COURSE_CHECK_LAUNCH();
}

int max_blocks_per_sm(const Config& config) {
  const std::string reason = invalid_reason(config);
  require(reason.empty(), reason);
  const Kernel kernel = kernel_for(config);
  const std::size_t shared = shared_bytes(config);
  int device = 0;
  int max_shared = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(
      cudaDeviceGetAttribute(&max_shared, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  // The pipeline's shared state is static shared memory and counts against the same limit.
  cudaFuncAttributes attributes{};
  COURSE_CHECK(cudaFuncGetAttributes(&attributes, kernel));
  if (shared + attributes.sharedSizeBytes > static_cast<std::size_t>(max_shared)) return 0;
  // The occupancy calculator only counts shared memory the kernel may use: opt in first.
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(shared)));
  int resident = 0;
  COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel,
                                                             threads_per_block(config), shared));
  return resident;
}

}  // namespace producer_consumer
