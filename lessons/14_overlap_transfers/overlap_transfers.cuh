/// \file overlap_transfers.cuh
/// \brief Lesson 14: overlapping host<->device transfers with kernels, and the
/// engine-queue model that explains when they overlap.
///
/// The API the driver (main.cu) and the tests call. Everything lives in
/// overlap_transfers.cu: the starter in lessons/, the complete version in solutions/.
///
/// Two halves:
/// - **On the GPU**: an array of floats goes host -> device, through a kernel, and back
///   to the host, either in one piece (`sequential`) or cut into chunks, one stream per
///   chunk, issued in one of the seed's two orders (`per_chunk` = async V1,
///   `by_operation` = async V2). A Timeline records an event before and after every
///   operation, for the timeline picture.
/// - **On the CPU** (namespace `model`): the seed's engine queues. A GPU has copy engines
///   and a kernel engine; the host's operations wait in hardware queues; an operation
///   starts when its stream predecessor has signalled completion and its engine is free.
///   The model reproduces the seed's schematics of the Tesla C1060, C2050 and K20, and,
///   fed with stage times measured in the same run, predicts the GPU it runs on.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <cuda/std/span>

#include "course/data.h"

namespace overlap_transfers {

// ---- The work ------------------------------------------------------------------------

/// The three operations each chunk goes through, in stream order.
enum class Stage {
  h2d,     ///< cudaMemcpyAsync host -> device
  kernel,  ///< the trig kernel, in place on the device
  d2h,     ///< cudaMemcpyAsync device -> host
};

/// "H2D", "kernel" or "D2H".
const char* stage_name(Stage stage);

/// How the host issues the operations of a run.
enum class Order {
  sequential,    ///< the whole array: one copy in, one kernel, one copy out, on one stream
  per_chunk,     ///< async V1: for each chunk, its H2D, kernel and D2H, on the chunk's stream
  by_operation,  ///< async V2: every chunk's H2D, then every kernel, then every D2H
};

/// "sequential", "async-v1" or "async-v2" (the names of the driver's variants).
const char* order_name(Order order);

/// One contiguous part of the array: elements [first, first + count).
struct Chunk {
  std::size_t first = 0;
  std::size_t count = 0;
};

/// Chunk `index` of `n` elements cut into `chunks` parts whose sizes differ by at most
/// one element: elements [index * n / chunks, (index + 1) * n / chunks). Works for any
/// n, also one that `chunks` does not divide; with more chunks than elements some
/// chunks are empty. Throws std::invalid_argument unless 0 <= index < chunks.
Chunk chunk_of(std::size_t n, int chunks, int index);

/// The input the driver and the tests use: element i is a hash of (i, seed) mapped to
/// [1, 2), so that every element differs (never a constant input) and a wrong offset
/// shows.
float input_value(std::size_t i, std::uint32_t seed);

/// The CPU reference of the kernel: out[i] = in[i] + rounds. Each round of the kernel adds
/// sqrt(sin^2 x + cos^2 x), which is exactly 1 in exact arithmetic (the seed's kernel and
/// its "max error" check rest on the same identity). Throws std::invalid_argument when the
/// sizes differ or rounds < 0.
void reference(cuda::std::span<const float> in, cuda::std::span<float> out, int rounds);

/// The relative tolerance of compare_close for `rounds` rounds: each round may be off by
/// a few units in the last place (sinf and cosf are within 2 ulp, the running sum rounds),
/// so the bound grows with the rounds: 2^-20 + (rounds + 1) * 2^-23.
double relative_tolerance(int rounds);

/// Everything one run touches. The two host arrays must be pinned (cudaMallocHost or
/// cudaHostRegister): a copy from pageable memory cannot overlap anything.
struct Job {
  const float* host_in = nullptr;  ///< n floats, pinned: what goes to the device
  float* device = nullptr;         ///< n floats of device memory, computed in place
  float* host_out = nullptr;       ///< n floats, pinned: where the results come back
  std::size_t n = 0;
  int rounds = 1;               ///< trig rounds per element: the kernel's share of the work
  int threads_per_block = 256;  ///< the seed's block size
};

/// Blocks of the kernel for `count` elements: one thread per element, as in the seed.
unsigned blocks_for(std::size_t count, int threads_per_block);

/// The most blocks of `threads_per_block` threads one SM holds at once for the kernel
/// (cudaOccupancyMaxActiveBlocksPerMultiprocessor).
int max_blocks_per_sm(int threads_per_block);

// ---- Streams and the timeline --------------------------------------------------------

/// Non-blocking streams for the chunks of a run, and the events that *fork* them from the
/// caller's stream (each waits for what the caller enqueued before) and *join* them back
/// (the caller's stream waits for all of them). With both, whoever waits for the caller's
/// stream also waits for every chunk: the harness's events bracket the whole run.
class StreamSet {
 public:
  /// No streams; touches no CUDA API (a run needs at least as many streams as chunks).
  StreamSet() = default;
  /// `count` non-blocking streams with their fork and join events.
  explicit StreamSet(int count);
  ~StreamSet();
  StreamSet(const StreamSet&) = delete;
  StreamSet& operator=(const StreamSet&) = delete;

