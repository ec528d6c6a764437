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
// This file holds the lesson's tools: host buffers of every kind (the exercise: allocate
// and release them), the host-side timing of one asynchronous copy (the exercise: show
// when the call returns), the per-copy overhead measurements of the CUDA Handbook, and
// the straight-line model that turns them into an overhead and a bandwidth (the
// exercise: fit it and use it). Verification runs on the GPU, so that the CPU never has
// to read write-combined memory (lesson 12 measures why it should not).
#include "pinned_memory.cuh"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "course/buffers.h"
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

const char* name(HostMemory kind) {
  switch (kind) {
    case HostMemory::pageable:
      return "pageable";
    case HostMemory::pinned:
      return "pinned";
    case HostMemory::host_alloc:
      return "hostalloc";
    case HostMemory::portable:
      return "portable";
    case HostMemory::mapped:
      return "mapped";
    case HostMemory::write_combined:
      return "write-combined";
    case HostMemory::registered:
      return "registered";
  }
  return "unknown";
}

const char* api(HostMemory kind) {
  switch (kind) {
    case HostMemory::pageable:
      return "malloc";
    case HostMemory::pinned:
      return "cudaMallocHost";
    case HostMemory::host_alloc:
      return "cudaHostAlloc(Default)";
    case HostMemory::portable:
      return "cudaHostAlloc(Portable)";
    case HostMemory::mapped:
      return "cudaHostAlloc(Mapped)";
    case HostMemory::write_combined:
      return "cudaHostAlloc(WriteCombined)";
    case HostMemory::registered:
      return "cudaHostRegister";
  }
  return "unknown";
}

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

HostBuffer::~HostBuffer() { release(); }

HostBuffer::HostBuffer(HostBuffer&& other) noexcept
    : kind_(other.kind_),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

HostBuffer& HostBuffer::operator=(HostBuffer&& other) noexcept {
  if (this != &other) {
    release();
    kind_ = other.kind_;
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

bool HostBuffer::page_locked() const {
  if (data_ == nullptr) return false;
  cudaPointerAttributes attributes{};
  COURSE_CHECK(cudaPointerGetAttributes(&attributes, data_));
  return attributes.type == cudaMemoryTypeHost;
}

const std::uint32_t* HostBuffer::device_view() const {
  void* device = nullptr;
  const cudaError_t status = cudaHostGetDevicePointer(&device, data_, 0);
  if (status != cudaSuccess) {
    // Not mapped (pageable memory): clear the runtime's last error before reporting, so
    // that a later COURSE_CHECK_LAUNCH() does not blame an unrelated kernel for it.
    (void)cudaGetLastError();
    COURSE_CHECK(status);
  }
  return static_cast<const std::uint32_t*>(device);
}

// ---- When does cudaMemcpyAsync return? ------------------------------------------------------

bool stream_busy(cudaStream_t stream) {
  const cudaError_t state = cudaStreamQuery(stream);
  if (state == cudaErrorNotReady) {
    // "Not ready" is an answer, not a failure, but the runtime may also leave it in its
    // last-error slot, where the next COURSE_CHECK_LAUNCH() would report it.
    (void)cudaGetLastError();
    return true;
  }
  COURSE_CHECK(state);
  return false;
}

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

// ---- What one small copy costs (CUDA Handbook 6.2) ------------------------------------------

double async_copy_us_per_call(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                              cudaStream_t stream, int count) {
  if (count < 1) throw std::invalid_argument("async_copy_us_per_call: count must be >= 1");
  COURSE_CHECK(cudaStreamSynchronize(stream));
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < count; ++i) {
    COURSE_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, stream));
  }
  // Only the last copy is waited for: the host issues copies while the GPU works, and
  // the time per copy is whichever side is slower (for small copies, both are fixed costs).
  COURSE_CHECK(cudaStreamSynchronize(stream));
  return microseconds(Clock::now() - start) / count;
}

