// Lesson 14: overlapping host<->device transfers with kernels.
//
// A GPU runs a copy and a kernel at the same time only when they sit in different
// streams, the host memory is pinned, and the hardware's queues let them. This file has
// both halves of the lesson:
//   1. the GPU side: the seed's experiment. An array goes host -> device, through a
//      kernel, and back, either in one piece on one stream (sequential) or cut into
//      chunks, one stream per chunk, issued chunk by chunk (async V1) or operation by
//      operation (async V2);
//   2. the CPU side: the engine-queue model that explains why V1 and V2 behaved so
//      differently on the seed's Tesla C1060, C2050 and K20, and predicts the GPU of
//      today from stage times measured in the same run.
#include "overlap_transfers.cuh"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "course/check.h"

namespace overlap_transfers {
namespace {

void require(bool condition, const std::string& message) {
  if (!condition) throw std::invalid_argument("overlap_transfers: " + message);
}

// ---- The kernel ------------------------------------------------------------------------

/// The seed's kernel body, `rounds` times: value += sqrt(sin^2 x + cos^2 x). The identity
/// makes every round add 1 (to within rounding), so the CPU knows the answer without
/// computing a sine, while the GPU has to do the whole computation. The angle is the
/// fractional part of the running value, so it stays in [0, 1): sinf and cosf keep to
/// their fast argument reduction however large the value grows, and each round depends
/// on the one before (no round can be computed ahead).
__global__ void trig_rounds_kernel(float* __restrict__ data, std::size_t count, int rounds) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += stride) {
    float value = data[i];
    for (int r = 0; r < rounds; ++r) {
      const float angle = value - truncf(value);
      const float s = sinf(angle);
      const float c = cosf(angle);
      value += sqrtf(s * s + c * c);
    }
    data[i] = value;
  }
}

void validate(const Job& job) {
  require(
      job.n == 0 || (job.host_in != nullptr && job.device != nullptr && job.host_out != nullptr),
      "a job of " + std::to_string(job.n) + " elements needs host_in, device and host_out");
  require(job.rounds >= 0, "rounds must be >= 0, got " + std::to_string(job.rounds));
  require(job.threads_per_block >= 32 && job.threads_per_block <= 1024 &&
              job.threads_per_block % 32 == 0,
          "threads_per_block must be a multiple of 32 in [32, 1024], got " +
              std::to_string(job.threads_per_block));
}

/// A copy from pageable memory is staged through a driver buffer and cannot overlap
/// anything, which would silently turn this lesson's experiment into a sequential one.
void require_pinned(const void* host, const char* what) {
  cudaPointerAttributes attributes{};
  COURSE_CHECK(cudaPointerGetAttributes(&attributes, host));
  require(attributes.type == cudaMemoryTypeHost,
          std::string(what) +
              " is not pinned host memory (allocate it with cudaMallocHost or register it "
              "with cudaHostRegister): copies from pageable memory cannot overlap kernels");
}

// ---- The two asynchronous orders ---------------------------------------------------------

/// Async V1: one loop over the chunks; each chunk's three operations on its own stream.
void issue_per_chunk(const Job& job, int chunks, const StreamSet& streams, Timeline* timeline) {
  // TODO 1: issue the seed's first asynchronous version. For each chunk c (0 .. chunks-1),
  //         issue its host->device copy, its kernel and its device->host copy, in that
  //         order, on streams[c]: issue_operation(Stage::..., job, c, chunks, streams[c],
  //         timeline). The stream keeps the three in order; different chunks' streams
  //         are free to overlap.
  // BEGIN SOLUTION
  for (int c = 0; c < chunks; ++c) {
    issue_operation(Stage::h2d, job, c, chunks, streams[c], timeline);
    issue_operation(Stage::kernel, job, c, chunks, streams[c], timeline);
    issue_operation(Stage::d2h, job, c, chunks, streams[c], timeline);
  }
  // STARTER: (void)job;
  // STARTER: (void)chunks;
  // STARTER: (void)streams;
  // STARTER: (void)timeline;
  // END SOLUTION
}

