// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
//
// Lesson 15: the two asynchronous rungs of the SGEMM ladder. Both compute rung 3's 128 x 256
// tile of C per block with the same 8 computing warps, the same arithmetic and the same
// stages in shared memory (an 8 x 128 tile of A^T and an 8 x 256 tile of B, capstone.cuh's
// StageBuffer); they differ only in who fills a stage, and in how the computing warps learn
// that a stage is ready and the filler that it is free again:
//   rung 4  the computing threads fill the stages themselves, several tiles ahead of the one
//           they compute, and the block meets once per tile (lessons 06 and 09)
//   rung 5  a producer warpgroup fills the stages while the computing warps compute; each
//           stage has its own barriers that say "ready" and "free", and the computing warps
//           never wait for each other (lessons 10-11)
// Part 2, at the end of the file, puts the GEMM inside a job that starts and ends on the host.
#include <cuda.h>  // CUtensorMap
#include <cuda/ptx>

#include "capstone.cuh"
#include "given/capstone_device.cuh"
#include "given/streamed.cuh"  // Part 2: issue_chunk() and what it works with

namespace capstone {
namespace {

// ---- Rung 4: a multi-stage cp.async pipeline ---------------------------------------------

template <bool Vec, int Stages>
__global__ void __launch_bounds__(kThreads, 1)
    sgemm_cp_async_kernel(int m, int n, int k, float alpha, const float* a, const float* b,
                          float beta, float* c) {
  extern __shared__ __align__(16) unsigned char dynamic_smem[];
  StageBuffer* stages = reinterpret_cast<StageBuffer*>(dynamic_smem);  // (Stages)
  const int t = threadIdx.x;
  // The block's (kTileM, kTileN) tile of C (m, n) at (m0, n0); its k-loop walks the
  // (kTileM, kTileK) tiles of A (m, k) at (m0, tile x kTileK) and the (kTileK, kTileN) tiles
  // of B (k, n) at (tile x kTileK, n0).
  const int m0 = blockIdx.y * kTileM, n0 = blockIdx.x * kTileN;
  const Place place = place_of(t);
  const int tiles = (k + kTileK - 1) / kTileK;
  Accumulators acc = {};
  const StageCopyPlan plan = plan_stage_copies(a, b, m, n, k, m0, n0, t);
  // Prologue: the first Stages - 1 tiles in flight, one commit group each (empty ones
  // included, so that the group count stays in step with the tile count).
#pragma unroll
  for (int s = 0; s < Stages - 1; ++s) {
    if (s < tiles) copy_stage<Vec>(stages[s], plan, a, b, k, s * kTileK);  // tile s -> stage s
    commit_group();
  }
  for (int tile = 0; tile < tiles; ++tile) {
    // TODO 1: afterwards the tile this iteration computes is complete in its stage and every
    //         thread may read all of it, not only its own copies; no thread still reads the
    //         stage that is refilled next; and the prologue's lead is kept: the first tile
    //         not yet in flight (if it exists) is in flight into the stage the block computed
    //         in the previous iteration. Every iteration closes exactly one commit group,
    //         empty or not. At most one block-wide barrier.
    // BEGIN SOLUTION
    wait_group<Stages - 2>();  // this thread's copies of `tile` are done...
    __syncthreads();           // ...and everyone's; and nobody still reads the stage reused next
    const int next = tile + Stages - 1;
    if (next < tiles) {
      copy_stage<Vec>(stages[next % Stages], plan, a, b, k, next * kTileK);
    }
    commit_group();
    // END SOLUTION
    multiply_stage(acc, stages[tile % Stages], place);  // stages[tile % Stages] : (Stages)
  }
  store_results<Vec>(c, m, n, m0, n0, place, acc, alpha, beta);
}

// ---- Rung 5: TMA tensor loads, a producer warpgroup, full and empty mbarriers ------------

/// The producer warpgroup's first thread: for every tile of the block's k-loop, waits until
/// the computing warps have released the stage it goes into, then starts its two tensor
/// loads. It runs up to Stages tiles ahead of the computing warps.
template <int Stages>
__device__ inline void load_tiles(const CUtensorMap* a_map, const CUtensorMap* b_map,
                                  TmaStageBuffer* stages, StageBarriers* bars, int m0, int n0,
                                  int tiles) {
  for (int tile = 0; tile < tiles; ++tile) {
    const int s = tile % Stages;  // stages[s], bars[s] : (Stages); each tile is one use of s
    TmaStageBuffer& stage = stages[s];
    StageBarriers& bar = bars[s];
    // TODO 2: afterwards the computing warps have released the previous use of stage s
    //         (a stage's first use has none to wait for), and this tile's two boxes are on
    //         their way: A's (the block's kTileM rows, this tile's kTileK columns) into
    //         stage.a_rows, counted on bar.a_landed, and B's (this tile's kTileK rows, the
    //         block's kTileN columns) into the stage's B tile, counted on bar.full. The phase
    //         in progress of each of those two barriers holds this thread's one arrival and
    //         expects every byte its box delivers. Nothing here waits for a box to land.
    // BEGIN SOLUTION
    if (tile >= Stages) wait_parity(&bar.empty, (tile / Stages - 1) & 1);
    const std::int32_t a_box[2] = {tile * kTileK, m0};  // (column, row) of A's box
    ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared,
                                   &bar.a_landed, sizeof(stage.a_rows));
    ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, stage.a_rows, a_map, a_box,
                              &bar.a_landed);
    const std::int32_t b_box[2] = {n0, tile * kTileK};  // (column, row) of B's box
    ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bar.full,
                                   sizeof(stage.stage.b));
    ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, stage.stage.b, b_map, b_box,
                              &bar.full);
    // STARTER: (void)a_map; (void)b_map; (void)stage; (void)bar; (void)m0; (void)n0;
    // END SOLUTION
  }
}