double sync_copy_us_per_call(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                             int count) {
  if (count < 1) throw std::invalid_argument("sync_copy_us_per_call: count must be >= 1");
  COURSE_CHECK(cudaDeviceSynchronize());
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < count; ++i) {
    // Each call waits until its copy is done: host and GPU take turns, nothing overlaps.
    COURSE_CHECK(cudaMemcpy(dst, src, bytes, kind));
  }
  const double us = microseconds(Clock::now() - start) / count;
  // A cudaMemcpy from pageable memory may return before its last DMA is done (the data
  // is staged, not yet delivered): make sure the copies have landed before anyone looks.
  COURSE_CHECK(cudaDeviceSynchronize());
  return us;
}

// ---- The overhead model ---------------------------------------------------------------------

OverheadModel fit_overhead(const std::vector<double>& bytes, const std::vector<double>& us) {
  OverheadModel model;
  // TODO 4: fit a straight line us = intercept + slope * bytes with course::fit_line
  //         (it throws for data that defines no line; let that propagate). The intercept
  //         is the overhead in microseconds; the slope is microseconds per byte, so the
  //         bandwidth in GB/s (10^9 bytes per second) is 1e-3 / slope. A slope that is
  //         not positive describes no bandwidth: throw std::domain_error. Keep r^2.
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

std::vector<std::size_t> sweep_sizes(std::size_t smallest, std::size_t largest) {
  if (smallest < 4 || smallest % 4 != 0 || largest < smallest) {
    throw std::invalid_argument(
        "sweep_sizes: need 4 <= smallest <= largest, smallest a multiple "
        "of 4; got " +
        std::to_string(smallest) + " and " + std::to_string(largest));
  }
  std::vector<std::size_t> sizes = {smallest};
  while (sizes.back() <= largest / 2) sizes.push_back(sizes.back() * 2);
  return sizes;
}

std::vector<std::size_t> break_even_sizes() {
  std::vector<std::size_t> sizes;
  for (std::size_t bytes = 4096; bytes <= 65536; bytes += 4096) sizes.push_back(bytes);
  return sizes;
}

// ---- Verification on the GPU ----------------------------------------------------------------

namespace {

struct VerifyResult {
  unsigned long long mismatches;
  unsigned long long first;  // the lowest mismatching index, or kNoMismatch
};
constexpr unsigned long long kNoMismatch = ~0ull;

// One thread checks words in a grid-stride loop. Reading 16 bytes per load matters when
// `data` is host memory read over the link (zero-copy): fewer, larger requests.
template <bool kVectors>
__global__ void verify_hash_kernel(const std::uint32_t* __restrict__ data, std::size_t n,
                                   std::uint32_t seed, VerifyResult* result) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned long long mismatches = 0;
  unsigned long long first = kNoMismatch;
  const auto check = [&](std::size_t i, std::uint32_t value) {
    if (value != course::hash32(i, seed)) {
      ++mismatches;
      first = i < first ? i : first;
    }
  };
  std::size_t scalar_start = 0;
  if (kVectors) {
    const uint4* data4 = reinterpret_cast<const uint4*>(data);
    const std::size_t vectors = n / 4;
    for (std::size_t v = thread; v < vectors; v += stride) {
      const uint4 w = data4[v];
      check(4 * v, w.x);
      check(4 * v + 1, w.y);
      check(4 * v + 2, w.z);
      check(4 * v + 3, w.w);
    }
    scalar_start = vectors * 4;
  }
  for (std::size_t i = scalar_start + thread; i < n; i += stride) check(i, data[i]);
  if (mismatches > 0) {
    atomicAdd(&result->mismatches, mismatches);
    atomicMin(&result->first, first);
  }
}

template <bool kVectors>
void launch_verify(const std::uint32_t* data, std::size_t n, std::uint32_t seed,
                   VerifyResult* result, cudaStream_t stream) {
  constexpr int kThreads = 256;
  int device = 0, sms = 0, per_sm = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, verify_hash_kernel<kVectors>,
                                                             kThreads, 0));
  // Enough blocks to fill the GPU once (a grid-stride loop does the rest), fewer for
  // small inputs.
  const std::size_t work = kVectors ? (n + 3) / 4 : n;
  const std::size_t wanted = (work + kThreads - 1) / kThreads;
  const std::size_t resident = static_cast<std::size_t>(std::max(1, sms * std::max(1, per_sm)));
  const unsigned blocks =
      static_cast<unsigned>(std::max<std::size_t>(1, std::min(wanted, resident)));
  verify_hash_kernel<kVectors><<<blocks, kThreads, 0, stream>>>(data, n, seed, result);
  COURSE_CHECK_LAUNCH();
}

}  // namespace

