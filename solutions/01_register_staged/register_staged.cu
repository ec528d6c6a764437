// Lesson 01: copy and compute through registers.
//
// The copy-and-compute pattern of the Programming Guide without memcpy_async: each block
// walks over batches of the input; for each batch it
//   1. copies the batch global -> registers -> shared memory (each thread its own part),
//   2. waits at a block-wide barrier until every thread's part has landed,
//   3. computes each output from two elements of the batch (its own and its partner,
//      which another thread staged) and writes the result to global memory,
//   4. waits at a second barrier before the next batch overwrites shared memory.
// Nothing overlaps: while a block copies it computes nothing, and while it computes it
// copies nothing. Only other resident blocks hide the latency (occupancy), which is why
// the driver measures this kernel at full occupancy and at one block per SM. Later
// lessons replace step 1 with asynchronous copies that overlap steps 2-4.
#include "register_staged.cuh"

#include <stdexcept>
#include <string>

#include "course/check.h"
#include "course/workload.h"

namespace register_staged {
namespace {

using course::workload::combine_elements;
using course::workload::combine_vectors;
using course::workload::mirror_vector;

/// Copies one batch of `count` elements into shared memory through registers.
/// A full batch at coarse granularity moves 16-byte vectors; anything else moves single
/// elements (the last batch of the input may be partial).
template <Granularity G>
__device__ void stage_batch(const std::uint32_t* __restrict__ batch_in, std::uint32_t* shared,
                            std::size_t count, std::size_t batch) {
  // TODO 1: copy this thread's share of the batch into shared memory, through registers.
  //         For a full coarse batch, load all kVectorsPerThread uint4 vectors first
  //         (vector v of thread t is vector v * blockDim.x + t: neighbouring threads read
  //         neighbouring 16 bytes, so a warp's loads coalesce) and only then store them,
  //         so four loads are in flight at once. Otherwise copy element by element,
  //         and only the first `count` elements.
  // BEGIN SOLUTION
  if (G == Granularity::coarse && count == batch) {
    const uint4* in4 = reinterpret_cast<const uint4*>(batch_in);
    uint4* shared4 = reinterpret_cast<uint4*>(shared);
    uint4 staged[kVectorsPerThread];  // the registers the pattern is named after
#pragma unroll
    for (int v = 0; v < kVectorsPerThread; ++v) staged[v] = in4[v * blockDim.x + threadIdx.x];
#pragma unroll
    for (int v = 0; v < kVectorsPerThread; ++v) shared4[v * blockDim.x + threadIdx.x] = staged[v];
  } else {
    for (std::size_t i = threadIdx.x; i < count; i += blockDim.x) shared[i] = batch_in[i];
  }
  // STARTER: (void)batch_in; (void)shared; (void)count; (void)batch;
  // END SOLUTION
}

/// Computes the outputs of one staged batch. `first` is the batch's first global index
/// and `n` the input size; a batch holds whole 32-element groups, so every partner of a
/// full batch lies in the same batch.
template <Granularity G>
__device__ void compute_batch(const std::uint32_t* shared, std::uint32_t* __restrict__ batch_out,
                              std::size_t first, std::size_t count, std::size_t batch,
                              std::size_t n) {
  if (G == Granularity::coarse && count == batch) {
    const uint4* shared4 = reinterpret_cast<const uint4*>(shared);
    uint4* out4 = reinterpret_cast<uint4*>(batch_out);
#pragma unroll
    for (int v = 0; v < kVectorsPerThread; ++v) {
      const unsigned vector = v * blockDim.x + threadIdx.x;
      // The partners of this vector's four elements fill one other vector, in reverse
      // order (course/workload.h); another thread staged it.
      out4[vector] = combine_vectors(shared4[vector], shared4[mirror_vector(vector)]);
    }
  } else {
    combine_elements(shared, batch_out, first, count, n, threadIdx.x, blockDim.x);
  }
}

template <Granularity G>
__global__ void register_staged_kernel(const std::uint32_t* __restrict__ in,
                                       std::uint32_t* __restrict__ out, std::size_t n) {
  // uint4 so that the shared array is 16-byte aligned for the vector accesses.
  extern __shared__ uint4 shared_storage[];
  std::uint32_t* shared = reinterpret_cast<std::uint32_t*>(shared_storage);

  const std::size_t batch = batch_elements(G, blockDim.x);
  const std::size_t batches = (n + batch - 1) / batch;
  // Blocks take batches in turn (a grid-stride loop over batches), so any grid size works.
  for (std::size_t b = blockIdx.x; b < batches; b += gridDim.x) {
    const std::size_t first = b * batch;
    const std::size_t count = n - first < batch ? n - first : batch;

    stage_batch<G>(in + first, shared, count, batch);

    // TODO 2: make every thread's staged elements visible to the whole block before any
    //         thread reads its partner's element.
    // BEGIN SOLUTION
    __syncthreads();
    // END SOLUTION

    compute_batch<G>(shared, out + first, first, count, batch, n);

    // TODO 3: keep the next iteration's copy from overwriting shared memory that a slower
    //         thread of this block is still reading.
    // BEGIN SOLUTION
    __syncthreads();
    // END SOLUTION
  }
}

template <Granularity G>
void launch(const std::uint32_t* in, std::uint32_t* out, std::size_t n, LaunchShape shape,
            cudaStream_t stream) {
  const std::size_t shared = shared_bytes(G, shape.threads_per_block);
  // Beyond 48 KB a kernel must opt in to more dynamic shared memory.
  COURSE_CHECK(cudaFuncSetAttribute(register_staged_kernel<G>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(shared)));
  register_staged_kernel<G><<<shape.blocks, shape.threads_per_block, shared, stream>>>(in, out, n);
  COURSE_CHECK_LAUNCH();
}

void require(bool condition, const std::string& message) {
  if (!condition) throw std::invalid_argument("register_staged::copy_and_compute: " + message);
}

}  // namespace

void copy_and_compute(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out,
                      Granularity granularity, LaunchShape shape, cudaStream_t stream) {
  require(in.size() == out.size(),
          "in has " + std::to_string(in.size()) + " elements, out " + std::to_string(out.size()));
  require(shape.threads_per_block >= 32 && shape.threads_per_block <= 1024 &&
              shape.threads_per_block % 32 == 0,
          "threads_per_block must be a multiple of 32 in [32, 1024], got " +
              std::to_string(shape.threads_per_block));
  require(shape.blocks >= 1, "blocks must be >= 1, got " + std::to_string(shape.blocks));
  if (granularity == Granularity::coarse) {
    require(reinterpret_cast<std::uintptr_t>(in.data()) % 16 == 0 &&
                reinterpret_cast<std::uintptr_t>(out.data()) % 16 == 0,
            "coarse granularity moves 16-byte vectors: both arrays must be 16-byte aligned");
  }
  if (in.empty()) return;
  if (granularity == Granularity::fine) {
    launch<Granularity::fine>(in.data(), out.data(), in.size(), shape, stream);
  } else {
    launch<Granularity::coarse>(in.data(), out.data(), in.size(), shape, stream);
  }
}

int max_blocks_per_sm(Granularity granularity, int threads_per_block) {
  int blocks = 0;
  const std::size_t shared = shared_bytes(granularity, threads_per_block);
  if (granularity == Granularity::fine) {
    COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &blocks, register_staged_kernel<Granularity::fine>, threads_per_block, shared));
  } else {
    COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &blocks, register_staged_kernel<Granularity::coarse>, threads_per_block, shared));
  }
  return blocks;
}

}  // namespace register_staged
