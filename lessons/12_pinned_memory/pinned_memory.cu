// Your exercise: fill in the TODOs of this file only; the rest of the lesson is read-only (generated from solutions/12_pinned_memory/pinned_memory.cu by ./course sync).
// Your exercise: the TODOs in this file. The rest of the API (pinned_memory_launch.cu), the
// measurements and models (pinned_memory_parts.cu, small_copies.cu, overhead_model.cpp), the
// driver (main.cu) and the tests are read-only.
//
// Lesson 12: pinned memory and small-copy overhead.
//
// The copy engines of a GPU move data by DMA: they read and write host memory by its
// physical address, with no CPU and no operating system involved. That is only safe for
// memory the OS promises not to move or page out: *page-locked* ("pinned") memory.
//
//   pageable:  host buffer --CPU memcpy--> driver's pinned staging buffer --DMA--> GPU
//              (in chunks, the CPU and the copy engine taking turns; the call cannot
//              return before the CPU's part is done)
//   pinned:    host buffer --DMA--> GPU
//              (the call only queues the copy and returns; the engine does the rest)
//
// Yours: allocate and release host memory of every kind (TODO 1, 2), show with the host
// clock when cudaMemcpyAsync returns (TODO 3), and fit and use the straight-line model of
// what one copy costs, time = overhead + bytes / bandwidth (TODO 4, 5).
#include "pinned_memory.cuh"

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <new>
#include <stdexcept>
#include <string>

#include "course/check.h"
#include "course/stats.h"

namespace pinned_memory {
namespace {

using Clock = std::chrono::steady_clock;

double microseconds(Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

}  // namespace

// ---- Host memory of every kind -------------------------------------------------------------

unsigned host_alloc_flags(HostMemory kind) {
  // TODO 1: the cudaHostAlloc flag of each cudaHostAlloc kind: cudaHostAllocDefault,
  //         cudaHostAllocPortable, cudaHostAllocMapped or cudaHostAllocWriteCombined.
  //         The other kinds are not made by cudaHostAlloc: throw std::invalid_argument.
  (void)kind;
  return 0;
}

HostBuffer::HostBuffer(HostMemory kind, std::size_t bytes) : kind_(kind), bytes_(bytes) {
  if (bytes == 0) return;
  // TODO 1 (continued): allocate `bytes` bytes of `kind` into data_:
  //         pageable        std::malloc (throw std::bad_alloc if it returns nullptr)
  //         pinned          cudaMallocHost
  //         hostalloc, portable, mapped, write-combined
  //                         cudaHostAlloc with host_alloc_flags(kind)
  //         registered      std::aligned_alloc(kPageBytes, whole_pages(bytes)), then
  //                         cudaHostRegister(..., cudaHostRegisterDefault); if registering
  //                         fails, free the memory before you throw (a constructor that
  //                         throws runs no destructor).
  //         Check every CUDA call with COURSE_CHECK.
  data_ = std::malloc(bytes);
  if (data_ == nullptr) throw std::bad_alloc();
}

void HostBuffer::release() noexcept {
  if (data_ == nullptr) return;
  // TODO 2: give data_ back the way it was allocated: std::free for pageable memory,
  //         cudaFreeHost for cudaMallocHost and cudaHostAlloc memory, and for registered
  //         memory cudaHostUnregister first (it unlocks the pages), then std::free.
  //         A destructor must not throw: report a failed CUDA call on std::cerr instead.
  std::free(data_);
  data_ = nullptr;
  bytes_ = 0;
}

// ---- When does cudaMemcpyAsync return? ------------------------------------------------------

AsyncCallTiming time_async_copy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                                cudaStream_t stream) {
  if (bytes == 0) throw std::invalid_argument("time_async_copy: nothing to copy (0 bytes)");
  // An idle stream: the copy cannot wait behind other work, and nothing else is timed.
  COURSE_CHECK(cudaStreamSynchronize(stream));
  AsyncCallTiming timing;
  // TODO 3: time the cudaMemcpyAsync call itself with the host clock (Clock::now()
  //         before and after it), then ask whether the copy is still running
  //         (stream_busy), then wait for the stream and take the time again. Fill
  //         timing.call_us, timing.in_flight_at_return and timing.done_us, both times
  //         measured from just before the call (microseconds() converts a duration).
  (void)dst; (void)src; (void)kind;
  return timing;
}

// ---- The straight-line overhead model -------------------------------------------------------

OverheadModel fit_overhead(const std::vector<double>& bytes, const std::vector<double>& us) {
  OverheadModel model;
  // TODO 4: fit a straight line us = intercept + slope * bytes with course::fit_line
  //         (it throws for data that defines no line; let that propagate). The intercept
  //         is the overhead in microseconds; the slope is microseconds per byte, so the
  //         bandwidth in GB/s (10^9 bytes per second) is 1e-3 / slope. A slope that is
  //         not positive describes no bandwidth: throw std::domain_error. Keep r^2.
  //         (Whether the bandwidth is physical is the report's question: it compares it
  //         with a large copy over the same link.)
  (void)bytes; (void)us;
  return model;
}

double predicted_us(const OverheadModel& model, double bytes) {
  // TODO 5: the model's time for one copy: the overhead plus the time the bytes take at
  //         the bandwidth (1 GB/s moves 1e3 bytes per microsecond).
  (void)model; (void)bytes;
  return 0;
}

double break_even_bytes(const OverheadModel& model) {
  // TODO 5 (continued): the size whose transfer time equals the overhead.
  (void)model;
  return 0;
}

}  // namespace pinned_memory
