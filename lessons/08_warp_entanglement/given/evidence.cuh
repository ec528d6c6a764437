// Lesson 08: what the kernel measures about itself, in every thread. Read-only: the
// exercise (warp_entanglement.cu) includes it and calls these; none of them changes what the
// kernel computes or when it waits, except that the instrumented launch reads the clock and
// looks at shared memory after each wait.
#pragma once

#include <cuda_awbarrier_primitives.h>

#include <cstddef>
#include <cstdint>

#include "course/batches.cuh"
#include "warp_entanglement.cuh"

namespace warp_entanglement::evidence {

/// How long (clock64 cycles, about 2.5 ms) lane 0 watches its warp's counting barrier before
/// it concludes that the arrive-ons delivered fewer arrivals than one per thread.
inline constexpr long long kPatienceCycles = 1ll << 22;

/// What one thread counts during an instrumented launch (in registers until the end).
struct ThreadEvidence {
  unsigned long long wait_cycles = 0;
  unsigned waits = 0;
  unsigned own_checked = 0;
  unsigned own_landed = 0;
  unsigned newer_checked = 0;
  unsigned newer_landed = 0;
  unsigned commit_executions = 0;
  unsigned arrive_executions = 0;
};

/// 1 in the lowest active lane of the group of lanes running this together, else 0: summed
/// over a warp, the number of times the next instruction is executed.
__device__ __forceinline__ unsigned one_per_converged_group() {
  const unsigned active = __activemask();
  return (threadIdx.x % kWarpSize) == static_cast<unsigned>(__ffs(active) - 1) ? 1u : 0u;
}

/// Whether the phase of `barrier` with parity `parity` has completed, without waiting
/// (`mbarrier.test_wait.parity`, sm_80 and later; the awbarrier primitive of the same name
/// compiles to a trap below sm_90).
__device__ __forceinline__ bool phase_completed(std::uint64_t* barrier, unsigned parity) {
  unsigned completed = 0;
  asm volatile(
      "{\n\t.reg .pred done;\n\t"
      "mbarrier.test_wait.parity.shared.b64 done, [%1], %2;\n\t"
      "selp.b32 %0, 1, 0, done;\n\t}"
      : "=r"(completed)
      : "r"(static_cast<unsigned>(__cvta_generic_to_shared(barrier))), "r"(parity)
      : "memory");
  return completed != 0;
}

/// Reads one word of shared memory now, even if a copy to it may still be in flight.
__device__ __forceinline__ std::uint32_t read_now(const uint4* buffer, std::size_t element) {
  return reinterpret_cast<const volatile std::uint32_t*>(buffer)[element];
}

/// Right after the wait before batch k: has this thread's own batch k landed (it must have),
/// and has its own batch k + 1, which it allowed to stay pending, landed already? Looks at
/// the first element of the thread's first chunk of each, which only this thread copies.
__device__ inline void look_at_my_batches(const uint4* now_buffer, const uint4* next_buffer,
                                          const std::uint32_t* __restrict__ in, std::size_t k,
                                          std::size_t mine, std::size_t batch, std::size_t n,
                                          ThreadEvidence& ev) {
  using course::batches::batch_of_block;
  const std::size_t element = 4 * static_cast<std::size_t>(threadIdx.x);  // chunk v = 0
  const course::batches::Batch now = batch_of_block(k, batch, n);
  const bool has_next = k + 1 < mine && batch_of_block(k + 1, batch, n).count == batch;
  // Both reads first, the comparisons with the input after: the next batch keeps landing.
  const std::uint32_t next_seen = has_next ? read_now(next_buffer, element) : 0;
  const std::uint32_t now_seen = element < now.count ? read_now(now_buffer, element) : 0;
  if (has_next) {
    ++ev.newer_checked;
    ev.newer_landed += next_seen == in[batch_of_block(k + 1, batch, n).first + element];
  }
  if (element < now.count) {
    ++ev.own_checked;
    ev.own_landed += now_seen == in[now.first + element];
  }
}

/// Lane 0's last look at its warp's counting barrier, whose expected count is one arrival
/// per thread per counted round plus one for lane 0 itself. Every copy has landed by now, so
/// every arrive-on has been triggered: lane 0 arrives once and watches the phase complete.
/// If it does not within kPatienceCycles, the arrive-ons delivered fewer arrivals: lane 0
/// adds them one by one until the phase completes, and so learns how many there were.
/// Returns the arrivals the arrive-ons delivered. Never waits for ever.
__device__ inline unsigned count_arrivals(std::uint64_t* counter, unsigned expected) {
  (void)__mbarrier_arrive(counter);
  const long long start = clock64();
  while (!phase_completed(counter, 0)) {
    if (clock64() - start > kPatienceCycles) {
      unsigned extra = 0;
      do {
        (void)__mbarrier_arrive(counter);
        ++extra;
      } while (!phase_completed(counter, 0) && extra < expected);
      return extra + 1 >= expected ? 0 : expected - 1 - extra;
    }
  }
  return expected - 1;
}

/// Adds this thread's counts (and, in lane 0, its warp's rounds and arrivals) to `evidence`.
__device__ inline void add_to(Evidence* evidence, const ThreadEvidence& ev, std::size_t rounds,
                              std::size_t counted_rounds, unsigned arrivals) {
  const unsigned lane = threadIdx.x % kWarpSize;
  LaneEvidence& mine = evidence->lanes[lane];
  atomicAdd(&mine.wait_cycles, ev.wait_cycles);
  atomicAdd(&mine.waits, static_cast<unsigned long long>(ev.waits));
  atomicAdd(&mine.own_checked, static_cast<unsigned long long>(ev.own_checked));
  atomicAdd(&mine.own_landed, static_cast<unsigned long long>(ev.own_landed));
  atomicAdd(&mine.newer_checked, static_cast<unsigned long long>(ev.newer_checked));
  atomicAdd(&mine.newer_landed, static_cast<unsigned long long>(ev.newer_landed));
  atomicAdd(&evidence->commit_executions, static_cast<unsigned long long>(ev.commit_executions));
  atomicAdd(&evidence->arrive_executions, static_cast<unsigned long long>(ev.arrive_executions));
  if (lane == 0) {
    atomicAdd(&evidence->warps, 1ull);
    atomicAdd(&evidence->commit_rounds, static_cast<unsigned long long>(rounds));
    atomicAdd(&evidence->arrive_rounds, static_cast<unsigned long long>(counted_rounds));
    atomicAdd(&evidence->arrivals_expected,
              static_cast<unsigned long long>(kWarpSize * counted_rounds));
    atomicAdd(&evidence->arrivals_measured, static_cast<unsigned long long>(arrivals));
  }
}

}  // namespace warp_entanglement::evidence
