// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
//
// Lesson 16: moving data between two GPUs of one host.
//
// With peer access enabled, one GPU's kernels and copies can use another GPU's memory through
// the same 64-bit pointers (unified addressing): a copy engine moves the bytes, or the SMs
// load from the peer (pull) or store to it (push), over NVLink where there is one. Streams
// and events belong to one device each, yet a stream may wait on another device's event:
// that orders work on two GPUs without the host waiting.
//
// Yours: peer access both ways (TODO 1), an SM copy that pulls or pushes over the link
// (TODO 2), both directions at once (TODO 3), and one step of a halo exchange around a ring
// of GPUs whose exchange hides behind the compute (TODO 4, written, with one bug to find).
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
  const CurrentDeviceGuard keep_device;  // the caller's device again, on return or on a throw
  // TODO 1: afterwards peer access is enabled both ways: a's kernels and copies reach b's
  //         memory, and b's reach a's. link.ab.was_enabled and link.ba.was_enabled say
  //         whether that direction already was before this call. A second call succeeds and
  //         leaves no error behind (the runtime's last error reads as a success afterwards);
  //         any other failure throws. Leave any device current: the guard above restores the
  //         caller's.
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
  return link;
}

template <class V>
__global__ void peer_copy_kernel(const std::byte* src, std::byte* dst, std::size_t bytes) {
  static_assert(alignof(V) == sizeof(V) && (sizeof(V) & (sizeof(V) - 1)) == 0,
                "V must be a power-of-two size aligned to it, or one V is not one load");
  // src, dst: sizeof(V)-aligned; bytes: any count. thread: this thread's rank in the grid,
  // threads: how many threads the grid has.
  const std::size_t thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  // TODO 2: afterwards dst[0, bytes) holds src[0, bytes), and no byte outside it was touched.
  //         Every whole V that fits in the bytes moves as one load and one store of type V;
  //         the grid's threads share those vectors, each exactly once, consecutive threads
  //         taking consecutive vectors, whatever the grid's size. The bytes past the last
  //         whole vector (fewer than sizeof(V)) move one at a time, shared the same way.
  //         No barrier, no shared memory.
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
  // TODO 3: the copy a -> b (src_a to dst_b) and the copy b -> a (src_b to dst_a) run at
  //         the same time on copy engines, one in stream_a's order, the other in
  //         w.stream_b's. Neither starts before the work enqueued on stream_a so far has
  //         finished; work enqueued on stream_a after this call starts only after both have.
  //         The host never waits. w.fork is an event of device a, w.join one of device b.
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
  // TODO 4 (bug hunt): one step on every GPU of the ring, written, with one bug. On two GPUs
  //         the ring's values differ from the CPU's from the first step on
  //         (GpuPeerTest.HaloRingMatchesTheCpuOnEveryGpu); without a GPU, the schedule test
  //         PeerToPeerRecorded.HaloStepOrdersEveryRowTwoOperationsShare names a boundary that
  //         may read its halo before the push of the same step into it has arrived.
  //         Contract of the fix (the README's table says which rows each operation reads
  //         and writes): each GPU's halo pushes in its copy stream's order, its interior and
  //         its boundary in its compute stream's, the pushes running while the interior is
  //         computed; no push reads rows its own GPU's previous step has not finished
  //         writing, nor overwrites a halo that a neighbour may still be reading; no
  //         boundary reads a halo before both pushes into it have arrived; nothing of the
  //         next step overwrites rows that this step's pushes still read; each GPU's two
  //         events, once complete, mean what their comments in peer_to_peer.cuh say. The
  //         host waits for nothing. The buffers are swapped after this region.
  // BEGIN SOLUTION
  // STARTER: for (int g = 0; g < n; ++g) {
  // STARTER:   for (int peer : {g, ring.left(g), ring.right(g)}) {
  // STARTER:     COURSE_CHECK(cudaStreamWaitEvent(ring.copy_stream(g), ring.computed(peer), 0));
  // STARTER:   }
  // STARTER:   ring.push_halos(g);
  // STARTER:   COURSE_CHECK(cudaEventRecord(ring.sent(g), ring.copy_stream(g)));
  // STARTER:   ring.compute_interior(g);  // needs no halo: runs while the halos travel
  // STARTER:   for (int peer : {g, ring.left(g), ring.right(g)}) {
  // STARTER:     COURSE_CHECK(cudaStreamWaitEvent(ring.compute_stream(g), ring.sent(peer), 0));
  // STARTER:   }
  // STARTER:   ring.compute_boundary(g);
  // STARTER:   COURSE_CHECK(cudaEventRecord(ring.computed(g), ring.compute_stream(g)));
  // STARTER: }
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
