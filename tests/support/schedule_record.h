/// \file schedule_record.h
/// \brief A record of the work a schedule issues to streams, kept without a GPU.
///
/// Lessons 16 and 17 need two GPUs to run, yet most of what their exercises decide is the
/// order in which host code issues work: which stream an operation goes on, what each wait
/// covers, which record a wait sees. Their test programs therefore compile the student's
/// file a second time (tests/recorded/, registered in tests/CMakeLists.txt) against test
/// doubles of the CUDA runtime calls it makes (declared below, redirected by
/// record_calls.h) and of the lesson's read-only helpers. Calling the student's functions
/// then enqueues nothing: each call appends an Operation to the active Recorder, which keeps
/// CUDA's ordering rules:
///  - operations of one stream run in issue order;
///  - a wait holds its stream's later work until the work captured by the event's last
///    record issued before the wait (a wait on an event never recorded holds nothing);
///  - a host wait (cudaStreamSynchronize, ...) holds everything the host issues after it.
/// A test then asks the record what a GPU would have had to respect: whether one operation
/// finishes before another starts, whether two may run at the same time, and which pairs of
/// operations touch the same bytes (one of them writing) without an order between them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace course::testing::schedule {

/// The first few lines of `lines`, one per line, and how many more there are (for a
/// failure message that names what it found without flooding the log).
inline std::string first_of(const std::vector<std::string>& lines, std::size_t shown = 3) {
  std::string text;
  for (std::size_t i = 0; i < lines.size() && i < shown; ++i) text += "\n  " + lines[i];
  if (lines.size() > shown) text += "\n  (and " + std::to_string(lines.size() - shown) + " more)";
  return text;
}

/// Bytes [first, last) of a buffer the recorder knows (Recorder::new_buffer), read or written.
struct Access {
  int buffer = -1;  ///< index into Recorder::buffers(); -1: memory the recorder does not know
  std::size_t first = 0;
  std::size_t last = 0;
  bool write = false;
  std::string what;  ///< how a message names the bytes ("rows 0-1 (top halo)"); may be empty
};

enum class Kind {
  work,       ///< a copy, a kernel, a collective: it reads and writes memory
  record,     ///< cudaEventRecord
  wait,       ///< cudaStreamWaitEvent
  host_wait,  ///< the host waits (cudaStreamSynchronize, cudaEventSynchronize, ...)
  host_work,  ///< the host itself reads or writes memory (after what it waited for)
};

/// One thing issued, in issue order (its index in Recorder::operations()).
struct Operation {
  Kind kind = Kind::work;
  std::string name;               ///< "push_halos(2)", "cudaMemcpyPeerAsync", "GEMM of chunk 1"
  cudaStream_t stream = nullptr;  ///< the stream it was issued to (null: the host)
  cudaEvent_t event = nullptr;    ///< record and wait: their event
  int round = -1;                 ///< Recorder::set_round() when it was issued
  std::vector<Access> accesses;
  std::vector<int> after;  ///< the operations it directly waits for (earlier indices)
};

/// The fake machine and the record of what was issued to it.
class Recorder {
 public:
  /// A machine of `devices` GPUs; device 0 is current.
  explicit Recorder(int devices);

  // ---- Setting up the machine (what the code under test is handed) ----
  cudaStream_t new_stream(const std::string& name, int device);
  cudaEvent_t new_event(const std::string& name, int device);
  /// A buffer of `bytes` bytes on `device` (a distinct fake address; never dereferenced).
  void* new_buffer(const std::string& name, int device, std::size_t bytes);
  /// Every later operation belongs to round `round` (a step, a run).
  void set_round(int round) { round_ = round; }
  int round() const { return round_; }

  // ---- What the doubles call ----
  /// Enqueues work on `stream` (0, cudaStreamLegacy and cudaStreamPerThread mean the
  /// current device's legacy stream). Returns its index, or -1 for an unknown stream.
  int enqueue(cudaStream_t stream, const std::string& name, std::vector<Access> accesses);
  /// Work the host does itself, after everything it waited for so far.
  int host_work(const std::string& name, std::vector<Access> accesses);
  cudaError_t record(cudaEvent_t event, cudaStream_t stream);
  cudaError_t wait(cudaStream_t stream, cudaEvent_t event);
  /// The host waits for `stream`'s work so far (or, with `device` >= 0 and no stream, for
  /// every stream of that device).
  cudaError_t host_wait_stream(const std::string& name, cudaStream_t stream);
  cudaError_t host_wait_event(const std::string& name, cudaEvent_t event);
  cudaError_t host_wait_device(const std::string& name, int device);
  /// The bytes [p, p + bytes) as an access (a buffer the recorder knows, or an unknown one).
  Access access(const void* p, std::size_t bytes, bool write) const;

