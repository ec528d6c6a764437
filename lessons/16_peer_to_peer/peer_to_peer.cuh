/// \file peer_to_peer.cuh
/// \brief Lesson 16: moving data between two GPUs of one host (the API the driver and the
/// tests call). peer_to_peer.cu (yours) defines connect(), peer_copy_kernel(),
/// issue_both_directions() and halo_step(); peer_to_peer_launch.cu (read-only) the rest.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "course/check.h"
#include "course/launch.h"
#include "halo_model.h"

namespace peer_to_peer {

/// Keeps the caller's current device: remembers it when made and makes it current again
/// when it goes out of scope, however the scope ends (a return, or an exception thrown on
/// the way). Every function of this lesson that promises to restore the current device makes
/// one first:
///
///     const CurrentDeviceGuard keep_device;  // the caller's device is current again after
///     COURSE_CHECK(cudaSetDevice(other));    // this scope, even if a call below throws
class CurrentDeviceGuard {
 public:
  CurrentDeviceGuard() { COURSE_CHECK(cudaGetDevice(&device_)); }
  /// Errors are ignored here: a destructor must not throw (setting the device that was
  /// current moments ago does not fail in practice).
  ~CurrentDeviceGuard() { (void)cudaSetDevice(device_); }
  CurrentDeviceGuard(const CurrentDeviceGuard&) = delete;
  CurrentDeviceGuard& operator=(const CurrentDeviceGuard&) = delete;

 private:
  int device_ = 0;
};

// ---- Topology and peer access (TODO 1) -------------------------------------------------------

/// What CUDA says about the link from device `from` to device `to`.
struct PeerDirection {
  bool access_supported = false;  ///< cudaDevP2PAttrAccessSupported
  int performance_rank = -1;      ///< cudaDevP2PAttrPerformanceRank (lower is better)
  bool native_atomics = false;    ///< cudaDevP2PAttrNativeAtomicSupported
  bool was_enabled = false;       ///< peer access was already enabled before connect()
};

/// The link between two devices, both ways: `ab` is a -> b (a's kernels reach b's memory).
struct PeerLink {
  int a = 0;
  int b = 1;
  PeerDirection ab;
  PeerDirection ba;
};

/// Queries the link between `a` and `b` in both directions and leaves peer access enabled
/// both ways. May be called again: a second call succeeds, reports was_enabled, and leaves
/// no error behind (the last error reads cudaSuccess afterwards). The caller's current device
/// is current again when it returns or throws. Yours (TODO 1).
PeerLink connect(int a, int b);

/// "GPU 0 -> GPU 1: access yes, performance rank 0, native atomics yes".
std::string describe(const PeerLink& link);

/// What cudaPointerGetAttributes says about `pointer` (allocated on some device), as text.
std::string describe_pointer(const void* pointer);

// ---- SM-driven copies over the link (TODO 2) -------------------------------------------------

/// How wide each load and store of a copy kernel is.
enum class Width { w4 = 4, w8 = 8, w16 = 16 };
inline constexpr Width kWidths[] = {Width::w4, Width::w8, Width::w16};
const char* name(Width w);  ///< "4B", "8B", "16B"

/// Copies `bytes` bytes from `src` to `dst` with loads and stores of sizeof(V) bytes, every
/// thread of the grid striding over the vectors; the bytes past the last whole vector are
/// copied one by one. `src` and `dst` are sizeof(V)-aligned; either may be on another GPU
/// (peer memory): the kernel reads or writes it over the link. Yours (TODO 2).
template <class V>
__global__ void peer_copy_kernel(const std::byte* src, std::byte* dst, std::size_t bytes);

/// The same copy through shared memory with cp.async (sm_80): 16-byte cp.async.cg from
/// `src` (possibly a peer's memory) into shared memory, then stores to `dst`. Read-only.
__global__ void peer_pull_cp_async_kernel(const std::byte* src, std::byte* dst, std::size_t bytes);

/// A prepared launch of peer_copy_kernel<width> on device `device` (the current device is
/// set before each launch; the stream must belong to it). Checks alignment and pointers
/// now (std::invalid_argument). `blocks` 0: 4 per SM.
course::Launch prepare_copy(Width width, const void* src, void* dst, std::size_t bytes, int device,
                            int blocks = 0, int threads = 512);

/// A prepared launch of peer_pull_cp_async_kernel (16-byte aligned pointers).
course::Launch prepare_cp_async_copy(const void* src, void* dst, std::size_t bytes, int device,
                                     int blocks = 0);

// ---- Both directions at once (TODO 3) --------------------------------------------------------

/// Two copies of `bytes` bytes: a -> b (`src_a` to `dst_b`) and b -> a (`src_b` to `dst_a`).
/// `stream_b` belongs to device b; `fork` is an event of device a, `join` one of device b
/// (both created with cudaEventDisableTiming).
struct BothWays {
  int a = 0;
  int b = 1;
  const void* src_a = nullptr;
  void* dst_b = nullptr;
  const void* src_b = nullptr;
  void* dst_a = nullptr;
  std::size_t bytes = 0;
  cudaStream_t stream_b = nullptr;
  cudaEvent_t fork = nullptr;
  cudaEvent_t join = nullptr;
};

/// Enqueues both copies so that they run at the same time, one on each device's stream:
/// neither starts before the work already enqueued on `stream_a` (a stream of device a) has
/// finished, and work enqueued on `stream_a` afterwards starts only after both have
/// finished. Yours (TODO 3).
void issue_both_directions(const BothWays& w, cudaStream_t stream_a);

/// Streams and events for BothWays on devices a and b (created on the right devices), RAII.
class BothWaysResources {
 public:
  BothWaysResources(int a, int b);
  ~BothWaysResources();
  BothWaysResources(const BothWaysResources&) = delete;
  BothWaysResources& operator=(const BothWaysResources&) = delete;
  /// A BothWays with this object's stream and events.
  BothWays make(const void* src_a, void* dst_b, const void* src_b, void* dst_a,
                std::size_t bytes) const;
  cudaStream_t stream_b() const { return stream_b_; }

