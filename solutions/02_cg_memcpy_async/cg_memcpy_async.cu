// Lesson 02: copy and compute with cooperative_groups::memcpy_async.
//
// Lesson 01 staged every batch global -> register -> shared memory, each thread its own
// share, then waited at a barrier. This file replaces that staging with ONE call made by
// the whole block:
//
//   cooperative_groups::memcpy_async(block, shared, global, bytes);   // start the copy
//   cooperative_groups::wait(block);                                  // it has landed
//
// On sm_80 and later the copy compiles to cp.async (LDGSTS in SASS): data goes from
// global memory straight into shared memory without passing through registers, and the
// instruction returns at once. Each calling thread ends its part of the copy with
// cp.async.commit_group, so every memcpy_async call is one "group" per thread; wait is
// cp.async.wait_group 0 (all my groups done) followed by block.sync() (everybody's done).
//
// Two kernels:
//   single_buffer_kernel     one buffer: copy, wait, compute, sync. Asynchronous in name
//                            only: the block waits for the copy straight away.
//   double_buffered_kernel   two buffers: start the copy of batch k+1, wait_prior<1> (all
//                            groups but the newest, i.e. batch k), compute batch k, sync.
//                            The copy of k+1 is in flight while batch k is computed.
// Both at two granularities (lesson 01's): fine = 4 bytes per thread per batch (4-byte
// cp.async), coarse = 64 bytes per thread per batch (16-byte cp.async through
// cuda::aligned_size_t<16>).
#include "cg_memcpy_async.cuh"

#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/barrier>  // cuda::aligned_size_t: the cooperative groups headers do not declare it

#include <stdexcept>
#include <string>

#include "course/check.h"
#include "course/workload.h"