course::Comparison verify_hash(const std::uint32_t* data, std::size_t n, std::uint32_t seed,
                               cudaStream_t stream) {
  if (data == nullptr && n > 0) throw std::invalid_argument("verify_hash: null data");
  course::Comparison comparison;
  if (n == 0) return comparison;

  course::DeviceBuffer<VerifyResult> result(1);
  COURSE_CHECK(cudaMemsetAsync(&result.data()->mismatches, 0, sizeof(unsigned long long), stream));
  COURSE_CHECK(cudaMemsetAsync(&result.data()->first, 0xFF, sizeof(unsigned long long), stream));
  if (reinterpret_cast<std::uintptr_t>(data) % 16 == 0) {
    launch_verify<true>(data, n, seed, result.data(), stream);
  } else {
    launch_verify<false>(data, n, seed, result.data(), stream);
  }
  VerifyResult host{};
  COURSE_CHECK(cudaMemcpyAsync(&host, result.data(), sizeof host, cudaMemcpyDeviceToHost, stream));
  COURSE_CHECK(cudaStreamSynchronize(stream));

  comparison.checked = n;
  comparison.mismatches = host.mismatches;
  if (host.mismatches > 0) {
    std::uint32_t actual = 0;
    // cudaMemcpyDefault: with unified addressing the runtime knows whether `data` is
    // device memory or mapped host memory.
    COURSE_CHECK(cudaMemcpy(&actual, data + host.first, sizeof actual, cudaMemcpyDefault));
    comparison.first.push_back({static_cast<std::size_t>(host.first),
                                std::to_string(course::hash32(host.first, seed)),
                                std::to_string(actual)});
  }
  return comparison;
}

// ---- What the CPU sees --------------------------------------------------------------------

// Where the reading loop's sum goes: a volatile global, so the loop cannot be dropped.
volatile std::uint64_t host_access_sink = 0;

HostAccess measure_host_access(const HostBuffer& buffer, std::size_t bytes, int reps) {
  if (bytes == 0 || bytes % 4 != 0 || bytes > buffer.bytes() || reps < 1) {
    throw std::invalid_argument("measure_host_access: need 0 < bytes <= the buffer's " +
                                std::to_string(buffer.bytes()) +
                                ", a multiple of 4, and reps >= 1");
  }
  std::uint32_t* words = buffer.words().data();
  const std::size_t n = bytes / 4;
  // Untimed: the first write of pageable memory also pays the OS's page faults.
  for (std::size_t i = 0; i < n; ++i) words[i] = static_cast<std::uint32_t>(i);

  std::vector<double> write_s, read_s;
  std::uint64_t checksum = 0;
  for (int rep = 0; rep < reps; ++rep) {
    Clock::time_point start = Clock::now();
    for (std::size_t i = 0; i < n; ++i)
      words[i] = static_cast<std::uint32_t>(i * 2654435761u + rep);
    // A compiler barrier: the reads below must really load what was just stored.
    std::atomic_signal_fence(std::memory_order_seq_cst);
    write_s.push_back(std::chrono::duration<double>(Clock::now() - start).count());

    start = Clock::now();
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < n; ++i) sum += words[i];
    read_s.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    checksum += sum;
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  // Used, so the reading loop cannot be optimised away.
  host_access_sink = checksum;

  HostAccess access;
  access.write_gbps = static_cast<double>(bytes) / course::median(write_s) / 1e9;
  access.read_gbps = static_cast<double>(bytes) / course::median(read_s) / 1e9;
  return access;
}

std::string derived_csv_path(const std::string& csv, const std::string& part) {
  const std::size_t slash = csv.find_last_of('/');
  const std::size_t name_start = slash == std::string::npos ? 0 : slash + 1;
  const std::string suffix = ".csv";
  std::string stem = csv;
  if (csv.size() >= name_start + suffix.size() &&
      csv.compare(csv.size() - suffix.size(), suffix.size(), suffix) == 0) {
    stem = csv.substr(0, csv.size() - suffix.size());
  }
  return stem + "_" + part + suffix;
}

}  // namespace pinned_memory
