/// \file nccl_overlap.cuh
/// \brief Lesson 17: NCCL collectives from C++, one process per GPU, and a tensor-parallel
/// layer whose collective is cut into chunks and overlapped with its GEMM.
///
/// The API the driver (main.cu) and the tests call. Where things live: the communicator
/// set-up and the two overlapped schedules in nccl_overlap.cu (the exercise); the NCCL and
/// cuBLAS plumbing, the layers' buffers, the sequential schedules, the ranks' command lines
/// and the CPU helpers in nccl_overlap_launch.cu; the NCCL check and the processes of the
/// ranks in common/ (course/nccl_check.h, course/ranks.h). The engine-queue model and the
/// timeline come from lesson 14 (engine_model.h, overlap_transfers.cuh): the collective is
/// one engine (the model's copy engine), the GEMM the other (its kernel engine).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/launch.h"
#include "course/nccl_check.h"
#include "course/ranks.h"
#include "overlap_transfers.cuh"

namespace nccl_overlap {

namespace ot = overlap_transfers;

// ---- Errors ------------------------------------------------------------------------------

/// An NCCL call failed; what() names the call, NCCL's reason, the file and the line. It is
/// what COURSE_NCCL_CHECK(call) throws (course/nccl_check.h, included above).
using course::NcclError;

// ---- The unique id between processes (CPU) -------------------------------------------------

/// The id as 2 x NCCL_UNIQUE_ID_BYTES lower-case hex digits: what rank 0 hands to the ranks
/// it starts (--nccl-id) and what a launcher could pass through its own channel.
std::string encode_unique_id(const ncclUniqueId& id);
/// The inverse; throws std::invalid_argument for a wrong length or a non-hex digit.
ncclUniqueId decode_unique_id(const std::string& hex);

// ---- Bus bandwidth (CPU): nccl-tests' convention --------------------------------------------

enum class Collective { all_gather, reduce_scatter, all_reduce };
/// "all-gather", "reduce-scatter", "all-reduce".
const char* collective_name(Collective c);

/// busbw / algbw for `ranks` ranks: (n - 1) / n for all-gather and reduce-scatter,
/// 2 (n - 1) / n for all-reduce (what each rank's links must carry, per byte of the buffer).
/// Throws std::invalid_argument for ranks < 1.
double bus_factor(Collective c, int ranks);

/// The bytes algbw divides by: the size of the whole buffer (all-gather: the gathered
/// output, reduce-scatter: the input of one rank, all-reduce: the buffer), for a collective
/// with `count_per_rank` floats per rank's share (all-gather/reduce-scatter) or `count_per_rank`
/// floats in all (all-reduce).
double collective_bytes(Collective c, std::size_t count_per_rank, int ranks);

/// algbw in GB/s: bytes / time.
double algbw_gbps(double bytes, double ms);
/// busbw in GB/s: algbw x bus_factor.
double busbw_gbps(Collective c, double bytes, double ms, int ranks);

// ---- The tensor-parallel layers -------------------------------------------------------------

/// Rows of one rank's shard cut into chunks: ot::chunk_of over the shard's rows. Every rank
/// cuts its shard the same way, so chunk i of every rank travels in one collective.
ot::Chunk chunk_rows(int shard_rows, int chunks, int index);

/// The shapes of both layers on `ranks` ranks (row-major fp32).
///  - all-gather layer (column-parallel): X (M x K) is sharded by rows, M = ranks x shard_rows;
///    every rank gathers X and computes Y_r = X W_r, W_r (K x n_local) its own.
///  - reduce-scatter layer (row-parallel): A = [A_0 | A_1 | ...] (M x ranks k_local) and
///    B = [B_0; B_1; ...]; rank r computes the partial A_r B_r (M x n_out) and the
///    reduce-scatter leaves Z = sum_r A_r B_r, rows [r shard_rows, (r + 1) shard_rows), on
///    rank r.
struct LayerShape {
  int ranks = 2;
  int shard_rows = 0;  ///< rows of X and Z per rank
  int k = 0;           ///< all-gather layer: columns of X
  int n_local = 0;     ///< all-gather layer: columns of W_r and Y_r
  int k_local = 0;     ///< reduce-scatter layer: columns of A_r
  int n_out = 0;       ///< reduce-scatter layer: columns of B_r and Z
  int rows() const { return ranks * shard_rows; }
};

/// Throws std::invalid_argument for a dimension < 1 or ranks < 1.
void check_shape(const LayerShape& s);
/// 2 M K n_local and 2 M k_local n_out: each layer's flops on one rank.
double allgather_layer_flops(const LayerShape& s);
double reduce_scatter_layer_flops(const LayerShape& s);

/// A prepared cuBLAS SGEMM batch: one enqueue, nothing checked or allocated inside.
using Gemm = course::Launch;

/// Everything one rank's layers touch (device memory of this rank's GPU, allocated by the
/// caller). Chunk i's data sits at a chunk's own place, so chunks never share bytes.
struct Layers {
  LayerShape shape;
  ncclComm_t comm = nullptr;
  int rank = 0;
  // all-gather layer
  const float* x_shard = nullptr;  ///< shard_rows x k: this rank's rows of X
  float* x_gathered = nullptr;     ///< M x k, chunk-major: chunk i's ranks' rows side by side
  float* y = nullptr;              ///< M x n_local, global row order
  // reduce-scatter layer
  float* partial = nullptr;  ///< M x n_out, chunk-major: chunk i's rows for every rank
  float* z_shard = nullptr;  ///< shard_rows x n_out: this rank's rows of Z
};

/// One chunk of a layer, prepared: its rows, where its collective reads and writes, and the
/// GEMM batch that computes it.
struct LayerChunk {
  int index = 0;
  ot::Chunk rows;              ///< rows of each rank's shard
  const void* send = nullptr;  ///< the collective's input on this rank
  void* recv = nullptr;        ///< the collective's output on this rank
  std::size_t recv_count = 0;  ///< floats per rank in the collective (ncclAllGather's
                               ///< sendcount, ncclReduceScatter's recvcount)
  Gemm gemm;                   ///< the chunk's GEMM (all ranks' rows of the chunk)
};

/// Chunk i of the all-gather layer: all-gather rows `rows` of x_shard into the chunk's part of
/// x_gathered, then Y rows (r shard_rows + rows) = gathered rows x W_r for every r.
std::vector<LayerChunk> allgather_chunks(const Layers& layers, const float* w, int chunks);
/// Chunk i of the reduce-scatter layer: partial rows (r shard_rows + rows) = A rows x B_r for
/// every r, then reduce-scatter them into rows `rows` of z_shard.
std::vector<LayerChunk> reduce_scatter_chunks(const Layers& layers, const float* a, const float* b,
                                              int chunks);

/// The streams and events of an overlapped run: the GEMMs run on the caller's stream (the
/// compute stream), the collectives on `comm`, a stream of the device's highest priority
/// (the collective's blocks are scheduled before the GEMM's blocks still waiting for an SM). Events: `ready` (recorded on the compute
/// stream before the run: the inputs are there), one per chunk for "chunk i's collective
/// is done" / "chunk i's GEMM is done", and `comm_done` (the last collective, for the join).
struct OverlapStreams {
  cudaStream_t comm = nullptr;
  cudaEvent_t ready = nullptr;
  std::vector<cudaEvent_t> collective_done;
  std::vector<cudaEvent_t> gemm_done;
  cudaEvent_t comm_done = nullptr;
  OverlapStreams() = default;
  explicit OverlapStreams(int chunks);  ///< a high-priority non-blocking stream, events
  ~OverlapStreams();
  OverlapStreams(const OverlapStreams&) = delete;
  OverlapStreams& operator=(const OverlapStreams&) = delete;
};

/// The timeline's stage of each operation (lesson 14's Timeline and CSV): the all-gather as
/// "H2D" (it brings the GEMM's input), the GEMM as "kernel", the reduce-scatter as "D2H" (it
/// takes the GEMM's output away). May be null everywhere below.
using Timeline = ot::Timeline;
inline constexpr ot::Stage kGatherStage = ot::Stage::h2d;
inline constexpr ot::Stage kGemmStage = ot::Stage::kernel;
inline constexpr ot::Stage kScatterStage = ot::Stage::d2h;

/// record_operation(timeline, chunk, stage, stream, enqueue_operation), lesson 14's
/// (overlap_transfers.cuh): enqueues one operation on `stream` between two timeline events
/// (none when `timeline` is null). The building block of every schedule.
using ot::record_operation;

/// Enqueues chunk c's all-gather (ncclAllGather, chunk.recv_count floats per rank) or
/// reduce-scatter (ncclReduceScatter, sum) on `stream`.
void all_gather(const Layers& layers, const LayerChunk& chunk, cudaStream_t stream);
void reduce_scatter(const Layers& layers, const LayerChunk& chunk, cudaStream_t stream);

// ---- The exercise (nccl_overlap.cu) ----------------------------------------------------------

/// TODO 1: this rank's communicator of `ranks` ranks from the id rank 0 made, with `config`
/// (maxCTAs / minCTAs; NCCL_CONFIG_INITIALIZER for NCCL's defaults). Collective: every rank
/// calls it with the same id. Throws NcclError when NCCL fails.
ncclComm_t init_communicator(const ncclUniqueId& id, int rank, int ranks,
                             const ncclConfig_t& config);

/// TODO 2: the all-gather layer, overlapped. On `compute` (the caller's stream) and
/// streams.comm: chunk i's all-gather starts once the inputs are ready, chunk i's GEMM once
/// chunk i's all-gather is done, and when `compute` has finished, everything has.
void issue_allgather_overlapped(const Layers& layers, const std::vector<LayerChunk>& chunks,
                                const OverlapStreams& streams, cudaStream_t compute,
                                Timeline* timeline = nullptr);

/// TODO 3: the reduce-scatter layer, overlapped: chunk i's reduce-scatter starts once chunk
/// i's GEMM is done; when `compute` has finished, every reduce-scatter has too.
void issue_reduce_scatter_overlapped(const Layers& layers, const std::vector<LayerChunk>& chunks,
                                     const OverlapStreams& streams, cudaStream_t compute,
                                     Timeline* timeline = nullptr);

// ---- Sequential schedules and stage times (read-only) -----------------------------------------

/// Every collective, then every GEMM (all-gather layer), or every GEMM, then every
/// collective (reduce-scatter layer), all on `stream`: the baseline.
void issue_allgather_sequential(const Layers& layers, const std::vector<LayerChunk>& chunks,
                                cudaStream_t stream, Timeline* timeline = nullptr);
void issue_reduce_scatter_sequential(const Layers& layers, const std::vector<LayerChunk>& chunks,
                                     cudaStream_t stream, Timeline* timeline = nullptr);

// ---- The ranks of one host (read-only) ---------------------------------------------------------

/// Starts ranks 1 .. ranks - 1 of this program (course/ranks.h): `exe` with `args` plus
/// --rank r --nranks n --nccl-id HEX, each with this process's environment (NCCL_NVLS_ENABLE
/// included) and its stdout sent to /dev/null (rank 0 prints the report).
course::ranks::Started start_ranks(const std::string& exe, const std::vector<std::string>& args,
                                   int ranks, const std::string& id_hex);
/// The command line of rank r (what start_ranks passes): args + the three rank flags.
std::vector<std::string> rank_command_line(const std::vector<std::string>& args, int rank,
                                           int ranks, const std::string& id_hex);

}  // namespace nccl_overlap