  int size() const { return static_cast<int>(streams_.size()); }
  cudaStream_t operator[](int i) const { return streams_.at(static_cast<std::size_t>(i)); }

  /// Streams [0, count) wait for the work enqueued on `origin` so far.
  void fork_from(cudaStream_t origin, int count) const;
  /// `origin` waits for the work enqueued on streams [0, count) so far.
  void join_into(cudaStream_t origin, int count) const;

 private:
  void release() noexcept;
  std::vector<cudaStream_t> streams_;
  cudaEvent_t fork_ = nullptr;
  std::vector<cudaEvent_t> joins_;
};

/// One recorded operation, in milliseconds since the first operation became ready.
struct TimedOperation {
  int chunk = 0;
  Stage stage = Stage::h2d;
  double ready_ms = 0;  ///< the event before it: its stream reached it (predecessor done)
  double start_ms = 0;  ///< inferred: when its engine took it (see infer_engine_starts)
  double end_ms = 0;    ///< the event after it: it had finished
};

/// Events recorded before and after every operation of one run, for the timeline picture.
///
/// An event enqueued before an operation completes when the stream *reaches* the
/// operation, which is when the operation is ready, not when its engine starts it: two
/// copies that wait for the same copy engine have the same "before" time. read() therefore
/// also infers each start (infer_engine_starts).
class Timeline {
 public:
  Timeline() = default;
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  /// Records the reference event on `origin` (before the run forks).
  void start(cudaStream_t origin);
  /// Records an event on `stream` before operation `stage` of chunk `chunk`.
  void before(int chunk, Stage stage, cudaStream_t stream);
  /// Records an event on `stream` after the operation of the last before().
  void after(cudaStream_t stream);
  /// Operations recorded so far.
  std::size_t size() const { return entries_.size(); }
  /// After the run has finished: every operation in issue order, times in ms since the
  /// earliest ready time. Throws std::logic_error when start() or an after() is missing.
  std::vector<TimedOperation> read() const;

