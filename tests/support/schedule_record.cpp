#include "schedule_record.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace course::testing::schedule {

namespace {

Recorder* g_active = nullptr;

bool is_default_stream(cudaStream_t stream) {
  return stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread;
}

std::string hex(const void* p) {
  std::ostringstream out;
  out << p;
  return out.str();
}

}  // namespace

Recorder& active() {
  if (g_active == nullptr) {
    throw std::logic_error("a CUDA call was redirected to the test doubles outside a Recording");
  }
  return *g_active;
}

Recording::Recording(Recorder& recorder) {
  if (g_active != nullptr) throw std::logic_error("a Recording is already active");
  g_active = &recorder;
}

Recording::~Recording() { g_active = nullptr; }

Recorder::Recorder(int devices) : devices_(devices), legacy_(static_cast<std::size_t>(devices)) {}

cudaStream_t Recorder::new_stream(const std::string& name, int device) {
  const auto handle = reinterpret_cast<cudaStream_t>(next_handle_);
  next_handle_ += 0x100;
  streams_[handle] = Stream{name, device, -1};
  return handle;
}

cudaEvent_t Recorder::new_event(const std::string& name, int device) {
  const auto handle = reinterpret_cast<cudaEvent_t>(next_handle_);
  next_handle_ += 0x100;
  events_[handle] = Event{name, device, -1};
  return handle;
}

void* Recorder::new_buffer(const std::string& name, int device, std::size_t bytes) {
  buffers_.push_back(Buffer{name, device, next_buffer_, bytes});
  void* p = reinterpret_cast<void*>(next_buffer_);
  next_buffer_ += (std::uintptr_t{1} << 32);  // far apart: no two buffers ever touch
  return p;
}

bool Recorder::knows(cudaStream_t stream) const {
  return is_default_stream(stream) || streams_.count(stream) != 0;
}

cudaStream_t Recorder::resolve(cudaStream_t stream) {
  if (!is_default_stream(stream)) return stream;
  cudaStream_t& legacy = legacy_[static_cast<std::size_t>(current_device)];
  if (legacy == nullptr) {
    legacy = new_stream("the default (legacy) stream of GPU " + std::to_string(current_device),
                        current_device);
  }
  return legacy;
}

int Recorder::device_of(cudaStream_t stream) const {
  const auto s = streams_.find(stream);
  return s == streams_.end() ? -1 : s->second.device;
}

int Recorder::device_of(cudaEvent_t event) const {
  const auto e = events_.find(event);
  return e == events_.end() ? -1 : e->second.device;
}

std::string Recorder::name_of(cudaStream_t stream) const {
  if (is_default_stream(stream)) return "the default (legacy) stream";
  const auto s = streams_.find(stream);
  return s == streams_.end() ? "an unknown stream " + hex(stream) : s->second.name;
}

std::string Recorder::name_of(cudaEvent_t event) const {
  const auto e = events_.find(event);
  return e == events_.end() ? "an unknown event " + hex(event) : e->second.name;
}

int Recorder::last_record(cudaEvent_t event) const {
  const auto e = events_.find(event);
  return e == events_.end() ? -1 : e->second.last_record;
}

int Recorder::add(Operation op, cudaStream_t stream) {
  const int id = static_cast<int>(operations_.size());
  if (stream != nullptr) {
    Stream& s = streams_.at(stream);
    if (s.tail >= 0) op.after.push_back(s.tail);
    s.tail = id;
  }
  if (host_tail_ >= 0) op.after.push_back(host_tail_);
  op.round = round_;
  // What must finish before this one starts: what it waits for directly, and all that
  // those waited for (edges only point to earlier operations: a wait sees records issued
  // before it, never after).
  std::vector<bool> before(static_cast<std::size_t>(id), false);
  for (int p : op.after) {
    before[static_cast<std::size_t>(p)] = true;
    const std::vector<bool>& earlier = before_[static_cast<std::size_t>(p)];
    for (std::size_t i = 0; i < earlier.size(); ++i) {
      if (earlier[i]) before[i] = true;
    }
  }
  before_.push_back(std::move(before));
  operations_.push_back(std::move(op));
  return id;
}

