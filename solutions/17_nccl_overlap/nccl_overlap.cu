// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
//
// Lesson 17: NCCL collectives overlapped with GEMMs.
//
// Every rank (one process, or here in the tests one thread, per GPU) joins one communicator
// from an id that rank 0 made. A tensor-parallel layer is a collective and a GEMM that
// depend on each other; cut into chunks, with the collectives on a communication stream and
// the GEMMs on the compute stream, chunk i's collective can run while a neighbouring chunk's
// GEMM computes, as long as one event per chunk says what waits for what, and the compute
// stream, at the end, stands for everything the layer did.
//
// Yours: joining the communicator (TODO 1), the all-gather layer's schedule (TODO 2, written,
// with one bug to find), the reduce-scatter layer's schedule (TODO 3) and its end (TODO 4).
#include <cuda_runtime.h>
#include <nccl.h>

#include <vector>

#include "course/check.h"
#include "nccl_overlap.cuh"

namespace nccl_overlap {

ncclComm_t init_communicator(const ncclUniqueId& id, int rank, int ranks,
                             const ncclConfig_t& config) {
  // TODO 1: return this rank's communicator: rank `rank` of the `ranks` ranks that join with
  //         rank 0's id, created with the settings in `config` (the caller's, read-only here;
  //         NCCL copies what it needs). Every rank makes this call with the same id; it
  //         returns when all of them have. A failure throws NcclError.
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
  // TODO 2 (bug hunt): the all-gather layer's schedule, written, with one bug. Its values
  //         are right, yet on two GPUs no all-gather runs beside a GEMM
  //         (GpuTwoRanks.OverlappedSchedulesRunCollectivesBesideGemms), and without a GPU the
  //         schedule test NcclSchedule.AllGatherGemmWaitsForItsOwnChunkOnly names a GEMM that
  //         waits for a later chunk's all-gather. Contract of the fix: for every chunk, its
  //         all-gather in streams.comm's order, its GEMM in `compute`'s, each enqueued
  //         through the timeline wrapper of nccl_overlap.cuh with the chunk's index and the
  //         stage of its kind. A chunk's GEMM never starts before that chunk's all-gather is
  //         done, and waits for nothing else, so that chunk i + 1's all-gather runs while
  //         chunk i's GEMM does. Each chunk's handover has an event of its own in `streams`,
  //         never reused within the run. Nothing waits on the host.
  // BEGIN SOLUTION
  // STARTER: for (const LayerChunk& chunk : chunks) {
  // STARTER:   record_operation(timeline, chunk.index, kGatherStage, streams.comm,
  // STARTER:                    [&] { all_gather(layers, chunk, streams.comm); });
  // STARTER:   COURSE_CHECK(cudaEventRecord(streams.collective_done[0], streams.comm));
  // STARTER: }
  // STARTER: for (const LayerChunk& chunk : chunks) {
  // STARTER:   COURSE_CHECK(cudaStreamWaitEvent(compute, streams.collective_done[0], 0));
  // STARTER:   record_operation(timeline, chunk.index, kGemmStage, compute,
  // STARTER:                    [&] { chunk.gemm(compute); });
  // STARTER: }
  for (const LayerChunk& chunk : chunks) {
    const auto i = static_cast<std::size_t>(chunk.index);
    record_operation(timeline, chunk.index, kGatherStage, streams.comm,
                     [&] { all_gather(layers, chunk, streams.comm); });
    COURSE_CHECK(cudaEventRecord(streams.collective_done[i], streams.comm));
  }
  for (const LayerChunk& chunk : chunks) {
    const auto i = static_cast<std::size_t>(chunk.index);
    COURSE_CHECK(cudaStreamWaitEvent(compute, streams.collective_done[i], 0));
    record_operation(timeline, chunk.index, kGemmStage, compute, [&] { chunk.gemm(compute); });
  }
  // END SOLUTION
  // Whoever waits for `compute` must also wait for everything on streams.comm: with TODO 2's
  // contract kept, the last thing compute waits for is the last thing streams.comm does.
}

void issue_reduce_scatter_overlapped(const Layers& layers, const std::vector<LayerChunk>& chunks,
                                     const OverlapStreams& streams, cudaStream_t compute,
                                     Timeline* timeline) {
  // The communication stream must not touch `partial` or `z_shard` before `compute` gets here
  // (an earlier run may still be reading them).
  COURSE_CHECK(cudaEventRecord(streams.ready, compute));
  COURSE_CHECK(cudaStreamWaitEvent(streams.comm, streams.ready, 0));
  // TODO 3: for every chunk, in order: its GEMM in `compute`'s order, its reduce-scatter in
  //         streams.comm's, each enqueued through the timeline wrapper with the chunk's index
  //         and the stage of its kind. A chunk's reduce-scatter never starts before that
  //         chunk's GEMM is done, and the GEMMs never wait for a reduce-scatter, so that chunk
  //         i's reduce-scatter runs while chunk i + 1's GEMM does. Each chunk's handover has an
  //         event of its own in `streams`. Nothing waits on the host.
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
  // TODO 4: when `compute` has finished, every reduce-scatter has finished too: the caller
  //         synchronises `compute` alone, then reads z_shard, and its next run's GEMMs
  //         overwrite `partial`. The host waits for nothing; at most 2 lines.
  // BEGIN SOLUTION
  COURSE_CHECK(cudaEventRecord(streams.comm_done, streams.comm));
  COURSE_CHECK(cudaStreamWaitEvent(compute, streams.comm_done, 0));
  // END SOLUTION
}

}  // namespace nccl_overlap