/// The producer warpgroup's other three warps, thread `p` (0..95) of them: the tensor memory
/// accelerator cannot transpose, so for every tile they wait for the box of A, write it
/// transposed into the stage, chunk by chunk, and arrive on `full`.
template <int Stages>
__device__ inline void transpose_tiles(TmaStageBuffer* stages, StageBarriers* bars, int tiles,
                                       int p) {
  unsigned parity = 0;  // of the phase that this round of uses of the stages completes
  for (int tile = 0, s = 0; tile < tiles; ++tile) {
    // The box has landed, so the loading thread has seen the stage released (it waited on
    // `empty` before it started the load): overwriting A^T is safe. Waiting on `empty` here
    // as well would be correct too, but 96 more threads polling the barrier that the
    // computing threads arrive on cost 6-8% on an H100.
    wait_parity(&bars[s].a_landed, parity);
    for (int q = p; q < kAChunks; q += kTransposeThreads) {
      const TileChunk ch = a_chunk(q);  // a_rows[row][col .. col + 3] : (kTileM, kTileK)
      store_a_chunk_transposed(stages[s].stage, ch, load4(&stages[s].a_rows[ch.row][ch.col]));
    }
    (void)ptx::mbarrier_arrive(&bars[s].full);
    if (++s == Stages) {  // the ring starts over: each stage's next use is its next phase
      s = 0;
      parity ^= 1u;
    }
  }
}

/// The computing warps: every tile, from the stage the producer filled, then the results.
template <int Stages>
__device__ inline void consume(const TmaStageBuffer* stages, StageBarriers* bars, int tiles,
                               Accumulators& acc, Place place) {
  for (int tile = 0; tile < tiles; ++tile) {
    const int s = tile % Stages;
    // TODO 3: afterwards this thread has added stage s's product to acc, having read the
    //         stage only once its full barrier completed the phase of this use, and has
    //         released the stage after its last read of it: one arrival of its own on the
    //         stage's empty barrier, which expects one from each computing thread.
    // BEGIN SOLUTION
    wait_parity(&bars[s].full, (tile / Stages) & 1);
    multiply_stage(acc, stages[s].stage, place);
    (void)ptx::mbarrier_arrive(&bars[s].empty);
    // STARTER: (void)stages; (void)bars; (void)acc; (void)place; (void)s;
    // END SOLUTION
  }
}

