/// \file mbarrier.cuh
/// \brief The course's one bounded wait for an mbarrier phase, and the parity of a phase.
///
/// An mbarrier counts arrivals (and, for the copy engines, bytes) in phases; a thread waits
/// for the phase it needs by its *parity*: phase 0, 2, 4, ... have parity 0, phase 1, 3, ...
/// parity 1. A wait for a phase that never completes (an expect_tx byte count the copies
/// never reach, a lost arrival, a wrong parity) would spin until the test's timeout kills
/// the process, with no hint why. So every wait the read-only code of lessons 09, 10, 11 and
/// 15 does is bounded, with one behaviour:
///
///  - it gives up after kWaitLimitNs (2 s: a phase of these kernels takes microseconds),
///    counts the give-up in g_wait_timeouts and *returns* (false): the kernel finishes with
///    wrong data, and the host reports it (take_wait_timeouts()). It never traps: a trap
///    leaves the CUDA context unusable for the rest of the process, every later test too;
///  - once any wait gave up, later ones give up at once, so a broken kernel ends quickly
///    instead of waiting 2 s per phase.
///
/// The counter is one per translation unit (a `__device__` variable of a program compiled
/// without relocatable device code belongs to its module), so a lesson reads it with
/// take_wait_timeouts() from the unit that launches the kernels: its launch file.
#pragma once

#include <cuda/ptx>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "course/device_counter.cuh"

namespace course::mbarrier {

/// How long one wait may take before it gives up: far longer than any phase of the course's
/// kernels (microseconds), far shorter than a test's timeout (minutes). One edit changes it.
inline constexpr unsigned long long kWaitLimitNs = 2'000'000'000ull;

/// Waits of this unit's kernels that gave up; read and reset by take_wait_timeouts().
__device__ unsigned long long g_wait_timeouts;

/// The parity of the phase that a barrier's `completion`-th completion (0, 1, 2, ...) ends:
/// phases alternate, so it is the completion's lowest bit.
__host__ __device__ constexpr std::uint32_t phase_parity(std::size_t completion) {
  return static_cast<std::uint32_t>(completion & 1);
}

/// Calls `try_wait()` (one mbarrier.try_wait, which returns whether the phase is over and
/// otherwise suspends the thread in hardware for a while) until it returns true, for at most
/// kWaitLimitNs. Returns true when the phase completed, false when the wait gave up (counted
/// in g_wait_timeouts) or an earlier wait of the unit already had. The fast path, a phase
/// already over, costs one try and nothing else.
template <class TryWait>
__device__ inline bool wait_bounded(TryWait try_wait) {
  if (try_wait()) return true;
  if (*static_cast<volatile unsigned long long*>(&g_wait_timeouts) != 0) return false;
  // %globaltimer: nanoseconds, the same clock on every SM.
  const std::uint64_t start = cuda::ptx::get_sreg_globaltimer();
  while (!try_wait()) {
    if (cuda::ptx::get_sreg_globaltimer() - start > kWaitLimitNs) {
      atomicAdd(&g_wait_timeouts, 1ull);
      return false;
    }
  }
  return true;
}

/// wait_bounded() on the phase of `bar` (a 64-bit mbarrier in shared memory) with parity
/// `parity`, through cuda::ptx::mbarrier_try_wait_parity (sm_90). Below sm_90 it is never
/// called (the kernels that wait are Hopper's) and returns false.
__device__ inline bool wait_parity(std::uint64_t* bar, std::uint32_t parity) {
#if __CUDA_ARCH__ >= 900
  return wait_bounded([bar, parity] { return cuda::ptx::mbarrier_try_wait_parity(bar, parity); });
#else
  (void)bar, (void)parity;
  return false;
#endif
}

/// Host: how many waits of this unit's kernels gave up since the last call (after the device
/// finished its work), and the count reset to 0. `static`: each unit reads its own counter.
static inline unsigned long long take_wait_timeouts() {
  return take_device_count(g_wait_timeouts);
}

}  // namespace course::mbarrier