/// Async V2: the same operations, batched by kind.
void issue_by_operation(const Job& job, int chunks, const StreamSet& streams, Timeline* timeline) {
  // TODO 2: issue the seed's second asynchronous version: first every chunk's
  //         host->device copy, then every chunk's kernel, then every chunk's device->host
  //         copy (three loops over c = 0 .. chunks-1), each on streams[c]. Same streams,
  //         same operations as TODO 1, only the order in which the host issues them
  //         differs, and on some GPUs that order decides everything.
  // BEGIN SOLUTION
  for (int c = 0; c < chunks; ++c) {
    issue_operation(Stage::h2d, job, c, chunks, streams[c], timeline);
  }
  for (int c = 0; c < chunks; ++c) {
    issue_operation(Stage::kernel, job, c, chunks, streams[c], timeline);
  }
  for (int c = 0; c < chunks; ++c) {
    issue_operation(Stage::d2h, job, c, chunks, streams[c], timeline);
  }
  // STARTER: (void)job;
  // STARTER: (void)chunks;
  // STARTER: (void)streams;
  // STARTER: (void)timeline;
  // END SOLUTION
}

}  // namespace

// ---- Small helpers -----------------------------------------------------------------------

const char* stage_name(Stage stage) {
  switch (stage) {
    case Stage::h2d:
      return "H2D";
    case Stage::kernel:
      return "kernel";
    case Stage::d2h:
      return "D2H";
  }
  return "?";
}

const char* order_name(Order order) {
  switch (order) {
    case Order::sequential:
      return "sequential";
    case Order::per_chunk:
      return "async-v1";
    case Order::by_operation:
      return "async-v2";
  }
  return "?";
}

Chunk chunk_of(std::size_t n, int chunks, int index) {
  require(chunks >= 1, "chunks must be >= 1, got " + std::to_string(chunks));
  require(index >= 0 && index < chunks,
          "chunk " + std::to_string(index) + " of " + std::to_string(chunks) + " does not exist");
  // floor(n * index / chunks) without overflowing n * index: n = q * chunks + r.
  const auto c = static_cast<std::size_t>(chunks);
  const auto boundary = [&](std::size_t k) { return (n / c) * k + (n % c) * k / c; };
  const std::size_t first = boundary(static_cast<std::size_t>(index));
  return {first, boundary(static_cast<std::size_t>(index) + 1) - first};
}

float input_value(std::size_t i, std::uint32_t seed) {
  // 23 random bits below the leading 1: exactly representable, in [1, 2).
  return 1.0f + static_cast<float>(course::hash32(i, seed) >> 9) * 0x1p-23f;
}

void reference(cuda::std::span<const float> in, cuda::std::span<float> out, int rounds) {
  require(in.size() == out.size(), "reference: in has " + std::to_string(in.size()) +
                                       " elements, out " + std::to_string(out.size()));
  require(rounds >= 0, "reference: rounds must be >= 0, got " + std::to_string(rounds));
  for (std::size_t i = 0; i < in.size(); ++i) {
    out[i] = static_cast<float>(static_cast<double>(in[i]) + rounds);
  }
}

double relative_tolerance(int rounds) { return 0x1p-20 + (rounds + 1) * 0x1p-23; }

unsigned blocks_for(std::size_t count, int threads_per_block) {
  const std::size_t threads = static_cast<std::size_t>(threads_per_block);
  const std::size_t wanted = (count + threads - 1) / threads;
  // The kernel is a grid-stride loop, so a capped grid still covers every element.
  return static_cast<unsigned>(std::min<std::size_t>(wanted, 1u << 30));
}

int max_blocks_per_sm(int threads_per_block) {
  int blocks = 0;
  COURSE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, trig_rounds_kernel,
                                                             threads_per_block, 0));
  return blocks;
}

// ---- StreamSet -----------------------------------------------------------------------------

StreamSet::StreamSet(int count) {
  require(count >= 1, "a StreamSet needs at least one stream, got " + std::to_string(count));
  try {
    // Non-blocking: they never wait for the legacy default stream (lesson 13).
    for (int i = 0; i < count; ++i) {
      cudaStream_t stream = nullptr;
      COURSE_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      streams_.push_back(stream);
      cudaEvent_t join = nullptr;
      COURSE_CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
      joins_.push_back(join);
    }
    // Fork and join events only order work; timing them would cost for nothing.
    COURSE_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
  } catch (...) {
    release();  // a constructor that throws never runs its destructor
    throw;
  }
}

StreamSet::~StreamSet() { release(); }

void StreamSet::release() noexcept {
  for (cudaStream_t stream : streams_) cudaStreamDestroy(stream);
  for (cudaEvent_t join : joins_) cudaEventDestroy(join);
  if (fork_ != nullptr) cudaEventDestroy(fork_);
  streams_.clear();
  joins_.clear();
  fork_ = nullptr;
}