 private:
  int a_, b_;
  cudaStream_t stream_b_ = nullptr;
  cudaEvent_t fork_ = nullptr, join_ = nullptr;
};

// ---- A halo exchange around a ring of GPUs (TODO 4) -------------------------------------------

/// N GPUs, each owning a slab of `layout.rows` rows of a periodic grid (halo_model.h), with
/// two buffers of (rows + 2 radius) x width words each (input and output of a step), a
/// compute stream and a copy stream, and two events per GPU. Read-only.
class HaloRing {
 public:
  /// `devices`: the ordinals, in ring order; peer access between ring neighbours must be
  /// enabled. `rounds`: extra work per point (see halo_model.h).
  HaloRing(const std::vector<int>& devices, const halo::RingLayout& layout, int rounds);
  ~HaloRing();
  HaloRing(const HaloRing&) = delete;
  HaloRing& operator=(const HaloRing&) = delete;

  int size() const { return static_cast<int>(devices_.size()); }
  const halo::RingLayout& layout() const { return layout_; }
  int left(int g) const { return layout_.left(g); }
  int right(int g) const { return layout_.right(g); }

  cudaStream_t compute_stream(int g) const { return compute_[g]; }
  cudaStream_t copy_stream(int g) const { return copy_[g]; }
  /// Recorded on compute_stream(g) after GPU g's step: its output is complete.
  cudaEvent_t computed(int g) const { return computed_[g]; }
  /// Recorded on copy_stream(g) after GPU g's halo copies: its halos have arrived.
  cudaEvent_t sent(int g) const { return sent_[g]; }

  /// Enqueues on copy_stream(g): GPU g's first `radius` interior rows of the current input
  /// into left(g)'s bottom halo, its last `radius` rows into right(g)'s top halo (peer
  /// copies; the halos are the neighbours' current inputs).
  void push_halos(int g);
  /// Enqueues on compute_stream(g): the output rows that need no halo.
  void compute_interior(int g);
  /// Enqueues on compute_stream(g): the `radius` output rows at each end (they read halos).
  void compute_boundary(int g);
  /// After a step: the output buffers become the inputs.
  void swap() { current_ ^= 1; }

  /// Loads `grid` (total_rows x width, row-major) into the inputs (halos poisoned), poisons
  /// the outputs, waits for it and records every event once. Synchronous.
  void load(const std::vector<std::uint32_t>& grid);
  /// The current inputs' interiors, gathered into one grid. Synchronous.
  std::vector<std::uint32_t> gather() const;
  /// Waits for every stream of every GPU.
  void synchronize() const;

 private:
  std::uint32_t* buffer(int g, int which) const { return buffers_[2 * g + which]; }
  std::vector<int> devices_;
  halo::RingLayout layout_;
  int rounds_;
  int current_ = 0;
  std::vector<std::uint32_t*> buffers_;
  std::vector<cudaStream_t> compute_, copy_;
  std::vector<cudaEvent_t> computed_, sent_;
};

/// Enqueues one step of the stencil on every GPU of the ring, the halo exchange overlapped
/// with the interior compute, and swaps the buffers. Yours (TODO 4).
void halo_step(HaloRing& ring);

/// Only the exchange of a step (for timing it alone), ordered the same way.
void exchange_only(HaloRing& ring);
/// Only the compute of a step, no exchange (for timing it alone; the halos are stale).
void compute_only(HaloRing& ring);

}  // namespace peer_to_peer
