/// \file streamed.cuh
/// \brief Lesson 15, Part 2: a host -> device -> kernel -> host job larger than one chunk,
/// the "streamed GEMM": C_host (rows x n) = A_host (rows x k) W (k x n), A_host and C_host
/// in pinned host memory, W resident on the device.
///
/// The sequential version moves all of A to the device, runs one GEMM, and moves all of C
/// back, on one stream: the copy engines and the SMs take turns. The streamed version cuts
/// the rows into chunks, one stream per chunk, and each chunk goes through its own three
/// operations (lesson 14's async V1 order, now with a real kernel): while chunk c is
/// computed, chunk c + 1 is on its way in and chunk c - 1 on its way out. Row r of C
/// depends on row r of A only, so any row split gives the same C, bit for bit: every
/// element is computed by the same kernel with the same k-order whatever the GEMM's m is.
///
/// Where things live: issue_chunk() is the exercise (capstone.cu: the starter in lessons/,
/// the complete version in solutions/); everything else here is read-only (streamed.cu).
/// The engine-queue model, the streams and the timeline are lesson 14's
/// (overlap_transfers.cuh, engine_model.h).
#pragma once

#include <cuda_runtime.h>
#include <cuda/std/span>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "capstone.cuh"
#include "course/data.h"
#include "course/device.h"
#include "course/harness.h"
#include "course/launch.h"
#include "engine_model.h"
#include "overlap_transfers.cuh"

