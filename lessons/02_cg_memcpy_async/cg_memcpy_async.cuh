/// \file cg_memcpy_async.cuh
/// \brief Lesson 02: the copy-and-compute workload with cooperative_groups::memcpy_async.
///
/// The API the driver (main.cu) and the tests call. The kernels live in
/// cg_memcpy_async.cu (the student's file: the starter in lessons/, the complete version in
/// solutions/); the launchers in cg_memcpy_async_launch.cu (read-only).
///
/// The batches, granularities and launch shapes are lesson 01's (register_staged.cuh), so
/// that every row of this lesson's table can be compared with lesson 01's kernel at the
/// same granularity: only *how* a batch reaches shared memory changes.
#pragma once

#include <cuda_runtime.h>
#include <cuda/std/span>

#include <cstddef>
#include <cstdint>

#include "course/batches.cuh"
#include "course/launch.h"
#include "register_staged.cuh"

namespace cg_memcpy_async {

/// fine: one uint32_t per thread per batch (256 threads: 1 KB batches), copied with
/// 4-byte cp.async; coarse: 64 bytes per thread per batch (256 threads: 16 KB batches),
/// copied with 16-byte cp.async. The same batch sizes as lesson 01.
using register_staged::Granularity;
/// Grid and block size of a launch (lesson 01's type).
using register_staged::LaunchShape;
/// Elements one block copies per batch: threads (fine) or threads x 16 (coarse).
using register_staged::batch_elements;

/// Tests only: how long the double-buffered kernel holds back the readers of a batch.
using course::batches::ReaderDelay;
/// Tests only: every warp of a block but one waits before it copies a batch and before it
/// reads one (course::batches::hold_back), so that a wait or sync that covers only its own
/// warp shows in the values. The default, 0 ns, holds nobody back.
using course::batches::HoldBack;

/// How many batches a block has in shared memory at once.
enum class Buffering {
  /// One buffer. Per batch: memcpy_async, cooperative_groups::wait, compute, block sync.
  /// The copy is asynchronous but nothing overlaps it: the block waits for it at once.
  single,
  /// Two buffers. The copy of the block's next batch is started before the current batch
  /// is computed, and the wait for the current batch leaves the next one in flight, so one
  /// block's copy overlaps its own compute.
  double_buffered,
};

/// Shared buffers a block uses: 1 or 2.
__host__ __device__ constexpr int buffer_count(Buffering buffering) {
  return buffering == Buffering::single ? 1 : 2;
}

/// Dynamic shared memory of one block: buffer_count() batches of uint32_t.
__host__ __device__ constexpr std::size_t shared_bytes(Granularity granularity, Buffering buffering,
                                                       int threads_per_block) {
  return static_cast<std::size_t>(buffer_count(buffering)) *
         batch_elements(granularity, threads_per_block) * sizeof(std::uint32_t);
}

static_assert(batch_elements(Granularity::coarse, 1) * sizeof(std::uint32_t) % 16 == 0,
              "a thread's share of a coarse batch must be whole 16-byte vectors: otherwise a "
              "full batch's end, the next batch's start, is not 16-byte aligned and the "
              "aligned_size_t<16> promise is false");
static_assert(shared_bytes(Granularity::coarse, Buffering::double_buffered, 1024) <= 163 * 1024,
              "two coarse batches of 1024 threads must fit the 163 KB a block may opt in to "
              "on sm_80, or the largest double-buffered blocks cannot launch there");

/// Validates the arguments and sets the kernel's shared-memory attribute, then returns the
/// launch: calling it with a stream runs the copy-and-compute workload (course/workload.h)
/// out[i] = combine(in[i], in[partner_index(i, n)]) for every i. Each block stages its
/// batches into shared memory with one cooperative_groups::memcpy_async per batch (a
/// single cp.async group per thread): 4-byte copies at fine granularity, 16-byte copies
/// for the full batches of coarse granularity. The last batch
/// of the input may be partial; it is copied with 4-byte copies.
///
/// Preconditions, checked before any CUDA call (std::invalid_argument otherwise):
/// `in` and `out` have the same size; 32 <= threads_per_block <= 1024 and a multiple of
/// 32; blocks >= 1; at coarse granularity both pointers are 16-byte aligned (the
/// 16-byte promise). For an empty input the launch does nothing.
///
/// `delay` is for tests only: the double-buffered kernel then holds back the threads that
/// read a staged batch before they read it (course::batches::hold_back_readers), so that a
/// refill started too early lands while they read.
course::Launch prepare_copy_and_compute(cuda::std::span<const std::uint32_t> in,
                                        cuda::std::span<std::uint32_t> out, Granularity granularity,
                                        Buffering buffering, LaunchShape shape,
                                        ReaderDelay delay = {}, HoldBack hold = {});

/// prepare_copy_and_compute(in, out, granularity, buffering, shape), launched at once on
/// `stream`.
void copy_and_compute(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out,
                      Granularity granularity, Buffering buffering, LaunchShape shape,
                      cudaStream_t stream);

/// The most blocks of `threads_per_block` threads one SM holds at once for this kernel
/// (cudaOccupancyMaxActiveBlocksPerMultiprocessor), given its shared memory.
int max_blocks_per_sm(Granularity granularity, Buffering buffering, int threads_per_block);

// ---- Defined in cg_memcpy_async.cu (your file) ---------------------------------------------
// Declared here for cg_memcpy_async_launch.cu, so that it compiles on its own
// (tools/compile_alone.py checks that it does); the build compiles your file and
// cg_memcpy_async_launch.cu as one unit, where the definitions are.
namespace {

/// Variant `single`: one buffer, the Programming Guide's snippet. `delay_ns` is the
/// double-buffered kernel's (the two share a signature).
template <Granularity G>
__global__ void single_buffer_kernel(const std::uint32_t* __restrict__ in,
                                     std::uint32_t* __restrict__ out, std::size_t n,
                                     unsigned delay_ns, unsigned hold_ns);
/// Variant `double`: two buffers, the copy of batch k + 1 in flight while batch k is computed.
template <Granularity G>
__global__ void double_buffered_kernel(const std::uint32_t* __restrict__ in,
                                       std::uint32_t* __restrict__ out, std::size_t n,
                                       unsigned delay_ns, unsigned hold_ns);

}  // namespace

}  // namespace cg_memcpy_async