  // ---- The machine's state, for the doubles of device and peer calls ----
  int devices() const { return devices_; }
  int current_device = 0;
  cudaError_t last_error = cudaSuccess;
  std::set<std::pair<int, int>> peer_enabled;  ///< (from, to): from's work reaches to's memory
  /// A failure that cudaDeviceEnablePeerAccess returns for (from, to), once.
  std::map<std::pair<int, int>, cudaError_t> enable_failures;
  std::vector<std::string> calls;  ///< every double called, with its arguments, in order
  /// Returns `error` and keeps it as the last error, as the runtime does.
  cudaError_t fail(cudaError_t error) {
    last_error = error;
    return error;
  }

  // ---- Looking up handles ----
  bool knows(cudaStream_t stream) const;
  bool knows(cudaEvent_t event) const { return events_.count(event) != 0; }
  /// The stream a handle means (the legacy stream of the current device for 0).
  cudaStream_t resolve(cudaStream_t stream);
  int device_of(cudaStream_t stream) const;
  int device_of(cudaEvent_t event) const;
  std::string name_of(cudaStream_t stream) const;
  std::string name_of(cudaEvent_t event) const;
  /// The operation that the event's last record is (-1: never recorded).
  int last_record(cudaEvent_t event) const;

  // ---- Asking the record ----
  const std::vector<Operation>& operations() const { return operations_; }
  struct Buffer {
    std::string name;
    int device = 0;
    std::uintptr_t base = 0;
    std::size_t bytes = 0;
  };
  const std::vector<Buffer>& buffers() const { return buffers_; }
  /// Whether operation `a` must have finished before operation `b` starts.
  bool finishes_before(int a, int b) const;
  /// Neither waits for the other: a GPU may run them at the same time.
  bool may_overlap(int a, int b) const { return !finishes_before(a, b) && !finishes_before(b, a); }
  /// "step 1: push_halos(2) (on the copy stream of GPU 2)".
  std::string describe(int operation) const;
  /// Every pair of operations, the later issued at index >= `from`, that touch overlapping
  /// bytes of one buffer, at least one writing, with nothing ordering the later after the
  /// earlier: one sentence per pair, naming both and the bytes.
  std::vector<std::string> races(int from = 0) const;
  /// The operations of `kind` issued at indices [from, to).
  std::vector<int> of_kind(Kind kind, int from = 0, int to = -1) const;

 private:
  struct Stream {
    std::string name;
    int device = 0;
    int tail = -1;  // the last operation issued to it
  };
  struct Event {
    std::string name;
    int device = 0;
    int last_record = -1;
  };
  int add(Operation op, cudaStream_t stream);
  std::string describe_access(const Access& a) const;

  int devices_;
  int round_ = -1;
  int host_tail_ = -1;  // the last thing the host waited for or did
  std::map<cudaStream_t, Stream> streams_;
  std::map<cudaEvent_t, Event> events_;
  std::vector<cudaStream_t> legacy_;  // each device's legacy stream, made on first use
  std::vector<Buffer> buffers_;
  std::vector<Operation> operations_;
  std::vector<std::vector<bool>> before_;  // before_[b][a]: a finishes before b starts
  std::uintptr_t next_handle_ = 0x7e5700001000;
  std::uintptr_t next_buffer_ = 0x7b0000000000;
};

/// The recorder the doubles write to while a Recording is alive (one at a time).
Recorder& active();

/// Makes `recorder` the active one for its lifetime.
class Recording {
 public:
  explicit Recording(Recorder& recorder);
  ~Recording();
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;
};

}  // namespace course::testing::schedule

/// The test doubles: the same signatures as the CUDA runtime's calls, recording into the
/// active Recorder instead of calling a driver. record_calls.h redirects a file's calls to
/// them. Copies need a stream of either device (or, for the synchronous ones, none) and are
/// work that reads the source and writes the destination; kernels are not doubled (the
/// lessons' read-only helpers that launch them are).
namespace course::testing::doubles {

cudaError_t cudaGetDevice(int* device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
cudaError_t cudaDeviceCanAccessPeer(int* can, int device, int peer);
cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags);
cudaError_t cudaDeviceDisablePeerAccess(int peer);
cudaError_t cudaDeviceGetP2PAttribute(int* value, cudaDeviceP2PAttr attr, int src, int dst);
cudaError_t cudaStreamCreate(cudaStream_t* stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags);
cudaError_t cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned int flags, int priority);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventCreate(cudaEvent_t* event, unsigned int flags);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = 0);
cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream = 0,
                                     unsigned int flags = 0);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags = 0);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamQuery(cudaStream_t stream);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device,
                                std::size_t bytes, cudaStream_t stream = 0);
cudaError_t cudaMemcpyPeer(void* dst, int dst_device, const void* src, int src_device,
                           std::size_t bytes);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = 0);
cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind);

}  // namespace course::testing::doubles
