/// \file pipeline_single_stage.cuh
/// \brief Lesson 05: a single-stage `cuda::pipeline`, at thread scope and at block scope.
///
/// The API the driver (main.cu) and the tests call. The kernels live in
/// pipeline_single_stage.cu (the student's file: the starter in lessons/, the complete
/// version in solutions/); the launchers in pipeline_single_stage_launch.cu (read-only).
///
/// Both kernels run the course's copy-and-compute workload (course/workload.h) in batches
/// of lesson 01's coarse granularity (threads x 4 vectors of 16 bytes: 16 KB at 256
/// threads), with one shared buffer, so one batch is either being copied or being computed,
/// never both. What differs is who tracks the copies:
///  - `Scope::thread`: `cuda::make_pipeline()` gives every thread its own pipeline (its own
///    sequence of cp.async groups). A thread's `consumer_wait()` covers only its own copies,
///    so the block needs `__syncthreads()` before it reads elements other threads copied,
///    and again before the next copy overwrites them.
///  - `Scope::block`: `cuda::make_pipeline(block, &state)` with a
///    `cuda::pipeline_shared_state<cuda::thread_scope_block, 1>` in shared memory: two
///    mbarriers (one stage) shared by the block. `consumer_wait()` returns only when every
///    thread's copies have landed, and `producer_acquire()` only when every thread has
///    released the previous batch: no `__syncthreads()` in the loop.
#pragma once

#include <cuda_runtime.h>
#include <cuda/std/span>

#include <cstddef>
#include <cstdint>

#include "course/batches.cuh"
#include "course/launch.h"
#include "register_staged.cuh"