namespace cg_memcpy_async {
namespace {

namespace cg = cooperative_groups;
using course::workload::combine_elements;
using course::workload::combine_vectors;
using course::workload::mirror_vector;

/// Elements of the batch that starts at `first`: `batch`, or fewer for the last batch.
__device__ std::size_t elements_in_batch(std::size_t first, std::size_t batch, std::size_t n) {
  return n - first < batch ? n - first : batch;
}

/// Starts the copy of one batch of `count` elements into shared memory. Every thread of
/// the block calls it with the same arguments; it returns before the data has arrived.
/// Each thread's share of the copy becomes one cp.async group (memcpy_async commits it).
template <Granularity G>
__device__ void copy_batch_async(const cg::thread_block& block, std::uint32_t* shared,
                                 const std::uint32_t* batch_in, std::size_t count,
                                 std::size_t batch) {
  // TODO 1: start the copy of this batch with ONE cooperative_groups::memcpy_async call
  //         made by the whole block. Its size is in BYTES. A full coarse batch may promise
  //         16-byte alignment and a size that is a multiple of 16 with
  //         cuda::aligned_size_t<16>(bytes), which turns every 4-byte copy into a 16-byte
  //         one (cp.async.cg ... 16). Anything else (fine batches, and the last, partial
  //         batch, whose size need not be a multiple of 16 bytes) copies `count` uint32_t
  //         with a plain byte count: 4-byte copies, since the pointers are uint32_t*.
  // BEGIN SOLUTION
  if (G == Granularity::coarse && count == batch) {
    // Only true promises: the launcher checked that both arrays are 16-byte aligned, and
    // a full coarse batch is threads x 64 bytes, so every batch starts 16-byte aligned.
    cg::memcpy_async(block, shared, batch_in,
                     cuda::aligned_size_t<16>(batch * sizeof(std::uint32_t)));
  } else {
    cg::memcpy_async(block, shared, batch_in, count * sizeof(std::uint32_t));
  }
  // STARTER: (void)block; (void)shared; (void)batch_in; (void)count; (void)batch;
  // END SOLUTION
}

/// Computes the outputs of one staged batch (the same compute step as lesson 01).
/// `first` is the batch's first global index and `n` the input size; a batch holds whole
/// 32-element groups, so every partner of an element lies in the same batch.
template <Granularity G>
__device__ void compute_batch(const std::uint32_t* shared, std::uint32_t* __restrict__ batch_out,
                              std::size_t first, std::size_t count, std::size_t batch,
                              std::size_t n) {
  if (G == Granularity::coarse && count == batch) {
    const uint4* shared4 = reinterpret_cast<const uint4*>(shared);
    uint4* out4 = reinterpret_cast<uint4*>(batch_out);
    // Vector v of thread t is vector v * blockDim.x + t: a warp reads 512 contiguous bytes.
#pragma unroll
    for (int v = 0; v < register_staged::kVectorsPerThread; ++v) {
      const unsigned vector = v * blockDim.x + threadIdx.x;
      // The partners of this vector's four elements fill one other vector, in reverse
      // order (course/workload.h); another thread staged it.
      out4[vector] = combine_vectors(shared4[vector], shared4[mirror_vector(vector)]);
    }
  } else {
    // Only the first `count` elements were copied: never read past them (the rest of the
    // buffer holds an older batch, or nothing at all).
    combine_elements(shared, batch_out, first, count, n, threadIdx.x, blockDim.x);
  }
}

/// Variant `single`: the Programming Guide's snippet. One buffer; per batch, start the
/// copy, wait for it, compute, and sync before the next copy may overwrite the buffer.
template <Granularity G>
__global__ void single_buffer_kernel(const std::uint32_t* __restrict__ in,
                                     std::uint32_t* __restrict__ out, std::size_t n) {
  // uint4 so that the buffer is 16-byte aligned, as 16-byte cp.async requires.
  extern __shared__ uint4 shared_storage[];
  std::uint32_t* shared = reinterpret_cast<std::uint32_t*>(shared_storage);
  const cg::thread_block block = cg::this_thread_block();

  const std::size_t batch = batch_elements(G, blockDim.x);
  const std::size_t batches = (n + batch - 1) / batch;
  // Blocks take batches in turn (a grid-stride loop over batches), so any grid size works.
  // Every thread of a block runs the same iterations: the collective calls below are
  // reached by the whole block.
  for (std::size_t b = blockIdx.x; b < batches; b += gridDim.x) {
    const std::size_t first = b * batch;
    const std::size_t count = elements_in_batch(first, batch, n);

    copy_batch_async<G>(block, shared, in + first, count, batch);

    // TODO 2: wait until the whole batch has landed in shared memory and is visible to
    //         every thread of the block (it replaces lesson 01's first __syncthreads).
    // BEGIN SOLUTION
    cg::wait(block);  // cp.async.wait_group 0 (my copies are done), then block.sync()
    // END SOLUTION

    compute_batch<G>(shared, out + first, first, count, batch, n);

    // Lesson 01's second barrier, unchanged: the next iteration's copy must not overwrite
    // shared memory that a slower thread of this block is still reading.
    block.sync();
  }
}

/// Variant `double_buffered`: two buffers. Batch k of this block (its k-th iteration)
/// lives in buffer k % 2. The copy of batch k+1 is started before batch k is computed,
/// so it is in flight during the wait for batch k and during its compute.
template <Granularity G>
__global__ void double_buffered_kernel(const std::uint32_t* __restrict__ in,
                                       std::uint32_t* __restrict__ out, std::size_t n) {
  extern __shared__ uint4 shared_storage[];
  // Two buffers of `batch` elements, back to back: buffer j starts at buffers + j * batch.
  std::uint32_t* buffers = reinterpret_cast<std::uint32_t*>(shared_storage);
  const cg::thread_block block = cg::this_thread_block();

  const std::size_t batch = batch_elements(G, blockDim.x);
  const std::size_t batches = (n + batch - 1) / batch;

  // TODO 3: before the loop, start the copy of this block's first batch (batch number
  //         blockIdx.x, if it exists) into buffer 0.
  // BEGIN SOLUTION
  if (blockIdx.x < batches) {
    const std::size_t first = blockIdx.x * batch;
    copy_batch_async<G>(block, buffers, in + first, elements_in_batch(first, batch, n), batch);
  }
  // END SOLUTION

  unsigned k = 0;  // how many batches this block has computed: batch b is in buffer k % 2
  for (std::size_t b = blockIdx.x; b < batches; b += gridDim.x, ++k) {
    const std::size_t first = b * batch;
    const std::size_t count = elements_in_batch(first, batch, n);
    std::uint32_t* current = buffers + (k % 2) * batch;
    std::uint32_t* other = buffers + ((k + 1) % 2) * batch;
    const std::size_t next = b + gridDim.x;  // this block's next batch

    // TODO 4: if this block has a next batch, start its copy into the other buffer, and
    //         then wait for the CURRENT batch only: cooperative_groups::wait_prior<1>
    //         waits for all of this thread's copy groups except the newest one (the next
    //         batch) and then syncs the block. On the last batch nothing newer was started,
    //         so wait for everything (cooperative_groups::wait).
    // BEGIN SOLUTION
    if (next < batches) {  // the same answer for every thread of the block
      const std::size_t next_first = next * batch;
      copy_batch_async<G>(block, other, in + next_first, elements_in_batch(next_first, batch, n),
                          batch);
      cg::wait_prior<1>(block);  // cp.async.wait_group 1, then block.sync()
    } else {
      cg::wait(block);  // cp.async.wait_group 0, then block.sync()
    }
    // STARTER: (void)other; (void)next;
    // END SOLUTION

    compute_batch<G>(current, out + first, first, count, batch, n);

    // TODO 5: the next iteration starts a copy into the buffer this one has just read
    //         (batch k+2 goes where batch k was). Make sure no thread starts that copy
    //         while another thread still reads this batch.
    // BEGIN SOLUTION
    block.sync();  // the sync inside wait_prior comes after the copy is started: too late
    // END SOLUTION
  }
}

template <Granularity G, Buffering B>
void launch(const std::uint32_t* in, std::uint32_t* out, std::size_t n, LaunchShape shape,
            cudaStream_t stream) {
  constexpr auto kernel =
      B == Buffering::single ? single_buffer_kernel<G> : double_buffered_kernel<G>;
  const std::size_t shared = shared_bytes(G, B, shape.threads_per_block);
  // Beyond 48 KB a kernel must opt in to more dynamic shared memory.
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(shared)));
  kernel<<<shape.blocks, shape.threads_per_block, shared, stream>>>(in, out, n);
  COURSE_CHECK_LAUNCH();
}

