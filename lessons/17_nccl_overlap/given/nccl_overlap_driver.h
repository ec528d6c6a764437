/// \file nccl_overlap_driver.h
/// \brief Lesson 17's driver, what its parts share (read-only): the flags as given
/// (Settings), the plan (every size and count of one rank's run, resolved from them before the
/// device is opened: plan_of in nccl_overlap_run.cu), the checks every rank must agree on,
/// and the data of the parts that live in their own files (parts_collectives.cu,
/// parts_layers.cu, parts_contention.cu, parts_timeline.cu, parts_targets.cu). main.cu reads
/// the flags, makes the plan, starts the ranks and runs the parts in the order of the output.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "course/buffers.h"
#include "course/data.h"
#include "course/device.h"
#include "course/flags.h"
#include "course/harness.h"
#include "course/launch.h"
#include "nccl_overlap.cuh"

namespace nccl_overlap::driver {

namespace model = overlap_transfers::model;

inline constexpr const char* kLesson = "17_nccl_overlap";

// ---- The flags' defaults and limits (the usage text and the errors are built from them) ------

inline constexpr int kMinRanks = 2, kMaxRanks = 8, kDefaultRanks = 2;
// Defaults: per rank, an all-gather of 8192 x 4096 floats (128 MiB; the gathered X is 256 MiB)
// and a GEMM of 16384 x 4096 x 192: at ~250 GB/s bus bandwidth and ~50 TFLOP/s both take
// about 0.52-0.54 ms on two H100s. The reduce-scatter layer is the same shape the other way.
inline constexpr int kRows = 8192, kK = 4096, kNLocal = 192, kKLocal = 192, kNOut = 4096;
inline constexpr int kQuickRows = 37, kQuickK = 100, kQuickNLocal = 52, kQuickKLocal = 60,
                     kQuickNOut = 100;
inline constexpr int kMostFloatsLog2 = 30;  // floats of the largest matrix: 2^30 (4 GiB)
inline constexpr int kMaxChunks = 64;       // and at most the rows of a shard
inline constexpr const char* kDefaultChunks = "1,2,4,8";
inline constexpr const char* kQuickChunks = "1,3";
inline constexpr int kMaxCtas = 64;
inline constexpr const char* kDefaultCtas = "0,16,4";
inline constexpr const char* kQuickCtas = "0,2";
inline constexpr std::uint64_t kDefaultBytes = 256ull << 20;  // Part 1: each collective's buffer
inline constexpr std::uint64_t kMaxBytes = 8ull << 30;
inline constexpr std::size_t kQuickCount = 4099;  // --quick: floats per rank's share, a prime
inline constexpr std::size_t kPeerBytes = 512ull << 20, kQuickPeerBytes = 1ull << 20;

/// The command line as given: the common flags and lesson 17's own (0 or "": not given).
struct Settings {
  course::CommonOptions options;
  int ranks = kDefaultRanks;
  int rank = -1;       ///< -1: not given (this process is rank 0 and starts the others)
  std::string id_hex;  ///< --nccl-id
  int shard_rows = 0, k = 0, n_local = 0, k_local = 0, n_out = 0;
  std::string chunk_list, cta_list;
  std::string exe;                ///< this program (course::ranks::own_executable)
  std::vector<std::string> args;  ///< its command line, which rank 0 hands on to the others
};

/// Every size and count of this rank's run, resolved from the flags (plan_of) before the
/// device is opened: nothing below it asks whether --quick was given. Every rank gets the same
/// plan from the same flags, but for its rank, its GPU and the CSV.
struct Plan {
  course::CommonOptions options;  ///< as the harness reads them: --device is this rank's GPU
                                  ///< (first + rank), --csv is rank 0's only
  int ranks = kDefaultRanks;
  int rank = 0;
  bool launcher = false;             ///< rank 0 started without --rank: it starts the others
  int first_device = 0;              ///< rank r drives GPU first_device + r
  ncclUniqueId id{};                 ///< a started rank's (--nccl-id); the launcher makes its own
  std::string exe;                   ///< what the launcher starts for ranks 1 .. n-1, with
  std::vector<std::string> args;     ///< this command line and the three rank flags
  std::size_t collective_count = 0;  ///< Part 1: floats per rank's share of each collective
  std::size_t peer_bytes = 0;        ///< Part 1's yardstick, rank 0's peer copy
  LayerShape shape;
  std::vector<int> chunk_counts;  ///< sorted, unique, each in [1, min(shard_rows, kMaxChunks)]
  std::vector<int> max_ctas;      ///< the contention rows' maxCTAs (0: NCCL's default)
  int timeline_chunks = 0;        ///< the timeline's chunk count: 2 to 4 where the run has one
};

/// The plan of `s`, with the range checks the flag parser cannot do: --nranks in [2, 8],
/// --rank and --nccl-id together, the largest matrix at most 2^30 floats, the chunk and CTA
/// lists, Part 1's count (--size bytes, rounded down to a multiple of 4 x ranks). Throws
/// course::UsageError; touches no CUDA API.
Plan plan_of(const Settings& s);

/// The --variant names: the three collectives.
std::vector<std::string> variant_names();

// ---- What every rank must agree on (nccl_overlap_run.cu) --------------------------------------

using Comm = std::unique_ptr<ncclComm, void (*)(ncclComm_t)>;
/// Destroys the communicator at the end of a run; while an exception unwinds the run, aborts it
/// instead: a destroy waits for the communicator's work, which may wait for a rank that is gone.
Comm own(ncclComm_t c);
/// The largest of `value` over the ranks: counts of collectives must agree on every rank.
long long agree_max(ncclComm_t comm, cudaStream_t s, long long value);
/// A check of every rank: this rank's comparison, with the other ranks' mismatches added.
course::Comparison all_ranks(ncclComm_t comm, cudaStream_t s, course::Comparison local);
/// The median time of `l` on the harness's stream, with its warm-up and repetitions.
double time_ms(course::Harness& harness, const course::Launch& l);

// ---- Part 1: the collectives, rate = nccl-tests' bus bandwidth (parts_collectives.cu) ---------

/// Part 1's buffers: all-gather, reduce-scatter and all-reduce through the harness.
struct Part1 {
  std::size_t count;  // floats per rank's share
  int ranks, rank;
  course::DeviceBuffer<float> ag_in, ag_out, rs_in, rs_out, ar_in, ar_out;
  Part1(std::size_t n, int ranks_, int rank_, cudaStream_t s);
  /// The expected output: values k / 2048 in [-1, 1), so sums of <= 8 of them are exact.
  std::vector<float> expected(Collective c) const;
};

/// Part 1's yardstick, in rank 0's process only: a copy engine over NVLink to the next GPU.
/// The buffers live as long as the run (the caller owns them).
struct PeerCopy {
  course::DeviceBuffer<std::uint8_t> src, dst;
};

void run_peer_reference(course::Harness& harness, const course::DeviceSummary& gpu,
                        const Plan& plan, PeerCopy& peer_copy);
void run_part1(course::Harness& harness, Part1& p1, ncclComm_t comm);

// ---- Part 2: the layers (parts_layers.cu) -------------------------------------------------------

/// Part 2's data on this rank: X (every rank holds it, uses its rows), W_r, every rank's A_q
/// and B_q (the reference needs them all), the outputs, the layers over them, the one-GPU
/// references with their error bounds, every chunking of both layers, the overlap streams.
struct Part2 {
  Part2(const Plan& plan, ncclComm_t comm, cudaStream_t s);

