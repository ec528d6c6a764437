/// \file tma_tensor_copy_device.cuh
/// \brief Lesson 11: device helpers the kernels share (read-only): shared-memory addresses,
/// the bounded mbarrier wait, and the multicast tensor load in inline PTX.
///
/// Included by the kernels' file (tma_tensor_copy.cu) and the launch file, one unit.
#pragma once

#include <cuda.h>
#include <cuda/ptx>

#include <cstdint>

#include "course/mbarrier.cuh"
#include "tma_tensor_copy.cuh"

namespace tma_tensor_copy {

namespace ptx = cuda::ptx;

/// A pointer's address in this block's shared-memory window (PTX's shared operands).
__device__ inline std::uint32_t smem_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

/// `p` moved up to the next shared-memory address that is a multiple of `alignment`.
__device__ inline unsigned char* align_shared(unsigned char* p, std::uint32_t alignment) {
  return p + (alignment - smem_address(p) % alignment) % alignment;
}

/// Waits until the phase of `bar` with parity `parity` has completed, with the course's
/// bounded wait (course/mbarrier.cuh). Why bounded: a missing copy, a byte count that does
/// not match what arrives, or a wrong parity leaves an mbarrier phase open for ever, and an
/// unbounded wait hangs the GPU until the test's timeout kills the process, with no hint.
/// Here a wait gives up after 2 s, is counted (take_wait_timeouts() reports it: the data is
/// wrong) and returns; once any wait gave up, later ones give up at once, so a broken
/// kernel ends quickly.
__device__ inline void wait_phase(std::uint64_t* bar, std::uint32_t parity) {
  (void)course::mbarrier::wait_parity(bar, parity);
}

/// Tests only (`on`): called right after a wait for the tensor stores, it overwrites the
/// `bytes` bytes (a multiple of 16) at `smem`, the stage the stores read, with poison (0xA5
/// bytes), the last 16-byte chunk first, then orders those writes before later tensor loads
/// into the stage (fence.proxy.async). Why: the wait (cp.async.bulk.wait_group.read 0) covers
/// only the stores committed into a bulk group before it. A store left out of every group
/// still reads its stage after the wait returns; racecheck cannot see that (the store reads
/// through the async proxy), and the values rarely show it, because the stage is written
/// again only when its next tile lands, long after. Here the stage is overwritten at once,
/// from the end a store reads last: a store still reading copies poison to global memory.
/// After a wait that covered every store, the poison is never read (the stage's next tile
/// overwrites it first, or the stage is not read again).
/// Out of line: its instructions stay out of the kernels' PTX, which the checks read.
__device__ __noinline__ inline void poison_stage_now(void* smem, std::uint32_t bytes) {
#if __CUDA_ARCH__ >= 900
  uint4* chunks = static_cast<uint4*>(smem);
  for (std::uint32_t c = bytes / 16; c-- > 0;) {
    chunks[c] = make_uint4(0xA5A5A5A5u, 0xA5A5A5A5u, 0xA5A5A5A5u, 0xA5A5A5A5u);
  }
  ptx::fence_proxy_async(ptx::space_shared);
#else
  (void)smem;
  (void)bytes;
#endif
}
__device__ inline void poison_after_store_wait(void* smem, std::uint32_t bytes, bool on) {
  if (on) poison_stage_now(smem, bytes);
}

/// cp.async.bulk.tensor with .multicast::cluster: the box lands at the same shared-memory
/// offset in every block of the cluster whose bit is set in `cta_mask`, and each of those
/// blocks' mbarrier at `bar`'s offset receives the bytes. Inline PTX: cuda::ptx offers this
/// form only for sm_90a, but plain sm_90 accepts it (ptxas adds an advisory that later
/// architectures may run it slower; the build silences that advisory).
__device__ inline void multicast_load_box(const CUtensorMap* map, void* smem, std::uint64_t* bar,
                                          int row, int col, std::uint16_t cta_mask) {
#if __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(smem_address(smem)),
      "l"(map), "r"(col), "r"(row), "r"(smem_address(bar)), "h"(cta_mask)
      : "memory");
#endif
}

// ---- Defined in tma_tensor_copy.cu (your file) -------------------------------------------
// Declared here for tma_tensor_copy_tile_copy.cuh and tma_tensor_copy_launch.cu, so that they
// compile on their own (tools/compile_alone.py checks that they do); the build compiles your
// file and tma_tensor_copy_launch.cu as one unit, where the definitions are.

namespace {
#if __CUDA_ARCH__ >= 900
/// TODO 1 (one thread): this phase of `bar` (initialised with one arrival) waits for `bytes`.
__device__ inline void expect_bytes(std::uint64_t* bar, std::uint32_t bytes);
/// TODO 2 (one thread): the box of `map` whose first element is (row, col) is on its way into
/// `smem`, its bytes counted on `bar`.
__device__ inline void load_box(const CUtensorMap* map, void* smem, std::uint64_t* bar, int row,
                                int col);
/// TODO 3 (one thread): the box in `smem` is on its way to `map` at `coords` (innermost first).
template <int Rank>
__device__ inline void store_box(const CUtensorMap* map, const void* smem,
                                 const std::int32_t (&coords)[Rank]);
#endif
}  // namespace

/// out = in^T, tile by tile through swizzled boxes (the layout S).
template <Swizzle S>
__global__ void __launch_bounds__(kTransposeThreads)
    transpose_kernel(const __grid_constant__ CUtensorMap in_map, float* __restrict__ out, int rows,
                     int cols, long long out_ld, int tiles_x, int tiles, int stages, int misalign);

/// Cluster c (of C blocks) handles tiles c, c + clusters, ...; every block of it needs the
/// whole tile: plain loads, or multicast loads (`multicast`), the plain ones out of step when
/// `stagger`.
__global__ void __launch_bounds__(kBroadcastThreads)
    broadcast_kernel(const __grid_constant__ CUtensorMap tile_map,
                     const __grid_constant__ CUtensorMap slice_map,
                     const __grid_constant__ CUtensorMap out_map, int tiles_x, int tiles,
                     int stages, bool multicast, bool stagger, bool poison_after_wait);

}  // namespace tma_tensor_copy