template <Granularity G, Buffering B>
int occupancy(int threads_per_block) {
  constexpr auto kernel =
      B == Buffering::single ? single_buffer_kernel<G> : double_buffered_kernel<G>;
  const std::size_t shared = shared_bytes(G, B, threads_per_block);
  // Without the opt-in the query reports 0 blocks for more than 48 KB of shared memory.
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(shared)));
  int blocks = 0;
  COURSE_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads_per_block, shared));
  return blocks;
}

void require(bool condition, const std::string& message) {
  if (!condition) throw std::invalid_argument("cg_memcpy_async::copy_and_compute: " + message);
}

}  // namespace

void copy_and_compute(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out,
                      Granularity granularity, Buffering buffering, LaunchShape shape,
                      cudaStream_t stream) {
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
            "coarse granularity promises aligned_size_t<16>: both arrays must be 16-byte "
            "aligned");
  }
  if (in.empty()) return;
  const bool fine = granularity == Granularity::fine;
  const bool single = buffering == Buffering::single;
  if (fine && single) {
    launch<Granularity::fine, Buffering::single>(in.data(), out.data(), in.size(), shape, stream);
  } else if (fine) {
    launch<Granularity::fine, Buffering::double_buffered>(in.data(), out.data(), in.size(), shape,
                                                          stream);
  } else if (single) {
    launch<Granularity::coarse, Buffering::single>(in.data(), out.data(), in.size(), shape, stream);
  } else {
    launch<Granularity::coarse, Buffering::double_buffered>(in.data(), out.data(), in.size(), shape,
                                                            stream);
  }
}

int max_blocks_per_sm(Granularity granularity, Buffering buffering, int threads_per_block) {
  const bool fine = granularity == Granularity::fine;
  const bool single = buffering == Buffering::single;
  if (fine && single) return occupancy<Granularity::fine, Buffering::single>(threads_per_block);
  if (fine) return occupancy<Granularity::fine, Buffering::double_buffered>(threads_per_block);
  if (single) return occupancy<Granularity::coarse, Buffering::single>(threads_per_block);
  return occupancy<Granularity::coarse, Buffering::double_buffered>(threads_per_block);
}

}  // namespace cg_memcpy_async
