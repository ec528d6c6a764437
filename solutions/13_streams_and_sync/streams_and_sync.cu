// Your exercise: the TODOs in this file. Read-only: everything in given/, and the tests.
//
// Lesson 13: streams and synchronisation.
//
// Every operation a CUDA program enqueues goes into a stream, and a stream runs its work
// in order. What differs between kinds of stream is how they wait for *each other*:
//
//   the legacy default stream   waits for every blocking stream, and every blocking
//   (cudaStreamLegacy, "0")     stream waits for it: one legacy operation between two
//                               streams' work serialises them;
//   the per-thread default      an ordinary stream of this host thread, except that it
//   stream (cudaStreamPerThread) still synchronises with the legacy stream;
//   a blocking stream           created by cudaStreamCreate: ordinary with respect to
//                               other created streams, but synchronises with legacy;
//   a non-blocking stream       cudaStreamCreateWithFlags(cudaStreamNonBlocking): never
//                               waits implicitly for anything.
//
// The host waits for the GPU with the synchronisation calls (cudaDeviceSynchronize,
// cudaStreamSynchronize, cudaEventSynchronize) or asks without blocking (cudaStreamQuery,
// cudaEventQuery); one stream waits for another on the GPU, without the host, with an event
// and cudaStreamWaitEvent. This file holds those pieces and the overlap arithmetic.
#include "streams_and_sync.cuh"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "course/check.h"
#include "course/launch.h"

namespace streams_and_sync {
namespace {

/// cudaErrorNotReady is an answer ("not yet"), not a failure, but some runtime versions
/// also leave it behind as the thread's last error. Forget it, so that the next launch
/// check (cudaGetLastError) does not report it as a failed launch.
[[maybe_unused]] void forget_not_ready() {
  if (cudaPeekAtLastError() == cudaErrorNotReady) (void)cudaGetLastError();
}

}  // namespace

// ---- Kinds of stream ------------------------------------------------------------------

cudaStream_t make_stream(StreamKind kind) {
  // TODO 1: return a stream of `kind`. The two default streams already exist: name them
  //         with their special handles (they mean the same whatever --default-stream this
  //         file was compiled with, unlike 0). The other two kinds are created here, each
  //         call a new stream: a blocking one, and one that never waits implicitly.
  // BEGIN SOLUTION
  cudaStream_t stream = nullptr;
  switch (kind) {
    case StreamKind::legacy_default:
      return cudaStreamLegacy;
    case StreamKind::per_thread_default:
      return cudaStreamPerThread;
    case StreamKind::blocking:
      COURSE_CHECK(cudaStreamCreate(&stream));
      return stream;
    case StreamKind::non_blocking:
      COURSE_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      return stream;
  }
  throw std::invalid_argument("make_stream: unknown stream kind");
  // STARTER: (void)kind;
  // STARTER: return cudaStreamLegacy;  // for now every kind is the legacy default stream
  // END SOLUTION
}

bool implicitly_serialised(StreamKind first, StreamKind second) {
  // TODO 2: say which pairs the CUDA programming model serialises on its own.
  //         - One stream runs its work in order, and two legacy (or two per-thread) kinds
  //           are one and the same stream.
  //         - The legacy stream waits for all work already in blocking streams, and
  //           blocking streams wait for work already in the legacy stream. The per-thread
  //           default stream is a blocking stream in this sense.
  //         - Non-blocking streams never wait implicitly, and two different streams that
  //           are not legacy do not wait for each other either.
  // BEGIN SOLUTION
  const auto is_legacy = [](StreamKind k) { return k == StreamKind::legacy_default; };
  // A stream that synchronises with the legacy stream: every kind except non-blocking.
  const auto blocks_on_legacy = [](StreamKind k) { return k != StreamKind::non_blocking; };
  if (first == second &&
      (first == StreamKind::legacy_default || first == StreamKind::per_thread_default)) {
    return true;  // the same stream
  }
  if (is_legacy(first)) return blocks_on_legacy(second);
  if (is_legacy(second)) return blocks_on_legacy(first);
  return false;  // two different streams, neither of them legacy
  // STARTER: (void)first;
  // STARTER: (void)second;
  // STARTER: return false;
  // END SOLUTION
}

// ---- Waiting without blocking: the queries --------------------------------------------

bool stream_is_idle(cudaStream_t stream) {
  // TODO 3: ask whether `stream` has finished everything enqueued on it so far, without
  //         blocking the host. "Not yet" is an answer, not an error: return false for it
  //         (and call forget_not_ready()). Anything else but "done" is a real error:
  //         check it with COURSE_CHECK.
  // BEGIN SOLUTION
  const cudaError_t status = cudaStreamQuery(stream);
  if (status == cudaErrorNotReady) {
    forget_not_ready();
    return false;
  }
  COURSE_CHECK(status);
  return true;
  // STARTER: (void)stream;
  // STARTER: return true;
  // END SOLUTION
}

bool event_has_completed(cudaEvent_t event) {
  // TODO 4: the same for an event: done once the work the event was recorded after has
  //         completed (or if it was never recorded), not yet while that work is pending.
  // BEGIN SOLUTION
  const cudaError_t status = cudaEventQuery(event);
  if (status == cudaErrorNotReady) {
    forget_not_ready();
    return false;
  }
  COURSE_CHECK(status);
  return true;
  // STARTER: (void)event;
  // STARTER: return true;
  // END SOLUTION
}

// ---- Ordering one stream after another ------------------------------------------------

void copy_after_producer(cuda::std::span<const std::uint32_t> src,
                         cuda::std::span<std::uint32_t> dst, cudaStream_t producer,
                         cudaStream_t consumer, cudaEvent_t produced) {
  course::require(
      src.size() == dst.size(), "copy_after_producer",
      "src has " + std::to_string(src.size()) + " elements, dst " + std::to_string(dst.size()));
  if (src.empty()) return;

  // TODO 5: make `consumer` wait for everything the caller enqueued on `producer` before
  //         this call, on the GPU, without blocking the host: this function must return
  //         while the producer still runs. Use the event `produced`. Work enqueued on
  //         `consumer` after that starts only once the producer's work has completed.
  // BEGIN SOLUTION
  COURSE_CHECK(cudaEventRecord(produced, producer));
  COURSE_CHECK(cudaStreamWaitEvent(consumer, produced, cudaEventWaitDefault));
  // STARTER: (void)producer;
  // STARTER: (void)produced;
  // END SOLUTION

  COURSE_CHECK(cudaMemcpyAsync(dst.data(), src.data(), src.size_bytes(), cudaMemcpyDeviceToDevice,
                               consumer));
}

// ---- Measuring overlap ----------------------------------------------------------------

double overlap_ratio(double t1_ms, double t2_ms, double pair_ms) {
  course::require(
      t1_ms > 0 && t2_ms > 0, "overlap_ratio",
      "t1 and t2 must be positive, got " + std::to_string(t1_ms) + " and " + std::to_string(t2_ms));
  // TODO 6: the overlap ratio. Run one after the other, the pair takes t1 + t2; fully
  //         overlapped, it takes max(t1, t2). Return the time both ran at once as a
  //         fraction of the shorter operation's time: 1 means "the shorter one ran entirely
  //         alongside the other", 0 "one after the other", below 0 "with a gap between".
  // BEGIN SOLUTION
  return (t1_ms + t2_ms - pair_ms) / std::min(t1_ms, t2_ms);
  // STARTER: (void)pair_ms;
  // STARTER: return 0.0;
  // END SOLUTION
}

}  // namespace streams_and_sync