int Recorder::enqueue(cudaStream_t stream, const std::string& name, std::vector<Access> accesses) {
  if (!knows(stream)) return -1;
  stream = resolve(stream);
  Operation op;
  op.kind = Kind::work;
  op.name = name;
  op.stream = stream;
  op.accesses = std::move(accesses);
  return add(std::move(op), stream);
}

int Recorder::host_work(const std::string& name, std::vector<Access> accesses) {
  Operation op;
  op.kind = Kind::host_work;
  op.name = name;
  op.accesses = std::move(accesses);
  host_tail_ = add(std::move(op), nullptr);
  return host_tail_;
}

cudaError_t Recorder::record(cudaEvent_t event, cudaStream_t stream) {
  if (!knows(stream) || !knows(event)) return fail(cudaErrorInvalidResourceHandle);
  stream = resolve(stream);
  // The runtime refuses an event and a stream of different devices.
  if (device_of(stream) != device_of(event)) return fail(cudaErrorInvalidResourceHandle);
  Operation op;
  op.kind = Kind::record;
  op.name = "record of " + name_of(event);
  op.stream = stream;
  op.event = event;
  events_.at(event).last_record = add(std::move(op), stream);
  return cudaSuccess;
}

cudaError_t Recorder::wait(cudaStream_t stream, cudaEvent_t event) {
  if (!knows(stream) || !knows(event)) return fail(cudaErrorInvalidResourceHandle);
  stream = resolve(stream);
  Operation op;
  op.kind = Kind::wait;
  op.name = "wait for " + name_of(event);
  op.stream = stream;
  op.event = event;
  if (events_.at(event).last_record >= 0) op.after.push_back(events_.at(event).last_record);
  add(std::move(op), stream);
  return cudaSuccess;
}

cudaError_t Recorder::host_wait_stream(const std::string& name, cudaStream_t stream) {
  if (!knows(stream)) return fail(cudaErrorInvalidResourceHandle);
  stream = resolve(stream);
  Operation op;
  op.kind = Kind::host_wait;
  op.name = name + "(" + name_of(stream) + ")";
  op.stream = nullptr;
  if (streams_.at(stream).tail >= 0) op.after.push_back(streams_.at(stream).tail);
  host_tail_ = add(std::move(op), nullptr);
  return cudaSuccess;
}

cudaError_t Recorder::host_wait_event(const std::string& name, cudaEvent_t event) {
  if (!knows(event)) return fail(cudaErrorInvalidResourceHandle);
  Operation op;
  op.kind = Kind::host_wait;
  op.name = name + "(" + name_of(event) + ")";
  op.event = event;
  if (events_.at(event).last_record >= 0) op.after.push_back(events_.at(event).last_record);
  host_tail_ = add(std::move(op), nullptr);
  return cudaSuccess;
}

cudaError_t Recorder::host_wait_device(const std::string& name, int device) {
  Operation op;
  op.kind = Kind::host_wait;
  op.name = name + " (GPU " + std::to_string(device) + ")";
  for (const auto& [handle, s] : streams_) {
    if (s.device == device && s.tail >= 0) op.after.push_back(s.tail);
  }
  host_tail_ = add(std::move(op), nullptr);
  return cudaSuccess;
}

Access Recorder::access(const void* p, std::size_t bytes, bool write) const {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  for (std::size_t b = 0; b < buffers_.size(); ++b) {
    const Buffer& buffer = buffers_[b];
    if (address >= buffer.base && address < buffer.base + buffer.bytes) {
      const std::size_t first = address - buffer.base;
      return Access{static_cast<int>(b), first, first + bytes, write, ""};
    }
  }
  return Access{-1, 0, bytes, write, "memory at " + hex(p) + " that no buffer of the test owns"};
}

bool Recorder::finishes_before(int a, int b) const {
  if (a < 0 || b < 0 || a >= b) return false;
  return before_[static_cast<std::size_t>(b)][static_cast<std::size_t>(a)];
}

