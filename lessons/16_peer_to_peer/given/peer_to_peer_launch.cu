// Lesson 16: the read-only part of the lesson's API (peer_to_peer.cuh): descriptions, the
// cp.async copy kernel, the launchers, the streams and events of both directions, and the
// halo ring. Read it, do not edit it: your file is peer_to_peer.cu.
//
// The build compiles this file in one unit with peer_to_peer.cu (yours, or the solution),
// so that the launchers here instantiate your kernel template (peer_to_peer.cuh declares it).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "course/check.h"
#include "course/data.h"
#include "course/launch.h"
#include "peer_to_peer.cuh"

namespace peer_to_peer {

// ---- Descriptions ----------------------------------------------------------------------------

const char* name(Width w) {
  switch (w) {
    case Width::w4:
      return "4B";
    case Width::w8:
      return "8B";
    case Width::w16:
      return "16B";
  }
  return "?";
}

namespace {

std::string yes_no(bool b) { return b ? "yes" : "no"; }

std::string describe_direction(int from, int to, const PeerDirection& d) {
  return "GPU " + std::to_string(from) + " -> GPU " + std::to_string(to) + ": access " +
         yes_no(d.access_supported) + ", performance rank " + std::to_string(d.performance_rank) +
         ", native atomics " + yes_no(d.native_atomics) +
         ", peer access was already enabled: " + yes_no(d.was_enabled);
}

const char* memory_type(cudaMemoryType type) {
  switch (type) {
    case cudaMemoryTypeUnregistered:
      return "unregistered host memory";
    case cudaMemoryTypeHost:
      return "host (page-locked)";
    case cudaMemoryTypeDevice:
      return "device";
    case cudaMemoryTypeManaged:
      return "managed";
  }
  return "?";
}

}  // namespace

std::string describe(const PeerLink& link) {
  return describe_direction(link.a, link.b, link.ab) + "\n" +
         describe_direction(link.b, link.a, link.ba);
}

std::string describe_pointer(const void* pointer) {
  cudaPointerAttributes attributes{};
  COURSE_CHECK(cudaPointerGetAttributes(&attributes, pointer));
  char address[32];
  std::snprintf(address, sizeof address, "%p", pointer);
  return std::string(address) + ": " + memory_type(attributes.type) + " memory of GPU " +
         std::to_string(attributes.device) + ", device pointer " +
         (attributes.devicePointer == pointer ? "the same address" : "a different address");
}

// ---- cp.async from (peer) global memory into shared memory -----------------------------------

namespace {

constexpr int kAsyncThreads = 256;  // threads per block of the cp.async kernel
constexpr int kAsyncVectors = 4;    // 16-byte copies in flight per thread per round
struct AsyncShared {                // the kernel's shared memory: 16 KiB per block
  uint4 slot[kAsyncVectors][kAsyncThreads];
};
static_assert(sizeof(AsyncShared) == kAsyncVectors * kAsyncThreads * 16, "one slot per copy");
static_assert(kAsyncThreads % 32 == 0 && kAsyncThreads <= 1024,
              "blocks of whole warps, at most 1024 threads, or the launch fails");
static_assert(sizeof(AsyncShared) <= 48 * 1024,
              "static shared memory above 48 KB does not compile: the slots must fit");

__device__ void cp_async_16(void* shared_dst, const void* global_src) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(shared_dst));
  // A peer's memory, under unified addressing, is global memory like the local GPU's.
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst),
               "l"(__cvta_generic_to_global(global_src))
               : "memory");
}

}  // namespace

__global__ void peer_pull_cp_async_kernel(const std::byte* src, std::byte* dst, std::size_t bytes) {
  __shared__ AsyncShared smem;
  const std::size_t vectors = bytes / 16;
  const uint4* in = reinterpret_cast<const uint4*>(src);
  uint4* out = reinterpret_cast<uint4*>(dst);
  // Round r of block b: vectors base + v x kAsyncThreads + threadIdx.x, v < kAsyncVectors.
  const std::size_t per_block = static_cast<std::size_t>(kAsyncThreads) * kAsyncVectors;
  const std::size_t per_round = per_block * gridDim.x;
  for (std::size_t base = blockIdx.x * per_block; base < vectors; base += per_round) {
    for (int v = 0; v < kAsyncVectors; ++v) {
      // in[base + v * T + t] : (V, T) -> smem.slot[v][t] : (V, T)
      const std::size_t i = base + static_cast<std::size_t>(v) * kAsyncThreads + threadIdx.x;
      if (i < vectors) cp_async_16(&smem.slot[v][threadIdx.x], in + i);
    }
    asm volatile("cp.async.commit_group;\n" ::: "memory");
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
    // Each thread reads back only the slots it filled itself: no block barrier needed.
    for (int v = 0; v < kAsyncVectors; ++v) {
      // smem.slot[v][t] : (V, T) -> out[base + v * T + t]
      const std::size_t i = base + static_cast<std::size_t>(v) * kAsyncThreads + threadIdx.x;
      if (i < vectors) out[i] = smem.slot[v][threadIdx.x];
    }
  }
  const std::size_t thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = vectors * 16 + thread; i < bytes; i += threads) dst[i] = src[i];
}

