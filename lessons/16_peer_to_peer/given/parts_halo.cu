// Lesson 16, the halo ring of the driver (read-only; peer_to_peer_parts.h says what it does).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <vector>

#include "course/data.h"
#include "course/multi_gpu.h"
#include "course/stats.h"
#include "course/table.h"
#include "peer_to_peer.cuh"
#include "peer_to_peer_parts.h"

namespace peer_to_peer::parts {
namespace {

constexpr int kHaloTimedSteps = 10;
constexpr double kOverlapBound = 1.10;  // the target: overlapped <= 1.10 x the longer part
constexpr std::uint32_t kSeedGrid = 1616;

/// Host time of one step, median of `iters` samples of kHaloTimedSteps steps each.
template <class Step>
double time_halo(HaloRing& ring, Step step, int warmup, int iters) {
  for (int i = 0; i < warmup; ++i) step(ring);
  ring.synchronize();
  std::vector<double> samples;
  for (int i = 0; i < std::max(iters, 1); ++i) {
    const auto start = std::chrono::steady_clock::now();
    for (int s = 0; s < kHaloTimedSteps; ++s) step(ring);
    ring.synchronize();
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
    samples.push_back(took.count() / kHaloTimedSteps);
  }
  return course::median(samples);
}

}  // namespace

void run_halo_ring(course::Harness& harness, const std::vector<course::DeviceSummary>& devices,
                   const halo::RingLayout& layout, int warmup, int iters) {
  course::enable_all_peer_access(devices);
  std::vector<int> ordinals;
  for (const auto& d : devices) ordinals.push_back(d.ordinal);
  HaloRing ring(ordinals, layout, 0);
  std::vector<std::uint32_t> grid(static_cast<std::size_t>(layout.total_rows()) * layout.width);
  course::fill_hash_host({grid.data(), grid.size()}, kSeedGrid);
  constexpr int kCheckedSteps = 2;
  ring.load(grid);
  for (int step = 0; step < kCheckedSteps; ++step) halo_step(ring);
  const auto got = ring.gather();
  const auto want = halo::reference_steps(grid, layout.total_rows(), layout.width, layout.radius, 0,
                                          kCheckedSteps);
  const course::Comparison c =
      course::compare_exact(cuda::std::span<const std::uint32_t>(want.data(), want.size()),
                            cuda::std::span<const std::uint32_t>(got.data(), got.size()));
  std::cout << "halo ring: " << layout.gpus << " GPUs, " << layout.rows << " x " << layout.width
            << " words each, radius " << layout.radius << ", " << kCheckedSteps
            << " steps against the CPU: " << c.summary() << "\n";
  const double amount = static_cast<double>(grid.size()) * 4;
  const double overlapped = time_halo(ring, halo_step, warmup, iters);
  const double exchange = time_halo(ring, exchange_only, warmup, iters);
  const double compute = time_halo(ring, compute_only, warmup, iters);
  harness.record("halo step overlapped", overlapped, amount, c.ok() ? "PASS" : "FAIL");
  harness.record("halo exchange alone", exchange, amount, "-");
  harness.record("halo compute alone", compute, amount, "-");
  const double bound = std::max(exchange, compute);
  harness.judged_target("halo step overlapped <= " + course::fixed(kOverlapBound, 2) +
                            " x max(exchange alone, compute alone)",
                        overlapped <= kOverlapBound * bound, bound > 0 ? overlapped / bound : 0);
}

}  // namespace peer_to_peer::parts
