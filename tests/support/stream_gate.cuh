/// \file stream_gate.cuh
/// \brief Holding a stream until the host says so, for the tests of schedules over streams:
/// what a schedule enqueues behind a closed gate cannot run, so the test can look at what
/// happened before the gate opened (a copy that did not wait in its stream, a call that did
/// not return because it waited on the host), then open it.
#pragma once

#include <cuda_runtime.h>

#include "course/buffers.h"
#include "course/check.h"

namespace course::testing {
// Internal to each test executable's one file that includes it (a kernel cannot be inline).
namespace {

/// Holds a stream until the host opens `gate` (or `limit_ns` passes, so that a failing test
/// never hangs): the host decides when what is queued behind it may run.
__global__ void gate_kernel(const volatile unsigned* gate, unsigned long long limit_ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (*gate == 0 && now - start < limit_ns);
}

/// One gate: hold() puts gate_kernel on a stream, open() lets it end. The destructor opens
/// it too and waits for the kernel, so that a test that fails (or throws) half-way leaves no
/// stream held and no kernel reading freed memory.
class StreamGate {
 public:
  StreamGate() : flag_(1) { flag_[0] = 0; }
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;
  ~StreamGate() {
    open();
    if (ended_ != nullptr) {
      cudaEventSynchronize(ended_);
      cudaEventDestroy(ended_);
    }
  }

  /// Holds `stream` (of the current device) until open(), or for `limit_ns` at most. One
  /// hold per gate.
  void hold(cudaStream_t stream, unsigned long long limit_ns = 20'000'000'000ull) {
    COURSE_CHECK(cudaEventCreateWithFlags(&ended_, cudaEventDisableTiming));
    gate_kernel<<<1, 1, 0, stream>>>(flag_.data(), limit_ns);
    COURSE_CHECK_LAUNCH();
    COURSE_CHECK(cudaEventRecord(ended_, stream));
  }

  /// Lets the held stream go on (at once: the kernel polls every microsecond).
  void open() const { static_cast<volatile unsigned*>(flag_.data())[0] = 1; }

 private:
  course::PinnedBuffer<unsigned> flag_;
  cudaEvent_t ended_ = nullptr;
};

}  // namespace
}  // namespace course::testing