// ---- Launchers -------------------------------------------------------------------------------

namespace {

int sm_count(int device) {
  int sms = 0;
  COURSE_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

void require_aligned(const std::string& where, const void* p, std::size_t alignment) {
  course::require(reinterpret_cast<std::uintptr_t>(p) % alignment == 0, where,
                  "pointers must be " + std::to_string(alignment) + "-byte aligned");
}

template <class V>
course::Launch copy_launch(const void* src, void* dst, std::size_t bytes, int device, int blocks,
                           int threads) {
  return [=](cudaStream_t stream) {
    COURSE_CHECK(cudaSetDevice(device));
    peer_copy_kernel<V><<<blocks, threads, 0, stream>>>(static_cast<const std::byte*>(src),
                                                        static_cast<std::byte*>(dst), bytes);
    COURSE_CHECK_LAUNCH();
  };
}

}  // namespace

course::Launch prepare_copy(Width width, const void* src, void* dst, std::size_t bytes, int device,
                            int blocks, int threads) {
  const std::string where = std::string("prepare_copy(") + name(width) + ")";
  course::require(src != nullptr && dst != nullptr, where, "null pointer");
  course::require(threads >= 32 && threads <= 1024, where, "threads must be in [32, 1024]");
  require_aligned(where, src, static_cast<std::size_t>(width));
  require_aligned(where, dst, static_cast<std::size_t>(width));
  if (blocks <= 0) blocks = 4 * sm_count(device);
  switch (width) {
    case Width::w4:
      return copy_launch<std::uint32_t>(src, dst, bytes, device, blocks, threads);
    case Width::w8:
      return copy_launch<uint2>(src, dst, bytes, device, blocks, threads);
    case Width::w16:
      return copy_launch<uint4>(src, dst, bytes, device, blocks, threads);
  }
  throw std::invalid_argument(where + ": unknown width");
}

course::Launch prepare_cp_async_copy(const void* src, void* dst, std::size_t bytes, int device,
                                     int blocks) {
  const std::string where = "prepare_cp_async_copy";
  course::require(src != nullptr && dst != nullptr, where, "null pointer");
  require_aligned(where, src, 16);
  require_aligned(where, dst, 16);
  if (blocks <= 0) blocks = 4 * sm_count(device);
  return [=](cudaStream_t stream) {
    COURSE_CHECK(cudaSetDevice(device));
    peer_pull_cp_async_kernel<<<blocks, kAsyncThreads, 0, stream>>>(
        static_cast<const std::byte*>(src), static_cast<std::byte*>(dst), bytes);
    COURSE_CHECK_LAUNCH();
  };
}

// ---- Both directions: one stream on device b, an event on each device ------------------------

BothWaysResources::BothWaysResources(int a, int b) : a_(a), b_(b) {
  const CurrentDeviceGuard keep_device;
  COURSE_CHECK(cudaSetDevice(a));
  COURSE_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
  COURSE_CHECK(cudaSetDevice(b));
  COURSE_CHECK(cudaEventCreateWithFlags(&join_, cudaEventDisableTiming));
  COURSE_CHECK(cudaStreamCreateWithFlags(&stream_b_, cudaStreamNonBlocking));
}

BothWaysResources::~BothWaysResources() {
  (void)cudaStreamSynchronize(stream_b_);
  (void)cudaStreamDestroy(stream_b_);
  (void)cudaEventDestroy(fork_);
  (void)cudaEventDestroy(join_);
}

BothWays BothWaysResources::make(const void* src_a, void* dst_b, const void* src_b, void* dst_a,
                                 std::size_t bytes) const {
  return BothWays{a_, b_, src_a, dst_b, src_b, dst_a, bytes, stream_b_, fork_, join_};
}

// ---- The halo ring ---------------------------------------------------------------------------

namespace {

/// Output rows [first, first + count) and [second, second + second_count) of the interior
/// (buffer rows radius + first, ...): one thread per word, striding over the grid. Two strips
/// so that the boundary (the first and the last `radius` rows) is one launch.
__global__ void stencil_rows_kernel(const std::uint32_t* in, std::uint32_t* out, int width,
                                    int radius, int first, int count, int second, int second_count,
                                    int rounds) {
  const std::size_t words = static_cast<std::size_t>(count + second_count) * width;
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words;
       i += threads) {
    const int strip_row = static_cast<int>(i / width);  // 0 .. count + second_count - 1
    const long long row =
        radius + (strip_row < count ? first + strip_row : second + strip_row - count);
    const int col = static_cast<int>(i % width);
    out[row * width + col] = halo::stencil_point(in, width, radius, row, col, rounds);
  }
}

constexpr int kStencilThreads = 256;

}  // namespace

