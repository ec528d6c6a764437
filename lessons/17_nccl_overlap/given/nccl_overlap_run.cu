// Lesson 17's driver, what one rank's run needs before and under its parts (read-only): the
// plan (every size and count, resolved from the flags before the device is opened), and what
// every rank must agree on: the communicator's end, a count, a check. The tests call plan_of
// too.
#include <algorithm>
#include <cstdint>
#include <exception>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/buffers.h"
#include "course/check.h"
#include "course/timing.h"
#include "nccl_overlap_driver.h"

namespace nccl_overlap::driver {
namespace {

/// A shape flag's value, or its default when the flag was not given (0): --quick's or the
/// full run's.
int or_default(int value, bool quick, int quick_default, int full_default) {
  return value > 0 ? value : (quick ? quick_default : full_default);
}

/// --nranks, and --rank with --nccl-id: who this process is. Returns the id a started rank
/// was given (none for the launcher).
ncclUniqueId check_ranks(const Settings& s) {
  course::require_in_range("nranks", s.ranks, kMinRanks, kMaxRanks);
  if ((s.rank >= 0) != !s.id_hex.empty()) {
    throw course::UsageError("--rank and --nccl-id go together (rank 0 sets both)");
  }
  if (s.rank >= s.ranks) throw course::UsageError("--rank must be < --nranks");
  if (s.rank < 0) return ncclUniqueId{};
  try {
    return decode_unique_id(s.id_hex);
  } catch (const std::invalid_argument& e) {
    throw course::UsageError(std::string("--nccl-id: ") + e.what());
  }
}

/// Both layers' shape: each dimension as given, or its default; the largest matrix at most
/// 2^kMostFloatsLog2 floats.
LayerShape shape_of(const Settings& s) {
  const bool q = s.options.quick;
  LayerShape shape;
  shape.ranks = s.ranks;
  shape.shard_rows = or_default(s.shard_rows, q, kQuickRows, kRows);
  shape.k = or_default(s.k, q, kQuickK, kK);
  shape.n_local = or_default(s.n_local, q, kQuickNLocal, kNLocal);
  shape.k_local = or_default(s.k_local, q, kQuickKLocal, kKLocal);
  shape.n_out = or_default(s.n_out, q, kQuickNOut, kNOut);
  const double most = double(1ull << kMostFloatsLog2);
  if (double(shape.rows()) * std::max(shape.k, shape.n_out) > most ||
      double(shape.rows()) * std::max(shape.n_local, shape.k_local) > most) {
    throw course::UsageError("--rows x nranks x a width must be at most 2^" +
                             std::to_string(kMostFloatsLog2) + " floats");
  }
  return shape;
}

/// Part 1's floats per rank's share: --size bytes over 4 x ranks (--quick: kQuickCount).
std::size_t collective_count_of(const course::CommonOptions& options, int ranks) {
  const std::uint64_t bytes =
      options.size != 0 ? options.size : (options.quick ? 0 : kDefaultBytes);
  const std::size_t count =
      bytes == 0 ? kQuickCount : static_cast<std::size_t>(bytes / (4ull * ranks));
  if (count == 0) throw course::UsageError("--size must be at least 4 x nranks bytes");
  if (bytes > kMaxBytes) {
    throw course::UsageError("--size must be at most " + std::to_string(kMaxBytes >> 30) + "G");
  }
  return count;
}

/// The timeline's chunk count: the last of the run's between 2 and 4, else its largest.
int timeline_chunks_of(const std::vector<int>& chunk_counts) {
  int chunks = chunk_counts.back();
  for (int c : chunk_counts) {
    if (c >= 2 && c <= 4) chunks = c;
  }
  return chunks;
}

}  // namespace

Plan plan_of(const Settings& s) {
  const bool q = s.options.quick;
  Plan plan;
  plan.id = check_ranks(s);
  plan.ranks = s.ranks;
  plan.rank = s.rank < 0 ? 0 : s.rank;
  plan.launcher = s.rank < 0;
  plan.first_device = s.options.device;
  plan.exe = s.exe;
  plan.args = s.args;
  plan.options = s.options;
  if (plan.rank > 0) plan.options.csv.clear();  // rank 0 writes the CSVs
  plan.options.device += plan.rank;             // rank r drives GPU first + r
  plan.shape = shape_of(s);
  const std::string chunks =
      s.chunk_list.empty() ? (q ? kQuickChunks : kDefaultChunks) : s.chunk_list;
  plan.chunk_counts =
      course::parse_int_list("chunks", chunks, 1, std::min(plan.shape.shard_rows, kMaxChunks));
  const std::string ctas = s.cta_list.empty() ? (q ? kQuickCtas : kDefaultCtas) : s.cta_list;
  plan.max_ctas = course::parse_int_list("ctas", ctas, 0, kMaxCtas);
  plan.collective_count = collective_count_of(s.options, plan.ranks);
  plan.peer_bytes = q ? kQuickPeerBytes : kPeerBytes;
  plan.timeline_chunks = timeline_chunks_of(plan.chunk_counts);
  return plan;
}

std::vector<std::string> variant_names() {
  return {collective_name(Collective::all_gather), collective_name(Collective::reduce_scatter),
          collective_name(Collective::all_reduce)};
}

// ---- What every rank must agree on ------------------------------------------------------------

Comm own(ncclComm_t c) {
  return Comm(c, [](ncclComm_t p) {
    if (p == nullptr) return;
    if (std::uncaught_exceptions() > 0) {
      ncclCommAbort(p);
    } else {
      ncclCommDestroy(p);
    }
  });
}

long long agree_max(ncclComm_t comm, cudaStream_t s, long long value) {
  course::DeviceBuffer<long long> d(1);
  COURSE_CHECK(cudaMemcpyAsync(d.data(), &value, sizeof value, cudaMemcpyHostToDevice, s));
  COURSE_NCCL_CHECK(ncclAllReduce(d.data(), d.data(), 1, ncclInt64, ncclMax, comm, s));
  COURSE_CHECK(cudaMemcpyAsync(&value, d.data(), sizeof value, cudaMemcpyDeviceToHost, s));
  COURSE_CHECK(cudaStreamSynchronize(s));
  return value;
}

course::Comparison all_ranks(ncclComm_t comm, cudaStream_t s, course::Comparison local) {
  course::DeviceBuffer<unsigned long long> d(1);
  unsigned long long count = local.mismatches;
  COURSE_CHECK(cudaMemcpyAsync(d.data(), &count, sizeof count, cudaMemcpyHostToDevice, s));
  COURSE_NCCL_CHECK(ncclAllReduce(d.data(), d.data(), 1, ncclUint64, ncclSum, comm, s));
  COURSE_CHECK(cudaMemcpyAsync(&count, d.data(), sizeof count, cudaMemcpyDeviceToHost, s));
  COURSE_CHECK(cudaStreamSynchronize(s));
  if (count > local.mismatches) {
    std::cerr << kLesson << ": " << count - local.mismatches << " mismatches on other ranks\n";
    local.mismatches = count;
  }
  return local;
}

double time_ms(course::Harness& harness, const course::Launch& l) {
  return course::time_stream_work(l, harness.stream(), harness.warmup(), harness.iters()).median_ms;
}

}  // namespace nccl_overlap::driver
