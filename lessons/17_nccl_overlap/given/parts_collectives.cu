// Lesson 17's driver, Part 1 (read-only): the three collectives through the harness, every
// element checked on every rank, the rate column nccl-tests' bus bandwidth, beside rank 0's
// yardstick, a peer copy over NVLink.
#include <cstdint>
#include <functional>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "capstone.cuh"
#include "course/buffers.h"
#include "course/check.h"
#include "course/data.h"
#include "course/harness.h"
#include "course/multi_gpu.h"
#include "course/table.h"
#include "nccl_overlap_driver.h"

namespace nccl_overlap::driver {

Part1::Part1(std::size_t n, int ranks_, int rank_, cudaStream_t s)
    : count(n),
      ranks(ranks_),
      rank(rank_),
      ag_in(n),
      ag_out(n * ranks_),
      rs_in(n * ranks_),
      rs_out(n),
      ar_in(n * ranks_),
      ar_out(n * ranks_) {
  const auto r = static_cast<std::uint32_t>(rank);
  capstone::fill_uniform(ag_in.span(), 100 + r, s);
  capstone::fill_uniform(rs_in.span(), 200 + r, s);
  capstone::fill_uniform(ar_in.span(), 300 + r, s);
}
std::vector<float> Part1::expected(Collective c) const {
  std::vector<float> e(c == Collective::reduce_scatter ? count : count * ranks, 0.0f);
  for (std::size_t i = 0; i < e.size(); ++i) {
    if (c == Collective::all_gather) {
      e[i] = capstone::uniform_value(i % count, 100 + static_cast<std::uint32_t>(i / count));
      continue;
    }
    const std::size_t at = c == Collective::reduce_scatter ? rank * count + i : i;
    const std::uint32_t seed = c == Collective::reduce_scatter ? 200 : 300;
    for (int q = 0; q < ranks; ++q) e[i] += capstone::uniform_value(at, seed + q);
  }
  return e;
}

void run_peer_reference(course::Harness& harness, const course::DeviceSummary& gpu,
                        const Plan& plan, PeerCopy& peer_copy) {
  const int devices = course::visible_device_count();
  if (devices < 2) return;
  const int peer = (gpu.ordinal + 1) % devices;
  const std::size_t bytes = plan.peer_bytes;
  course::enable_peer_access(gpu.ordinal, peer);
  peer_copy.src = course::DeviceBuffer<std::uint8_t>(bytes);
  COURSE_CHECK(cudaMemset(peer_copy.src.data(), 0x5a, bytes));  // never copy uninitialised memory
  COURSE_CHECK(cudaSetDevice(peer));
  peer_copy.dst = course::DeviceBuffer<std::uint8_t>(bytes);
  COURSE_CHECK(cudaSetDevice(gpu.ordinal));
  harness.reference(
      "cudaMemcpyPeerAsync GPU " + std::to_string(gpu.ordinal) + " -> " + std::to_string(peer),
      static_cast<double>(bytes), [&, peer, bytes](cudaStream_t s) {
        COURSE_CHECK(cudaMemcpyPeerAsync(peer_copy.dst.data(), peer, peer_copy.src.data(),
                                         gpu.ordinal, bytes, s));
      });
}

namespace {

/// One collective as a harness variant: its bus bytes, the output poisoned before the checked
/// run, and every element compared on every rank (all_ranks) after it.
course::Variant collective_variant(const Part1& p1, ncclComm_t comm, cudaStream_t stream,
                                   Collective c, void* out, std::size_t out_count,
                                   std::function<void(cudaStream_t)> enqueue) {
  const int ranks = p1.ranks;
  return course::Variant{
      collective_name(c),
      collective_bytes(c, c == Collective::all_reduce ? p1.count * ranks : p1.count, ranks) *
          bus_factor(c, ranks),
      std::move(enqueue),
      [out, out_count](cudaStream_t s) { course::poison(out, out_count * 4, s); },
      [&p1, comm, stream, c, out, out_count] {
        const std::vector<float> e = p1.expected(c);
        const cuda::std::span<const float> got(static_cast<const float*>(out), out_count);
        return all_ranks(comm, stream, course::compare_exact<float>(e, course::to_host(got)));
      }};
}

}  // namespace

void run_part1(course::Harness& harness, Part1& p1, ncclComm_t comm) {
  const cudaStream_t stream = harness.stream();
  std::cout << "Part 1: " << course::fixed(p1.count * 4.0 * p1.ranks / (1 << 20), 1)
            << " MiB buffers; the rate column is bus bandwidth (nccl-tests: algbw x (n-1)/n, "
               "x 2(n-1)/n for all-reduce)\n";
  harness.run(collective_variant(p1, comm, stream, Collective::all_gather, p1.ag_out.data(),
                                 p1.ag_out.size(), [&](cudaStream_t s) {
                                   COURSE_NCCL_CHECK(ncclAllGather(p1.ag_in.data(),
                                                                   p1.ag_out.data(), p1.count,
                                                                   ncclFloat, comm, s));
                                 }));
  harness.run(collective_variant(p1, comm, stream, Collective::reduce_scatter, p1.rs_out.data(),
                                 p1.rs_out.size(), [&](cudaStream_t s) {
                                   COURSE_NCCL_CHECK(
                                       ncclReduceScatter(p1.rs_in.data(), p1.rs_out.data(),
                                                         p1.count, ncclFloat, ncclSum, comm, s));
                                 }));
  harness.run(collective_variant(p1, comm, stream, Collective::all_reduce, p1.ar_out.data(),
                                 p1.ar_out.size(), [&](cudaStream_t s) {
                                   COURSE_NCCL_CHECK(ncclAllReduce(
                                       p1.ar_in.data(), p1.ar_out.data(), p1.count * p1.ranks,
                                       ncclFloat, ncclSum, comm, s));
                                 }));
  harness.headline(collective_name(Collective::all_gather));
}

}  // namespace nccl_overlap::driver