HaloRing::HaloRing(const std::vector<int>& devices, const halo::RingLayout& layout, int rounds)
    : devices_(devices), layout_(layout), rounds_(rounds) {
  halo::validate(layout_);
  course::require(static_cast<int>(devices_.size()) == layout_.gpus, "HaloRing",
                  "one device per GPU of the layout");
  const CurrentDeviceGuard keep_device;
  const int n = size();
  buffers_.assign(2 * n, nullptr);
  compute_.assign(n, nullptr);
  copy_.assign(n, nullptr);
  computed_.assign(n, nullptr);
  sent_.assign(n, nullptr);
  for (int g = 0; g < n; ++g) {
    COURSE_CHECK(cudaSetDevice(devices_[g]));
    for (int which = 0; which < 2; ++which) {
      COURSE_CHECK(cudaMalloc(&buffers_[2 * g + which], layout_.buffer_words() * 4));
    }
    COURSE_CHECK(cudaStreamCreateWithFlags(&compute_[g], cudaStreamNonBlocking));
    COURSE_CHECK(cudaStreamCreateWithFlags(&copy_[g], cudaStreamNonBlocking));
    COURSE_CHECK(cudaEventCreateWithFlags(&computed_[g], cudaEventDisableTiming));
    COURSE_CHECK(cudaEventCreateWithFlags(&sent_[g], cudaEventDisableTiming));
  }
}

HaloRing::~HaloRing() {
  for (int g = 0; g < size(); ++g) {
    if (cudaSetDevice(devices_[g]) != cudaSuccess) continue;
    (void)cudaDeviceSynchronize();
    for (int which = 0; which < 2; ++which) (void)cudaFree(buffer(g, which));
    (void)cudaStreamDestroy(compute_[g]);
    (void)cudaStreamDestroy(copy_[g]);
    (void)cudaEventDestroy(computed_[g]);
    (void)cudaEventDestroy(sent_[g]);
  }
}

void HaloRing::push_halos(int g) {
  const std::size_t w = static_cast<std::size_t>(layout_.width);
  const std::size_t r = static_cast<std::size_t>(layout_.radius);
  const std::size_t rows = static_cast<std::size_t>(layout_.rows);
  const std::size_t halo_bytes = layout_.halo_words() * 4;
  const std::uint32_t* mine = buffer(g, current_);
  // My first `radius` interior rows (buffer rows r .. 2r-1) -> left's bottom halo (rows + r ..).
  COURSE_CHECK(cudaMemcpyPeerAsync(buffer(left(g), current_) + (rows + r) * w, devices_[left(g)],
                                   mine + r * w, devices_[g], halo_bytes, copy_[g]));
  // My last `radius` interior rows (buffer rows rows .. rows+r-1) -> right's top halo (0 ..).
  COURSE_CHECK(cudaMemcpyPeerAsync(buffer(right(g), current_), devices_[right(g)], mine + rows * w,
                                   devices_[g], halo_bytes, copy_[g]));
}

