// Lesson 06: multi-stage pipelines, written twice.
//
// What this file adds over lessons 01-05: a block keeps `Stages` batches of shared memory
// and starts the copies of the next batches *before* it computes the current one, so the
// block overlaps its own copies with its own compute. Shapes, for 256 threads and 4
// vectors per thread (the driver's default):
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

#include <stdexcept>
#include <string>

#include "course/check.h"
#include "course/workload.h"

// A __shared__ cuda::pipeline_shared_state has no constructor that may run (shared memory
// is not initialised by constructors); make_pipeline() initialises it. Silence the
// warning that a dynamic initialisation is skipped, as the CCCL documentation does.
#pragma nv_diag_suppress static_var_with_dynamic_init

namespace pipeline_multi_stage {
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

/// Computes the outputs of one staged batch. A full batch is read as 16-byte vectors:
/// vector v of thread t is vector v * blockDim.x + t, the layout the copies used. A
/// partial batch is computed element by element, reading only its `count` valid elements.
__device__ void compute_batch(const std::uint32_t* staged, std::uint32_t* __restrict__ out, Batch b,
                              std::size_t batch, std::size_t n, int vectors_per_thread) {
  if (b.count == batch) {
    const uint4* staged4 = reinterpret_cast<const uint4*>(staged);
    uint4* out4 = reinterpret_cast<uint4*>(out + b.first);
    for (int v = 0; v < vectors_per_thread; ++v) {
      const unsigned vector = v * blockDim.x + threadIdx.x;
      // The partners of this vector's four elements fill one other vector, in reverse
      // order (course/workload.h); another thread staged it.
      out4[vector] = combine_vectors(staged4[vector], staged4[mirror_vector(vector)]);
    }
  } else {
    combine_elements(staged, out + b.first, b.first, b.count, n, threadIdx.x, blockDim.x);
  }
}

// ---- 1. cuda::pipeline, block scope -------------------------------------------------------

/// Issues the group's copy of one batch into `buffer`, bound to the pipeline's current
/// producer stage. Every thread of the group calls it with the same arguments.
template <class Group>
__device__ void copy_batch(const Group& block, std::uint32_t* buffer, const std::uint32_t* in,
                           Batch b, std::size_t batch,
                           cuda::pipeline<cuda::thread_scope_block>& pipe) {
  // TODO 1: copy the batch (b.count elements from in + b.first) into `buffer` with the
  //         group overload of cuda::memcpy_async, bound to `pipe`. A full batch is a
  //         multiple of 16 bytes and both pointers are 16-byte aligned: say so with
  //         cuda::aligned_size_t<16>, which selects 16-byte cp.async. The last, partial
  //         batch may not be: give its exact byte count (4-byte cp.async per element).
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

template <int Stages>
__global__ void pipeline_kernel(const std::uint32_t* __restrict__ in,
                                std::uint32_t* __restrict__ out, std::size_t n,
                                int vectors_per_thread) {
  extern __shared__ uint4 shared_storage[];  // Stages batches; uint4: 16-byte aligned
  std::uint32_t* buffers = reinterpret_cast<std::uint32_t*>(shared_storage);
  const std::size_t batch = batch_elements(blockDim.x, vectors_per_thread);
  const std::size_t mine = batches_of_block(batch_count(n, batch), blockIdx.x, gridDim.x);

  // Two mbarriers per stage ("produced", "consumed") and a reference count. Every thread
  // of the block must call make_pipeline: thread 0 initialises the state, then the block
  // syncs. Every thread is both producer and consumer (a "unified" pipeline).
  const cg::thread_block block = cg::this_thread_block();
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, Stages> state;
  cuda::pipeline<cuda::thread_scope_block> pipe = cuda::make_pipeline(block, &state);

  std::size_t fetched = 0;  // batches whose copies have been issued (and committed)
  for (std::size_t k = 0; k < mine; ++k) {
    // TODO 2: producer side. Keep the pipeline full: while fewer than Stages batches are
    //         in flight (fetched < k + Stages) and the block has batches left
    //         (fetched < mine), acquire a stage (producer_acquire blocks until every
    //         thread released that stage's buffer), copy batch `fetched` into buffer
    //         fetched % Stages with copy_batch(), and commit the stage.
    // BEGIN SOLUTION
    for (; fetched < mine && fetched < k + Stages; ++fetched) {
      pipe.producer_acquire();
      copy_batch(block, buffers + (fetched % Stages) * batch, in, batch_of_block(fetched, batch, n),
                 batch, pipe);
      pipe.producer_commit();
    }
    // STARTER: (void)fetched;
    // END SOLUTION

    // TODO 3: consumer side. Wait until every thread's copies of the oldest stage (batch
    //         k) have landed in shared memory.
    // BEGIN SOLUTION
    pipe.consumer_wait();
    // END SOLUTION

    compute_batch(buffers + (k % Stages) * batch, out, batch_of_block(k, batch, n), batch, n,
                  vectors_per_thread);

    // TODO 4: this thread is done reading batch k: release its stage, so that a producer
    //         may refill the buffer once every thread has released it.
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
  // TODO 5: if k < mine, copy this thread's 16-byte chunks of batch k (chunk v of thread t
  //         is chunk v * blockDim.x + t) with __pipeline_memcpy_async(dst, src, 16, zfill).
  //         In a full batch zfill is 0. In the last, partial batch, zfill is
  //         zero_fill_bytes(count, chunk): the valid bytes are copied and the rest of the
  //         chunk is written with zeros, so shared memory is fully initialised; a chunk
  //         entirely past the end copies nothing (zfill 16) but still needs a valid source
  //         address (use the batch's first chunk), and the one chunk the input ends in is
  //         copied word by word (4-byte copies, zero-filling the words past the end), so
  //         that no copy reaches past the end of the input. Then, batch or no batch, close this
  //         thread's group with __pipeline_commit(): every thread must count the same
  //         groups, or __pipeline_wait_prior waits for the wrong batch.
  // BEGIN SOLUTION
  if (k < mine) {
    const Batch b = batch_of_block(k, batch, n);
    const uint4* src = reinterpret_cast<const uint4*>(in + b.first);
    if (b.count == batch) {
      for (int v = 0; v < vectors_per_thread; ++v) {
        const unsigned chunk = v * blockDim.x + threadIdx.x;
        __pipeline_memcpy_async(buffer + chunk, src + chunk, sizeof(uint4));
      }
    } else {
      for (int v = 0; v < vectors_per_thread; ++v) {
        const unsigned chunk = v * blockDim.x + threadIdx.x;
        const std::size_t zfill = zero_fill_bytes(b.count, chunk);
        if (zfill == 0 || zfill == sizeof(uint4)) {
          // A whole chunk: all valid, or all past the end (then it copies nothing and zero-fills
          // 16 bytes; its source only has to be a valid address: the batch's first chunk).
          __pipeline_memcpy_async(buffer + chunk, zfill == 0 ? src + chunk : src, sizeof(uint4),
                                  zfill);
        } else {
          // The chunk the input ends in: its valid words one by one, the others zero-filled
          // from a valid address. A 16-byte copy with zfill is legal PTX (only the valid bytes
          // are read), but compute-sanitizer's memcheck counts all 16 bytes as read past the
          // end of the allocation, so the course keeps every access inside it.
          std::uint32_t* words = reinterpret_cast<std::uint32_t*>(buffer + chunk);
          const std::uint32_t* src_words = reinterpret_cast<const std::uint32_t*>(src + chunk);
          const std::size_t valid = (sizeof(uint4) - zfill) / sizeof(std::uint32_t);
          for (std::size_t w = 0; w < sizeof(uint4) / sizeof(std::uint32_t); ++w) {
            const bool inside = w < valid;
            __pipeline_memcpy_async(words + w, inside ? src_words + w : src_words,
                                    sizeof(std::uint32_t), inside ? 0 : sizeof(std::uint32_t));
          }
        }
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
                                    int vectors_per_thread) {
  static_assert(Stages >= kMinStages && Stages <= kMaxStages, "2 to 8 stages");
  extern __shared__ uint4 shared_storage[];  // Stages batches of uint4
  const std::size_t batch = batch_elements(blockDim.x, vectors_per_thread);
  const std::size_t vectors_per_batch = batch / 4;
  const std::size_t mine = batches_of_block(batch_count(n, batch), blockIdx.x, gridDim.x);
  auto buffer = [&](std::size_t k) { return shared_storage + (k % Stages) * vectors_per_batch; };

  // Prologue: start the first Ahead batches, one group each (empty when the block has
  // fewer batches: the group count stays the same in every thread).
  for (int k = 0; k < Ahead; ++k) start_batch(buffer(k), in, k, mine, batch, n, vectors_per_thread);

  for (std::size_t k = 0; k < mine; ++k) {
    // TODO 6: wait until batch k is in shared memory. __pipeline_wait_prior(N) waits until
    //         at most N of this thread's newest groups are still pending
    //         (groups_allowed_pending(Ahead) of them may be: they hold later batches);
    //         that covers this thread's own copies only. A block barrier then makes every
    //         thread's copies of batch k visible, and proves that every thread finished
    //         computing batch k - 1, whose buffer is refilled next.
    // BEGIN SOLUTION
    __pipeline_wait_prior(groups_allowed_pending(Ahead));
    __syncthreads();
    // END SOLUTION

    // Refill buffer (k + Ahead) % Stages. With Ahead = Stages - 1 that is the buffer of
    // batch k - 1, which every thread finished reading before it passed the barrier.
    start_batch(buffer(k + Ahead), in, k + Ahead, mine, batch, n, vectors_per_thread);

    compute_batch(reinterpret_cast<const std::uint32_t*>(buffer(k)), out,
                  batch_of_block(k, batch, n), batch, n, vectors_per_thread);
  }
}

template <int Stages>
__global__ void primitives_kernel(const std::uint32_t* __restrict__ in,
                                  std::uint32_t* __restrict__ out, std::size_t n,
                                  int vectors_per_thread) {
  primitives_schedule<Stages, batches_ahead(Stages)>(in, out, n, vectors_per_thread);
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
                                          int vectors_per_thread) {
  primitives_schedule<Stages, Stages>(in, out, n, vectors_per_thread);
}

// ---- launching ----------------------------------------------------------------------------

using Kernel = void (*)(const std::uint32_t*, std::uint32_t*, std::size_t, int);

template <int Stages>
Kernel kernel_for_stages(Interface interface) {
  switch (interface) {
    case Interface::pipeline:
      return pipeline_kernel<Stages>;
    case Interface::primitives:
      return primitives_kernel<Stages>;
    case Interface::broken_one_stage_too_many:
      return one_stage_too_many_kernel<Stages>;
  }
  throw std::invalid_argument("pipeline_multi_stage: unknown interface");
}

/// The kernel instantiation for a config (the stage count is a template parameter).
Kernel kernel_for(const Config& config) {
  switch (config.stages) {
    case 2:
      return kernel_for_stages<2>(config.interface);
    case 3:
      return kernel_for_stages<3>(config.interface);
    case 4:
      return kernel_for_stages<4>(config.interface);
    case 5:
      return kernel_for_stages<5>(config.interface);
    case 6:
      return kernel_for_stages<6>(config.interface);
    case 7:
      return kernel_for_stages<7>(config.interface);
    case 8:
      return kernel_for_stages<8>(config.interface);
  }
  throw std::invalid_argument("pipeline_multi_stage: stages must be in [2, 8], got " +
                              std::to_string(config.stages));
}

void require(bool condition, const std::string& message) {
  if (!condition) throw std::invalid_argument("pipeline_multi_stage: " + message);
}

void require_valid_config(const Config& config, int threads_per_block) {
  require(config.interface == Interface::pipeline || config.interface == Interface::primitives ||
              config.interface == Interface::broken_one_stage_too_many,
          "unknown interface");
  require(config.stages >= kMinStages && config.stages <= kMaxStages,
          "stages must be in [2, 8], got " + std::to_string(config.stages));
  require(
      valid_vectors_per_thread(config.vectors_per_thread),
      "vectors_per_thread must be 1, 2, 4 or 8, got " + std::to_string(config.vectors_per_thread));
  require(threads_per_block >= 32 && threads_per_block <= 1024 && threads_per_block % 32 == 0,
          "threads_per_block must be a multiple of 32 in [32, 1024], got " +
              std::to_string(threads_per_block));
}

}  // namespace

void copy_and_compute(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out,
                      const Config& config, LaunchShape shape, cudaStream_t stream) {
  require(in.size() == out.size(),
          "in has " + std::to_string(in.size()) + " elements, out " + std::to_string(out.size()));
  require_valid_config(config, shape.threads_per_block);
  require(shape.blocks >= 1, "blocks must be >= 1, got " + std::to_string(shape.blocks));
  require(reinterpret_cast<std::uintptr_t>(in.data()) % 16 == 0 &&
              reinterpret_cast<std::uintptr_t>(out.data()) % 16 == 0,
          "16-byte copies (aligned_size_t<16>, __pipeline_memcpy_async(..., 16)) need both "
          "arrays 16-byte aligned");
  if (in.empty()) return;

  const Kernel kernel = kernel_for(config);
  const std::size_t shared = shared_bytes(config, shape.threads_per_block);
  // Beyond 48 KB a kernel must opt in to more dynamic shared memory.
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(shared)));
  kernel<<<shape.blocks, shape.threads_per_block, shared, stream>>>(
      in.data(), out.data(), in.size(), config.vectors_per_thread);
  COURSE_CHECK_LAUNCH();
}

int max_blocks_per_sm(const Config& config, int threads_per_block) {
  require_valid_config(config, threads_per_block);
  const Kernel kernel = kernel_for(config);
  const std::size_t shared = shared_bytes(config, threads_per_block);
  int max_shared = 0;
  int device = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(
      cudaDeviceGetAttribute(&max_shared, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (shared > static_cast<std::size_t>(max_shared)) return 0;
  // The occupancy calculator only counts shared memory the kernel may use: opt in first.
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(shared)));
  int blocks = 0;
  COURSE_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads_per_block, shared));
  return blocks;
}

}  // namespace pipeline_multi_stage
