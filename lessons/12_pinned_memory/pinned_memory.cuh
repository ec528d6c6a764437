/// \file pinned_memory.cuh
/// \brief Lesson 12: pinned (page-locked) host memory, and what one small copy costs.
///
/// The API the driver (main.cu) and the tests call. The exercise (host_alloc_flags, the
/// HostBuffer constructor and release(), time_async_copy, fit_overhead, predicted_us,
/// break_even_bytes) lives in pinned_memory.cu: the starter in lessons/, the complete
/// version in solutions/. Everything else is read-only, in pinned_memory_launch.cu; the
/// step model of small copies is in overhead_model.h.
///
/// Every size in this lesson is in **bytes**. Copies move whole `uint32_t` words, so
/// copy sizes are multiples of 4.
#pragma once

#include <cuda_runtime_api.h>
#include <cuda/std/span>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "course/data.h"
#include "overhead_model.h"

namespace pinned_memory {

/// Where a host buffer comes from, and so what the DMA engines can do with it (the
/// README's table gives the call behind each kind).
enum class HostMemory {
  pageable,        ///< ordinary C library memory the OS may page out; copies are staged
  pinned,          ///< page-locked: the copy engines read and write it directly
  host_alloc,      ///< the flag-taking pinned allocator, default flag: the same as `pinned`
  portable,        ///< the same allocator, portable flag: pinned for every context
  mapped,          ///< the same allocator, mapped flag: kernels may read it in place
  write_combined,  ///< the same allocator, write-combining flag: not cached by the CPU
  registered,      ///< C library memory of whole pages, page-locked afterwards
};

/// Every kind, in the order the tables print them.
inline constexpr std::array<HostMemory, 7> kAllHostMemory = {
    HostMemory::pageable, HostMemory::pinned,         HostMemory::host_alloc, HostMemory::portable,
    HostMemory::mapped,   HostMemory::write_combined, HostMemory::registered};

/// A short name for tables, CSV files and test names: "pageable", "pinned", "hostalloc",
/// "portable", "mapped", "write-combined", "registered".
const char* name(HostMemory kind);

/// The allocation flags of the four kinds one flag-taking allocator makes (host_alloc,
/// portable, mapped, write_combined). Throws std::invalid_argument for the other kinds.
unsigned host_alloc_flags(HostMemory kind);

/// The page size the OS locks memory in: registered buffers start on a page and
/// cover whole pages, so two buffers never share (and never both try to pin) one page.
inline constexpr std::size_t kPageBytes = 4096;
static_assert(kPageBytes % 16 == 0 && (kPageBytes & (kPageBytes - 1)) == 0,
              "a page is a power of two of whole 16-byte vectors, or a buffer's start is no "
              "longer aligned for the widest copies");

/// `bytes` rounded up to whole pages: what a registered buffer of `bytes` bytes locks.
inline constexpr std::size_t whole_pages(std::size_t bytes) {
  return (bytes + kPageBytes - 1) / kPageBytes * kPageBytes;
}

/// An owning host buffer of one HostMemory kind, released the way it was allocated.
/// Move-only.
class HostBuffer {
 public:
  HostBuffer() = default;
  /// Allocates `bytes` bytes of `kind`. No allocation and no CUDA call for 0 bytes.
  /// Throws course::CudaError when the CUDA allocation fails, std::bad_alloc when the
  /// C library's does. The contents start undefined.
  HostBuffer(HostMemory kind, std::size_t bytes);
  ~HostBuffer();
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  HostBuffer(HostBuffer&& other) noexcept;
  HostBuffer& operator=(HostBuffer&& other) noexcept;

  HostMemory kind() const noexcept { return kind_; }
  void* data() const noexcept { return data_; }
  std::size_t bytes() const noexcept { return bytes_; }
  /// The buffer as 32-bit words (bytes / 4 of them).
  cuda::std::span<std::uint32_t> words() const noexcept {
    return {static_cast<std::uint32_t*>(data_), bytes_ / sizeof(std::uint32_t)};
  }

  /// Whether CUDA knows this memory as page-locked host memory
  /// (cudaPointerGetAttributes reports cudaMemoryTypeHost).
  bool page_locked() const;
  /// The address a kernel uses to read or write this buffer in place (zero-copy), from
  /// cudaHostGetDevicePointer. With unified addressing every page-locked buffer is
  /// mapped; pageable memory is not, and this throws course::CudaError for it.
  const std::uint32_t* device_view() const;