namespace pipeline_single_stage {

/// Grid and block size of a launch (lesson 01's type).
using register_staged::LaunchShape;

/// Which kind of `cuda::pipeline` the kernel uses.
enum class Scope {
  /// `cuda::pipeline<cuda::thread_scope_thread>` from `cuda::make_pipeline()`: each thread
  /// copies its own 16-byte vectors with the non-group `cuda::memcpy_async` overload;
  /// `producer_commit` is `cp.async.commit_group`, `consumer_wait` is `cp.async.wait_group`.
  thread,
  /// `cuda::pipeline<cuda::thread_scope_block>` over a one-stage
  /// `cuda::pipeline_shared_state` in shared memory: the block copies each batch with the
  /// group overload and `cuda::aligned_size_t<16>`; completion goes through mbarriers.
  block,
};

/// "thread" or "block".
inline const char* name(Scope scope) { return scope == Scope::thread ? "thread" : "block"; }

/// 16-byte vectors each thread copies per full batch: lesson 01's coarse granularity.
inline constexpr int kVectorsPerThread = register_staged::kVectorsPerThread;

/// The largest block the launcher accepts; the kernels' __launch_bounds__ say so, which keeps
/// each of them within the 64 registers per thread that such a block may use.
inline constexpr int kMaxThreads = 1024;
static_assert(kMaxThreads % 32 == 0 && kMaxThreads <= 1024,
              "blocks are whole warps and at most 1024 threads, or the launch fails");

/// The pipeline's stage count: one shared buffer, one stage. A template argument of
/// `cuda::pipeline_shared_state` (a `uint8_t`); lesson 06 makes it larger.
inline constexpr int kStages = 1;
static_assert(kStages >= 1 && kStages <= 255,
              "pipeline_shared_state's stage count is a uint8_t of at least 1");

/// Elements one block stages per batch: threads x 4 vectors x 4 uint32 (4096 elements,
/// 16 KB, at 256 threads; course::batches::batch_elements). A multiple of 128, so a batch
/// holds whole 32-element groups.
__host__ __device__ constexpr std::size_t batch_elements(int threads_per_block) {
  return course::batches::batch_elements(threads_per_block, kVectorsPerThread);
}

/// Dynamic shared memory of one block: one batch of uint32_t (the pipeline's own shared
/// state, 24 bytes at block scope, is a static `__shared__` variable on top of this).
__host__ __device__ constexpr std::size_t shared_bytes(int threads_per_block) {
  return batch_elements(threads_per_block) * sizeof(std::uint32_t);
}

/// Bytes of `cuda::pipeline_shared_state<cuda::thread_scope_block, stages>` in CCCL 3.0.1:
/// per stage two 8-byte mbarriers ("produced", "consumed"), plus a 4-byte reference count,
/// padded to 8. The tests check this against sizeof().
__host__ __device__ constexpr std::size_t pipeline_shared_state_bytes(int stages) {
  return 16 * static_cast<std::size_t>(stages) + 8;
}

static_assert(batch_elements(1) * sizeof(std::uint32_t) % 16 == 0,
              "a thread's share of a batch must be whole 16-byte vectors: otherwise batch k "
              "does not start 16-byte aligned and the aligned_size_t<16> promise is false");
static_assert(shared_bytes(kMaxThreads) + pipeline_shared_state_bytes(kStages) <= 163 * 1024,
              "the batch and the pipeline state of the largest block must fit the 163 KB a "
              "block may opt in to on sm_80, or that block cannot launch there");

/// Tests only: every warp of a block but one waits before it copies a batch and before it
/// reads one (course::batches::hold_back), so that a wait or a sync that covers only its own
/// warp shows in the values. 0, the default, holds nobody back.
using course::batches::HoldBack;

/// Validates the arguments and sets the kernel's shared-memory attribute, then returns the
/// launch: calling it with a stream runs the copy-and-compute workload (course/workload.h)
/// out[i] = combine(in[i], in[partner_index(i, n)]) for every i, staging each batch in
/// shared memory through a single-stage `cuda::pipeline` of the given scope.
///
/// Preconditions, checked before any CUDA call (std::invalid_argument otherwise): `in` and
/// `out` have the same size; `scope` is a Scope; 32 <= threads_per_block <= 1024 and a
/// multiple of 32; blocks >= 1; both arrays are 16-byte aligned (the 16-byte copies and
/// `aligned_size_t<16>` promise it). For an empty input the launch does nothing.
course::Launch prepare_copy_and_compute(cuda::std::span<const std::uint32_t> in,
                                        cuda::std::span<std::uint32_t> out, Scope scope,
                                        LaunchShape shape, HoldBack hold = {});

/// prepare_copy_and_compute(in, out, scope, shape), launched at once on `stream`.
void copy_and_compute(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out,
                      Scope scope, LaunchShape shape, cudaStream_t stream);

/// The most blocks of `threads_per_block` threads one SM holds at once for the kernel of
/// `scope` (cudaOccupancyMaxActiveBlocksPerMultiprocessor), given its shared memory.
/// Throws std::invalid_argument for a block size copy_and_compute rejects.
int max_blocks_per_sm(Scope scope, int threads_per_block);

// ---- Defined in pipeline_single_stage.cu (your file) ---------------------------------------
// Declared here for pipeline_single_stage_launch.cu, so that it compiles on its own
// (tools/compile_alone.py checks that it does); the build compiles your file and
// pipeline_single_stage_launch.cu as one unit, where the definitions are.
namespace {

/// 1. A pipeline per thread: cuda::make_pipeline() without arguments.
__global__ void __launch_bounds__(kMaxThreads)
    thread_scope_kernel(const std::uint32_t* __restrict__ in, std::uint32_t* __restrict__ out,
                        std::size_t n, unsigned hold_ns);
/// 2. One pipeline for the block: cuda::make_pipeline(block, &state).
__global__ void __launch_bounds__(kMaxThreads)
    block_scope_kernel(const std::uint32_t* __restrict__ in, std::uint32_t* __restrict__ out,
                       std::size_t n, unsigned hold_ns);

}  // namespace

}  // namespace pipeline_single_stage
