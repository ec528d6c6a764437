// Lesson 12: the read-only part of the lesson's API (pinned_memory.cuh): the names of the
// host memory kinds, the HostBuffer members that are not the exercise, the per-copy
// measurements of the CUDA Handbook, the sweep sizes, the GPU verifier and the CPU's view
// of host memory. Read it, do not edit it: your file is pinned_memory.cu.
//
// The build compiles this file in one unit with pinned_memory.cu (yours, or the
// solution); the host clock both time with, Clock and microseconds(), is pinned_memory.cuh's.
#include <algorithm>
#include <atomic>
#include <utility>

#include "course/buffers.h"
#include "course/stats.h"
#include "pinned_memory.cuh"

namespace pinned_memory {

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

}  // namespace pinned_memory
