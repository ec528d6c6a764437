// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
//
// Lesson 01: copy and compute through registers.
//
// The copy-and-compute pattern of the Programming Guide without memcpy_async: each block
// walks over its batches of the input; for each batch it
//   1. copies the batch global -> registers -> shared memory (each thread its own part),
//   2. waits at a block-wide barrier until every thread's part has landed,
//   3. computes each output from two elements of the batch (its own and its partner,
//      which another thread staged) and writes the result to global memory,
//   4. waits at a second barrier before the next batch overwrites shared memory.
// Nothing overlaps: while a block copies it computes nothing, and while it computes it
// copies nothing. Only other resident blocks hide the latency (occupancy), which is why
// the driver measures this kernel at full occupancy and at one block per SM. Later
// lessons replace step 1 with asynchronous copies that overlap steps 2-4.
//
// Shapes, for 256 threads (course/batches.cuh):
//   fine    batch = 256 threads x 1 uint32                     =  256 elements =  1 KB
//   coarse  batch = 256 threads x 4 vectors x 4 uint32         = 4096 elements = 16 KB
//           vector v of thread t = 16-byte vector v * 256 + t of the batch
#include "register_staged.cuh"

#include "course/batches.cuh"

namespace register_staged {
namespace {

using course::batches::Batch;

/// Copies one batch of `count` elements (`batch` when it is full) into shared memory
/// through registers, each thread its share.
template <Granularity G>
__device__ void stage_batch(const std::uint32_t* __restrict__ batch_in, std::uint32_t* shared,
                            std::size_t count, std::size_t batch) {
  // TODO 1: afterwards shared[i] == batch_in[i] for every i < count once every thread of
  //         the block has run this, and nothing at or past batch_in[count] was read. Each
  //         element goes global -> register -> shared. A full coarse batch must move
  //         16-byte vectors (vector v of thread t is vector v * blockDim.x + t, so a
  //         warp's accesses coalesce) with all of this thread's kVectorsPerThread loads
  //         issued before its first store; fine batches and the input's last, partial
  //         batch may move single elements.
  // BEGIN SOLUTION
  if (G == Granularity::coarse && count == batch) {
    const uint4* in4 = reinterpret_cast<const uint4*>(batch_in);
    uint4* shared4 = reinterpret_cast<uint4*>(shared);
    uint4 staged[kVectorsPerThread];  // the registers the pattern is named after
#pragma unroll
    for (int v = 0; v < kVectorsPerThread; ++v)  // in4[v * T + t] : (V, T) -> staged[v] : (V)
      staged[v] = in4[v * blockDim.x + threadIdx.x];
#pragma unroll
    for (int v = 0; v < kVectorsPerThread; ++v)  // staged[v] : (V) -> shared4[v * T + t] : (V, T)
      shared4[v * blockDim.x + threadIdx.x] = staged[v];
  } else {
    // shared[i] : (count), i = t, t + T, ... : one uint32 per thread and step
    for (std::size_t i = threadIdx.x; i < count; i += blockDim.x) shared[i] = batch_in[i];
  }
  // STARTER: (void)batch_in; (void)shared; (void)count; (void)batch;
  // END SOLUTION
}

/// The register-staged copy-and-compute kernel: out[i] = combine(in[i], in[partner]) for
/// every i < n, batch by batch through `batch_elements(G, blockDim.x)` elements of dynamic
/// shared memory. `hold_ns` is for tests only (0 otherwise): course::batches::hold_back.
template <Granularity G>
__global__ void register_staged_kernel(const std::uint32_t* __restrict__ in,
                                       std::uint32_t* __restrict__ out, std::size_t n,
                                       unsigned hold_ns) {
  // uint4 so that the shared array is 16-byte aligned for the vector accesses.
  // shared[i] : (batch) uint32, batch = T (fine) or V * T * 4 (coarse); T = blockDim.x
  extern __shared__ uint4 shared_storage[];
  std::uint32_t* shared = reinterpret_cast<std::uint32_t*>(shared_storage);

  const std::size_t batch = batch_elements(G, blockDim.x);
  course::batches::poison_shared(shared, batch * sizeof(std::uint32_t), hold_ns);  // tests only
  // Block b owns batches b, b + gridDim.x, ... (any grid size works). The count depends
  // only on the block, so every thread of it reaches the same barriers.
  const std::size_t mine = course::batches::batches_of_block(course::batches::batch_count(n, batch),
                                                             blockIdx.x, gridDim.x);
  for (std::size_t k = 0; k < mine; ++k) {
    const Batch b = course::batches::batch_of_block(k, batch, n);

    course::batches::hold_back(hold_ns);  // tests only: every warp but one stages late
    stage_batch<G>(in + b.first, shared, b.count, batch);  // in[b.first + i] : (b.count)

    // TODO 2: no thread may go on to the compute step before every element that the
    //         block staged above is visible to it (it reads its partner's element,
    //         which another thread staged).
    // BEGIN SOLUTION
    __syncthreads();
    // END SOLUTION

    course::batches::hold_back(hold_ns);  // tests only: every warp but one reads late
    compute_batch<G>(shared, out, b, batch, n);

    // TODO 3: no thread may start the next batch's copy into shared memory while another
    //         thread of this block still reads the current batch there.
    // BEGIN SOLUTION
    __syncthreads();
    // END SOLUTION
  }
}

}  // namespace
}  // namespace register_staged
