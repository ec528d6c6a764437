/// \file overlap_transfers.cuh
/// \brief Lesson 14: overlapping host<->device transfers with kernels.
///
/// The API the driver (main.cu) and the tests call. An array of floats goes host ->
/// device, through a kernel, and back to the host, either in one piece (`sequential`) or
/// cut into chunks, one stream per chunk, issued in one of the two orders of Mark Harris's
/// "How to Overlap Data Transfers in CUDA C/C++" (`per_chunk` = async V1, `by_operation` =
/// async V2). A Timeline records an event before and after every operation, for the
/// timeline picture.
///
/// Where things live: the issue orders and the kernel in overlap_transfers.cu (the
/// exercise: the starter in lessons/, the complete version in solutions/); the launchers,
/// streams, timeline and reference in overlap_transfers_launch.cu; the engine-queue model
/// (Stage, Order and namespace `model`) in engine_model.h / engine_model.cpp.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <cuda/std/span>

#include "course/data.h"
#include "course/launch.h"
#include "engine_model.h"

namespace overlap_transfers {

// ---- The work ------------------------------------------------------------------------

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
/// sqrt(sin^2 x + cos^2 x), which is exactly 1 in exact arithmetic (the blog post's kernel
/// and its "max error" check rest on the same identity). Throws std::invalid_argument when the
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
  int threads_per_block = 256;  ///< the blog post's block size
};

/// Blocks of the kernel for `count` elements: one thread per element, as in the blog post.
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

/// Enqueues `enqueue_operation` (one copy, kernel launch or collective on `stream`) between
/// the two events of `timeline` that record operation `stage` of chunk `chunk`; without a
/// timeline (nullptr) it only enqueues the operation. The building block of every recorded
/// schedule: issue_operation here, lesson 15's issue_chunk, lesson 17's layers.
void record_operation(Timeline* timeline, int chunk, Stage stage, cudaStream_t stream,
                      const std::function<void()>& enqueue_operation);

/// When the last of `operations` (as Timeline::read returns them) ended: the whole run's
/// time from its first ready operation, 0 for none.
double last_end_ms(const std::vector<TimedOperation>& operations);

// ---- Running ---------------------------------------------------------------------------

/// Enqueues one operation: `stage` of chunk `chunk` of `chunks` (chunk_of) on `stream`,
/// between two timeline events when `timeline` is not null. An empty chunk enqueues
/// nothing. The building block of every order. Checks the job and the chunk first
/// (std::invalid_argument, as transfer_and_compute).
void issue_operation(Stage stage, const Job& job, int chunk, int chunks, cudaStream_t stream,
                     Timeline* timeline = nullptr);

/// Prepares a run of the job in `order`: host_out[i] = host_in[i] after `rounds` trig
/// rounds, for every i. Calling the returned launch with a stream `origin` only enqueues.
///
/// `sequential` enqueues its three operations on `origin`. The two async orders cut the
/// array into `chunks` chunks (chunk_of), chunk c on `streams[c]`: the streams are forked
/// from `origin` first and joined back into it last, so when `origin` has finished, every
/// chunk has. Nothing waits on the host: synchronise `origin` before reading host_out.
/// With a `timeline`, every operation is recorded (call such a launch once). The launch
/// keeps references to `streams` and `timeline`: they must outlive it.
///
/// Preconditions, checked here, before any CUDA call (std::invalid_argument otherwise):
/// the job's pointers are non-null when n > 0; rounds >= 0; 32 <= threads_per_block <=
/// 1024 and a multiple of 32; for the async orders 1 <= chunks <= streams.size(). Then,
/// for n > 0, both host arrays must be pinned (checked with cudaPointerGetAttributes).
/// An empty job enqueues nothing.
course::Launch prepare_transfer_and_compute(Order order, const Job& job, int chunks,
                                            const StreamSet& streams, Timeline* timeline = nullptr);

/// prepare_transfer_and_compute(order, job, chunks, streams, timeline)(origin).
void transfer_and_compute(Order order, const Job& job, int chunks, const StreamSet& streams,
                          cudaStream_t origin, Timeline* timeline = nullptr);

