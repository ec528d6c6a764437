/// \file batches.cuh
/// \brief How the copy-and-compute kernels of lessons 01-11 cut the input into batches,
/// compute a staged batch, and copy the input's last, partial batch without reading past it.
///
/// Written once here so that every lesson's exercise is only the part the lesson teaches.
/// Shapes, for 256 threads and 4 vectors per thread (lesson 01's coarse batches):
///
///   batch    = threads x vectors x 4 uint32 = 256 x 4 x 4 = 4096 elements = 16 KB
///   vector v of thread t = 16-byte vector v * threads + t of the batch (a warp's 32 threads
///                          touch 32 neighbouring vectors: one coalesced 512-byte access)
///   block b of a grid of g blocks owns batches b, b + g, b + 2g, ...
#pragma once

#include <cuda_pipeline_primitives.h>
#include <cuda_runtime.h>
#include <cuda/ptx>
#include <nv/target>

#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "course/workload.h"

namespace course::batches {

/// Elements of one batch of `threads` threads each moving `vectors_per_thread` 16-byte
/// vectors: always a multiple of 128, so a batch holds whole 32-element groups and every
/// partner (course/workload.h) of a full batch lies in the same batch.
__host__ __device__ constexpr std::size_t batch_elements(int threads, int vectors_per_thread) {
  return static_cast<std::size_t>(threads) * static_cast<std::size_t>(vectors_per_thread) * 4;
}

/// Whether a launcher accepts `vectors_per_thread` 16-byte vectors per thread and batch:
/// 1, 2, 4 or 8 (lessons 06-10 let the driver sweep this granularity).
__host__ __device__ constexpr bool valid_vectors_per_thread(int vectors_per_thread) {
  return vectors_per_thread == 1 || vectors_per_thread == 2 || vectors_per_thread == 4 ||
         vectors_per_thread == 8;
}

/// Batches of `batch` elements in an input of `n` elements (the last may be partial).
__host__ __device__ constexpr std::size_t batch_count(std::size_t n, std::size_t batch) {
  return (n + batch - 1) / batch;
}

/// How many of `batches` batches block `block` of `grid` owns. It depends only on the
/// block, never on the thread, so every thread of a block runs the same number of steps
/// (and reaches the same barriers).
__host__ __device__ constexpr std::size_t batches_of_block(std::size_t batches, unsigned block,
                                                           unsigned grid) {
  return block < batches ? (batches - 1 - block) / grid + 1 : 0;
}

/// Where one batch lies in the input.
struct Batch {
  std::size_t first;  ///< global index of its first element
  std::size_t count;  ///< valid elements: the batch size, or fewer for the input's last batch
};

/// The calling block's k-th batch (block b owns batches b, b + grid, ...).
__device__ inline Batch batch_of_block(std::size_t k, std::size_t batch, std::size_t n) {
  const std::size_t first = (blockIdx.x + k * gridDim.x) * batch;
  return {first, n - first < batch ? n - first : batch};
}

/// Computes the outputs of one staged batch, the threads of the block sharing the work:
/// thread `rank` of `threads` takes vectors rank, rank + threads, ... A full batch is read
/// and written as 16-byte vectors (the partners of a vector's four elements are one other
/// vector, in reverse order: course/workload.h); a partial batch element by element,
/// reading only its `count` valid elements. Every thread must see the whole staged batch:
/// the caller synchronises before.
__device__ inline void compute_batch(const std::uint32_t* staged, std::uint32_t* __restrict__ out,
                                     Batch b, std::size_t batch, std::size_t n, unsigned rank,
                                     unsigned threads) {
  if (b.count == batch) {
    const uint4* staged4 = reinterpret_cast<const uint4*>(staged);
    uint4* out4 = reinterpret_cast<uint4*>(out + b.first);
    for (std::size_t v = rank; v < batch / 4; v += threads) {
      out4[v] = workload::combine_vectors(staged4[v], staged4[workload::mirror_vector(v)]);
    }
  } else {
    workload::combine_elements(staged, out + b.first, b.first, b.count, n, rank, threads);
  }
}

/// compute_batch() shared by every thread of the block.
__device__ inline void compute_batch(const std::uint32_t* staged, std::uint32_t* __restrict__ out,
                                     Batch b, std::size_t batch, std::size_t n) {
  compute_batch(staged, out, b, batch, n, threadIdx.x, blockDim.x);
}

/// Tests only: how long hold_back_readers() holds the readers of a staged batch back. 0, the
/// default, holds nobody back; a lesson's launcher passes it to its kernel.
struct ReaderDelay {
  unsigned nanoseconds = 0;
};

/// Tests only (`delay_ns` > 0): the threads that compute_batch() makes read a full staged
/// batch of `batch` elements (ranks below batch / 4, one 16-byte vector each; with one
/// element per thread that is a quarter of the block) hold back before reading it, until
/// the first word they read changes or `delay_ns` nanoseconds have passed. The others have
/// nothing to read and run ahead into the next iteration. In a correct kernel nothing
/// refills a batch while it is read, so the readers wait the whole delay and compute the
/// right values; in a kernel that lets the runners refill the buffer too early, the refill
/// lands meanwhile and the readers read it.
__device__ inline void hold_back_readers(const std::uint32_t* staged, std::size_t batch,
                                         unsigned delay_ns) {
  if (delay_ns == 0 || threadIdx.x >= batch / 4) return;
  const volatile std::uint32_t* word = staged + 4 * threadIdx.x;  // its first vector
  const std::uint32_t seen = *word;
  const std::uint64_t start = cuda::ptx::get_sreg_globaltimer();
  while (*word == seen && cuda::ptx::get_sreg_globaltimer() - start < delay_ns) __nanosleep(256);
}

// ---- Tests only: warps held back, so that a barrier that is too narrow shows in the values --
//
// A block-wide barrier or wait that a kernel gets wrong (a __syncwarp where every warp of the
// block must wait, a wait that covers only this thread's own copies) is a race that the
// values rarely show: the warps of a block run close together, so the data another warp
// stages is usually there by the time it is read, and a refill usually lands after the
// slower readers have finished. Racecheck does not see every such race either (not those
// through the async proxy, nor a missing wait for cp.async). hold_back() takes the luck out:
// every warp of the block but one, the runner, waits at the points the kernel marks.
//  - Before it stages a batch: the runner then reads the batch long before the others have
//    written their part of it. A reader that waited for the whole block waits for them and
//    reads the batch; one that waited only for its own warp reads what the buffer held
//    before (poison_shared() at the start, or the previous batch): wrong values.
//  - Before it reads a staged batch: the runner then refills the buffer long before the
//    others have read what it holds. A refill that waited for every reader is harmless; one
//    that waited only for its own warp overwrites data the others have yet to read.
// Only a warp of one block can be the runner, and a race needs the runner on the right side
// of it, so the runner changes from block to block (warp blockIdx.x % warps): a test launches
// at least as many blocks as a block has warps. A correct kernel computes the right values,
// only later.
//
// The hooks exist only where COURSE_TEST_HOOKS is defined: in the copy of a lesson's kernels
// that its test programs link (cmake/CourseLesson.cmake, TEST_HOOKS). Anywhere else they are
// empty, so the lesson's program, its timings and the PTX and SASS the tests read are the
// kernels without them: even a branch that is never taken changes how the compiler allocates
// registers and schedules a loop, and with that the occupancy the lessons measure.

#if defined(COURSE_TEST_HOOKS)
/// Whether this unit's kernels carry the test-only hooks (hold_back(), poison_shared()).
inline constexpr bool kTestHooks = true;
#else
inline constexpr bool kTestHooks = false;
#endif

/// Tests only: how long hold_back() holds back every warp of a block but the runner. 0, the
/// default, holds nobody back; a lesson's launcher passes it to its kernel.
struct HoldBack {
  unsigned nanoseconds = 0;
};

/// What a launcher passes its kernel for `hold`: its nanoseconds, after checking that this
/// unit's kernels have the hooks to honour them. A hold-back asked of kernels without them
/// would hold nobody back, and the test that asked would pass without testing anything.
inline unsigned hold_back_nanoseconds(HoldBack hold) {
  if (hold.nanoseconds != 0 && !kTestHooks) {
    throw std::logic_error("HoldBack is for the test programs: these kernels were compiled "
                           "without COURSE_TEST_HOOKS");
  }
  return hold.nanoseconds;
}

/// The warp of the calling block that hold_back() never holds back: warp blockIdx.x % warps.
__device__ inline unsigned runner_warp() {
  const unsigned warps = (blockDim.x + 31) / 32;
  return blockIdx.x % warps;
}

/// The 32-bit word poison_shared() writes: the pattern of course::poison() (0xA5 bytes).
inline constexpr std::uint32_t kSharedPoison = 0xA5A5A5A5u;

/// Tests only (`delay_ns` > 0): every warp of the block but runner_warp() waits `delay_ns`
/// nanoseconds (the GPU's global timer). Call it with every thread at the same point.
__device__ __forceinline__ void hold_back(unsigned delay_ns) {
#if defined(COURSE_TEST_HOOKS)
  if (delay_ns == 0 || threadIdx.x / 32 == runner_warp()) return;
  const std::uint64_t start = cuda::ptx::get_sreg_globaltimer();
  while (cuda::ptx::get_sreg_globaltimer() - start < delay_ns) __nanosleep(256);
#else
  (void)delay_ns;
#endif
}

/// Tests only (`delay_ns` > 0, the hold_back() delay of the same launch): the whole block
/// fills `bytes` (a multiple of 4) of shared memory at `staging` with kSharedPoison, then
/// syncs, so that a batch read before its stagers wrote it reads poison, not whatever an
/// earlier block left there (which may be the right data, from an earlier launch). On sm_90
/// each thread also orders its poison before later bulk copies into the same bytes
/// (fence.proxy.async: they write through the async proxy). Every thread must call it,
/// before anything is staged.
__device__ __forceinline__ void poison_shared(void* staging, std::size_t bytes,
                                              unsigned delay_ns) {
#if defined(COURSE_TEST_HOOKS)
  if (delay_ns == 0) return;
  std::uint32_t* words = static_cast<std::uint32_t*>(staging);
  for (std::size_t i = threadIdx.x; i < bytes / 4; i += blockDim.x) words[i] = kSharedPoison;
  NV_IF_TARGET(NV_PROVIDES_SM_90, (cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);));
  // Barrier 0, __syncthreads()' own: a named barrier such as 15 would make every block
  // reserve 16 of the SM's hardware barriers and cap the blocks per SM at 4.
  __syncthreads();
#else
  (void)staging;
  (void)bytes;
  (void)delay_ns;
#endif
}

