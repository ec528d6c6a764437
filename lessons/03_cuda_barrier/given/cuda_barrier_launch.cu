// Lesson 03: the kernels' entry points, the system-scope kernel, and the launchers. Read-only.
// The build compiles this file in one unit right after cuda_barrier.cu (yours, or the
// solution), which defines what it calls there (one_stage, copy_batch, multi_stage_kernel);
// cuda_barrier_device.cuh declares those. This file never includes cuda_barrier.cu itself.
#include <cooperative_groups.h>
#include <cuda/barrier>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "course/batches.cuh"
#include "course/check.h"
#include "course/launch.h"
#include "course/workload.h"
#include "cuda_barrier.cuh"
#include "cuda_barrier_device.cuh"

namespace cuda_barrier {
namespace {

// ---- Entry points: one signature for every kernel -----------------------------------------
// The last argument is a test hook's delay, 0 in every normal run: the multi-stage kernels'
// ReaderDelay, the one-stage kernels' HoldBack (course::batches::hold_back).

__global__ void __launch_bounds__(device::kMaxThreads)
    one_stage_words_kernel(const std::uint32_t* __restrict__ in, std::uint32_t* __restrict__ out,
                           std::size_t n, std::uint32_t* report, unsigned hold_ns) {
  one_stage<Copy::words>(cooperative_groups::this_thread_block(), in, out, n, report, hold_ns);
}

__global__ void __launch_bounds__(device::kMaxThreads)
    one_stage_kernel(const std::uint32_t* __restrict__ in, std::uint32_t* __restrict__ out,
                     std::size_t n, std::uint32_t* report, unsigned hold_ns) {
  one_stage<Copy::aligned>(cooperative_groups::this_thread_block(), in, out, n, report, hold_ns);
}

/// one_stage with a group type of our own (device::OneDimensionalBlock) instead of
/// this_thread_block(): the same copies, a few instructions fewer for the rank.
__global__ void __launch_bounds__(device::kMaxThreads)
    custom_group_kernel(const std::uint32_t* __restrict__ in, std::uint32_t* __restrict__ out,
                        std::size_t n, std::uint32_t* report, unsigned hold_ns) {
  one_stage<Copy::aligned>(device::OneDimensionalBlock{}, in, out, n, report, hold_ns);
}

__global__ void __launch_bounds__(device::kMaxThreads)
    two_buffers_kernel(const std::uint32_t* __restrict__ in, std::uint32_t* __restrict__ out,
                       std::size_t n, std::uint32_t* report, unsigned hold_ns) {
  one_stage<Copy::two_buffers>(cooperative_groups::this_thread_block(), in, out, n, report,
                               hold_ns);
}

/// system_scope: the same calls with a cuda::barrier<cuda::thread_scope_system> (a software
/// barrier of system-scope atomics, not an mbarrier), staging each batch in global memory: in
/// the batch's own elements of `out`. For global -> global CCCL has no asynchronous
/// mechanism, whatever the barrier: memcpy_async copies synchronously (each thread its 16-byte
/// chunks) and returns `none`. The barrier still synchronises the block: its arrive releases
/// and its wait acquires, so after arrive_and_wait every thread sees every other's chunks.
__global__ void __launch_bounds__(device::kMaxThreads)
    system_scope_kernel(const std::uint32_t* __restrict__ in, std::uint32_t* out, std::size_t n,
                        std::uint32_t* report, unsigned) {
  __shared__ device::SystemBarrier block_barrier;  // initialised below, by one thread
  const auto block = cooperative_groups::this_thread_block();
  if (block.thread_rank() == 0) init(&block_barrier, block.size());
  block.sync();

  const std::size_t batch = batch_elements(blockDim.x);
  const std::size_t batches = course::batches::batch_count(n, batch);
  const std::size_t mine = course::batches::batches_of_block(batches, blockIdx.x, gridDim.x);
  for (std::size_t k = 0; k < mine; ++k) {
    const course::batches::Batch b = course::batches::batch_of_block(k, batch, n);
    std::uint32_t* staged = out + b.first;  // global memory
    copy_batch<Copy::aligned>(block, staged, in, b, batch, block_barrier,
                              device::report_for(report, b, batch));
    block_barrier.arrive_and_wait();  // every thread's chunks are written and visible

    // In place: a thread must not store a result over an element another thread still has
    // to read, so results go to registers until the second phase.
    std::uint32_t results[kElementsPerThread] = {};
#pragma unroll
    for (int e = 0; e < kElementsPerThread; ++e) {
      const std::size_t i = static_cast<std::size_t>(e) * blockDim.x + threadIdx.x;
      if (i < b.count) {
        results[e] = course::workload::combine(
            staged[i], staged[course::workload::partner_index(b.first + i, n) - b.first]);
      }
    }
    block_barrier.arrive_and_wait();  // nobody reads this batch any more
#pragma unroll
    for (int e = 0; e < kElementsPerThread; ++e) {
      const std::size_t i = static_cast<std::size_t>(e) * blockDim.x + threadIdx.x;
      if (i < b.count) staged[i] = results[e];
    }
    // The next batch is another range of `out`: no sync needed before copying it.
  }
}

// ---- Dispatch ----------------------------------------------------------------------------

using KernelFunction = void (*)(const std::uint32_t*, std::uint32_t*, std::size_t, std::uint32_t*,
                                unsigned);

constexpr const char* kWhere = "cuda_barrier::copy_and_compute";

KernelFunction kernel_function(Kernel kernel, int stages) {
  switch (kernel) {
    case Kernel::one_stage_words:
      return one_stage_words_kernel;
    case Kernel::one_stage:
      return one_stage_kernel;
    case Kernel::custom_group:
      return custom_group_kernel;
    case Kernel::two_buffers:
      return two_buffers_kernel;
    case Kernel::system_scope:
      return system_scope_kernel;
    case Kernel::multi_stage:
      return course::with_stage_count<kMinStages, kMaxStages>(stages, [](auto s) -> KernelFunction {
        return multi_stage_kernel<decltype(s)::value, true>;
      });
    case Kernel::multi_stage_no_release:
      return course::with_stage_count<kMinStages, kMaxStages>(stages, [](auto s) -> KernelFunction {
        return multi_stage_kernel<decltype(s)::value, false>;
      });
  }
  throw std::invalid_argument(std::string(kWhere) + ": unknown kernel");
}

/// The stage counts `kernel` takes; std::invalid_argument (naming `where`) for any other.
void require_stages(Kernel kernel, int stages, const char* where) {
  if (is_multi_stage(kernel)) {
    course::require(stages >= kMinStages && stages <= kMaxStages, where,
                    std::string(kernel_name(kernel)) + " takes " + std::to_string(kMinStages) +
                        ".." + std::to_string(kMaxStages) + " stages, got " +
                        std::to_string(stages));
  } else {
    course::require(
        stages == 1, where,
        std::string(kernel_name(kernel)) + " has one stage, got " + std::to_string(stages));
  }
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

/// Lets `f` use `shared` bytes of dynamic shared memory (beyond 48 KB a kernel must opt in).
void allow_shared(KernelFunction f, std::size_t shared) {
  COURSE_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(f),
                                    cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(shared)));
}

}  // namespace