std::string Recorder::describe(int operation) const {
  const Operation& op = operations_.at(static_cast<std::size_t>(operation));
  std::string text = op.name;
  if (op.stream != nullptr) text += " (on " + name_of(op.stream) + ")";
  if (op.kind == Kind::host_wait || op.kind == Kind::host_work) text += " (the host)";
  return text;
}

std::string Recorder::describe_access(const Access& a) const {
  if (a.buffer < 0) return a.what;
  const Buffer& buffer = buffers_[static_cast<std::size_t>(a.buffer)];
  if (!a.what.empty()) return a.what + " of " + buffer.name;
  return "bytes [" + std::to_string(a.first) + ", " + std::to_string(a.last) + ") of " +
         buffer.name;
}

std::vector<std::string> Recorder::races(int from) const {
  std::vector<std::string> found;
  const int n = static_cast<int>(operations_.size());
  for (int b = std::max(from, 0); b < n; ++b) {
    for (int a = 0; a < b; ++a) {
      if (finishes_before(a, b)) continue;
      for (const Access& later : operations_[static_cast<std::size_t>(b)].accesses) {
        for (const Access& earlier : operations_[static_cast<std::size_t>(a)].accesses) {
          if (later.buffer < 0 || later.buffer != earlier.buffer) continue;
          if (!later.write && !earlier.write) continue;
          if (later.first >= earlier.last || earlier.first >= later.last) continue;
          found.push_back(describe(b) + (later.write ? " writes " : " reads ") +
                          describe_access(later) + ", but nothing makes it wait for " +
                          describe(a) + ", issued earlier, which " +
                          (earlier.write ? "writes " : "reads ") + describe_access(earlier));
        }
      }
    }
  }
  return found;
}

std::vector<int> Recorder::of_kind(Kind kind, int from, int to) const {
  std::vector<int> found;
  const int end = to < 0 ? static_cast<int>(operations_.size()) : to;
  for (int i = std::max(from, 0); i < end; ++i) {
    if (operations_[static_cast<std::size_t>(i)].kind == kind) found.push_back(i);
  }
  return found;
}

}  // namespace course::testing::schedule