namespace {

void launch_rows(int device, cudaStream_t stream, const std::uint32_t* in, std::uint32_t* out,
                 const halo::RingLayout& layout, int first, int count, int second, int second_count,
                 int rounds) {
  if (count + second_count <= 0) return;
  const std::size_t words = static_cast<std::size_t>(count + second_count) * layout.width;
  const int blocks = static_cast<int>(
      std::min<std::size_t>((words + kStencilThreads - 1) / kStencilThreads, 65536));
  COURSE_CHECK(cudaSetDevice(device));
  stencil_rows_kernel<<<blocks, kStencilThreads, 0, stream>>>(
      in, out, layout.width, layout.radius, first, count, second, second_count, rounds);
  COURSE_CHECK_LAUNCH();
}

}  // namespace

void HaloRing::compute_interior(int g) {
  // Output rows radius .. rows-radius-1 read input rows 0 .. rows-1 of the interior only.
  launch_rows(devices_[g], compute_[g], buffer(g, current_), buffer(g, current_ ^ 1), layout_,
              layout_.radius, layout_.rows - 2 * layout_.radius, 0, 0, rounds_);
}

void HaloRing::compute_boundary(int g) {
  // Output rows 0 .. radius-1 and rows-radius .. rows-1: they read the halos. One launch.
  const int r = layout_.radius;
  launch_rows(devices_[g], compute_[g], buffer(g, current_), buffer(g, current_ ^ 1), layout_, 0, r,
              layout_.rows - r, r, rounds_);
}

void HaloRing::load(const std::vector<std::uint32_t>& grid) {
  const std::size_t w = static_cast<std::size_t>(layout_.width);
  course::require(grid.size() == static_cast<std::size_t>(layout_.total_rows()) * w,
                  "HaloRing::load", "the grid is not total_rows x width");
  synchronize();
  const CurrentDeviceGuard keep_device;
  current_ = 0;
  for (int g = 0; g < size(); ++g) {
    COURSE_CHECK(cudaSetDevice(devices_[g]));
    course::poison(buffer(g, 0), layout_.buffer_words() * 4, compute_[g]);
    course::poison(buffer(g, 1), layout_.buffer_words() * 4, compute_[g]);
    COURSE_CHECK(cudaMemcpyAsync(buffer(g, 0) + layout_.halo_words(),
                                 grid.data() + static_cast<std::size_t>(g) * layout_.rows * w,
                                 static_cast<std::size_t>(layout_.rows) * w * 4,
                                 cudaMemcpyHostToDevice, compute_[g]));
    COURSE_CHECK(cudaStreamSynchronize(compute_[g]));
    COURSE_CHECK(cudaEventRecord(computed_[g], compute_[g]));
    COURSE_CHECK(cudaEventRecord(sent_[g], copy_[g]));
  }
}

std::vector<std::uint32_t> HaloRing::gather() const {
  synchronize();
  const std::size_t w = static_cast<std::size_t>(layout_.width);
  const std::size_t rows = static_cast<std::size_t>(layout_.rows);
  std::vector<std::uint32_t> grid(static_cast<std::size_t>(layout_.total_rows()) * w);
  for (int g = 0; g < size(); ++g) {
    COURSE_CHECK(cudaMemcpy(grid.data() + g * rows * w, buffer(g, current_) + layout_.halo_words(),
                            rows * w * 4, cudaMemcpyDeviceToHost));
  }
  return grid;
}

void HaloRing::synchronize() const {
  for (int g = 0; g < size(); ++g) {
    COURSE_CHECK(cudaStreamSynchronize(compute_[g]));
    COURSE_CHECK(cudaStreamSynchronize(copy_[g]));
  }
}

void exchange_only(HaloRing& ring) {
  // The exchange of halo_step, alone: each push waits for the previous pushes of its
  // neighbours (their halos are the same buffers), nothing is computed.
  for (int g = 0; g < ring.size(); ++g) {
    for (int peer : {ring.left(g), ring.right(g)}) {
      COURSE_CHECK(cudaStreamWaitEvent(ring.copy_stream(g), ring.sent(peer), 0));
    }
  }
  for (int g = 0; g < ring.size(); ++g) {
    ring.push_halos(g);
    COURSE_CHECK(cudaEventRecord(ring.sent(g), ring.copy_stream(g)));
  }
}

void compute_only(HaloRing& ring) {
  for (int g = 0; g < ring.size(); ++g) {
    ring.compute_interior(g);
    ring.compute_boundary(g);
    COURSE_CHECK(cudaEventRecord(ring.computed(g), ring.compute_stream(g)));
  }
  ring.swap();
}

}  // namespace peer_to_peer
