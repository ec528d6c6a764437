// Lesson 13, read-only: what breaks concurrency.
//
// Each row of the matrix below puts one operation between the launches of two spin kernels
// in two streams, and the driver measures whether the kernels still overlapped. The `model`
// column is what the CUDA documentation promises:
//
//   breaks            the two kernels must run one after the other on every GPU;
//   no implicit sync  nothing makes either kernel wait (they may overlap, and usually do);
//   unspecified       the documentation promises neither: what your driver does is measured,
//                     never checked, and may change with the next driver.
//
// An operation can also lose the overlap without synchronising anything, simply by holding
// the host longer than the first kernel runs: the driver prints how long each one held the
// host, which tells the two apart.
#include <cuda_runtime.h>

#include <cstdint>

#include "course/buffers.h"
#include "course/check.h"
#include "measure.h"

namespace streams_and_sync {
namespace {

constexpr std::size_t kBreakerBytes = 64ull << 20;  // what cudaMalloc & co. allocate

Sample nothing(PairBench& bench, cudaStream_t first, cudaStream_t second) {
  return bench.kernel_pair(first, second);
}

Sample device_synchronize(PairBench& bench, cudaStream_t first, cudaStream_t second) {
  return bench.kernel_pair(first, second, [] { COURSE_CHECK(cudaDeviceSynchronize()); });
}

// A zero-length kernel in the legacy stream: it waits for the first kernel if that one is
// in a blocking stream, and the second kernel's blocking stream waits for it.
Sample legacy_kernel(PairBench& bench, cudaStream_t first, cudaStream_t second) {
  return bench.kernel_pair(first, second, [&] { bench.launch_legacy_marker(); });
}

// cudaMemcpy into pageable host memory: synchronous for the host, and in the legacy stream.
Sample sync_memcpy(PairBench& bench, cudaStream_t first, cudaStream_t second) {
  course::DeviceBuffer<std::uint32_t> word(1);
  COURSE_CHECK(cudaMemset(word.data(), 0, word.bytes()));
  COURSE_CHECK(cudaDeviceSynchronize());
  std::uint32_t host_word = 0;
  return bench.kernel_pair(first, second, [&] {
    COURSE_CHECK(cudaMemcpy(&host_word, word.data(), sizeof host_word, cudaMemcpyDeviceToHost));
  });
}

Sample device_malloc(PairBench& bench, cudaStream_t first, cudaStream_t second) {
  void* p = nullptr;
  Sample s = bench.kernel_pair(first, second, [&] { COURSE_CHECK(cudaMalloc(&p, kBreakerBytes)); });
  COURSE_CHECK(cudaFree(p));
  return s;
}

Sample device_free(PairBench& bench, cudaStream_t first, cudaStream_t second) {
  void* p = nullptr;
  COURSE_CHECK(cudaMalloc(&p, kBreakerBytes));
  return bench.kernel_pair(first, second, [&] { COURSE_CHECK(cudaFree(p)); });
}

Sample host_malloc(PairBench& bench, cudaStream_t first, cudaStream_t second) {
  void* p = nullptr;
  Sample s =
      bench.kernel_pair(first, second, [&] { COURSE_CHECK(cudaMallocHost(&p, kBreakerBytes)); });
  COURSE_CHECK(cudaFreeHost(p));
  return s;
}

// The first kernel goes into a stream of its own, destroyed while the kernel runs.
Sample stream_destroy(PairBench& bench, cudaStream_t /*first*/, cudaStream_t second) {
  cudaStream_t doomed = nullptr;
  COURSE_CHECK(cudaStreamCreateWithFlags(&doomed, cudaStreamNonBlocking));
  return bench.kernel_pair(doomed, second, [&] { COURSE_CHECK(cudaStreamDestroy(doomed)); });
}

// An event recorded after the first kernel (so still pending), destroyed at once.
Sample event_destroy(PairBench& bench, cudaStream_t first, cudaStream_t second) {
  cudaEvent_t event = nullptr;
  COURSE_CHECK(cudaEventCreate(&event));
  return bench.kernel_pair(first, second, [&] {
    COURSE_CHECK(cudaEventRecord(event, first));
    COURSE_CHECK(cudaEventDestroy(event));
  });
}

}  // namespace

const char* guarantee_name(Guarantee g) {
  switch (g) {
    case Guarantee::breaks:
      return "breaks";
    case Guarantee::no_implicit_sync:
      return "no implicit sync";
    case Guarantee::unspecified:
      return "unspecified";
  }
  return "?";
}

const std::vector<Breaker>& breakers() {
  using K = StreamKind;
  using G = Guarantee;
  static const std::vector<Breaker> matrix = {
      // {name, what runs between the launches, the streams' kind, the model, the code}
      {"nothing", "nothing (the control)", K::non_blocking, G::no_implicit_sync, nothing},
      {"cudaDeviceSynchronize", "cudaDeviceSynchronize()", K::non_blocking, G::breaks,
       device_synchronize},
      {"legacy-kernel/blocking", "a kernel in the legacy stream", K::blocking, G::breaks,
       legacy_kernel},
      {"legacy-kernel/non-blocking", "a kernel in the legacy stream", K::non_blocking,
       G::no_implicit_sync, legacy_kernel},
      {"cudaMemcpy/blocking", "cudaMemcpy, 4 bytes to pageable host memory", K::blocking, G::breaks,
       sync_memcpy},
      {"cudaMemcpy/non-blocking", "cudaMemcpy, 4 bytes to pageable host memory", K::non_blocking,
       G::no_implicit_sync, sync_memcpy},
      {"cudaMalloc", "cudaMalloc of 64 MiB", K::non_blocking, G::unspecified, device_malloc},
      {"cudaFree", "cudaFree of 64 MiB", K::non_blocking, G::unspecified, device_free},
      {"cudaMallocHost", "cudaMallocHost of 64 MiB", K::non_blocking, G::unspecified, host_malloc},
      {"cudaStreamDestroy", "cudaStreamDestroy of the busy first stream", K::non_blocking,
       G::unspecified, stream_destroy},
      {"cudaEventDestroy", "cudaEventDestroy of an event still pending", K::non_blocking,
       G::unspecified, event_destroy},
      // Every launch waits for its kernel: measured in a child process (child.cu), because
      // the variable is read once, when the program starts using CUDA.
      {"CUDA_LAUNCH_BLOCKING=1", "none, but CUDA_LAUNCH_BLOCKING=1 (child process)",
       K::non_blocking, G::breaks, nullptr},
  };
  return matrix;
}

Measured measure_breaker(PairBench& bench, const Breaker& breaker, const ChildArgs& child,
                         int warmup, int iters) {
  if (!breaker.between) return measure_launch_blocking_child(child);
  KindStream first(breaker.streams);
  KindStream second(breaker.streams);
  return measure(warmup, iters, [&](bool) { return breaker.between(bench, first, second); });
}

}  // namespace streams_and_sync