 private:
  struct Entry {
    int chunk;
    Stage stage;
    cudaEvent_t before = nullptr;
    cudaEvent_t after = nullptr;
  };
  cudaEvent_t origin_ = nullptr;
  std::vector<Entry> entries_;
};

/// Fills start_ms from ready_ms and end_ms, assuming what the model assumes: one engine
/// per stage (H2D copies, kernels, D2H copies), each running one operation at a time.
/// Operations of a stage then ran in the order they finished, and each started at the
/// later of its ready time and the end of the one before it on the same engine.
void infer_engine_starts(std::vector<TimedOperation>& operations);

// ---- Running ---------------------------------------------------------------------------

/// Enqueues one operation: `stage` of chunk `chunk` of `chunks` (chunk_of) on `stream`,
/// between two timeline events when `timeline` is not null. An empty chunk enqueues
/// nothing. The building block of every order.
void issue_operation(Stage stage, const Job& job, int chunk, int chunks, cudaStream_t stream,
                     Timeline* timeline = nullptr);

/// Runs the job in `order`: host_out[i] = host_in[i] after `rounds` trig rounds, for every i.
///
/// `sequential` enqueues its three operations on `origin`. The two async orders cut the
/// array into `chunks` chunks (chunk_of), chunk c on `streams[c]`: the streams are forked
/// from `origin` first and joined back into it last, so when `origin` has finished, every
/// chunk has. Nothing waits on the host: synchronise `origin` before reading host_out.
/// With a `timeline`, every operation is recorded.
///
/// Preconditions, checked before any CUDA call (std::invalid_argument otherwise): the
/// job's pointers are non-null when n > 0; rounds >= 0; 32 <= threads_per_block <= 1024
/// and a multiple of 32; for the async orders 1 <= chunks <= streams.size(). Then, for
/// n > 0, both host arrays must be pinned (checked with cudaPointerGetAttributes).
/// An empty job enqueues nothing.
void transfer_and_compute(Order order, const Job& job, int chunks, const StreamSet& streams,
                          cudaStream_t origin, Timeline* timeline = nullptr);

// ---- The engine-queue model (CPU only) -------------------------------------------------

namespace model {

/// The engines of the model. With one copy engine every copy runs on copy0.
enum class Engine {
  copy0,    ///< the (first) copy engine: host -> device, and device -> host when it is the only one
  copy1,    ///< the second copy engine: device -> host
  compute,  ///< the kernel engine
};

/// Engines in the model.
inline constexpr int kEngines = 3;

/// "copy engine 0", "copy engine 1" or "kernel engine".
const char* engine_name(Engine engine);

/// One operation as the host issues it.
struct Operation {
  int chunk = 0;
  int stream = 0;  ///< operations of one stream run in issue order, each after the last
  Stage stage = Stage::h2d;
  double duration = 0;  ///< how long it runs once started (any unit: the schedule uses the same)
};

/// An operation with its place in the schedule.
struct ScheduledOperation {
  Operation op;
  Engine engine = Engine::copy0;
  double ready = 0;  ///< when its stream predecessor's completion was signalled (0: none)
  double start = 0;
  double end = 0;
};

/// What the model knows about a GPU.
struct Gpu {
  std::string name;
  /// 1: both directions share one copy engine (C1060). 2 or more: host -> device and
  /// device -> host have an engine each (C2050 and later; a third engine, as on Hopper,
  /// serves other directions, so it changes nothing here).
  int copy_engines = 2;
  /// 0: no Hyper-Q. The host's operations wait in one queue per engine, in issue order,
  /// so an operation that waits for its stream blocks every later one on that engine
  /// (a "false dependency"). N > 0: Hyper-Q; stream s uses hardware queue s % N, so
  /// streams only block each other when they share a queue. CUDA opens 8 by default
  /// (CUDA_DEVICE_MAX_CONNECTIONS, at most 32).
  int connections = 0;
  /// Fermi (C2050): when kernels of different streams are issued back to back, the
  /// scheduler runs them as one concurrent batch and signals their completion only when
  /// the last of them has finished, so nothing that waits for one of them can start
  /// before all of them are done.
  bool delayed_kernel_signal = false;
};

/// The seed's Tesla C1060 (compute capability 1.3): one copy engine, one kernel engine.
Gpu tesla_c1060();
/// The seed's Tesla C2050 (2.0): two copy engines, delayed completion of back-to-back kernels.
Gpu tesla_c2050();
/// The seed's Tesla K20 (3.5): two copy engines and Hyper-Q with CUDA's default 8 connections.
Gpu tesla_k20();
/// A current GPU: `async_engine_count` copy engines (cudaDeviceProp::asyncEngineCount),
/// Hyper-Q with `connections` hardware queues. Throws std::invalid_argument for a count < 1.
Gpu current_gpu(const std::string& name, int async_engine_count, int connections);

/// How long each operation of one chunk takes when it runs alone.
struct StageTimes {
  double h2d = 0;
  double kernel = 0;
  double d2h = 0;
};

/// The operations of a run in the order the host issues them. For `sequential`: three
/// operations of the whole array on stream 0 (each `chunks` x the chunk's time). For the
/// async orders: chunk c on stream c, in the order of transfer_and_compute.
/// Throws std::invalid_argument for chunks < 1.
std::vector<Operation> issue_order(Order order, int chunks, StageTimes chunk);

/// Schedules `issued` on `gpu`. Every engine runs one operation at a time. An operation
/// waits in its hardware queue (one per engine, or one per connection with Hyper-Q);
/// only the oldest operation of a queue may start, and it starts as soon as its engine
/// is free and its stream predecessor has signalled completion. Returns the operations
/// in issue order with their engine, ready, start and end times.
/// Throws std::invalid_argument for a negative duration or stream, or a GPU with fewer
/// than one copy engine or negative connections.
std::vector<ScheduledOperation> simulate(const std::vector<Operation>& issued, const Gpu& gpu);

/// When the last operation of a schedule ends (0 for an empty one).
double makespan(const std::vector<ScheduledOperation>& schedule);

/// makespan(simulate(issue_order(order, chunks, chunk), gpu)).
double predict(const Gpu& gpu, Order order, int chunks, StageTimes chunk);

/// The lower bound of any order on engines that run one operation at a time: `chunks`
/// identical chunks through three engines in a row take h2d + kernel + d2h +
/// (chunks - 1) x max(h2d, kernel, d2h) at best (the slowest engine is busy from its
/// first operation to its last). Throws std::invalid_argument for chunks < 1.
double pipeline_bound(int chunks, StageTimes chunk);

}  // namespace model
}  // namespace overlap_transfers
