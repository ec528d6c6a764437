// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
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

// ---- Host memory of every kind -------------------------------------------------------------

unsigned host_alloc_flags(HostMemory kind) {
  // TODO 1: the cudaHostAlloc flag of each cudaHostAlloc kind: cudaHostAllocDefault,
  //         cudaHostAllocPortable, cudaHostAllocMapped or cudaHostAllocWriteCombined.
  //         The other kinds are not made by cudaHostAlloc: throw std::invalid_argument.
  // BEGIN SOLUTION
  switch (kind) {
    case HostMemory::host_alloc:
      return cudaHostAllocDefault;
    case HostMemory::portable:
      return cudaHostAllocPortable;
    case HostMemory::mapped:
      return cudaHostAllocMapped;
    case HostMemory::write_combined:
      return cudaHostAllocWriteCombined;
    default:
      break;
  }
  throw std::invalid_argument(std::string("host_alloc_flags: ") + name(kind) +
                              " memory is not allocated by cudaHostAlloc");
  // STARTER: (void)kind;
  // STARTER: return 0;
  // END SOLUTION
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
  // BEGIN SOLUTION
  switch (kind) {
    case HostMemory::pageable:
      data_ = std::malloc(bytes);
      if (data_ == nullptr) throw std::bad_alloc();
      break;
    case HostMemory::pinned:
      COURSE_CHECK(cudaMallocHost(&data_, bytes));
      break;
    case HostMemory::host_alloc:
    case HostMemory::portable:
    case HostMemory::mapped:
    case HostMemory::write_combined:
      COURSE_CHECK(cudaHostAlloc(&data_, bytes, host_alloc_flags(kind)));
      break;
    case HostMemory::registered: {
      // Whole pages: the OS locks pages, not bytes, and a page already registered as
      // part of another buffer cannot be registered again.
      const std::size_t locked = whole_pages(bytes);
      void* storage = std::aligned_alloc(kPageBytes, locked);
      if (storage == nullptr) throw std::bad_alloc();
      const cudaError_t registered = cudaHostRegister(storage, locked, cudaHostRegisterDefault);
      if (registered != cudaSuccess) {
        std::free(storage);
        COURSE_CHECK(registered);
      }
      data_ = storage;
      break;
    }
  }
  // STARTER: data_ = std::malloc(bytes);
  // STARTER: if (data_ == nullptr) throw std::bad_alloc();
  // END SOLUTION
}

void HostBuffer::release() noexcept {
  if (data_ == nullptr) return;
  // TODO 2: give data_ back the way it was allocated: std::free for pageable memory,
  //         cudaFreeHost for cudaMallocHost and cudaHostAlloc memory, and for registered
  //         memory cudaHostUnregister first (it unlocks the pages), then std::free.
  //         A destructor must not throw: report a failed CUDA call on std::cerr instead.
  // BEGIN SOLUTION
  cudaError_t status = cudaSuccess;
  switch (kind_) {
    case HostMemory::pageable:
      std::free(data_);
      break;
    case HostMemory::pinned:
    case HostMemory::host_alloc:
    case HostMemory::portable:
    case HostMemory::mapped:
    case HostMemory::write_combined:
      status = cudaFreeHost(data_);
      break;
    case HostMemory::registered:
      status = cudaHostUnregister(data_);
      std::free(data_);
      break;
  }
  if (status != cudaSuccess) {
    std::cerr << "warning: releasing " << name(kind_)
              << " host memory failed: " << cudaGetErrorString(status) << "\n";
  }
  // STARTER: std::free(data_);
  // END SOLUTION
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
  // BEGIN SOLUTION
  const Clock::time_point start = Clock::now();
  COURSE_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, stream));
  const Clock::time_point returned = Clock::now();
  timing.in_flight_at_return = stream_busy(stream);
  COURSE_CHECK(cudaStreamSynchronize(stream));
  const Clock::time_point done = Clock::now();
  timing.call_us = microseconds(returned - start);
  timing.done_us = microseconds(done - start);
  // STARTER: (void)dst; (void)src; (void)kind;
  // END SOLUTION
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
  // BEGIN SOLUTION
  const course::LinearFit line = course::fit_line(bytes, us);
  if (!(line.slope > 0)) {
    throw std::domain_error("fit_overhead: the time per copy does not grow with its size (slope " +
                            std::to_string(line.slope) + " us per byte)");
  }
  model.overhead_us = line.intercept;
  model.bandwidth_gbps = 1e-3 / line.slope;
  model.r_squared = line.r_squared;
  // STARTER: (void)bytes; (void)us;
  // END SOLUTION
  return model;
}

double predicted_us(const OverheadModel& model, double bytes) {
  // TODO 5: the model's time for one copy: the overhead plus the time the bytes take at
  //         the bandwidth (1 GB/s moves 1e3 bytes per microsecond).
  // BEGIN SOLUTION
  return model.overhead_us + bytes / (model.bandwidth_gbps * 1e3);
  // STARTER: (void)model; (void)bytes;
  // STARTER: return 0;
  // END SOLUTION
}

double break_even_bytes(const OverheadModel& model) {
  // TODO 5 (continued): the size whose transfer time equals the overhead.
  // BEGIN SOLUTION
  return model.overhead_us * model.bandwidth_gbps * 1e3;
  // STARTER: (void)model;
  // STARTER: return 0;
  // END SOLUTION
}

}  // namespace pinned_memory