void StreamSet::fork_from(cudaStream_t origin, int count) const {
  require(count >= 0 && count <= size(),
          "fork_from: " + std::to_string(count) + " of " + std::to_string(size()) + " streams");
  COURSE_CHECK(cudaEventRecord(fork_, origin));
  for (int i = 0; i < count; ++i) COURSE_CHECK(cudaStreamWaitEvent(streams_[i], fork_, 0));
}

void StreamSet::join_into(cudaStream_t origin, int count) const {
  require(count >= 0 && count <= size(),
          "join_into: " + std::to_string(count) + " of " + std::to_string(size()) + " streams");
  for (int i = 0; i < count; ++i) {
    COURSE_CHECK(cudaEventRecord(joins_[i], streams_[i]));
    COURSE_CHECK(cudaStreamWaitEvent(origin, joins_[i], 0));
  }
}

// ---- Timeline ------------------------------------------------------------------------------

Timeline::~Timeline() {
  for (const Entry& e : entries_) {
    if (e.before != nullptr) cudaEventDestroy(e.before);
    if (e.after != nullptr) cudaEventDestroy(e.after);
  }
  if (origin_ != nullptr) cudaEventDestroy(origin_);
}

void Timeline::start(cudaStream_t origin) {
  if (origin_ == nullptr) COURSE_CHECK(cudaEventCreate(&origin_));
  COURSE_CHECK(cudaEventRecord(origin_, origin));
}

void Timeline::before(int chunk, Stage stage, cudaStream_t stream) {
  entries_.push_back({chunk, stage});
  Entry& e = entries_.back();
  COURSE_CHECK(cudaEventCreate(&e.before));
  COURSE_CHECK(cudaEventCreate(&e.after));
  COURSE_CHECK(cudaEventRecord(e.before, stream));
}

void Timeline::after(cudaStream_t stream) {
  if (entries_.empty()) throw std::logic_error("Timeline::after without a before");
  COURSE_CHECK(cudaEventRecord(entries_.back().after, stream));
}

std::vector<TimedOperation> Timeline::read() const {
  std::vector<TimedOperation> operations;
  if (entries_.empty()) return operations;
  if (origin_ == nullptr) throw std::logic_error("Timeline::read: start() was never called");
  COURSE_CHECK(cudaEventSynchronize(origin_));
  const auto since_origin = [&](cudaEvent_t event) {
    float ms = 0;
    COURSE_CHECK(cudaEventSynchronize(event));
    COURSE_CHECK(cudaEventElapsedTime(&ms, origin_, event));
    return static_cast<double>(ms);
  };
  double earliest = 0;
  for (const Entry& e : entries_) {
    TimedOperation op;
    op.chunk = e.chunk;
    op.stage = e.stage;
    op.ready_ms = since_origin(e.before);
    op.end_ms = since_origin(e.after);
    earliest = operations.empty() ? op.ready_ms : std::min(earliest, op.ready_ms);
    operations.push_back(op);
  }
  for (TimedOperation& op : operations) {
    op.ready_ms -= earliest;
    op.end_ms -= earliest;
  }
  infer_engine_starts(operations);
  return operations;
}

void infer_engine_starts(std::vector<TimedOperation>& operations) {
  for (Stage stage : {Stage::h2d, Stage::kernel, Stage::d2h}) {
    std::vector<std::size_t> on_engine;
    for (std::size_t i = 0; i < operations.size(); ++i) {
      if (operations[i].stage == stage) on_engine.push_back(i);
    }
    std::stable_sort(on_engine.begin(), on_engine.end(), [&](std::size_t a, std::size_t b) {
      return operations[a].end_ms < operations[b].end_ms;
    });
    double engine_free = 0;
    for (std::size_t i : on_engine) {
      TimedOperation& op = operations[i];
      op.start_ms = std::min(op.end_ms, std::max(op.ready_ms, engine_free));
      engine_free = op.end_ms;
    }
  }
}

// ---- Running -------------------------------------------------------------------------------

