// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
//
// Lesson 16: moving data between two GPUs of one host.
//
// With peer access enabled, GPU 0's kernels and copies can use GPU 1's memory through the
// same 64-bit pointers (unified addressing): a copy engine moves it (cudaMemcpyPeerAsync),
// or the SMs load from it (pull) or store to it (push), over NVLink where there is one.
//
// Yours: join two GPUs (TODO 1), the copy kernel that pulls or pushes over the link
// (TODO 2), both directions at once with one stream per GPU (TODO 3), and the order of one
// step of a halo exchange around a ring of GPUs, overlapped with the compute (TODO 4).
#include <cuda_runtime_api.h>

#include <cstddef>

#include "course/check.h"
#include "peer_to_peer.cuh"

namespace peer_to_peer {

namespace {

/// One direction of the link, from device `from` to device `to`, as CUDA reports it.
PeerDirection query_direction(int from, int to) {
  PeerDirection d;
  int value = 0;
  COURSE_CHECK(cudaDeviceGetP2PAttribute(&value, cudaDevP2PAttrAccessSupported, from, to));
  d.access_supported = value != 0;
  COURSE_CHECK(cudaDeviceGetP2PAttribute(&value, cudaDevP2PAttrPerformanceRank, from, to));
  d.performance_rank = value;
  COURSE_CHECK(cudaDeviceGetP2PAttribute(&value, cudaDevP2PAttrNativeAtomicSupported, from, to));
  d.native_atomics = value != 0;
  return d;
}

}  // namespace

PeerLink connect(int a, int b) {
  PeerLink link;
  link.a = a;
  link.b = b;
  link.ab = query_direction(a, b);
  link.ba = query_direction(b, a);
  int current = 0;
  COURSE_CHECK(cudaGetDevice(&current));
  // TODO 1: leave peer access enabled both ways (a's kernels and copies reach b's memory,
  //         and b's reach a's), and record in was_enabled whether each direction already
  //         was. Calling connect() twice must succeed and leave no error behind: the next
  //         cudaGetLastError() returns cudaSuccess. The current device is restored below.
  // BEGIN SOLUTION
  for (PeerDirection* d : {&link.ab, &link.ba}) {
    const int from = d == &link.ab ? a : b;
    const int to = d == &link.ab ? b : a;
    COURSE_CHECK(cudaSetDevice(from));  // peer access is enabled for the current device
    const cudaError_t status = cudaDeviceEnablePeerAccess(to, 0);
    if (status == cudaErrorPeerAccessAlreadyEnabled) {
      d->was_enabled = true;
      (void)cudaGetLastError();  // the runtime also keeps it as the last error: clear it
    } else {
      COURSE_CHECK(status);
    }
  }
  // END SOLUTION
  COURSE_CHECK(cudaSetDevice(current));
  return link;
}

template <class V>
__global__ void peer_copy_kernel(const std::byte* src, std::byte* dst, std::size_t bytes) {
  static_assert(alignof(V) == sizeof(V) && (sizeof(V) & (sizeof(V) - 1)) == 0,
                "V must be a power-of-two size aligned to it, or one V is not one load");
  // src, dst: sizeof(V)-aligned; bytes: any count. Thread t of the grid (t = blockIdx.x x
  // blockDim.x + threadIdx.x, T threads in all) copies vectors t, t + T, t + 2T, ...
  const std::size_t thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  // TODO 2: copy bytes / sizeof(V) whole vectors with one load and one store of type V
  //         each, the grid's threads striding over them (consecutive threads, consecutive
  //         vectors), then the bytes % sizeof(V) bytes after the last whole vector one byte
  //         at a time. Every byte of dst[0, bytes) is written; nothing outside it is touched.
  // BEGIN SOLUTION
  // STARTER: (void)thread, (void)threads, (void)src, (void)dst, (void)bytes;
  const std::size_t vectors = bytes / sizeof(V);
  const V* in = reinterpret_cast<const V*>(src);
  V* out = reinterpret_cast<V*>(dst);
  // out[i] = in[i] : (vectors) V, i = t, t + T, ...
  for (std::size_t i = thread; i < vectors; i += threads) out[i] = in[i];
  // dst[i] = src[i] : (bytes % sizeof(V)) bytes past the last whole vector
  for (std::size_t i = vectors * sizeof(V) + thread; i < bytes; i += threads) dst[i] = src[i];
  // END SOLUTION
}

void issue_both_directions(const BothWays& w, cudaStream_t stream_a) {
  // TODO 3: enqueue the copy a -> b (src_a to dst_b) on stream_a and the copy b -> a
  //         (src_b to dst_a) on w.stream_b, so that the two run at the same time on the two
  //         GPUs' copy engines. Neither may start before the work enqueued on stream_a so
  //         far has finished; work enqueued on stream_a after this call must wait for both.
  //         Use w.fork (an event of device a) and w.join (an event of device b).
  // BEGIN SOLUTION
  // STARTER: (void)w, (void)stream_a;
  COURSE_CHECK(cudaEventRecord(w.fork, stream_a));
  COURSE_CHECK(cudaStreamWaitEvent(w.stream_b, w.fork, 0));  // device b waits on a's event
  COURSE_CHECK(cudaMemcpyPeerAsync(w.dst_b, w.b, w.src_a, w.a, w.bytes, stream_a));
  COURSE_CHECK(cudaMemcpyPeerAsync(w.dst_a, w.a, w.src_b, w.b, w.bytes, w.stream_b));
  COURSE_CHECK(cudaEventRecord(w.join, w.stream_b));
  COURSE_CHECK(cudaStreamWaitEvent(stream_a, w.join, 0));  // device a waits on b's event
  // END SOLUTION
}

void halo_step(HaloRing& ring) {
  const int n = ring.size();
  // TODO 4: one step on every GPU g of the ring: ring.push_halos(g) on its copy stream,
  //         ring.compute_interior(g) and ring.compute_boundary(g) on its compute stream, so
  //         that the exchange runs while the interior is computed. Order them with the
  //         events computed(g) and sent(g) (cudaStreamWaitEvent works across devices):
  //         - a push reads g's input and writes into its neighbours' inputs: it may start
  //           only when g and both neighbours have finished their previous step;
  //         - the boundary reads the halos both neighbours send, and the next step
  //           overwrites what g's own push reads: it waits for all three sends;
  //         - computed(g) marks the end of g's step, sent(g) the end of g's pushes.
  //         A wait takes the event's latest record at the time of the call: issue every
  //         GPU's pushes (which wait on the previous step's computed) before any GPU
  //         records this step's computed. The buffers are swapped after this region.
  // BEGIN SOLUTION
  // STARTER: (void)n;
  for (int g = 0; g < n; ++g) {
    for (int peer : {g, ring.left(g), ring.right(g)}) {
      COURSE_CHECK(cudaStreamWaitEvent(ring.copy_stream(g), ring.computed(peer), 0));
    }
    ring.push_halos(g);
    COURSE_CHECK(cudaEventRecord(ring.sent(g), ring.copy_stream(g)));
  }
  for (int g = 0; g < n; ++g) {
    ring.compute_interior(g);  // needs no halo: runs while the halos travel
    for (int peer : {g, ring.left(g), ring.right(g)}) {
      COURSE_CHECK(cudaStreamWaitEvent(ring.compute_stream(g), ring.sent(peer), 0));
    }
    ring.compute_boundary(g);
    COURSE_CHECK(cudaEventRecord(ring.computed(g), ring.compute_stream(g)));
  }
  // END SOLUTION
  ring.swap();
}

}  // namespace peer_to_peer