/// Prepares `stage` of every one of `chunks` chunks, back to back on the launch's stream:
/// what one chunk's operation costs its engine inside a running pipeline is the time of
/// this launch / chunks (the model's stage times). Same checks as
/// prepare_transfer_and_compute; the host arrays must be pinned for the copies.
course::Launch prepare_stage(Stage stage, const Job& job, int chunks);

/// Prepares the in-run reference: the two copies of the whole array alone, at the same
/// time, on streams[0] (host_in -> device) and streams[1] (`device_scratch` -> host_out),
/// forked from and joined into the launch's stream. No order of the work can beat moving
/// its bytes. Needs two streams and `device_scratch` of job.n floats.
course::Launch prepare_copies_only(const Job& job, const float* device_scratch,
                                   const StreamSet& streams);

// ---- The driver's helpers ---------------------------------------------------------------

/// What the engine-queue model needs to know about device `ordinal` (named `name`): its copy
/// engines (cudaDevAttrAsyncEngineCount) and the hardware queues CUDA opens for this process
/// (CUDA_DEVICE_MAX_CONNECTIONS, 8 when unset, at most 32). Throws course::NoDevice for a
/// GPU without a copy engine: its copies cannot overlap kernels.
model::Gpu model_of_device(int ordinal, const std::string& name);

/// The rounds that make the kernel take `percent` % of one host -> device copy of the whole
/// array: `time_ms` (the driver's timing of a prepared launch) times the copy and the
/// kernel at 8 and 64 rounds; a straight line through the two gives the rounds, clamped to
/// [1, max_rounds]. The blog post chose its kernel the same way: stages of about equal length.
int balanced_rounds(Job job, int percent, int max_rounds,
                    const std::function<double(const course::Launch&)>& time_ms);

/// The largest |actual[i] - expected[i]|: the blog post's "max error" check.
double max_abs_error(cuda::std::span<const float> expected, cuda::std::span<const float> actual);

// ---- The timeline CSV ------------------------------------------------------------------

/// One timeline run: what the events recorded, and the model's schedule of the same order.
struct TimelineRun {
  std::string order;  ///< its name in the CSV: order_name() here, "streamed" in lesson 15
  std::vector<TimedOperation> measured;
  std::vector<model::ScheduledOperation> model;
};

/// "dir/14_x.csv" -> "dir/14_x_timeline.csv" (a name without ".csv" gets "_timeline.csv").
std::string timeline_csv_path(const std::string& main_csv);

/// Writes the timeline CSV that tools/plot_timeline.py reads: one row per operation,
/// columns lesson, gpu, source (measured or model), order, chunks, chunk, stage, ready_ms,
/// start_ms, end_ms. `lesson` fills the first column ("14_overlap_transfers"; lesson 15
/// writes its own runs with it too). Throws std::runtime_error when the file cannot be
/// written.
void write_timeline_csv(const std::string& path, const std::string& lesson, const std::string& gpu,
                        int chunks, const std::vector<TimelineRun>& runs);

// ---- Defined in overlap_transfers.cu (your file) -------------------------------------------
// Declared here for overlap_transfers_launch.cu, so that it compiles on its own
// (tools/compile_alone.py checks that it does); the build compiles your file and
// overlap_transfers_launch.cu as one unit, where the definitions are.
namespace {

/// The kernel (given): `rounds` times value += sqrt(sin^2 x + cos^2 x) on each of the
/// `count` floats at `data`, a grid-stride loop.
__global__ void trig_rounds_kernel(float* __restrict__ data, std::size_t count, int rounds);

/// Sequential (given): the whole array as one chunk, its three operations on `stream`.
void issue_sequential(const Job& job, cudaStream_t stream, Timeline* timeline);
/// TODO 1, async V1: chunk by chunk, chunk c's three operations on streams[c].
void issue_per_chunk(const Job& job, int chunks, const StreamSet& streams, Timeline* timeline);
/// TODO 2, async V2: the same operations, issued operation by operation.
void issue_by_operation(const Job& job, int chunks, const StreamSet& streams, Timeline* timeline);

}  // namespace

}  // namespace overlap_transfers