void issue_operation(Stage stage, const Job& job, int chunk, int chunks, cudaStream_t stream,
                     Timeline* timeline) {
  validate(job);
  const Chunk part = chunk_of(job.n, chunks, chunk);
  if (part.count == 0) return;  // more chunks than elements: nothing to move
  const std::size_t bytes = part.count * sizeof(float);
  if (timeline != nullptr) timeline->before(chunk, stage, stream);
  switch (stage) {
    case Stage::h2d:
      COURSE_CHECK(cudaMemcpyAsync(job.device + part.first, job.host_in + part.first, bytes,
                                   cudaMemcpyHostToDevice, stream));
      break;
    case Stage::kernel:
      // The seed's launch: one thread per element of the chunk, the chunk's own offset.
      trig_rounds_kernel<<<blocks_for(part.count, job.threads_per_block), job.threads_per_block, 0,
                           stream>>>(job.device + part.first, part.count, job.rounds);
      COURSE_CHECK_LAUNCH();
      break;
    case Stage::d2h:
      COURSE_CHECK(cudaMemcpyAsync(job.host_out + part.first, job.device + part.first, bytes,
                                   cudaMemcpyDeviceToHost, stream));
      break;
  }
  if (timeline != nullptr) timeline->after(stream);
}

void transfer_and_compute(Order order, const Job& job, int chunks, const StreamSet& streams,
                          cudaStream_t origin, Timeline* timeline) {
  validate(job);
  if (order != Order::sequential) {
    require(chunks >= 1, "chunks must be >= 1, got " + std::to_string(chunks));
    require(chunks <= streams.size(), std::to_string(chunks) +
                                          " chunks need as many streams, got " +
                                          std::to_string(streams.size()));
  }
  if (job.n == 0) return;
  require_pinned(job.host_in, "host_in");
  require_pinned(job.host_out, "host_out");
  if (timeline != nullptr) timeline->start(origin);

  if (order == Order::sequential) {
    // One stream: each operation waits for the one before, nothing overlaps.
    for (Stage stage : {Stage::h2d, Stage::kernel, Stage::d2h}) {
      issue_operation(stage, job, 0, 1, origin, timeline);
    }
    return;
  }
  streams.fork_from(origin, chunks);
  if (order == Order::per_chunk) {
    issue_per_chunk(job, chunks, streams, timeline);
  } else {
    issue_by_operation(job, chunks, streams, timeline);
  }
  streams.join_into(origin, chunks);
}

// ---- The engine-queue model ----------------------------------------------------------------

namespace model {
// Not an anonymous namespace: in the starter some of these members are not called yet,
// and the compiler warns about unused functions only when nothing outside could call them.
namespace simulation {

void require_model(bool condition, const std::string& message) {
  if (!condition) throw std::invalid_argument("overlap_transfers::model: " + message);
}

int number(Engine engine) { return static_cast<int>(engine); }

/// Where an issued operation runs, and which hardware queue it waits in.
struct Placement {
  Engine engine = Engine::copy0;
  int queue = 0;
};

/// When an operation may start: `ready` is when its stream predecessor's completion was
/// signalled (0 without one), `start` when it can really start.
struct Timing {
  double ready = 0;
  double start = 0;
};

/// The seed's picture as a small discrete-event simulation: hardware queues feed engines,
/// each engine runs one operation at a time, and each step starts the queue-head
/// operation that can start earliest (ties: the one issued first).
class EngineQueues {
 public:
  EngineQueues(const std::vector<Operation>& issued, const Gpu& gpu)
      : issued_(issued), gpu_(gpu), predecessor_(issued.size(), -1), batch_(issued.size(), -1) {
    std::map<int, int> last_of_stream;
    for (std::size_t i = 0; i < issued_.size(); ++i) {
      const Operation& op = issued_[i];
      if (const auto it = last_of_stream.find(op.stream); it != last_of_stream.end()) {
        predecessor_[i] = it->second;
      }
      last_of_stream[op.stream] = static_cast<int>(i);
      // Kernels issued back to back (nothing issued between them) form one batch.
      if (op.stage == Stage::kernel) {
        if (i > 0 && issued_[i - 1].stage == Stage::kernel) {
          batch_[i] = batch_[i - 1];
        } else {
          batch_[i] = static_cast<int>(batches_.size());
          batches_.emplace_back();
        }
        batches_[batch_[i]].push_back(static_cast<int>(i));
      }
      placement_.push_back(place(op));
    }
  }