namespace capstone {

// ---- The job -------------------------------------------------------------------------------

/// Rows [first, first + count) of the job.
struct RowRange {
  int first = 0;
  int count = 0;
};

/// Chunk `index` of `rows` rows cut into `chunks` contiguous parts whose sizes differ by at
/// most one row (lesson 14's chunk_of on rows): rows [index * rows / chunks, (index + 1) *
/// rows / chunks). Every chunk has at least one row. Throws std::invalid_argument unless
/// 1 <= chunks <= rows and 0 <= index < chunks.
RowRange chunk_rows(int rows, int chunks, int index);

/// Everything one run of the streamed GEMM touches. Row-major throughout.
struct StreamedJob {
  const float* host_a = nullptr;    ///< rows x k, pinned host memory: the input
  float* host_c = nullptr;          ///< rows x n, pinned host memory: the output
  const float* device_w = nullptr;  ///< k x n, device memory, uploaded once before any run
  float* device_a = nullptr;        ///< rows x k, device staging for A (chunk c uses its rows)
  float* device_c = nullptr;        ///< rows x n, device staging for C (chunk c uses its rows)
  int rows = 0;
  int k = 0;
  int n = 0;
  Config config;  ///< the kernel that computes each chunk's rows (rung, stages)
};

/// Floating-point operations of the whole job: 2 rows n k, whatever the chunking. Every
/// streamed row of the driver's tables counts them, so its rate column is an end-to-end
/// (copies included) TFLOP/s.
inline double job_flops(const StreamedJob& job) { return flops(GemmShape{job.rows, job.n, job.k}); }

/// The checks that need no device (std::invalid_argument otherwise): rows, k and n >= 1;
/// every pointer non-null; host_a and host_c do not overlap, nor do device_a, device_c and
/// device_w (each chunk must own its rows of the staging buffers).
void check_job(const StreamedJob& job);

// ---- One chunk: the exercise ---------------------------------------------------------------

/// One chunk, as the launchers hand it to issue_chunk().
struct StreamedChunk {
  int index = 0;  ///< the chunk's number, for the timeline
  RowRange rows;  ///< the rows of A and C it owns
  /// Prepared (prepare_sgemm, before any timing): rows `rows` of device_c = the same rows of
  /// device_a times device_w, enqueued on the stream it is called with.
  course::Launch gemm;
};

/// Enqueues the copy of rows [range.first, range.first + range.count) of a row-major matrix
/// with `row_floats` floats per row from `src` to `dst` (both the *whole* matrices: the
/// offset of the rows is applied here), as one cudaMemcpyAsync of `kind` on `stream`.
/// A range of no rows enqueues nothing.
void copy_rows(float* dst, const float* src, RowRange range, int row_floats, cudaMemcpyKind kind,
               cudaStream_t stream);

/// record_operation(timeline, chunk, stage, stream, enqueue_operation) is lesson 14's
/// (overlap_transfers.cuh): it enqueues `enqueue_operation` (one copy or one kernel launch on
/// `stream`) between the two events of `timeline` that record operation `stage` of chunk
/// `chunk`; without a timeline (nullptr) it only enqueues the operation.
using overlap_transfers::record_operation;

/// The exercise (capstone.cu). Enqueues chunk `chunk`'s three operations on `stream`, in
/// stream order, each recorded in `timeline`: its rows of A, host -> device; its GEMM; its
/// rows of C, device -> host. Enqueues only: nothing waits on the host. The launchers have
/// checked the job and the chunk.
void issue_chunk(const StreamedJob& job, const StreamedChunk& chunk, cudaStream_t stream,
                 overlap_transfers::Timeline* timeline);

// ---- Prepared runs ---------------------------------------------------------------------------

/// Prepares the sequential version: the whole job as one chunk (issue_chunk with all rows),
/// its three operations on the launch's stream. With a `timeline`, every operation is
/// recorded (call such a launch once); the launch keeps a reference to it.
///
/// Checks, before any CUDA call: check_job(). Then host_a and host_c must be pinned host
/// memory (cudaPointerGetAttributes: copies from pageable memory overlap nothing) and the
/// three device arrays device memory; then prepare_sgemm's own checks. All
/// std::invalid_argument.
course::Launch prepare_sequential(const StreamedJob& job,
                                  overlap_transfers::Timeline* timeline = nullptr);

/// Prepares the streamed version: `chunks` chunks (chunk_rows), chunk c issued by
/// issue_chunk on streams[c], chunk after chunk (lesson 14's async V1 order). The streams
/// are forked from the launch's stream first and joined back into it last: when the
/// launch's stream has finished, every chunk has. Every chunk's GEMM is prepared here.
///
/// Checks, before any CUDA call: check_job(); 1 <= chunks <= rows; chunks <= streams.size().
/// Then those of prepare_sequential. The launch keeps references to `streams` and
/// `timeline`: they must outlive it.
course::Launch prepare_streamed(const StreamedJob& job, int chunks,
                                const overlap_transfers::StreamSet& streams,
                                overlap_transfers::Timeline* timeline = nullptr);

/// Prepares one stage of every one of `chunks` chunks, back to back on the launch's stream
/// (the copies with copy_rows, the GEMMs prepared here). What one chunk's operation costs
/// its engine inside a running pipeline is this launch's time / chunks: the stage times the
/// engine-queue model is fed with. Same checks as prepare_streamed.
course::Launch prepare_stage(overlap_transfers::Stage stage, const StreamedJob& job, int chunks);

/// Prepares the two copies of the whole job at once: all of A host -> device on one stream
/// and all of C device -> host on another, forked from and joined into the launch's stream
/// (the streams of `streams`: at least 2). Its time is what both directions take when they
/// share the link; a pipeline's chunks cannot copy faster than that. Same checks as
/// prepare_streamed.
course::Launch prepare_both_ways(const StreamedJob& job,
                                 const overlap_transfers::StreamSet& streams);

/// The engine bound of `chunks` chunks when both copy directions share one link: as lesson
/// 14's pipeline_bound (h2d + kernel + d2h + (chunks - 1) x the slowest stage), but in the
/// steady state a chunk also takes at least `both_ways` ms, the time its H2D and D2H need
/// together (the whole job's both-ways copy time / chunks). Throws std::invalid_argument for
/// chunks < 1 or a negative time.
double shared_link_bound(int chunks, overlap_transfers::model::StageTimes chunk, double both_ways);

/// Compares every element bit for bit (a NaN matches only the same NaN, -0 does not match
/// +0): the streamed C against the sequential one. Throws std::invalid_argument when the
/// sizes differ.
course::Comparison compare_bitwise(cuda::std::span<const float> expected,
                                   cuda::std::span<const float> actual);

// ---- The driver's part -----------------------------------------------------------------------

/// Part 2's settings, resolved from the command line before the device is opened.
struct StreamedSettings {
  int rows = 0;
  int k = 0;
  int n = 0;
  std::vector<int> chunk_counts;  ///< sorted, without repeats: the chunk sweep
};

/// The most chunks (and streams) of a run.
inline constexpr int kMaxChunks = 256;

/// Part 2's defaults. k = n = 1024: per row, 4 KiB in, 4 KiB out and 2 M flops, so at about
/// 55 GB/s per copy direction and 35-45 TFLOP/s the GEMM takes 0.6-0.8 x a copy's time: three
/// stages of about the same length, as in lesson 14. 32768 rows: 128 MiB each way.
inline constexpr int kDefaultRows = 32768;
inline constexpr int kDefaultWidth = 1024;
inline constexpr const char* kDefaultChunks = "1,2,4,8,16,32";
/// --quick (tests, sanitizers): nothing a multiple of a tile, every chunk count awkward.
inline constexpr int kQuickRows = 1000;
inline constexpr int kQuickK = 100;
inline constexpr int kQuickN = 52;
inline constexpr const char* kQuickChunks = "1,3,7";

/// The largest m or n any rung launches: rung 1's 32-row tiles, at most 65535 blocks in y.
inline constexpr int kMaxDimension = 65535 * kSmemTile;

/// The settings of Part 2 from its flags (0 or "" = the default): `rows` rows (default
/// kDefaultRows; --quick kQuickRows), k = n = `width` (default kDefaultWidth; --quick k =
/// kQuickK, n = kQuickN), chunk counts from the comma-separated `chunk_list` (default
/// kDefaultChunks; --quick kQuickChunks). Throws course::UsageError for rows or n above
/// kMaxDimension, a chunk count outside [1, min(rows, kMaxChunks)], a list that does not
/// parse, or rows x max(k, n) above 2^30 floats.
StreamedSettings streamed_settings(int rows, int width, const std::string& chunk_list, bool quick);

/// Part 2 through the driver's harness: the job on the device, cuBLAS on the whole problem
/// as the check of the sequential version, then (sweep "streamed") the sequential version
/// and the streamed one at every chunk count, each checked (streamed == sequential, bit for
/// bit) and event-timed; (sweep "streamed model") the engine-queue model fed with the stage
/// times measured in this run, and its bound; (sweep "streamed timeline") one sequential and
/// one streamed run at the best chunk count with events around every operation, written
/// beside `csv` (timeline_csv_path) when `csv` is not empty; then two judged targets:
/// the best streamed run >= 1.80 x sequential, and >= 0.90 x the engine bound (bound time /
/// measured time). `config` picks the kernel.
void run_streamed(course::Harness& harness, const course::DeviceSummary& gpu,
                  const StreamedSettings& settings, Config config, const std::string& csv);

}  // namespace capstone