 private:
  void release() noexcept;
  HostMemory kind_ = HostMemory::pageable;
  void* data_ = nullptr;   ///< what the caller uses
  std::size_t bytes_ = 0;  ///< what the caller asked for (registered: whole pages are locked)
};

/// Whether work is still queued or running on `stream` (cudaStreamQuery says
/// cudaErrorNotReady). Clears that "not ready" answer from the runtime's last-error slot,
/// so a later cudaGetLastError() does not mistake it for a failed launch; any other
/// error throws course::CudaError.
bool stream_busy(cudaStream_t stream);

/// What the host saw of one cudaMemcpyAsync.
struct AsyncCallTiming {
  double call_us = 0;                ///< from the call to its return (host clock)
  double done_us = 0;                ///< from the call until the stream had finished the copy
  bool in_flight_at_return = false;  ///< the copy was still running when the call returned
};

/// Times one cudaMemcpyAsync of `bytes` bytes on `stream` with the host clock
/// (std::chrono::steady_clock): how long the call took to return, whether the copy was
/// still in flight when it did, and how long until the copy was complete. Waits for
/// `stream` to be idle first, so nothing else is measured; returns with the copy done.
/// Throws std::invalid_argument for 0 bytes (before any CUDA call).
AsyncCallTiming time_async_copy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                                cudaStream_t stream);

/// Host time per call, in microseconds, of `count` back-to-back cudaMemcpyAsync calls on
/// `stream` followed by one cudaStreamSynchronize: the per-copy cost when copies are
/// issued as fast as the host can (the CUDA Handbook's nullHtoDMemcpyAsync measurement).
/// Throws std::invalid_argument when count < 1 (before any CUDA call).
double async_copy_us_per_call(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                              cudaStream_t stream, int count);

/// Host time per call, in microseconds, of `count` synchronous cudaMemcpy calls: each
/// one waits for the GPU, so each pays the full round trip (nullDtoHMemcpySync).
/// Throws std::invalid_argument when count < 1 (before any CUDA call).
double sync_copy_us_per_call(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                             int count);

/// Fits the model to measured per-copy times: `us[i]` microseconds for a copy of
/// `bytes[i]` bytes, by least squares. Throws std::invalid_argument for data that defines
/// no line (fewer than 2 points, every size the same, ...), and std::domain_error when the
/// fitted slope is not positive (the times do not grow with the size: something other than
/// moving bytes dominates them).
OverheadModel fit_overhead(const std::vector<double>& bytes, const std::vector<double>& us);

/// The model's time for one copy of `bytes` bytes, in microseconds.
double predicted_us(const OverheadModel& model, double bytes);

/// The break-even size: the copy size whose fixed overhead equals the time spent moving
/// its bytes, overhead x bandwidth. A copy of this size reaches half the bandwidth;
/// copies much smaller than it are mostly overhead, and batching them pays.
double break_even_bytes(const OverheadModel& model);

/// The rate one copy of `bytes` bytes reaches under the model, in GB/s.
inline double effective_gbps(const OverheadModel& model, double bytes) {
  const double us = predicted_us(model, bytes);
  return us > 0 ? bytes / (us * 1e3) : 0;
}

/// Copy sizes of the bandwidth sweep: `smallest`, 2 x smallest, 4 x ..., up to `largest`
/// (included when it is a power-of-two multiple of `smallest`). Throws
/// std::invalid_argument unless 4 <= smallest <= largest and smallest is a multiple of 4.
std::vector<std::size_t> sweep_sizes(std::size_t smallest, std::size_t largest);

/// Copy sizes of the break-even sweep: 4 KB, 8 KB, ..., 64 KB (the CUDA Handbook's range,
/// in 4 KB steps: 16 points for the fit).
std::vector<std::size_t> break_even_sizes();

/// Verifies `n` words at `data` against course::hash32(i, seed) on the GPU (one kernel
/// on `stream`, then a wait). `data` is any address a kernel can read: device memory, or
/// the device_view() of a page-locked host buffer, which the kernel then reads over the
/// link without the CPU touching it. Every word is checked. Throws std::invalid_argument
/// for a null `data` with n > 0 (before any CUDA call).
course::Comparison verify_hash(const std::uint32_t* data, std::size_t n, std::uint32_t seed,
                               cudaStream_t stream);

/// What the CPU sees of a host buffer: how fast it writes and reads it.
struct HostAccess {
  double write_gbps = 0;
  double read_gbps = 0;
};

/// Times the CPU writing, then reading (summing), the first `bytes` bytes of `buffer`,
/// medians of `reps` runs after one untimed write. Reads of write-combined memory bypass
/// the CPU caches, which is what this measures. Throws std::invalid_argument when
/// `bytes` exceeds the buffer, is not a multiple of 4, is 0, or reps < 1.
HostAccess measure_host_access(const HostBuffer& buffer, std::size_t bytes, int reps);

namespace {

// ---- The host clock ------------------------------------------------------------------------
// Both pinned_memory.cu (TODO 3) and the measurements of pinned_memory_launch.cu time with it.

using Clock = std::chrono::steady_clock;

/// `d` in microseconds.
inline double microseconds(Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

}  // namespace

}  // namespace pinned_memory
