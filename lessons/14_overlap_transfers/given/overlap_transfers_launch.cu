// Lesson 14's launchers and plumbing: argument checks, the chunks, issue_operation (one
// copy or kernel launch of one chunk), the streams with their fork and join events, the
// timeline's events and record_operation (which lessons 15 and 17 record with too), the CPU
// reference and the timeline CSV. Read-only: the build compiles this file in one unit with
// overlap_transfers.cu (yours, and separately the solution's), which defines the kernel and
// the issue orders; overlap_transfers.cuh declares them.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include "course/check.h"
#include "course/device.h"
#include "course/launch.h"
#include "course/table.h"
#include "overlap_transfers.cuh"

namespace overlap_transfers {
namespace {

const char* const kWhere = "overlap_transfers";

void validate(const Job& job) {
  course::require(
      job.n == 0 || (job.host_in != nullptr && job.device != nullptr && job.host_out != nullptr),
      kWhere, "a job of " + std::to_string(job.n) + " elements needs host_in, device and host_out");
  course::require(job.rounds >= 0, kWhere,
                  "rounds must be >= 0, got " + std::to_string(job.rounds));
  course::require(job.threads_per_block >= 32 && job.threads_per_block <= 1024 &&
                      job.threads_per_block % 32 == 0,
                  kWhere,
                  "threads_per_block must be a multiple of 32 in [32, 1024], got " +
                      std::to_string(job.threads_per_block));
}

/// A copy from pageable memory is staged through a driver buffer and cannot overlap
/// anything, which would silently turn this lesson's experiment into a sequential one.
void require_pinned(const void* host, const char* what) {
  cudaPointerAttributes attributes{};
  COURSE_CHECK(cudaPointerGetAttributes(&attributes, host));
  course::require(attributes.type == cudaMemoryTypeHost, kWhere,
                  std::string(what) +
                      " is not pinned host memory (allocate it with cudaMallocHost or register "
                      "it with cudaHostRegister): copies from pageable memory cannot overlap "
                      "kernels");
}

}  // namespace

// ---- Chunks, input, reference ----------------------------------------------------------------

Chunk chunk_of(std::size_t n, int chunks, int index) {
  course::require(chunks >= 1, kWhere, "chunks must be >= 1, got " + std::to_string(chunks));
  course::require(
      index >= 0 && index < chunks, kWhere,
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
  course::require(
      in.size() == out.size(), "overlap_transfers::reference",
      "in has " + std::to_string(in.size()) + " elements, out " + std::to_string(out.size()));
  course::require(rounds >= 0, "overlap_transfers::reference",
                  "rounds must be >= 0, got " + std::to_string(rounds));
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

// ---- StreamSet -------------------------------------------------------------------------------

StreamSet::StreamSet(int count) {
  course::require(count >= 1, kWhere,
                  "a StreamSet needs at least one stream, got " + std::to_string(count));
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
  course::require(
      count >= 0 && count <= size(), kWhere,
      "fork_from: " + std::to_string(count) + " of " + std::to_string(size()) + " streams");
  COURSE_CHECK(cudaEventRecord(fork_, origin));
  for (int i = 0; i < count; ++i) COURSE_CHECK(cudaStreamWaitEvent(streams_[i], fork_, 0));
}

void StreamSet::join_into(cudaStream_t origin, int count) const {
  course::require(
      count >= 0 && count <= size(), kWhere,
      "join_into: " + std::to_string(count) + " of " + std::to_string(size()) + " streams");
  for (int i = 0; i < count; ++i) {
    COURSE_CHECK(cudaEventRecord(joins_[i], streams_[i]));
    COURSE_CHECK(cudaStreamWaitEvent(origin, joins_[i], 0));
  }
}

// ---- Timeline --------------------------------------------------------------------------------

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

void record_operation(Timeline* timeline, int chunk, Stage stage, cudaStream_t stream,
                      const std::function<void()>& enqueue_operation) {
  if (timeline != nullptr) timeline->before(chunk, stage, stream);
  enqueue_operation();
  if (timeline != nullptr) timeline->after(stream);
}

double last_end_ms(const std::vector<TimedOperation>& operations) {
  double end = 0;
  for (const TimedOperation& op : operations) end = std::max(end, op.end_ms);
  return end;
}

// ---- One operation, and the prepared launches --------------------------------------------------

void issue_operation(Stage stage, const Job& job, int chunk, int chunks, cudaStream_t stream,
                     Timeline* timeline) {
  validate(job);
  const Chunk part = chunk_of(job.n, chunks, chunk);
  if (part.count == 0) return;  // more chunks than elements: nothing to move
  const std::size_t bytes = part.count * sizeof(float);
  record_operation(timeline, chunk, stage, stream, [&] {
    switch (stage) {
      case Stage::h2d:
        COURSE_CHECK(cudaMemcpyAsync(job.device + part.first, job.host_in + part.first, bytes,
                                     cudaMemcpyHostToDevice, stream));
        break;
      case Stage::kernel:
        // As in the blog post: one thread per element of the chunk, at the chunk's offset.
        trig_rounds_kernel<<<blocks_for(part.count, job.threads_per_block), job.threads_per_block,
                             0, stream>>>(job.device + part.first, part.count, job.rounds);
        COURSE_CHECK_LAUNCH();
        break;
      case Stage::d2h:
        COURSE_CHECK(cudaMemcpyAsync(job.host_out + part.first, job.device + part.first, bytes,
                                     cudaMemcpyDeviceToHost, stream));
        break;
    }
  });
}

course::Launch prepare_transfer_and_compute(Order order, const Job& job, int chunks,
                                            const StreamSet& streams, Timeline* timeline) {
  validate(job);
  if (order != Order::sequential) {
    course::require(chunks >= 1, kWhere, "chunks must be >= 1, got " + std::to_string(chunks));
    course::require(chunks <= streams.size(), kWhere,
                    std::to_string(chunks) + " chunks need as many streams, got " +
                        std::to_string(streams.size()));
  }
  if (job.n == 0) return [](cudaStream_t) {};
  require_pinned(job.host_in, "host_in");
  require_pinned(job.host_out, "host_out");
  const StreamSet* set = &streams;
  return [order, job, chunks, set, timeline](cudaStream_t origin) {
    if (timeline != nullptr) timeline->start(origin);
    if (order == Order::sequential) {
      issue_sequential(job, origin, timeline);
      return;
    }
    set->fork_from(origin, chunks);
    if (order == Order::per_chunk) {
      issue_per_chunk(job, chunks, *set, timeline);
    } else {
      issue_by_operation(job, chunks, *set, timeline);
    }
    set->join_into(origin, chunks);
  };
}

void transfer_and_compute(Order order, const Job& job, int chunks, const StreamSet& streams,
                          cudaStream_t origin, Timeline* timeline) {
  prepare_transfer_and_compute(order, job, chunks, streams, timeline)(origin);
}

course::Launch prepare_stage(Stage stage, const Job& job, int chunks) {
  validate(job);
  course::require(chunks >= 1, kWhere, "chunks must be >= 1, got " + std::to_string(chunks));
  if (job.n > 0 && stage == Stage::h2d) require_pinned(job.host_in, "host_in");
  if (job.n > 0 && stage == Stage::d2h) require_pinned(job.host_out, "host_out");
  return [stage, job, chunks](cudaStream_t stream) {
    for (int c = 0; c < chunks; ++c) issue_operation(stage, job, c, chunks, stream);
  };
}

course::Launch prepare_copies_only(const Job& job, const float* device_scratch,
                                   const StreamSet& streams) {
  validate(job);
  course::require(streams.size() >= 2, kWhere, "the copies-only reference needs two streams");
  course::require(job.n == 0 || device_scratch != nullptr, kWhere,
                  "the copies-only reference needs a device scratch array");
  if (job.n > 0) {
    require_pinned(job.host_in, "host_in");
    require_pinned(job.host_out, "host_out");
  }
  const StreamSet* set = &streams;
  const std::size_t bytes = job.n * sizeof(float);
  return [job, device_scratch, set, bytes](cudaStream_t origin) {
    if (bytes == 0) return;
    set->fork_from(origin, 2);
    COURSE_CHECK(
        cudaMemcpyAsync(job.device, job.host_in, bytes, cudaMemcpyHostToDevice, (*set)[0]));
    COURSE_CHECK(
        cudaMemcpyAsync(job.host_out, device_scratch, bytes, cudaMemcpyDeviceToHost, (*set)[1]));
    set->join_into(origin, 2);
  };
}

// ---- The driver's helpers ---------------------------------------------------------------------

model::Gpu model_of_device(int ordinal, const std::string& name) {
  int copy_engines = 0;
  COURSE_CHECK(cudaDeviceGetAttribute(&copy_engines, cudaDevAttrAsyncEngineCount, ordinal));
  if (copy_engines < 1) {
    throw course::NoDevice(name + " has no copy engine: copies cannot overlap kernels");
  }
  const char* text = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  const int asked = text != nullptr ? std::atoi(text) : 0;
  return model::current_gpu(name, copy_engines, asked >= 1 ? std::min(asked, 32) : 8);
}

int balanced_rounds(Job job, int percent, int max_rounds,
                    const std::function<double(const course::Launch&)>& time_ms) {
  const double h2d = time_ms(prepare_stage(Stage::h2d, job, 1));
  const int low = 8, high = 64;
  job.rounds = low;
  const double t_low = time_ms(prepare_stage(Stage::kernel, job, 1));
  job.rounds = high;
  const double per_round = (time_ms(prepare_stage(Stage::kernel, job, 1)) - t_low) / (high - low);
  const double rounds = per_round > 0 ? low + (percent / 100.0 * h2d - t_low) / per_round : high;
  return static_cast<int>(std::lround(
      std::clamp(std::isfinite(rounds) ? rounds : high, 1.0, static_cast<double>(max_rounds))));
}

double max_abs_error(cuda::std::span<const float> expected, cuda::std::span<const float> actual) {
  course::require(expected.size() == actual.size(), "overlap_transfers::max_abs_error",
                  "expected has " + std::to_string(expected.size()) + " elements, actual " +
                      std::to_string(actual.size()));
  double error = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    error = std::max(error, std::fabs(double(actual[i]) - double(expected[i])));
  }
  return error;
}

// ---- The timeline CSV ------------------------------------------------------------------------

std::string timeline_csv_path(const std::string& main_csv) {
  const std::string suffix = ".csv";
  const bool has_suffix =
      main_csv.size() > suffix.size() &&
      main_csv.compare(main_csv.size() - suffix.size(), suffix.size(), suffix) == 0;
  return (has_suffix ? main_csv.substr(0, main_csv.size() - suffix.size()) : main_csv) +
         "_timeline.csv";
}

void write_timeline_csv(const std::string& path, const std::string& lesson, const std::string& gpu,
                        int chunks, const std::vector<TimelineRun>& runs) {
  std::ofstream out(path);
  out << "lesson,gpu,source,order,chunks,chunk,stage,ready_ms,start_ms,end_ms\n";
  const auto row = [&](const char* source, const std::string& order, int chunk, Stage stage,
                       double ready, double start, double end) {
    out << course::csv_field(lesson) << "," << course::csv_field(gpu) << "," << source << ","
        << course::csv_field(order) << "," << chunks << "," << chunk << "," << stage_name(stage)
        << "," << course::fixed(ready, 6) << "," << course::fixed(start, 6) << ","
        << course::fixed(end, 6) << "\n";
  };
  for (const TimelineRun& run : runs) {
    for (const TimedOperation& op : run.measured) {
      row("measured", run.order, op.chunk, op.stage, op.ready_ms, op.start_ms, op.end_ms);
    }
    for (const model::ScheduledOperation& s : run.model) {
      row("model", run.order, s.op.chunk, s.op.stage, s.ready, s.start, s.end);
    }
  }
  if (!out) throw std::runtime_error("could not write " + path);
}

}  // namespace overlap_transfers
