// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
//
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
// Both at lesson 01's two granularities: fine = 4 bytes per thread per batch (4-byte
// cp.async), coarse = 64 bytes per thread per batch (16-byte cp.async through
// cuda::aligned_size_t<16>). The batches and the compute step are lesson 01's
// (course/batches.cuh, register_staged::compute_batch).
#include "cg_memcpy_async.cuh"

#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/barrier>  // cuda::aligned_size_t: the cooperative groups headers do not declare it

#include "course/batches.cuh"

namespace cg_memcpy_async {
namespace {

namespace cg = cooperative_groups;
using course::batches::Batch;
using course::batches::batch_of_block;
using course::batches::hold_back_readers;
using register_staged::compute_batch;

/// How many batches of `batch` elements the calling block owns in an input of `n`.
__device__ std::size_t batches_of_this_block(std::size_t n, std::size_t batch) {
  return course::batches::batches_of_block(course::batches::batch_count(n, batch), blockIdx.x,
                                           gridDim.x);
}

/// Starts the copy of one batch of `count` elements (`batch` when it is full) into shared
/// memory. Every thread of the block calls it with the same arguments; it returns before
/// the data has arrived.
template <Granularity G>
__device__ void copy_batch_async(const cg::thread_block& block, std::uint32_t* shared,
                                 const std::uint32_t* batch_in, std::size_t count,
                                 std::size_t batch) {
  // TODO 1: start the copy of batch_in[0, count) to shared[0, count) and return without
  //         waiting for it. Afterwards each thread of the block has committed exactly ONE
  //         new cp.async group (the kernels count groups: wait_prior<1> must mean "all
  //         but the next batch"), and no byte at or past batch_in[count] is read. A full
  //         coarse batch must move in 16-byte copies; fine batches and the input's last,
  //         partial batch (its size need not be a multiple of 16 bytes) in 4-byte ones.
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

/// Variant `single`: the Programming Guide's snippet. One buffer; per batch, start the
/// copy, wait for it, compute, and sync before the next copy may overwrite the buffer.
template <Granularity G>
__global__ void single_buffer_kernel(const std::uint32_t* __restrict__ in,
                                     std::uint32_t* __restrict__ out, std::size_t n,
                                     unsigned /*delay_ns: the double-buffered kernel's*/,
                                     unsigned hold_ns) {
  // uint4 so that the buffer is 16-byte aligned, as 16-byte cp.async requires.
  extern __shared__ uint4 shared_storage[];
  std::uint32_t* shared = reinterpret_cast<std::uint32_t*>(shared_storage);  // (batch) uint32
  const cg::thread_block block = cg::this_thread_block();

  const std::size_t batch = batch_elements(G, blockDim.x);
  // Tests only (hold_ns > 0): course::batches::hold_back holds back every warp but one.
  course::batches::poison_shared(shared, batch * sizeof(std::uint32_t), hold_ns);
  // Block b owns batches b, b + gridDim.x, ...: every thread of a block runs the same
  // iterations, so the collective calls below are reached by the whole block.
  const std::size_t mine = batches_of_this_block(n, batch);
  for (std::size_t k = 0; k < mine; ++k) {
    const Batch b = batch_of_block(k, batch, n);

    course::batches::hold_back(hold_ns);  // tests only: every warp but one copies late
    // in[b.first + i] : (b.count) -> shared[i] : (batch)
    copy_batch_async<G>(block, shared, in + b.first, b.count, batch);

    // TODO 2: no thread may go on to the compute step before the whole batch has landed
    //         in shared memory and is visible to every thread of the block (this takes
    //         the place of lesson 01's first __syncthreads).
    // BEGIN SOLUTION
    cg::wait(block);  // cp.async.wait_group 0 (my copies are done), then block.sync()
    // END SOLUTION

    course::batches::hold_back(hold_ns);  // tests only: every warp but one reads late
    compute_batch<G>(shared, out, b, batch, n);

    // Lesson 01's second barrier, unchanged: the next iteration's copy must not overwrite
    // shared memory that a slower thread of this block is still reading.
    block.sync();
  }
}

/// Variant `double_buffered`: two buffers. The block's k-th batch lives in buffer k % 2.
/// The copy of batch k+1 is started before batch k is computed, so it is in flight during
/// the wait for batch k and during its compute.
template <Granularity G>
__global__ void double_buffered_kernel(const std::uint32_t* __restrict__ in,
                                       std::uint32_t* __restrict__ out, std::size_t n,
                                       unsigned delay_ns, unsigned hold_ns) {
  extern __shared__ uint4 shared_storage[];
  // Two buffers of `batch` elements, back to back: buffer j starts at buffers + j * batch.
  // buffers[j * batch + i] : (2, batch) uint32
  std::uint32_t* buffers = reinterpret_cast<std::uint32_t*>(shared_storage);
  const cg::thread_block block = cg::this_thread_block();

  const std::size_t batch = batch_elements(G, blockDim.x);
  const std::size_t mine = batches_of_this_block(n, batch);
  // Tests only (hold_ns > 0): course::batches::hold_back holds back every warp but one.
  course::batches::poison_shared(buffers, 2 * batch * sizeof(std::uint32_t), hold_ns);
  course::batches::hold_back(hold_ns);  // tests only: every warp but one copies late

  // TODO 3: when the loop starts, the copy of this block's first batch (if it owns one)
  //         must already be in flight, into buffer 0.
  // BEGIN SOLUTION
  if (mine > 0) {
    const Batch first = batch_of_block(0, batch, n);
    copy_batch_async<G>(block, buffers, in + first.first, first.count, batch);
  }
  // END SOLUTION

  for (std::size_t k = 0; k < mine; ++k) {
    const Batch b = batch_of_block(k, batch, n);
    std::uint32_t* current = buffers + (k % 2) * batch;      // buffers[k % 2, :] : (batch)
    std::uint32_t* other = buffers + ((k + 1) % 2) * batch;  // buffers[(k + 1) % 2, :] : (batch)
    course::batches::hold_back(hold_ns);  // tests only: every warp but one copies late

    // TODO 4: when this step ends, batch k has landed in `current` and is visible to every
    //         thread, and the copy of the block's next batch (k + 1, if it owns one) into
    //         `other` is in flight: started here, and NOT waited for.
    // BEGIN SOLUTION
    if (k + 1 < mine) {  // the same answer for every thread of the block
      const Batch next = batch_of_block(k + 1, batch, n);
      copy_batch_async<G>(block, other, in + next.first, next.count, batch);
      cg::wait_prior<1>(block);  // cp.async.wait_group 1, then block.sync()
    } else {
      cg::wait(block);  // cp.async.wait_group 0, then block.sync()
    }
    // STARTER: (void)other;
    // END SOLUTION

    hold_back_readers(current, batch, delay_ns);  // tests only: slows the readers down
    course::batches::hold_back(hold_ns);          // tests only: every warp but one reads late
    compute_batch<G>(current, out, b, batch, n);

    // TODO 5: the next iteration starts a copy into the buffer this one has just read
    //         (batch k+2 goes where batch k was). No thread may start that copy while
    //         another thread still reads this batch.
    // BEGIN SOLUTION
    block.sync();  // the sync inside wait_prior comes after the copy is started: too late
    // END SOLUTION
  }
}

}  // namespace
}  // namespace cg_memcpy_async