template <int Stages>
__global__ void __launch_bounds__(kTmaThreads, 1)
    sgemm_tma_kernel(const __grid_constant__ CUtensorMap a_map,
                     const __grid_constant__ CUtensorMap b_map, int m, int n, int k, float alpha,
                     float beta, float* c) {
#if __CUDA_ARCH__ >= 900
  extern __shared__ unsigned char dynamic_smem[];
  __shared__ StageBarriers bars[Stages];
  // Tensor loads land on 128-byte boundaries: the stages start on one (kTmaStageAlignment,
  // the slack pipeline_shared_bytes adds). stages[s] : (Stages) TmaStageBuffer.
  TmaStageBuffer* stages = reinterpret_cast<TmaStageBuffer*>(align_shared(dynamic_smem, 128));
  const int t = threadIdx.x;
  const int m0 = blockIdx.y * kTileM, n0 = blockIdx.x * kTileN;  // (kTileM, kTileN) tile of C
  const int tiles = (k + kTileK - 1) / kTileK;
  if (t == 0) {
    for (int s = 0; s < Stages; ++s) {
      ptx::mbarrier_init(&bars[s].a_landed, 1);
      ptx::mbarrier_init(&bars[s].full, 1 + kTransposeThreads);
      ptx::mbarrier_init(&bars[s].empty, kThreads);
    }
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();  // the only block-wide barrier: from here on the mbarriers order everything

  if (t >= kThreads) {  // the producer warpgroup: one thread loads, three warps transpose
    give_back_registers<kProducerRegisters>();
    if (t == kThreads) load_tiles<Stages>(&a_map, &b_map, stages, bars, m0, n0, tiles);
    if (t >= kThreads + 32) transpose_tiles<Stages>(stages, bars, tiles, t - kThreads - 32);
    return;
  }
  take_registers<kComputeRegisters>();
  const Place place = place_of(t);
  Accumulators acc = {};
  consume<Stages>(stages, bars, tiles, acc, place);
  store_results<true>(c, m, n, m0, n0, place, acc, alpha, beta);
#else
  (void)a_map, (void)b_map, (void)m, (void)n, (void)k, (void)alpha, (void)beta, (void)c;
#endif
}

}  // namespace
}  // namespace capstone

// ---- Part 2: the streamed pipeline -------------------------------------------------------
//
// A job larger than one chunk: C_host = A_host W, A_host and C_host in pinned host memory, W
// on the device. The launchers (given/streamed.cu) cut the rows into chunks, give each chunk its
// own stream and its own prepared GEMM, and call issue_chunk() for one chunk after another:
// your function decides what each chunk's stream does.

namespace capstone {

// TODO 4: one chunk of the streamed GEMM. Afterwards three operations are enqueued on
//         `stream`, in this order, each recorded in `timeline` under its stage of the
//         pipeline and the chunk's number:
//           host -> device  the chunk's rows of A, from job.host_a into job.device_a
//           kernel          the chunk's prepared GEMM (it reads those rows of device_a and
//                           writes the same rows of device_c)
//           device -> host  the chunk's rows of C, from job.device_c into job.host_c
//         and nothing else: no other rows, no other stream. Stream order alone makes each
//         operation wait for the one before. Rows of A and rows of C are not the same
//         length. Budget: no wait on the host. The tests check it: they hold the stream and
//         call this from another host thread, and the call must return, with none of the
//         three operations done yet, while the stream is still held.
void issue_chunk(const StreamedJob& job, const StreamedChunk& chunk, cudaStream_t stream,
                 overlap_transfers::Timeline* timeline) {
  // BEGIN SOLUTION
  using overlap_transfers::Stage;
  record_operation(timeline, chunk.index, Stage::h2d, stream, [&] {
    copy_rows(job.device_a, job.host_a, chunk.rows, job.k, cudaMemcpyHostToDevice, stream);
  });
  record_operation(timeline, chunk.index, Stage::kernel, stream, [&] { chunk.gemm(stream); });
  record_operation(timeline, chunk.index, Stage::d2h, stream, [&] {
    copy_rows(job.host_c, job.device_c, chunk.rows, job.n, cudaMemcpyDeviceToHost, stream);
  });
  // STARTER: (void)job;
  // STARTER: (void)chunk;
  // STARTER: (void)stream;
  // STARTER: (void)timeline;
  // END SOLUTION
}

}  // namespace capstone
