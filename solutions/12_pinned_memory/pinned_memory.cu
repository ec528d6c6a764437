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
// Yours: a host buffer that owns memory of each kind the lesson compares and gives it back
// the way it came (TODO 1, 2); proof, by the host clock, of when an asynchronous copy call
// returns and when its copy is done (TODO 3); and the straight-line model of what one copy
// costs, fitted to measured times and then used (TODO 4, 5). The README's concept sections
// teach the calls; the TODOs say what must hold.
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
  // TODO 1: four kinds come from one flag-taking pinned allocator and differ only in its
  //         flag: return each one's flag (the plain kind gets the allocator's default).
  //         Any other kind is not made by that allocator: throw the exception the header
  //         documents, with a message that names the kind.
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
  // TODO 1 (continued): afterwards data_ holds `bytes` bytes of memory of `kind`, made
  //         the way the README's table gives for that kind (the four flag kinds through
  //         one call, with the flag above). Registered memory is memory of your own that
  //         starts on a page and covers whole pages, page-locked in place afterwards.
  //         Every failure throws: a C library allocation as the starter's does, a CUDA
  //         call checked as everywhere in this file; and when page-locking fails, the
  //         memory is freed first (a constructor that throws runs no destructor).
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
  // TODO 2: data_ goes back through the partner of the call that made it (kind_ says
  //         which): memory from either pinned allocator to the runtime, C library memory
  //         to the C library, and registered memory is unlocked before it is freed.
  //         Nothing here may throw (the destructor calls it): a CUDA call that fails is
  //         reported as a warning on the standard error stream, with the kind and the error.
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

// ---- When does an asynchronous copy call return? --------------------------------------------

AsyncCallTiming time_async_copy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                                cudaStream_t stream) {
  if (bytes == 0) throw std::invalid_argument("time_async_copy: nothing to copy (0 bytes)");
  // An idle stream: the copy cannot wait behind other work, and nothing else is timed.
  COURSE_CHECK(cudaStreamSynchronize(stream));
  AsyncCallTiming timing;
  // TODO 3: issue one asynchronous copy of `bytes` bytes from src to dst (of `kind`, on
  //         `stream`) and fill timing: call_us, how long the call itself took to return;
  //         in_flight_at_return, whether the copy was still running just after the return
  //         (asked before anything waits for it); done_us, how long until the stream had
  //         finished it. Both times in microseconds by the header's host clock, each from
  //         just before the call. Return with the copy complete.
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
  // TODO 4: fit the straight line through the points (bytes, us) by least squares with
  //         the course's own fit (data that defines no line throws there: let it pass).
  //         Fill model: the overhead in microseconds, the bandwidth in GB/s (10^9 bytes
  //         per second: mind the slope's units) and r^2. A slope that is not positive
  //         describes no bandwidth: throw the error the header documents for it.
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
  // TODO 5: the model's time, in microseconds, for one copy of `bytes` bytes: one line.
  // BEGIN SOLUTION
  return model.overhead_us + bytes / (model.bandwidth_gbps * 1e3);
  // STARTER: (void)model; (void)bytes;
  // STARTER: return 0;
  // END SOLUTION
}

double break_even_bytes(const OverheadModel& model) {
  // TODO 5 (continued): the copy size, in bytes, whose time spent moving its bytes
  //         equals the model's overhead: one line.
  // BEGIN SOLUTION
  return model.overhead_us * model.bandwidth_gbps * 1e3;
  // STARTER: (void)model;
  // STARTER: return 0;
  // END SOLUTION
}

}  // namespace pinned_memory
