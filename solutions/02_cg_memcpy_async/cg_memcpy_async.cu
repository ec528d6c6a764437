// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
//
// Lesson 02: copy and compute with cooperative groups' asynchronous copy.
//
// Lesson 01 staged every batch global -> register -> shared memory, each thread its own
// share, then waited at a barrier. Here the whole block makes ONE collective call per batch
// instead: on sm_80 and later the hardware (cp.async, LDGSTS in SASS) moves the bytes from
// global memory straight into shared memory, and the threads go on at once. The data has
// not arrived when the call returns; a separate wait says when this thread's copies have,
// and a barrier when everybody's have.
//
// Each thread counts its copies in commit groups, one group per collective copy, and a wait
// may either cover all of them or leave the newest ones in flight. That is what the second
// kernel is built on:
//   single_buffer_kernel     one buffer: the block waits for each batch straight after
//                            starting its copy. Asynchronous in name only.
//   double_buffered_kernel   two buffers: the copy of the next batch is in flight while the
//                            current one is waited for and computed, so one block overlaps
//                            its own copies with its own compute. The price: a buffer must
//                            not be refilled while any thread still reads it.
// Both kernels start every copy through the function of TODO 1, so one batch is always one
// group. They run at lesson 01's two granularities: fine = 4 bytes per thread per batch,
// coarse = 64 bytes per thread per batch, whose full batches can move 16 bytes per
// instruction once the copy is promised the alignment that takes. The batches and the
// compute step are lesson 01's (course/batches.cuh, register_staged::compute_batch). The
// README's concept sections teach the calls; the TODOs say what must hold.
#include "cg_memcpy_async.cuh"

#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/barrier>  // the 16-byte alignment promise: cooperative groups do not declare it

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

/// Starts the copy of one batch of `count` elements (`batch` when it is full, fewer for the
/// input's last batch) into shared memory. Every thread of the block calls it with the same
/// arguments; it returns before the data has arrived, and leaves one new group per thread.
template <Granularity G>
__device__ void copy_batch_async(const cg::thread_block& block, std::uint32_t* shared,
                                 const std::uint32_t* batch_in, std::size_t count,
                                 std::size_t batch) {
  // TODO 1: with a cooperative-groups copy made by the whole block, start the copy of
  //         batch_in[0, count) to shared[0, count) and return before it has arrived.
  //         Afterwards, on whichever path the function took:
  //         - each thread of the block has committed exactly ONE new group (the kernels
  //           count batches by groups: a second group per batch breaks their waits);
  //         - no element at or past batch_in[count] is read;
  //         - a full coarse batch has moved in 16-byte copies (the launcher has checked
  //           that both arrays are 16-byte aligned); fine batches and the input's last,
  //           partial batch (any size) in 4-byte ones.
  //         Budget: one copy call on any path through the function.
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
  const course::batches::TestHooks hooks{hold_ns};  // nothing outside the tests
  // uint4 so that the buffer is 16-byte aligned, as 16-byte cp.async requires.
  extern __shared__ uint4 shared_storage[];
  std::uint32_t* shared = reinterpret_cast<std::uint32_t*>(shared_storage);  // (batch) uint32
  const cg::thread_block block = cg::this_thread_block();

  const std::size_t batch = batch_elements(G, blockDim.x);
  hooks.poison(shared, batch * sizeof(std::uint32_t));
  // Block b owns batches b, b + gridDim.x, ...: every thread of a block runs the same
  // iterations, so the collective calls below are reached by the whole block.
  const std::size_t mine = batches_of_this_block(n, batch);
  for (std::size_t k = 0; k < mine; ++k) {
    const Batch b = batch_of_block(k, batch, n);

    hooks.before_copy();
    // in[b.first + i] : (b.count) -> shared[i] : (batch)
    copy_batch_async<G>(block, shared, in + b.first, b.count, batch);

    // TODO 2: when this step ends, the whole batch has arrived in shared memory and every
    //         thread can read all of it, also the elements other threads copied: nothing
    //         of this batch is left in flight (this takes the place of lesson 01's first
    //         __syncthreads). Budget: one cooperative-groups wait, one line.
    // BEGIN SOLUTION
    cg::wait(block);  // cp.async.wait_group 0 (my copies are done), then block.sync()
    // END SOLUTION

    hooks.before_read();
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
  const course::batches::TestHooks hooks{hold_ns};  // nothing outside the tests
  extern __shared__ uint4 shared_storage[];
  // Two buffers of `batch` elements, back to back: buffer j starts at buffers + j * batch.
  // buffers[j * batch + i] : (2, batch) uint32
  std::uint32_t* buffers = reinterpret_cast<std::uint32_t*>(shared_storage);
  const cg::thread_block block = cg::this_thread_block();

  const std::size_t batch = batch_elements(G, blockDim.x);
  const std::size_t mine = batches_of_this_block(n, batch);
  hooks.poison(buffers, 2 * batch * sizeof(std::uint32_t));
  hooks.before_copy();

  // TODO 3: when the loop starts, the copy of this block's first batch (if the block owns
  //         one) is in flight into buffer 0: started, and not waited for. A block that
  //         owns no batch starts no copy. Like every copy of this file it is one group per
  //         thread (TODO 1).
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
    hooks.before_copy();

    // TODO 4: when this step ends, batch k has arrived in `current` and every thread can
    //         read all of it. If the block owns a next batch, its copy into `other` was
    //         started here BEFORE the wait for batch k (so it is in flight during that wait
    //         too) and is still in flight: the wait must not cover it. If there is no next
    //         batch, nothing of batch k may be left in flight. Every thread of the block
    //         takes the same path (the copy and the wait are collective). Budget: at most
    //         one batch copy and exactly one cooperative-groups wait on each path.
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
    hooks.before_read();
    compute_batch<G>(current, out, b, batch, n);

    // TODO 5: the next iteration starts a copy into the buffer this one has just read
    //         (batch k + 2 goes where batch k was). No thread may start that copy while
    //         another thread still reads `current`. Budget: one line, no copy, no wait
    //         for copies.
    // BEGIN SOLUTION
    block.sync();  // the sync inside wait_prior comes after the copy is started: too late
    // END SOLUTION
  }
}

}  // namespace
}  // namespace cg_memcpy_async