namespace course::testing::doubles {

namespace {

using schedule::active;

bool valid_device(int device) { return device >= 0 && device < active().devices(); }

std::string bytes_text(std::size_t bytes) { return std::to_string(bytes) + " bytes"; }

}  // namespace

cudaError_t cudaGetDevice(int* device) {
  *device = active().current_device;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  auto& m = active();
  m.calls.push_back("cudaSetDevice(" + std::to_string(device) + ")");
  if (!valid_device(device)) return m.fail(cudaErrorInvalidDevice);
  m.current_device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceCount(int* count) {
  *count = active().devices();
  return cudaSuccess;
}

cudaError_t cudaGetLastError() {
  auto& m = active();
  m.calls.push_back("cudaGetLastError()");
  const cudaError_t error = m.last_error;
  m.last_error = cudaSuccess;
  return error;
}

cudaError_t cudaPeekAtLastError() { return active().last_error; }

cudaError_t cudaDeviceCanAccessPeer(int* can, int device, int peer) {
  if (!valid_device(device) || !valid_device(peer)) return active().fail(cudaErrorInvalidDevice);
  *can = device != peer ? 1 : 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags) {
  auto& m = active();
  const int from = m.current_device;
  m.calls.push_back("cudaDeviceEnablePeerAccess(" + std::to_string(peer) + ", " +
                    std::to_string(flags) + ") with GPU " + std::to_string(from) + " current");
  if (flags != 0) return m.fail(cudaErrorInvalidValue);
  if (!valid_device(peer) || peer == from) return m.fail(cudaErrorInvalidDevice);
  const auto failure = m.enable_failures.find({from, peer});
  if (failure != m.enable_failures.end()) {
    const cudaError_t error = failure->second;
    m.enable_failures.erase(failure);
    return m.fail(error);
  }
  if (!m.peer_enabled.insert({from, peer}).second) {
    return m.fail(cudaErrorPeerAccessAlreadyEnabled);
  }
  return cudaSuccess;
}

cudaError_t cudaDeviceDisablePeerAccess(int peer) {
  auto& m = active();
  m.calls.push_back("cudaDeviceDisablePeerAccess(" + std::to_string(peer) + ")");
  if (m.peer_enabled.erase({m.current_device, peer}) == 0) {
    return m.fail(cudaErrorPeerAccessNotEnabled);
  }
  return cudaSuccess;
}

cudaError_t cudaDeviceGetP2PAttribute(int* value, cudaDeviceP2PAttr attr, int src, int dst) {
  if (!valid_device(src) || !valid_device(dst) || src == dst) {
    return active().fail(cudaErrorInvalidDevice);
  }
  // Every pair of the fake machine: peer access, the best rank, native atomics.
  *value = attr == cudaDevP2PAttrPerformanceRank ? 0 : 1;
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  auto& m = active();
  *stream =
      m.new_stream("a stream that cudaStreamCreate made on GPU " + std::to_string(m.current_device),
                   m.current_device);
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int /*flags*/) {
  return doubles::cudaStreamCreate(stream);
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned int /*flags*/,
                                         int /*priority*/) {
  return doubles::cudaStreamCreate(stream);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  return active().knows(stream) ? cudaSuccess : active().fail(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  auto& m = active();
  *event =
      m.new_event("an event that cudaEventCreate made on GPU " + std::to_string(m.current_device),
                  m.current_device);
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event, unsigned int /*flags*/) {
  return doubles::cudaEventCreate(event);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int /*flags*/) {
  return doubles::cudaEventCreate(event);
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  return active().knows(event) ? cudaSuccess : active().fail(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  return active().record(event, stream);
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream,
                                     unsigned int /*flags*/) {
  return active().record(event, stream);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int /*flags*/) {
  return active().wait(stream, event);
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  return active().host_wait_stream("cudaStreamSynchronize", stream);
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  // The double answers "done": the host has learnt that the stream's work finished.
  return active().host_wait_stream("cudaStreamQuery", stream);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  return active().host_wait_event("cudaEventSynchronize", event);
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  return active().host_wait_event("cudaEventQuery", event);
}

cudaError_t cudaDeviceSynchronize() {
  return active().host_wait_device("cudaDeviceSynchronize", active().current_device);
}

cudaError_t cudaMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device,
                                std::size_t bytes, cudaStream_t stream) {
  auto& m = active();
  if (!valid_device(dst_device) || !valid_device(src_device)) {
    return m.fail(cudaErrorInvalidDevice);
  }
  const schedule::Access read = m.access(src, bytes, false), written = m.access(dst, bytes, true);
  // The devices named must be those the pointers live on.
  for (const auto& [a, device] : {std::pair{read, src_device}, std::pair{written, dst_device}}) {
    if (a.buffer >= 0 && m.buffers()[static_cast<std::size_t>(a.buffer)].device != device) {
      return m.fail(cudaErrorInvalidValue);
    }
  }
  const int id = m.enqueue(stream, "cudaMemcpyPeerAsync of " + bytes_text(bytes), {read, written});
  return id < 0 ? m.fail(cudaErrorInvalidResourceHandle) : cudaSuccess;
}

cudaError_t cudaMemcpyPeer(void* dst, int dst_device, const void* src, int src_device,
                           std::size_t bytes) {
  const cudaError_t status =
      doubles::cudaMemcpyPeerAsync(dst, dst_device, src, src_device, bytes, 0);
  if (status != cudaSuccess) return status;
  return active().host_wait_stream("cudaMemcpyPeer", 0);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind /*kind*/,
                            cudaStream_t stream) {
  auto& m = active();
  const int id = m.enqueue(stream, "cudaMemcpyAsync of " + bytes_text(bytes),
                           {m.access(src, bytes, false), m.access(dst, bytes, true)});
  return id < 0 ? m.fail(cudaErrorInvalidResourceHandle) : cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
  const cudaError_t status = doubles::cudaMemcpyAsync(dst, src, bytes, kind, 0);
  if (status != cudaSuccess) return status;
  return active().host_wait_stream("cudaMemcpy", 0);
}

}  // namespace course::testing::doubles
