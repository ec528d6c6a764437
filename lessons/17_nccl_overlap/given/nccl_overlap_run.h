/// \file nccl_overlap_run.h
/// \brief Lesson 17's driver parts (nccl_overlap_run.cu, read-only): the settings from the
/// flags, and the whole run of one rank through the harness.
#pragma once

#include <nccl.h>

#include <string>
#include <vector>

#include "course/device.h"
#include "course/flags.h"
#include "nccl_overlap.cuh"

namespace course {
class Harness;
}

namespace nccl_overlap {

inline constexpr int kMaxRanks = 8;

/// What one rank runs (every rank gets the same settings from the same flags).
struct RunSettings {
  int ranks = 2;
  int rank = 0;
  bool launcher = false;             ///< rank 0 started without --rank: it started the others
  int first_device = 0;              ///< rank r drives GPU first_device + r
  std::size_t collective_count = 0;  ///< Part 1: floats per rank's share of each collective
  LayerShape shape;
  std::vector<int> chunk_counts;  ///< sorted, unique, each in [1, shard_rows]
  std::vector<int> max_ctas;      ///< the contention rows' maxCTAs (0: NCCL's default)
};

/// The --variant names: the three collectives.
std::vector<std::string> variant_names();

/// Fills `run` from the flags (0 or "" = the default, --quick's when options.quick): the
/// shape, the chunk counts, the maxCTAs list and Part 1's count (options.size bytes, rounded
/// down to a multiple of 4 x ranks). Throws course::UsageError; touches no CUDA API.
void complete_settings(RunSettings& run, const course::CommonOptions& options, int shard_rows,
                       int k, int n_local, int k_local, int n_out, const std::string& chunk_list,
                       const std::string& cta_list);

/// One rank's whole run; returns the harness's verdict (0 pass, 1 a check failed). The
/// checks are summed over the ranks, so every rank reports the same verdict.
int run_lesson(course::Harness& harness, const course::DeviceSummary& gpu,
               const course::CommonOptions& options, const RunSettings& run,
               const ncclUniqueId& id);

}  // namespace nccl_overlap
