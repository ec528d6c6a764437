/// \file tma_bulk_copy_parts.h
/// \brief Lesson 10: what main.cu shares with the parts that live beside it (read-only;
/// parts_sweeps.cu): the problem every row runs, and the sweeps that follow the main table.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "course/data.h"
#include "course/device.h"
#include "course/harness.h"
#include "course/problem.h"
#include "course/workload.h"
#include "tma_bulk_copy.cuh"

namespace tma_bulk_copy::parts {

inline constexpr int kThreads = 256;         ///< consumer threads per block
inline constexpr int kVectorsPerThread = 4;  ///< 256 x 4 x 16 B = 16 KB batches, as in 06 and 09
/// The granularity sweep's vectors per thread: 4-32 KB batches.
inline constexpr int kSweepVectors[] = {1, 2, 4, 8};

/// "16 KB": whole kilobytes (1024 bytes), as the lines write batch sizes.
inline std::string kilobytes(std::size_t bytes) { return std::to_string(bytes / 1024) + " KB"; }

/// Bytes of one batch of kThreads threads x `vectors_per_thread` 16-byte vectors.
inline std::size_t batch_bytes(int vectors_per_thread) {
  return batch_elements(kThreads, vectors_per_thread) * sizeof(std::uint32_t);
}

/// The problem every row runs, and what the plain bulk copy must produce.
struct Workload : course::workload::Problem {
  explicit Workload(std::size_t elements)
      : Problem(elements, kSeed),
        copy_bytes(n * sizeof(std::uint32_t) / 16 * 16),
        copied(copy_bytes / sizeof(std::uint32_t)) {
    // The plain bulk copy moves the whole 16-byte chunks of the input unchanged: the
    // input's prefix, the same hash the device fill wrote.
    course::fill_hash_host(copied, kSeed);
  }

  /// A checked variant: poison the output, run once, then report any bounded wait that timed
  /// out and compare every element (all of them, or the copied prefix).
  course::Variant checked(const std::string& name, course::Launch run, bool copy_only = false) {
    return course::Variant{
        name,
        copy_only ? 2.0 * static_cast<double>(copy_bytes) : course::workload::bytes_moved(n),
        std::move(run),
        [this](cudaStream_t s) { poison_output(s); },
        [this, name, copy_only] {
          const unsigned errors = take_wait_errors();
          const std::vector<std::uint32_t> got = course::to_host(out.cspan());
          course::Comparison c =
              copy_only
                  ? course::compare_exact<std::uint32_t>(
                        copied, cuda::std::span<const std::uint32_t>(got.data(), copied.size()))
                  : course::compare_exact<std::uint32_t>(expected, got);
          if (errors != kNoWaitError) {
            std::cout << "  " << name << ": " << describe_wait_errors(errors) << "\n";
            c.mismatches = std::max<std::size_t>(c.mismatches, 1);
          }
          return c;
        },
    };
  }

  static constexpr std::uint32_t kSeed = 10;
  const std::size_t copy_bytes;       ///< the bulk copy's bytes: whole 16-byte chunks
  std::vector<std::uint32_t> copied;  ///< the bulk copy's output: the input's prefix
};

/// The stage sweep (every stage count of kMinStages..kMaxStages, 16 KB batches) and the
/// granularity sweep (kSweepVectors at `stages` stages) of the TMA pipeline and of lesson
/// 06's primitives kernel, at one block per SM; a point that does not fit is skipped, and said
/// so. Then the line that says what the sweeps were.
void run_sweeps(course::Harness& harness, Workload& w, const course::DeviceSummary& gpu,
                int stages);

}  // namespace tma_bulk_copy::parts
