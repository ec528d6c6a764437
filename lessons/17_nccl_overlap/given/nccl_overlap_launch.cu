// Lesson 17's read-only plumbing: the unique id as text, nccl-tests' bus bandwidth, the
// layers' chunks and their cuBLAS GEMMs, the collectives, the sequential schedules, and the
// command lines of the ranks of one host (course/ranks.h starts them). Compiled in one unit
// with the exercise.
#include <cublas_v2.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/check.h"
#include "course/cublas_check.h"
#include "course/ranks.h"
#include "nccl_overlap.cuh"

namespace nccl_overlap {
namespace {

constexpr const char* kWhere = "nccl_overlap";
constexpr const char* kProgram = "17_nccl_overlap";  // what messages about its ranks begin with

/// `batch` row-major GEMMs C_b (m x n) = A_b (m x k) B_b (k x n), with A_b = a + b a_stride,
/// B_b = b + b b_stride, C_b = c + b c_stride (fp32, CUBLAS_DEFAULT_MATH): cuBLAS is
/// column-major, so it computes C^T = B^T A^T. One handle per prepared batch.
Gemm prepare_batched_sgemm(int m, int n, int k, const float* a, long long a_stride, const float* b,
                           long long b_stride, float* c, long long c_stride, int batch) {
  if (m < 0 || n < 1 || k < 1 || batch < 1) {
    throw std::invalid_argument(std::string(kWhere) + ": a GEMM needs n, k, batch >= 1, m >= 0");
  }
  if (m == 0) return [](cudaStream_t) {};  // an empty chunk: nothing to compute
  cublasHandle_t raw = nullptr;
  course::check_cublas(cublasCreate(&raw), "cublasCreate");
  std::shared_ptr<cublasContext> handle(raw, [](cublasHandle_t h) { cublasDestroy(h); });
  course::check_cublas(cublasSetMathMode(raw, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  return [handle, m, n, k, a, a_stride, b, b_stride, c, c_stride, batch](cudaStream_t stream) {
    const float alpha = 1.0f, beta = 0.0f;
    course::check_cublas(cublasSetStream(handle.get(), stream), "cublasSetStream");
    course::check_cublas(
        cublasSgemmStridedBatched(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, n,
                                  b_stride, a, k, a_stride, &beta, c, n, c_stride, batch),
        "cublasSgemmStridedBatched");
  };
}

}  // namespace

// ---- The unique id
// -------------------------------------------------------------------------------

std::string encode_unique_id(const ncclUniqueId& id) {
  return course::ranks::to_hex(id.internal, sizeof id.internal);
}

ncclUniqueId decode_unique_id(const std::string& hex) {
  ncclUniqueId id{};
  course::ranks::from_hex(hex, id.internal, sizeof id.internal, "an NCCL unique id");
  return id;
}

// ---- Bus bandwidth
// --------------------------------------------------------------------------------

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::all_gather:
      return "all-gather";
    case Collective::reduce_scatter:
      return "reduce-scatter";
    case Collective::all_reduce:
      return "all-reduce";
  }
  return "?";
}

double bus_factor(Collective c, int ranks) {
  if (ranks < 1) throw std::invalid_argument("bus_factor: ranks must be >= 1");
  const double n = ranks;
  return c == Collective::all_reduce ? 2.0 * (n - 1) / n : (n - 1) / n;
}

double collective_bytes(Collective c, std::size_t count_per_rank, int ranks) {
  if (ranks < 1) throw std::invalid_argument("collective_bytes: ranks must be >= 1");
  const double bytes = static_cast<double>(count_per_rank) * sizeof(float);
  return c == Collective::all_reduce ? bytes : bytes * ranks;
}

double algbw_gbps(double bytes, double ms) { return ms > 0 ? bytes / (ms * 1e6) : 0; }

double busbw_gbps(Collective c, double bytes, double ms, int ranks) {
  return algbw_gbps(bytes, ms) * bus_factor(c, ranks);
}

// ---- The layers
// -----------------------------------------------------------------------------------

ot::Chunk chunk_rows(int shard_rows, int chunks, int index) {
  if (shard_rows < 1 || chunks < 1 || chunks > shard_rows) {
    throw std::invalid_argument("chunk_rows: need 1 <= chunks <= shard rows (" +
                                std::to_string(shard_rows) + "), got " + std::to_string(chunks));
  }
  return ot::chunk_of(static_cast<std::size_t>(shard_rows), chunks, index);
}

void check_shape(const LayerShape& s) {
  if (s.ranks < 1 || s.shard_rows < 1 || s.k < 1 || s.n_local < 1 || s.k_local < 1 || s.n_out < 1) {
    throw std::invalid_argument("LayerShape: every dimension and ranks must be >= 1");
  }
}

double allgather_layer_flops(const LayerShape& s) {
  return 2.0 * s.rows() * static_cast<double>(s.k) * s.n_local;
}
double reduce_scatter_layer_flops(const LayerShape& s) {
  return 2.0 * s.rows() * static_cast<double>(s.k_local) * s.n_out;
}

std::vector<LayerChunk> allgather_chunks(const Layers& layers, const float* w, int chunks) {
  const LayerShape& s = layers.shape;
  check_shape(s);
  std::vector<LayerChunk> list;
  for (int i = 0; i < chunks; ++i) {
    const ot::Chunk rows = chunk_rows(s.shard_rows, chunks, i);
    // Chunk i's gathered rows start after every earlier chunk's ranks x rows.
    const std::size_t gathered_first = rows.first * s.ranks;
    float* gathered = layers.x_gathered + gathered_first * s.k;  // ranks x rows.count x k
    LayerChunk c;
    c.index = i;
    c.rows = rows;
    c.send = layers.x_shard + rows.first * s.k;
    c.recv = gathered;
    c.recv_count = rows.count * s.k;
    // Rank r's block of the chunk -> Y rows r shard_rows + rows.first ... (global order).
    c.gemm = prepare_batched_sgemm(static_cast<int>(rows.count), s.n_local, s.k, gathered,
                                   static_cast<long long>(rows.count) * s.k, w, 0,
                                   layers.y + rows.first * s.n_local,
                                   static_cast<long long>(s.shard_rows) * s.n_local, s.ranks);
    list.push_back(std::move(c));
  }
  return list;
}

std::vector<LayerChunk> reduce_scatter_chunks(const Layers& layers, const float* a, const float* b,
                                              int chunks) {
  const LayerShape& s = layers.shape;
  check_shape(s);
  std::vector<LayerChunk> list;
  for (int i = 0; i < chunks; ++i) {
    const ot::Chunk rows = chunk_rows(s.shard_rows, chunks, i);
    float* partial = layers.partial + rows.first * s.ranks * s.n_out;  // ranks x rows x n_out
    LayerChunk c;
    c.index = i;
    c.rows = rows;
    c.send = partial;
    c.recv = layers.z_shard + rows.first * s.n_out;
    c.recv_count = rows.count * s.n_out;
    // A rows r shard_rows + rows.first ... -> the chunk's block r of `partial`.
    c.gemm = prepare_batched_sgemm(static_cast<int>(rows.count), s.n_out, s.k_local,
                                   a + rows.first * s.k_local,
                                   static_cast<long long>(s.shard_rows) * s.k_local, b, 0, partial,
                                   static_cast<long long>(rows.count) * s.n_out, s.ranks);
    list.push_back(std::move(c));
  }
  return list;
}

OverlapStreams::OverlapStreams(int chunks) {
  // The highest priority the device has: when a GEMM's blocks fill every SM, the block
  // scheduler gives each SM that frees up to the collective's blocks first. At the default
  // priority they would queue behind every block the GEMM has left to start, and the
  // collective of the next chunk would run after this chunk's GEMM instead of beside it.
  int lowest = 0, highest = 0;
  COURSE_CHECK(cudaDeviceGetStreamPriorityRange(&lowest, &highest));
  COURSE_CHECK(cudaStreamCreateWithPriority(&comm, cudaStreamNonBlocking, highest));
  const auto event = [] {
    cudaEvent_t e = nullptr;
    COURSE_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return e;
  };
  ready = event();
  comm_done = event();
  for (int i = 0; i < chunks; ++i) {
    collective_done.push_back(event());
    gemm_done.push_back(event());
  }
}

OverlapStreams::~OverlapStreams() {
  for (cudaEvent_t e : collective_done) cudaEventDestroy(e);
  for (cudaEvent_t e : gemm_done) cudaEventDestroy(e);
  if (ready != nullptr) cudaEventDestroy(ready);
  if (comm_done != nullptr) cudaEventDestroy(comm_done);
  if (comm != nullptr) cudaStreamDestroy(comm);
}

void all_gather(const Layers& layers, const LayerChunk& chunk, cudaStream_t stream) {
  if (chunk.recv_count == 0) return;
  COURSE_NCCL_CHECK(
      ncclAllGather(chunk.send, chunk.recv, chunk.recv_count, ncclFloat, layers.comm, stream));
}

void reduce_scatter(const Layers& layers, const LayerChunk& chunk, cudaStream_t stream) {
  if (chunk.recv_count == 0) return;
  COURSE_NCCL_CHECK(ncclReduceScatter(chunk.send, chunk.recv, chunk.recv_count, ncclFloat, ncclSum,
                                      layers.comm, stream));
}

void issue_allgather_sequential(const Layers& layers, const std::vector<LayerChunk>& chunks,
                                cudaStream_t stream, Timeline* timeline) {
  // Several collectives of one communicator in one group: NCCL launches them as one.
  if (timeline == nullptr) COURSE_NCCL_CHECK(ncclGroupStart());
  for (const LayerChunk& c : chunks) {
    record_operation(timeline, c.index, kGatherStage, stream,
                     [&] { all_gather(layers, c, stream); });
  }
  if (timeline == nullptr) COURSE_NCCL_CHECK(ncclGroupEnd());
  for (const LayerChunk& c : chunks) {
    record_operation(timeline, c.index, kGemmStage, stream, [&] { c.gemm(stream); });
  }
}

void issue_reduce_scatter_sequential(const Layers& layers, const std::vector<LayerChunk>& chunks,
                                     cudaStream_t stream, Timeline* timeline) {
  for (const LayerChunk& c : chunks) {
    record_operation(timeline, c.index, kGemmStage, stream, [&] { c.gemm(stream); });
  }
  if (timeline == nullptr) COURSE_NCCL_CHECK(ncclGroupStart());
  for (const LayerChunk& c : chunks) {
    record_operation(timeline, c.index, kScatterStage, stream,
                     [&] { reduce_scatter(layers, c, stream); });
  }
  if (timeline == nullptr) COURSE_NCCL_CHECK(ncclGroupEnd());
}

// ---- The ranks of one host
// --------------------------------------------------------------------------

std::vector<std::string> rank_command_line(const std::vector<std::string>& args, int rank,
                                           int ranks, const std::string& id_hex) {
  std::vector<std::string> line = args;
  line.insert(line.end(), {"--rank", std::to_string(rank), "--nranks", std::to_string(ranks),
                           "--nccl-id", id_hex});
  return line;
}

course::ranks::Started start_ranks(const std::string& exe, const std::vector<std::string>& args,
                                   int ranks, const std::string& id_hex) {
  std::vector<std::vector<std::string>> lines;
  for (int r = 1; r < ranks; ++r) lines.push_back(rank_command_line(args, r, ranks, id_hex));
  return course::ranks::Started(kProgram, exe, lines);
}

}  // namespace nccl_overlap
