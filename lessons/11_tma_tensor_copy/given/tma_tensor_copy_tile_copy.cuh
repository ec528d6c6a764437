// Lesson 11's tile copy kernel. Read-only: it puts your expect_bytes, load_box and
// store_box (TODOs 1-3 in tma_tensor_copy.cu) to work; tma_tensor_copy_device.cuh declares
// them. The build compiles tma_tensor_copy.cu, then tma_tensor_copy_launch.cu, which includes
// this file, as one unit, where your definitions are.
#pragma once

#include <cuda/ptx>

#include <cstdint>

#include "tma_tensor_copy.cuh"
#include "tma_tensor_copy_device.cuh"

namespace tma_tensor_copy {

/// Block b copies tiles b, b + gridDim.x, ... of a tiles_x-wide grid: load into stage
/// k % stages, wait, store, refill. One thread does all of it.
__global__ void tile_copy_kernel(const __grid_constant__ CUtensorMap in_map,
                                 const __grid_constant__ CUtensorMap out_map, int box_rows,
                                 int box_cols, int tiles_x, int tiles, int stages,
                                 bool poison_after_wait) {
#if __CUDA_ARCH__ >= 900
  extern __shared__ unsigned char dynamic_smem[];
  __shared__ std::uint64_t full[kMaxStages];
  if (threadIdx.x != 0) return;  // one thread drives every copy of this block
  // buffers[stage] : (stages) boxes of (box_rows, box_cols) floats, stage_bytes apart
  unsigned char* buffers = align_shared(dynamic_smem, kTmaAlignment);
  const std::uint32_t box_bytes = box_rows * box_cols * sizeof(float);
  const std::uint32_t stage_bytes = copy_stage_bytes(box_rows, box_cols);
  for (int s = 0; s < stages; ++s) ptx::mbarrier_init(&full[s], 1);
  ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // visible to the TMA

  const int mine = tiles > static_cast<int>(blockIdx.x)
                       ? (tiles - 1 - static_cast<int>(blockIdx.x)) / gridDim.x + 1
                       : 0;
  auto tile = [&](int k, int& row, int& col) {
    const int t = blockIdx.x + k * gridDim.x;
    row = t / tiles_x * box_rows;  // the (box_rows, box_cols) box at (row, col) of in,
    col = t % tiles_x * box_cols;  // tile t of (tiles / tiles_x, tiles_x)
  };
  auto issue = [&](int k) {
    int row, col;
    tile(k, row, col);
    const int s = k % stages;
    expect_bytes(&full[s], box_bytes);
    load_box(&in_map, buffers + s * stage_bytes, &full[s], row, col);
  };
  for (int k = 0; k < mine && k < stages; ++k) issue(k);
  for (int k = 0; k < mine; ++k) {
    const int s = k % stages;
    wait_phase(&full[s], (k / stages) & 1);
    int row, col;
    tile(k, row, col);
    store_box<2>(&out_map, buffers + s * stage_bytes, {col, row});
    if (k + stages < mine) {
      ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});  // the store has read stage s
      // Tests only (CopyConfig::poison_after_store_wait): the refill's writes, at once.
      poison_after_store_wait(buffers + s * stage_bytes, box_bytes, poison_after_wait);
      issue(k + stages);
    }
  }
  ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});  // shared memory outlives the reads
  for (int s = stages; s-- > 0;) {  // tests only: a store still reading would read poison
    poison_after_store_wait(buffers + s * stage_bytes, box_bytes, poison_after_wait);
  }
#else
  (void)poison_after_wait;
#endif
}

}  // namespace tma_tensor_copy
