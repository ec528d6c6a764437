/// \file stages_in_flight.cuh
/// \brief Lesson 06, tests only: does the cuda::pipeline kernel keep its stages filled?
///
/// A block that issues each batch only just before it waits for it computes the right
/// values and passes every value test and every sanitizer, yet nothing of its own is in
/// flight while it computes: it is lesson 01's kernel with more shared memory. What the
/// lesson is about is that at every step the block has already issued as many of its
/// batches as its ring of stages can hold (the figure of the README's concept section), or
/// all of them near the end.
///
/// pipeline_kernel calls note_short_prefetch() once per step, right after its producer
/// side, with `fetched` (the batches the block has issued so far). In the test programs
/// (COURSE_TEST_HOOKS) it counts every thread's step at which fewer had been issued, and
/// take_prefetch_shortfalls() (pipeline_multi_stage.cuh) reads the count back. Anywhere else
/// it is empty, like the hooks of course/batches.cuh: the lesson's program, its timings and
/// the PTX and SASS the tests read are the kernel without it.
///
/// The counter is one per translation unit (course/mbarrier.cuh says why): the kernels and
/// their launch file are one unit, and the launch file reads it.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace pipeline_multi_stage::stages_in_flight {

#if defined(COURSE_TEST_HOOKS)
/// Steps (one per thread) of this unit's cuda::pipeline kernels after whose producer side
/// fewer batches had been issued than a full pipeline holds; read and reset by
/// take_prefetch_shortfalls().
__device__ unsigned long long g_short_prefetches;
#endif

/// Tests only: called at step `k` of a block that owns `mine` batches, after the producer
/// side, with `fetched` batches issued. A pipeline of `stages` stages is full when it holds
/// `stages` batches from batch k on (batch k itself and the ones after it), or when the
/// block has issued all of its batches; otherwise this counts one short step.
__device__ __forceinline__ void note_short_prefetch(std::size_t fetched, std::size_t k,
                                                    std::size_t mine, int stages) {
#if defined(COURSE_TEST_HOOKS)
  const std::size_t issued_from_k = fetched > k ? fetched - k : 0;  // batches k .. fetched - 1
  const bool none_left = fetched >= mine;
  if (!none_left && issued_from_k < static_cast<std::size_t>(stages)) {
    atomicAdd(&g_short_prefetches, 1ull);
  }
#else
  (void)fetched;
  (void)k;
  (void)mine;
  (void)stages;
#endif
}

}  // namespace pipeline_multi_stage::stages_in_flight