/// A kernel's test-only hooks: one named call at each point the tests need, made from the
/// launch's hold-back (0 outside the tests). Every call compiles to nothing without
/// COURSE_TEST_HOOKS, so a student's kernel reads as its data flow, one line per hook:
///   hooks.poison(staging, bytes)   before anything is staged (poison_shared())
///   hooks.before_copy()            every warp but the runner stages late (hold_back())
///   hooks.before_read()            every warp but the runner reads late (hold_back())
struct TestHooks {
  unsigned hold_ns = 0;

  __device__ __forceinline__ void poison(void* staging, std::size_t bytes) const {
    poison_shared(staging, bytes, hold_ns);
  }
  __device__ __forceinline__ void before_copy() const { hold_back(hold_ns); }
  __device__ __forceinline__ void before_read() const { hold_back(hold_ns); }
};

/// Zero-fill of one 16-byte chunk of a batch that holds `count` valid elements: how many of
/// the chunk's 16 bytes lie past the data (0 for a whole chunk, 16 for one entirely past
/// the end, 4, 8 or 12 for the chunk the input ends in).
__host__ __device__ constexpr std::size_t zero_fill_bytes(std::size_t count, std::size_t chunk) {
  const std::size_t first_element = chunk * 4;
  if (first_element >= count) return 16;
  const std::size_t valid = count - first_element;
  return valid >= 4 ? 0 : 16 - valid * sizeof(std::uint32_t);
}

