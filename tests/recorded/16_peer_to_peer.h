/// \file 16_peer_to_peer.h
/// \brief Lesson 16's host code, recorded on fake GPUs (tests/support/schedule_record.h):
/// what connect(), issue_both_directions() and halo_step() ask of the runtime, without a GPU.
///
/// 16_peer_to_peer.cu compiles the exercise file (the starter's or the solution's, one per
/// test program) against the test doubles, in a namespace of its own, with doubles of the
/// read-only HaloRing that record its operations and the rows each reads and writes (the
/// README's table). These functions run one scenario each and return what was recorded;
/// tests/16_peer_to_peer_test.cu checks the TODOs' contracts on it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "schedule_record.h"

namespace course::testing::recorded16 {

/// The fake pair of GPUs 0 and 1 that connect(0, 1) meets.
struct ConnectSetup {
  int current = 1;                              ///< the caller's current device
  bool ab_enabled = false;                      ///< 0 -> 1 already enabled
  bool ba_enabled = false;                      ///< 1 -> 0 already enabled
  std::pair<int, int> failing{-1, -1};          ///< a direction whose enabling fails
  cudaError_t failure = cudaErrorTooManyPeers;  ///< ... with this error
};

/// What connect() did.
struct ConnectRun {
  std::string threw;            ///< what() of the exception connect() threw; empty: it returned
  bool ab_was_enabled = false;  ///< as connect() reported them
  bool ba_was_enabled = false;
  bool ab_enabled = false;  ///< the machine afterwards
  bool ba_enabled = false;
  int current_after = -1;
  cudaError_t last_error_after = cudaSuccess;
  std::vector<std::string> calls;  ///< the device and peer calls it made, in order
};
ConnectRun run_connect(const ConnectSetup& setup);

/// issue_both_directions() on GPUs 0 (a) and 1 (b): before the call, work on stream_a that
/// writes both sources and still reads both destinations; after it, work on stream_a that
/// reads both destinations and overwrites both sources.
struct BothWaysRun {
  schedule::Recorder record{2};
  std::string threw;
  int earlier = -1;  ///< the work already on stream_a
  int later = -1;    ///< the work enqueued on stream_a after the call
  int first = -1;    ///< the call's operations: [first, end)
  int end = -1;
  cudaStream_t stream_a = nullptr;
  cudaStream_t stream_b = nullptr;
  int src_a = -1, dst_b = -1, src_b = -1, dst_a = -1;  ///< buffer indices
  std::size_t bytes = 0;
};
BothWaysRun run_both_directions();

/// `steps` calls of halo_step() on a ring of `gpus` fake GPUs (8 rows of 4 words each,
/// radius 2), after HaloRing::load(). Indices [step][gpu] list what that step issued.
struct HaloRun {
  explicit HaloRun(int gpus) : record(gpus), gpus(gpus) {}
  schedule::Recorder record;
  std::string threw;
  int gpus = 0;
  std::vector<int> step_begin, step_end;  ///< each step's operations: [begin, end)
  std::vector<std::vector<std::vector<int>>> push, interior, boundary;
  /// The last record of computed(g) and sent(g) right after each step (-1: none).
  std::vector<std::vector<int>> computed_record, sent_record;
};
HaloRun run_halo_steps(int gpus, int steps);

}  // namespace course::testing::recorded16