  std::size_t rows_of(int cols) const { return static_cast<std::size_t>(m) * cols; }
  const float* a() const { return a_all.data() + rank * a_size; }  ///< this rank's A_r
  const float* b() const { return b_all.data() + rank * b_size; }  ///< this rank's B_r

  /// The one-GPU references: Y_r = X W_r; Z = sum_q A_q B_q (this rank's rows), each once on
  /// the values and once on their absolute values (the error bound).
  void compute_references();

  /// One checked run of a layer: every output poisoned, the run, then Y or Z compared with the
  /// reference on every rank. True when every rank matched.
  bool checked(bool gather_layer, const std::string& what,
               const std::function<void(cudaStream_t)>& launch);

  const std::vector<LayerChunk>& chunks(bool gather_layer, int c) {
    return gather_layer ? ag[c] : rs[c];
  }
  const std::vector<LayerChunk>& whole(bool gather_layer) const {
    return gather_layer ? ag_whole : rs_whole;
  }

  const LayerShape& shape;
  const int ranks, rank, m;
  const cudaStream_t stream;
  course::DeviceBuffer<float> x, w, gathered, y;
  course::DeviceBuffer<float> a_all, b_all, partial, z;
  const std::size_t a_size, b_size;  ///< floats of one rank's A_q and B_q
  Layers layers;
  std::vector<float> y_expected, y_bound, z_expected, z_bound;
  std::map<int, std::vector<LayerChunk>> ag, rs;  ///< every chunking of both layers
  std::vector<LayerChunk> ag_whole, rs_whole;     ///< each layer in one chunk
  const OverlapStreams ovl;
};

/// One layer's measurements: sequential, then overlapped at every chunk count, with the stage
/// times the engine model is fed with and its bound; `best` is the fastest overlapped run of
/// 2 or more chunks that passed its check (0: none).
struct LayerResult {
  double sequential_ms = 0;
  std::map<int, double> ms, bound;
  std::map<int, model::StageTimes> times;
  int best = 0;
};
/// Both layers' results: true, the all-gather layer; false, the reduce-scatter layer.
using LayerResults = std::map<bool, LayerResult>;

/// "all-gather layer" or "reduce-scatter layer".
std::string layer_name(bool gather_layer);

/// Each layer, sequential, then overlapped at every chunk count, checked and timed (sweep
/// "<layer>"), beside the engine bound of its stage times (sweep "<layer> model").
LayerResults run_layers(course::Harness& harness, Part2& p2, const Plan& plan);

// ---- What overlap costs, the timeline and the targets -------------------------------------------

/// The reduce-scatter layer's whole GEMM alone, then beside back-to-back all-gathers of X with
/// each maxCTAs of the plan (a split communicator each; 0: NCCL's default). Returns the GEMM's
/// slowdown beside a collective with NCCL's default CTAs (0 when that row was not run).
/// parts_contention.cu.
double measure_sm_contention(course::Harness& harness, Part2& p2, const Plan& plan,
                             ncclComm_t comm);

/// Both layers, sequential and overlapped at the plan's timeline chunk count, each with events
/// around every operation beside the engine model's schedule; rank 0 writes them to
/// FILE_timeline.csv with --csv. parts_timeline.cu.
void write_timeline(Part2& p2, const course::DeviceSummary& gpu, const Plan& plan,
                    const LayerResults& results);

/// Each layer's best overlapped run against its sequential run and against the engine bound;
/// with the GEMM's measured slowdown beside a collective, the bound it implies is printed too.
/// parts_targets.cu.
void add_layer_targets(course::Harness& harness, const LayerResults& results,
                       double default_slowdown);

}  // namespace nccl_overlap::driver
