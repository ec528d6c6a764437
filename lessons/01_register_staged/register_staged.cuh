/// \file register_staged.cuh
/// \brief Lesson 01: copy and compute through registers (no asynchronous copy yet).
///
/// The API the driver (main.cu) and the tests call. The kernels live in
/// register_staged.cu (the student's file: the starter in lessons/, the complete version in
/// solutions/); the launchers in register_staged_launch.cu (read-only).
#pragma once

#include <cuda_runtime.h>
#include <cuda/std/span>

#include <cstddef>
#include <cstdint>

#include "course/batches.cuh"
#include "course/launch.h"
#include "course/workload.h"

namespace register_staged {

/// How much each thread copies per batch.
enum class Granularity {
  fine,    ///< one uint32_t per thread per batch, as in the Programming Guide's snippet
  coarse,  ///< kVectorsPerThread 16-byte vectors (uint4) per thread per batch
};

/// 16-byte vectors each thread stages per batch at coarse granularity: four loads in
/// flight per thread before the first store to shared memory.
inline constexpr int kVectorsPerThread = 4;
static_assert(course::batches::valid_vectors_per_thread(kVectorsPerThread),
              "coarse batches move 1, 2, 4 or 8 vectors per thread: other counts leave a batch "
              "that is not a whole number of 32-element partner groups");
static_assert(course::batches::batch_elements(32, kVectorsPerThread) * sizeof(std::uint32_t) %
                      16 == 0,
              "a coarse batch must be whole 16-byte vectors, or its uint4 accesses misalign");
static_assert(course::batches::batch_elements(1024, kVectorsPerThread) * sizeof(std::uint32_t) <=
                  163 * 1024,
              "a coarse batch of 1024 threads must fit the 163 KB of shared memory a block may "
              "opt in to on sm_80, or the largest blocks cannot launch there");

/// Grid and block size of a launch.
struct LaunchShape {
  int blocks = 0;
  int threads_per_block = 0;
};

/// Elements one block stages per batch: threads (fine) or threads x 16 (coarse,
/// course::batches::batch_elements). Always a multiple of 32 (whole groups).
__host__ __device__ constexpr std::size_t batch_elements(Granularity g, int threads_per_block) {
  return g == Granularity::fine
             ? static_cast<std::size_t>(threads_per_block)
             : course::batches::batch_elements(threads_per_block, kVectorsPerThread);
}

/// Dynamic shared memory of one block: one batch of uint32_t.
__host__ __device__ constexpr std::size_t shared_bytes(Granularity g, int threads_per_block) {
  return batch_elements(g, threads_per_block) * sizeof(std::uint32_t);
}

/// The compute step of one staged batch `b` at granularity `G`, shared by the whole block
/// (the caller synchronises before): a full coarse batch as 16-byte vectors
/// (course::batches::compute_batch), anything else element by element, so that fine
/// granularity needs only 4-byte aligned arrays. Lessons 01 and 02 use it.
template <Granularity G>
__device__ inline void compute_batch(const std::uint32_t* staged, std::uint32_t* __restrict__ out,
                                     course::batches::Batch b, std::size_t batch, std::size_t n) {
  if constexpr (G == Granularity::coarse) {
    course::batches::compute_batch(staged, out, b, batch, n);
  } else {
    course::workload::combine_elements(staged, out + b.first, b.first, b.count, n, threadIdx.x,
                                       blockDim.x);
  }
}

/// Tests only: every warp of a block but one waits before it stages a batch and before it
/// reads one (course::batches::hold_back), so that a barrier too narrow for what it must
/// order shows in the values. The default, 0 ns, holds nobody back.
using course::batches::HoldBack;

/// Validates the arguments and sets the kernel's shared-memory attribute, then returns the
/// launch: calling it with a stream runs the copy-and-compute workload (course/workload.h)
/// out[i] = combine(in[i], in[partner_index(i, n)]) for every i, staging each batch
/// global -> registers -> shared memory.
///
/// Preconditions, checked before any CUDA call (std::invalid_argument otherwise):
/// `in` and `out` have the same size; 32 <= threads_per_block <= 1024 and a multiple of
/// 32; blocks >= 1; at coarse granularity both pointers are 16-byte aligned.
/// For an empty input the launch does nothing.
course::Launch prepare_copy_and_compute(cuda::std::span<const std::uint32_t> in,
                                        cuda::std::span<std::uint32_t> out, Granularity granularity,
                                        LaunchShape shape, HoldBack hold = {});

/// prepare_copy_and_compute(in, out, granularity, shape), launched at once on `stream`.
void copy_and_compute(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out,
                      Granularity granularity, LaunchShape shape, cudaStream_t stream);

/// The most blocks of `threads_per_block` threads one SM holds at once for this kernel
/// (cudaOccupancyMaxActiveBlocksPerMultiprocessor), given its shared memory.
int max_blocks_per_sm(Granularity granularity, int threads_per_block);

// ---- Defined in register_staged.cu (your file) ---------------------------------------------
// Declared here for register_staged_launch.cu, so that it compiles on its own
// (tools/compile_alone.py checks that it does); the build compiles your file and
// register_staged_launch.cu as one unit, where the definitions are.
namespace {

/// The register-staged copy-and-compute kernel, at granularity G.
template <Granularity G>
__global__ void register_staged_kernel(const std::uint32_t* __restrict__ in,
                                       std::uint32_t* __restrict__ out, std::size_t n,
                                       unsigned hold_ns);

}  // namespace

}  // namespace register_staged
