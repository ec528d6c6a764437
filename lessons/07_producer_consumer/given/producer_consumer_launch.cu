// Lesson 07's kernel and launchers. Read-only: the build compiles this file in one unit
// with producer_consumer.cu (yours, and separately the solution's), which defines the
// helpers the kernel calls (stage_buffer, copy_batch, consumer_share; producer_consumer.cuh
// declares them). Read the kernel first: it makes the partitioned pipeline and runs both
// roles' loops; your helpers decide which data moves.
// Then the launchers: argument checks, the choice of kernel for a stage count and a
// partition, the shared-memory opt-in and the occupancy query.
#include <cooperative_groups.h>
#include <cuda/pipeline>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "course/batches.cuh"
#include "course/check.h"
#include "course/launch.h"
#include "producer_consumer.cuh"

// A __shared__ cuda::pipeline_shared_state has no constructor that may run (shared memory
// is not initialised by constructors); make_pipeline() initialises it. Silence the
// warning that a dynamic initialisation is skipped, as the CCCL documentation does.
#pragma nv_diag_suppress static_var_with_dynamic_init

namespace producer_consumer {
namespace {

namespace cg = cooperative_groups;

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
  // has its wait and every release its acquire (or the end of the kernel). A block with
  // no batch makes its pipeline, runs zero steps on both sides, and exits.
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
                 course::batches::batch_of_block(k, batch, n), batch, pipe);
      // Closes the stage: cp.async.mbarrier.arrive adds one pending arrival that this
      // thread's copies deliver when they land, then the thread arrives itself.
      pipe.producer_commit();
    }
  } else {
    const ConsumerShare share = consumer_share(producer_threads);
    for (std::size_t k = 0; k < mine; ++k) {
      // Blocks until every producer thread committed batch k and all its copies landed.
      pipe.consumer_wait();
      course::batches::compute_batch(reinterpret_cast<const std::uint32_t*>(
                                         stage_buffer<Stages>(shared_storage, k, batch_vectors)),
                                     out, course::batches::batch_of_block(k, batch, n), batch, n,
                                     share.rank, share.count);
      // This thread is done reading the buffer; the producer may refill it once every
      // consumer thread has released it.
      pipe.consumer_release();
    }
  }
  // ~pipeline() calls pipe.quit(): a reference count in the shared state drops, and the
  // last thread out invalidates the stage barriers. Nobody waits at that point: every
  // consumer has waited for every batch, so every copy has landed.
}

// ---- launching ----------------------------------------------------------------------------

using Kernel = void (*)(const std::uint32_t*, std::uint32_t*, std::size_t, int, int);

constexpr const char* kWhere = "producer_consumer::copy_and_compute";

/// The kernel instantiation for a config (the stage count is a template parameter of the
/// pipeline's shared state).
Kernel kernel_for(const Config& config) {
  return course::with_stage_count<kMinStages, kMaxStages>(config.stages, [&](auto s) -> Kernel {
    constexpr int stages = decltype(s)::value;
    switch (config.partition) {
      case Partition::role:
        return producer_consumer_kernel<stages, Partition::role>;
      case Partition::producer_count:
        return producer_consumer_kernel<stages, Partition::producer_count>;
    }
    throw std::invalid_argument(std::string(kWhere) + ": unknown partition");
  });
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

course::Launch prepare_copy_and_compute(cuda::std::span<const std::uint32_t> in,
                                        cuda::std::span<std::uint32_t> out, const Config& config,
                                        int blocks) {
  course::require(
      in.size() == out.size(), kWhere,
      "in has " + std::to_string(in.size()) + " elements, out " + std::to_string(out.size()));
  const std::string reason = invalid_reason(config);
  course::require(reason.empty(), kWhere, reason);
  course::require(blocks >= 1, kWhere, "blocks must be >= 1, got " + std::to_string(blocks));
  course::require(reinterpret_cast<std::uintptr_t>(in.data()) % 16 == 0 &&
                      reinterpret_cast<std::uintptr_t>(out.data()) % 16 == 0,
                  kWhere, "16-byte copies (aligned_size_t<16>) need both arrays 16-byte aligned");
  if (in.empty()) return [](cudaStream_t) {};

  const Kernel kernel = kernel_for(config);
  const std::size_t shared = shared_bytes(config);
  // Beyond 48 KB a kernel must opt in to more dynamic shared memory.
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(shared)));
  const std::uint32_t* src = in.data();
  std::uint32_t* dst = out.data();
  const std::size_t n = in.size();
  const int threads = threads_per_block(config);
  const int producer_warps = config.producer_warps;
  const int batch_vectors = config.batch_vectors;
  return [=](cudaStream_t stream) {
    kernel<<<blocks, threads, shared, stream>>>(src, dst, n, producer_warps, batch_vectors);
    COURSE_CHECK_LAUNCH();
  };
}

void copy_and_compute(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out,
                      const Config& config, int blocks, cudaStream_t stream) {
  prepare_copy_and_compute(in, out, config, blocks)(stream);
}

int max_blocks_per_sm(const Config& config) {
  const std::string reason = invalid_reason(config);
  course::require(reason.empty(), "producer_consumer::max_blocks_per_sm", reason);
  return course::max_resident_blocks(reinterpret_cast<const void*>(kernel_for(config)),
                                     threads_per_block(config), shared_bytes(config));
}

}  // namespace producer_consumer
