// Lesson 03: the small device helpers the exercise (cuda_barrier.cu) calls. Read-only: you
// do not need to change anything here.
#pragma once

#include <cuda/barrier>
#include <cuda/ptx>
#include <nv/target>

#include <cstddef>
#include <cstdint>

#include "course/batches.cuh"
#include "cuda_barrier.cuh"

namespace cuda_barrier::device {

using BlockBarrier = cuda::barrier<cuda::thread_scope_block>;    // an 8-byte mbarrier
using SystemBarrier = cuda::barrier<cuda::thread_scope_system>;  // atomics, in any memory

/// The launcher accepts blocks of up to 1024 threads; saying so keeps every kernel within 64
/// registers per thread.
inline constexpr int kMaxThreads = 1024;

/// The smallest group cuda::memcpy_async accepts instead of this_thread_block(), for a 1-D
/// block. CCCL 3.0.1's barrier overloads call size() (the stride of the per-thread cp.async
/// loop) and thread_rank() (each thread's offset; rank 0 alone issues a bulk copy and its
/// expect_tx) and copy the group by value. They never call sync(); our kernels do, for their
/// own block-wide syncs. A `thread_scope` member is not read by 3.0.1.
struct OneDimensionalBlock {
  __device__ unsigned size() const { return blockDim.x; }
  __device__ unsigned thread_rank() const { return threadIdx.x; }
  __device__ void sync() const { __syncthreads(); }
};

/// The report pointer for thread 0 of the block that copies batch 0 (the full-batch slots) or
/// the partial last batch (the tail slot); nullptr for every other thread and batch, so each
/// slot has exactly one writer.
__device__ inline std::uint32_t* report_for(std::uint32_t* report, course::batches::Batch b,
                                            std::size_t batch) {
  const bool reports = threadIdx.x == 0 && (b.first == 0 || b.count < batch);
  return report != nullptr && reports ? report : nullptr;
}

/// Keeps what one memcpy_async call promised, when this thread writes the report.
__device__ inline void record(std::uint32_t* report, ReportSlot slot,
                              cuda::async_contract_fulfillment promised) {
  if (report != nullptr) report[slot] = static_cast<std::uint32_t>(promised);
}

/// Initialises `count` block-scope barriers, each expecting every thread of the group.
/// Exactly one thread initialises; nobody may touch a barrier before the group syncs. On
/// sm_90 bulk copies signal the barrier from the async proxy (the TMA unit): the fence makes
/// the initialised barriers visible to that proxy before the first copy is issued.
template <class Group>
__device__ void init_block_barriers(const Group& group, BlockBarrier* barriers, int count) {
  if (group.thread_rank() == 0) {
    for (int i = 0; i < count; ++i) init(&barriers[i], group.size());
    NV_IF_TARGET(NV_PROVIDES_SM_90, (cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);));
  }
  group.sync();
}

/// Tests only (`delay_ns` > 0; ReaderDelay in cuda_barrier.cuh): every warp but the first holds
/// back before reading a staged batch, until the first word this thread reads there changes or
/// `delay_ns` nanoseconds have passed. Warp 0 (thread 0 issues the bulk copies on sm_90) runs
/// ahead. In a correct multi-stage kernel nothing can change that word while it is read, so
/// the readers wait the whole delay and compute the right values; in one that refills a stage
/// without waiting for its release, warp 0's refill lands meanwhile and they read it.
__device__ inline void hold_back_readers(const std::uint32_t* staged, unsigned delay_ns) {
  if (delay_ns == 0 || threadIdx.x < 32) return;
  const volatile std::uint32_t* word = staged + 4 * threadIdx.x;  // its first 16-byte vector
  const std::uint32_t seen = *word;
  const std::uint64_t start = cuda::ptx::get_sreg_globaltimer();
  while (*word == seen && cuda::ptx::get_sreg_globaltimer() - start < delay_ns) __nanosleep(256);
}

}  // namespace cuda_barrier::device

namespace cuda_barrier {
namespace {

/// How a kernel copies its full batches (copy_batch<C>, one_stage<C>).
enum class Copy { words, aligned, two_buffers };

// ---- Defined in cuda_barrier.cu (your file) ----------------------------------------------
// Declared here for cuda_barrier_launch.cu, so that it compiles on its own
// (tools/compile_alone.py checks that it does); the build compiles your file and
// cuda_barrier_launch.cu as one unit, where the definitions are.

/// Starts the copy of batch `b` of `in` into `staged`, bound to `barrier`.
template <Copy C, class Group, class Barrier>
__device__ void copy_batch(const Group& group, std::uint32_t* staged, const std::uint32_t* in,
                           course::batches::Batch b, std::size_t batch, Barrier& barrier,
                           std::uint32_t* report);

/// One stage: one shared buffer and one barrier for every batch. `hold_ns` is for tests only.
template <Copy C, class Group>
__device__ void one_stage(const Group& group, const std::uint32_t* __restrict__ in,
                          std::uint32_t* __restrict__ out, std::size_t n, std::uint32_t* report,
                          unsigned hold_ns);

/// Several stages, a full and an empty barrier per stage; WaitForRelease = false is the
/// deliberately broken variant that refills a stage without waiting for its release.
template <int Stages, bool WaitForRelease>
__global__ void __launch_bounds__(device::kMaxThreads)
    multi_stage_kernel(const std::uint32_t* __restrict__ in, std::uint32_t* __restrict__ out,
                       std::size_t n, std::uint32_t* report, unsigned delay_ns);

}  // namespace
}  // namespace cuda_barrier