const char* contract_name(std::uint32_t value) {
  if (value == static_cast<std::uint32_t>(cuda::async_contract_fulfillment::none)) return "none";
  if (value == static_cast<std::uint32_t>(cuda::async_contract_fulfillment::async)) return "async";
  if (value == kNotCalled) return "not called";
  return "invalid";
}

const char* kernel_name(Kernel kernel) {
  switch (kernel) {
    case Kernel::one_stage_words:
      return "one_stage_words";
    case Kernel::one_stage:
      return "one_stage";
    case Kernel::custom_group:
      return "custom_group";
    case Kernel::two_buffers:
      return "two_buffers";
    case Kernel::system_scope:
      return "system_scope";
    case Kernel::multi_stage:
      return "multi_stage";
    case Kernel::multi_stage_no_release:
      return "multi_stage_no_release";
  }
  return "unknown";
}

static_assert(static_cast<std::uint32_t>(cuda::async_contract_fulfillment::none) != kNotCalled &&
                  static_cast<std::uint32_t>(cuda::async_contract_fulfillment::async) != kNotCalled,
              "the report's 'not called' marker must differ from both contract values");

course::Launch prepare_copy_and_compute(cuda::std::span<const std::uint32_t> in,
                                        cuda::std::span<std::uint32_t> out, Kernel kernel,
                                        LaunchShape shape, cuda::std::span<std::uint32_t> report,
                                        ReaderDelay delay, HoldBack hold) {
  course::require_copy_launch(kWhere, in.size(), out.size(), shape.blocks, shape.threads_per_block);
  require_stages(kernel, shape.stages, kWhere);
  course::require(aligned16(in.data()) && aligned16(out.data()), kWhere,
                  "the aligned copies and vector accesses need 16-byte aligned arrays");
  course::require(report.empty() || report.size() >= static_cast<std::size_t>(kReportSlots), kWhere,
                  "a report holds " + std::to_string(kReportSlots) + " elements, got " +
                      std::to_string(report.size()));
  course::require(delay.nanoseconds == 0 || is_multi_stage(kernel), kWhere,
                  "a reader delay is for the multi-stage kernels only");
  course::require(
      hold.nanoseconds == 0 || (!is_multi_stage(kernel) && kernel != Kernel::system_scope), kWhere,
      "a hold-back is for the one-stage kernels only");
  if (in.empty()) return [](cudaStream_t) {};

  const KernelFunction f = kernel_function(kernel, shape.stages);
  const std::size_t shared = shared_bytes(kernel, shape.threads_per_block, shape.stages);
  int device = 0;
  int optin = 0;
  cudaFuncAttributes attributes{};
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  COURSE_CHECK(cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(f)));
  course::require(
      shared + attributes.sharedSizeBytes <= static_cast<std::size_t>(optin), kWhere,
      std::to_string(shape.stages) + " stage(s) of " +
          std::to_string(batch_elements(shape.threads_per_block) * sizeof(std::uint32_t)) +
          " bytes do not fit the " + std::to_string(optin) +
          " bytes of shared memory a block may have");
  allow_shared(f, shared);

  const std::uint32_t* src = in.data();
  std::uint32_t* dst = out.data();
  const std::size_t n = in.size();
  std::uint32_t* slots = report.empty() ? nullptr : report.data();
  const unsigned delay_ns =
      delay.nanoseconds + course::batches::hold_back_nanoseconds(hold);  // one of them is 0
  return [f, shape, shared, src, dst, n, slots, delay_ns](cudaStream_t stream) {
    f<<<shape.blocks, shape.threads_per_block, shared, stream>>>(src, dst, n, slots, delay_ns);
    COURSE_CHECK_LAUNCH();
  };
}

void copy_and_compute(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out,
                      Kernel kernel, LaunchShape shape, cudaStream_t stream,
                      cuda::std::span<std::uint32_t> report) {
  prepare_copy_and_compute(in, out, kernel, shape, report)(stream);
}

int max_blocks_per_sm(Kernel kernel, int threads_per_block, int stages) {
  require_stages(kernel, stages, "cuda_barrier::max_blocks_per_sm");
  const KernelFunction f = kernel_function(kernel, stages);
  const std::size_t shared = shared_bytes(kernel, threads_per_block, stages);
  allow_shared(f, shared);  // the occupancy query honours the opt-in
  int blocks = 0;
  COURSE_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, threads_per_block, shared));
  return blocks;
}

}  // namespace cuda_barrier