/// Starts the asynchronous copy (cp.async through the pipeline primitives) of chunk `chunk`
/// of a *partial* batch of `count` valid elements at `src` into `dst`, zero-filling what
/// lies past the end, so that shared memory is fully written and no copy reads past the
/// input:
///  - a whole chunk is one 16-byte copy;
///  - a chunk entirely past the end copies nothing and writes 16 zero bytes (its source
///    only has to be a valid address: the batch's first chunk);
///  - the chunk the input ends in is copied word by word, the words past the end
///    zero-filled. (A 16-byte copy with a zero fill is legal PTX, but compute-sanitizer's
///    memcheck counts all 16 bytes as read past the end of the allocation.)
/// The copies join the calling thread's current cp.async group: commit it afterwards.
__device__ inline void copy_tail_chunk_zero_fill(uint4* dst, const uint4* src, std::size_t chunk,
                                                 std::size_t count) {
  const std::size_t zfill = zero_fill_bytes(count, chunk);
  if (zfill == 0 || zfill == sizeof(uint4)) {
    __pipeline_memcpy_async(dst + chunk, zfill == 0 ? src + chunk : src, sizeof(uint4), zfill);
    return;
  }
  std::uint32_t* words = reinterpret_cast<std::uint32_t*>(dst + chunk);
  const std::uint32_t* src_words = reinterpret_cast<const std::uint32_t*>(src + chunk);
  const std::size_t valid = (sizeof(uint4) - zfill) / sizeof(std::uint32_t);
  for (std::size_t w = 0; w < sizeof(uint4) / sizeof(std::uint32_t); ++w) {
    const bool inside = w < valid;
    __pipeline_memcpy_async(words + w, inside ? src_words + w : src_words, sizeof(std::uint32_t),
                            inside ? 0 : sizeof(std::uint32_t));
  }
}

}  // namespace course::batches
