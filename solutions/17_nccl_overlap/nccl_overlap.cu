// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
#include <cuda_runtime.h>
#include <nccl.h>

#include <vector>

#include "course/check.h"
#include "nccl_overlap.cuh"

namespace nccl_overlap {

ncclComm_t init_communicator(const ncclUniqueId& id, int rank, int ranks,
                             const ncclConfig_t& config) {
  // TODO 1: join the communicator of `ranks` ranks that rank 0's id names, as rank `rank`,
  //         with `config` (NCCL copies what it needs). Every rank makes this call with the same
  //         id; it returns when all of them have. Check the call: a failure must throw.
  // BEGIN SOLUTION
  ncclComm_t comm = nullptr;
  ncclConfig_t copy = config;  // NCCL takes a non-const pointer
  COURSE_NCCL_CHECK(ncclCommInitRankConfig(&comm, ranks, id, rank, &copy));
  return comm;
  // STARTER: (void)id, (void)rank, (void)ranks, (void)config;
  // STARTER: return nullptr;
  // END SOLUTION
}

void issue_allgather_overlapped(const Layers& layers, const std::vector<LayerChunk>& chunks,
                                const OverlapStreams& streams, cudaStream_t compute,
                                Timeline* timeline) {
  // The inputs (x_shard) are ready when `compute` gets here: streams.comm must not start
  // before that. Record it once, let the communication stream wait for it.
  COURSE_CHECK(cudaEventRecord(streams.ready, compute));
  COURSE_CHECK(cudaStreamWaitEvent(streams.comm, streams.ready, 0));
  // TODO 2: for every chunk i, in order:
  //  - its all-gather on streams.comm (all_gather(), wrapped in record_operation() with
  //    kGatherStage), then record streams.collective_done[i] on streams.comm;
  //  - its GEMM (chunk.gemm) on `compute`, wrapped with kGemmStage, and never before chunk
  //    i's all-gather is done (make `compute` wait for collective_done[i]).
  //  So chunk i + 1's all-gather runs while chunk i's GEMM does. Nothing may wait on the host.
  // BEGIN SOLUTION
  for (const LayerChunk& chunk : chunks) {
    const auto i = static_cast<std::size_t>(chunk.index);
    record_operation(timeline, chunk.index, kGatherStage, streams.comm,
                     [&] { all_gather(layers, chunk, streams.comm); });
    COURSE_CHECK(cudaEventRecord(streams.collective_done[i], streams.comm));
    COURSE_CHECK(cudaStreamWaitEvent(compute, streams.collective_done[i], 0));
    record_operation(timeline, chunk.index, kGemmStage, compute, [&] { chunk.gemm(compute); });
  }
  // STARTER: (void)layers, (void)chunks, (void)timeline;
  // END SOLUTION
  // Join: whoever waits for `compute` also waits for everything on streams.comm.
  COURSE_CHECK(cudaEventRecord(streams.comm_done, streams.comm));
  COURSE_CHECK(cudaStreamWaitEvent(compute, streams.comm_done, 0));
}

void issue_reduce_scatter_overlapped(const Layers& layers, const std::vector<LayerChunk>& chunks,
                                     const OverlapStreams& streams, cudaStream_t compute,
                                     Timeline* timeline) {
  // The communication stream must not touch `partial` or `z_shard` before `compute` gets here
  // (an earlier run may still be reading them).
  COURSE_CHECK(cudaEventRecord(streams.ready, compute));
  COURSE_CHECK(cudaStreamWaitEvent(streams.comm, streams.ready, 0));
  // TODO 3: for every chunk i, in order:
  //  - its GEMM (chunk.gemm) on `compute`, wrapped in record_operation() with kGemmStage,
  //    then record streams.gemm_done[i] on `compute`;
  //  - its reduce-scatter on streams.comm (reduce_scatter(), wrapped with kScatterStage),
  //    never before chunk i's GEMM is done.
  //  So chunk i's reduce-scatter runs while chunk i + 1's GEMM does.
  // BEGIN SOLUTION
  for (const LayerChunk& chunk : chunks) {
    const auto i = static_cast<std::size_t>(chunk.index);
    record_operation(timeline, chunk.index, kGemmStage, compute, [&] { chunk.gemm(compute); });
    COURSE_CHECK(cudaEventRecord(streams.gemm_done[i], compute));
    COURSE_CHECK(cudaStreamWaitEvent(streams.comm, streams.gemm_done[i], 0));
    record_operation(timeline, chunk.index, kScatterStage, streams.comm,
                     [&] { reduce_scatter(layers, chunk, streams.comm); });
  }
  // STARTER: (void)layers, (void)chunks, (void)timeline;
  // END SOLUTION
  // TODO 4: the join. When `compute` has finished, every reduce-scatter must have finished
  //         too (the caller reads z_shard after synchronising `compute` alone).
  // BEGIN SOLUTION
  COURSE_CHECK(cudaEventRecord(streams.comm_done, streams.comm));
  COURSE_CHECK(cudaStreamWaitEvent(compute, streams.comm_done, 0));
  // END SOLUTION
}

}  // namespace nccl_overlap
