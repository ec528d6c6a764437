/// \file producer_consumer_parts.h
/// \brief Lesson 07: the driver's parts that live beside main.cu (read-only; parts_sweeps.cu):
/// the sweeps at one block per SM that follow the main table.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "course/device.h"
#include "course/harness.h"
#include "course/problem.h"
#include "producer_consumer.cuh"

namespace producer_consumer::parts {

/// Every pipelined variant's batch: the default batch of 16-byte vectors (16 KB).
inline constexpr std::size_t kBatchBytes = kDefaultBatchVectors * sizeof(uint4);

/// The warp sweep: producer warps x consumer warps.
inline constexpr int kSweepProducerWarps[] = {1, 2, 4};
inline constexpr int kSweepConsumerWarps[] = {2, 4, 8, 16};

/// "16 KB": kBatchBytes as the lines and the usage text write it.
std::string batch_kilobytes();

/// The warp sweep at one block per SM: every pair of kSweepProducerWarps x
/// kSweepConsumerWarps with `stages` stages and `partition` (sweep "warps"; a pair that does
/// not fit is skipped, and said so), then the line that says what the sweep was.
void run_warp_sweep(course::Harness& harness, course::workload::Problem& w, Partition partition,
                    int stages, const course::DeviceSummary& gpu);

/// --quick only: 1p8c, one block per SM, at every stage count with both partitions but the
/// main table's pair (`table_partition`, `table_stages`). stage_buffer is compiled once per
/// stage count, the kernel once per stage count and partition, and the race checks run the
/// program --quick: each copy of the helpers you wrote must run there to be checked. Stages
/// that do not fit are skipped.
void run_every_stage_count(course::Harness& harness, course::workload::Problem& w,
                           Partition table_partition, int table_stages,
                           const course::DeviceSummary& gpu);

}  // namespace producer_consumer::parts
