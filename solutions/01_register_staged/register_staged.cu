// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
//
// Lesson 01: copy and compute through registers.
//
// The copy-and-compute pattern of the Programming Guide, without memcpy_async: each block
// walks over its batches of the input; for each batch every thread copies its share of it
// global -> registers -> shared memory, then the threads compute the batch's outputs from
// shared memory and write them to global memory. An output combines its element with a
// partner element that another thread may have staged, so the threads of a block hand data
// to each other through shared memory twice per batch: the stagers to the readers, and the
// readers back to the stagers of the next batch, who overwrite the same bytes. Each
// hand-over is a race unless the kernel orders it; ordering them is this lesson.
// Nothing overlaps: while a block copies it computes nothing, and while it computes it
// copies nothing. Only other resident blocks hide the latency (occupancy), which is why
// the driver measures this kernel at full occupancy and at one block per SM. Later
// lessons replace the register staging with asynchronous copies that overlap the rest.
//
// Shapes, for 256 threads (course/batches.cuh):
//   fine    batch = 256 threads x 1 uint32                     =  256 elements =  1 KB
//   coarse  batch = 256 threads x 4 vectors x 4 uint32         = 4096 elements = 16 KB
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
  // TODO 1: afterwards, once every thread of the block has run this, shared[i] ==
  //         batch_in[i] for every i < count, and nothing at or past batch_in[count] was
  //         read. Each element goes global -> register -> shared (no asynchronous copy).
  //         A full coarse batch moves 16-byte vectors, kVectorsPerThread per thread, with
  //         all of a thread's loads issued before its first store, and each load of a warp
  //         touches 32 neighbouring vectors (one coalesced 512-byte access); a fine batch
  //         and the input's last, partial batch may move single elements.
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
  const course::batches::TestHooks hooks{hold_ns};  // nothing outside the tests
  // uint4 so that the shared array is 16-byte aligned for the vector accesses.
  // shared[i] : (batch) uint32, batch = T (fine) or V * T * 4 (coarse); T = blockDim.x
  extern __shared__ uint4 shared_storage[];
  std::uint32_t* shared = reinterpret_cast<std::uint32_t*>(shared_storage);

  const std::size_t batch = batch_elements(G, blockDim.x);
  hooks.poison(shared, batch * sizeof(std::uint32_t));
  // Block b owns batches b, b + gridDim.x, ... (any grid size works). The count depends
  // only on the block, so every thread of it reaches the same barriers.
  const std::size_t mine = course::batches::batches_of_block(course::batches::batch_count(n, batch),
                                                             blockIdx.x, gridDim.x);
  for (std::size_t k = 0; k < mine; ++k) {
    const Batch b = course::batches::batch_of_block(k, batch, n);

    hooks.before_copy();
    stage_batch<G>(in + b.first, shared, b.count, batch);  // in[b.first + i] : (b.count)

    // TODO 2: no thread may go on to the compute step before every element that the
    //         block staged above is visible to it (it reads its partner's element, which
    //         another thread staged). One line.
    // BEGIN SOLUTION
    __syncthreads();
    // END SOLUTION

    hooks.before_read();
    compute_batch<G>(shared, out, b, batch, n);

    // TODO 3 (bug hunt): `./course check 01` fails: the held-back test
    //         (GpuRegisterStagedHeldBack) gets wrong values at coarse granularity, and
    //         racecheck run on your program reports a shared-memory hazard between the
    //         staging copy and the compute step. The code here compiles and looks
    //         reasonable, and it is wrong. Find out why and fix it: no thread of the block
    //         may start the next batch's copy into shared memory while any other thread of
    //         the block may still read the current batch there. The fix stays one line.
    // BEGIN SOLUTION
    __syncthreads();
    // STARTER: __syncwarp();
    // END SOLUTION
  }
}

}  // namespace
}  // namespace register_staged