  std::vector<ScheduledOperation> run() {
    // Every queue holds its operations in issue order; only the oldest may start.
    std::map<int, std::deque<int>> queues;
    for (std::size_t i = 0; i < issued_.size(); ++i) {
      queues[placement_[i].queue].push_back(static_cast<int>(i));
    }
    scheduled_.assign(issued_.size(), std::nullopt);
    for (std::size_t step = 0; step < issued_.size(); ++step) {
      int chosen = -1;
      Timing chosen_timing;
      for (const auto& [queue, waiting] : queues) {
        if (waiting.empty()) continue;
        const int head = waiting.front();
        const std::optional<Timing> timing = when_can_start(head);
        if (!timing) continue;  // its stream predecessor has not signalled yet
        if (chosen < 0 || timing->start < chosen_timing.start ||
            (timing->start == chosen_timing.start && head < chosen)) {
          chosen = head;
          chosen_timing = *timing;
        }
      }
      // Unreachable for any issue order: the oldest queue head always can start.
      if (chosen < 0) throw std::logic_error("simulate: no queue's oldest operation can start");

      const Placement& where = placement_[chosen];
      const Operation& op = issued_[chosen];
      scheduled_[chosen] =
          ScheduledOperation{op, where.engine, chosen_timing.ready, chosen_timing.start,
                             chosen_timing.start + op.duration};
      engine_free_[number(where.engine)] = chosen_timing.start + op.duration;
      // The next operation of this queue reaches the head now, not earlier.
      queue_head_since_[where.queue] = chosen_timing.start;
      queues[where.queue].pop_front();
    }
    std::vector<ScheduledOperation> schedule;
    for (const auto& s : scheduled_) schedule.push_back(*s);
    return schedule;
  }

 private:
  /// The engine an operation runs on, and the hardware queue it waits in.
  Placement place(const Operation& op) const {
    // TODO 3: place the operation.
    //         Engine: a kernel runs on Engine::compute. A host->device copy runs on
    //         Engine::copy0. A device->host copy runs on Engine::copy1 when the GPU has
    //         two or more copy engines (gpu_.copy_engines), else on copy0 too.
    //         Queue: without Hyper-Q (gpu_.connections == 0) there is one queue per
    //         engine, so use the engine's number as the queue. With Hyper-Q, stream s
    //         waits in hardware queue s % gpu_.connections; number those kEngines + the
    //         connection, so they never collide with the engines' queues.
    // BEGIN SOLUTION
    Placement where;
    if (op.stage == Stage::kernel) {
      where.engine = Engine::compute;
    } else if (op.stage == Stage::d2h && gpu_.copy_engines >= 2) {
      where.engine = Engine::copy1;
    } else {
      where.engine = Engine::copy0;
    }
    where.queue =
        gpu_.connections == 0 ? number(where.engine) : kEngines + op.stream % gpu_.connections;
    return where;
    // STARTER: (void)op;
    // STARTER: return {};
    // END SOLUTION
  }

  /// When operation `i`'s completion becomes visible to the next operation of its stream;
  /// nothing while that is not known yet.
  std::optional<double> completion_signal(int i) const {
    const auto& done = scheduled_[i];
    if (!done) return std::nullopt;
    // TODO 5: Fermi's delayed signal (gpu_.delayed_kernel_signal). A kernel that belongs to
    //         a batch of kernels issued back to back (batches_[batch_[i]], the indices of
    //         the batch's kernels) signals only when every kernel of its batch has
    //         finished: return nothing while one of them is not scheduled yet, else the
    //         latest end among them. Everything else signals at its own end.
    // BEGIN SOLUTION
    if (gpu_.delayed_kernel_signal && batch_[i] >= 0) {
      double last = done->end;
      for (int member : batches_[batch_[i]]) {
        const auto& other = scheduled_[member];
        if (!other) return std::nullopt;
        last = std::max(last, other->end);
      }
      return last;
    }
    // END SOLUTION
    return done->end;
  }

  /// When operation `i`, the oldest of its queue, can start; nothing while its stream
  /// predecessor has not signalled completion.
  std::optional<Timing> when_can_start(int i) const {
    const Placement& where = placement_[i];
    const int before = predecessor_[i];  // -1: first of its stream
    // TODO 4: the start rule. The operation is ready when its stream predecessor `before`
    //         has signalled completion (completion_signal(before); ready = 0 without a
    //         predecessor; return std::nullopt while the signal is unknown). It starts at
    //         the latest of: its ready time, the moment its engine is free
    //         (engine_free_[number(engine)]), and the moment it reached the head of its
    //         queue (queue_head_since_[queue], 0 if absent: operations leave a queue in
    //         issue order).
    // BEGIN SOLUTION
    Timing timing;
    if (before >= 0) {
      const std::optional<double> signal = completion_signal(before);
      if (!signal) return std::nullopt;
      timing.ready = *signal;
    }
    const auto head_since = queue_head_since_.find(where.queue);
    timing.start = std::max({timing.ready, engine_free_[number(where.engine)],
                             head_since == queue_head_since_.end() ? 0.0 : head_since->second});
    return timing;
    // STARTER: (void)where;
    // STARTER: (void)before;
    // STARTER: return Timing{};
    // END SOLUTION
  }

