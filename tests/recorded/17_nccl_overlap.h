/// \file 17_nccl_overlap.h
/// \brief Lesson 17's exercise, recorded on a fake GPU and a fake communicator
/// (tests/support/schedule_record.h, schedule_record_nccl.h): what init_communicator() asks
/// of NCCL, and what the two overlapped schedules issue to which stream, without a GPU.
///
/// 17_nccl_overlap.cu compiles the exercise file (the starter's or the solution's, one per
/// test program) against the test doubles, in a namespace of its own, with doubles of the
/// read-only helpers it calls: the timeline wrapper (which records what was enqueued inside
/// it), the chunk's collectives (through the NCCL doubles) and its GEMM (work that reads the
/// chunk's input and writes its output). tests/17_nccl_overlap_test.cu checks the TODOs'
/// contracts on what these functions return.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>
#include <vector>

#include "overlap_transfers.cuh"
#include "schedule_record.h"
#include "schedule_record_nccl.h"

namespace course::testing::recorded17 {

/// init_communicator(id, 1, 3, config) with maxCTAs 5 and minCTAs 2, NCCL answering
/// `result` to every init call.
struct InitRun {
  std::string threw;              ///< what() of what it threw; empty: it returned
  bool threw_nccl_error = false;  ///< ... and it was the lesson's NcclError
  ncclComm_t returned = nullptr;
  ncclComm_t made = nullptr;  ///< the communicator the fake NCCL handed out
  ncclUniqueId id{};          ///< what the caller passed
  int rank = 1;
  int ranks = 3;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  std::vector<schedule::NcclInitCall> calls;
};
InitRun run_init(ncclResult_t result);

/// One call of the timeline wrapper (record_operation) and what was enqueued inside it:
/// operations [first, end).
struct Wrapped {
  int chunk = -1;
  overlap_transfers::Stage stage{};
  cudaStream_t stream = nullptr;
  bool timeline_passed = false;  ///< the caller's timeline, handed on
  int first = -1;
  int end = -1;
};

/// `runs` calls of one layer's overlapped schedule on one fake GPU, 2 ranks, `chunks` chunks,
/// the caller's work around them (see the .cu file: what it reads and writes, and where).
struct LayerRun {
  schedule::Recorder record{1};
  std::string threw;
  int chunks = 0;
  cudaStream_t compute = nullptr;         ///< the caller's stream
  cudaStream_t comm = nullptr;            ///< streams.comm
  std::vector<cudaEvent_t> events;        ///< every event of `streams`
  std::vector<int> call_begin, call_end;  ///< each run's operations: [begin, end)
  /// After each run: the caller's next work on `compute` (all-gather layer) or its
  /// synchronisation of `compute` alone (reduce-scatter layer).
  std::vector<int> caller_after;
  /// [run][chunk]: the collectives and the GEMMs enqueued for that chunk.
  std::vector<std::vector<std::vector<int>>> collective, gemm;
  std::vector<Wrapped> wrapped;
};
LayerRun run_allgather_layer(int chunks, int runs);
LayerRun run_reduce_scatter_layer(int chunks, int runs);

}  // namespace course::testing::recorded17