  const std::vector<Operation>& issued_;
  const Gpu& gpu_;
  std::vector<int> predecessor_;           // previous operation of the same stream, or -1
  std::vector<int> batch_;                 // kernels: their back-to-back batch; others -1
  std::vector<std::vector<int>> batches_;  // the kernels of each batch, in issue order
  std::vector<Placement> placement_;
  std::vector<std::optional<ScheduledOperation>> scheduled_;
  double engine_free_[kEngines] = {0, 0, 0};
  std::map<int, double> queue_head_since_;
};

}  // namespace simulation

using simulation::EngineQueues;
using simulation::require_model;

const char* engine_name(Engine engine) {
  switch (engine) {
    case Engine::copy0:
      return "copy engine 0";
    case Engine::copy1:
      return "copy engine 1";
    case Engine::compute:
      return "kernel engine";
  }
  return "?";
}

Gpu tesla_c1060() { return {"Tesla C1060", 1, 0, false}; }
Gpu tesla_c2050() { return {"Tesla C2050", 2, 0, true}; }
Gpu tesla_k20() { return {"Tesla K20", 2, 8, false}; }

Gpu current_gpu(const std::string& name, int async_engine_count, int connections) {
  require_model(async_engine_count >= 1,
                "a GPU that overlaps copies with kernels has at least one copy engine, got " +
                    std::to_string(async_engine_count));
  require_model(connections >= 1,
                "Hyper-Q needs at least one connection, got " + std::to_string(connections));
  return {name, async_engine_count, connections, false};
}

std::vector<Operation> issue_order(Order order, int chunks, StageTimes chunk) {
  require_model(chunks >= 1, "chunks must be >= 1, got " + std::to_string(chunks));
  const auto op = [&](int c, Stage stage) {
    const double duration = stage == Stage::h2d      ? chunk.h2d
                            : stage == Stage::kernel ? chunk.kernel
                                                     : chunk.d2h;
    return Operation{c, c, stage, duration};
  };
  std::vector<Operation> issued;
  switch (order) {
    case Order::sequential:
      for (Stage stage : {Stage::h2d, Stage::kernel, Stage::d2h}) {
        Operation whole = op(0, stage);
        whole.duration *= chunks;
        issued.push_back(whole);
      }
      break;
    case Order::per_chunk:
      for (int c = 0; c < chunks; ++c) {
        for (Stage stage : {Stage::h2d, Stage::kernel, Stage::d2h}) issued.push_back(op(c, stage));
      }
      break;
    case Order::by_operation:
      for (Stage stage : {Stage::h2d, Stage::kernel, Stage::d2h}) {
        for (int c = 0; c < chunks; ++c) issued.push_back(op(c, stage));
      }
      break;
  }
  return issued;
}

std::vector<ScheduledOperation> simulate(const std::vector<Operation>& issued, const Gpu& gpu) {
  require_model(gpu.copy_engines >= 1, "the model needs at least one copy engine");
  require_model(gpu.connections >= 0, "connections must be >= 0");
  for (const Operation& op : issued) {
    require_model(op.duration >= 0 && std::isfinite(op.duration),
                  "durations must be finite and >= 0");
    require_model(op.stream >= 0, "streams must be >= 0");
  }
  return EngineQueues(issued, gpu).run();
}

double makespan(const std::vector<ScheduledOperation>& schedule) {
  double last = 0;
  for (const ScheduledOperation& s : schedule) last = std::max(last, s.end);
  return last;
}

double predict(const Gpu& gpu, Order order, int chunks, StageTimes chunk) {
  return makespan(simulate(issue_order(order, chunks, chunk), gpu));
}

double pipeline_bound(int chunks, StageTimes chunk) {
  require_model(chunks >= 1, "chunks must be >= 1, got " + std::to_string(chunks));
  const double slowest = std::max({chunk.h2d, chunk.kernel, chunk.d2h});
  return chunk.h2d + chunk.kernel + chunk.d2h + (chunks - 1) * slowest;
}

}  // namespace model
}  // namespace overlap_transfers
