// Lesson 17's read-only plumbing: the unique id as text, nccl-tests' bus
// bandwidth, the layers' chunks and their cuBLAS GEMMs, the collectives, the sequential
// schedules, and starting the ranks of one host. Compiled in one unit with the exercise.
#include <cublas_v2.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "course/check.h"
#include "course/cublas_check.h"
#include "nccl_overlap.cuh"

extern char** environ;

namespace nccl_overlap {
namespace {

constexpr const char* kWhere = "nccl_overlap";

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

int hex_digit(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

}  // namespace

// ---- The unique id
// -------------------------------------------------------------------------------

std::string encode_unique_id(const ncclUniqueId& id) {
  static const char* const kDigits = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * sizeof id.internal);
  for (char byte : id.internal) {
    const auto u = static_cast<unsigned char>(byte);
    hex += kDigits[u >> 4];
    hex += kDigits[u & 15];
  }
  return hex;
}

ncclUniqueId decode_unique_id(const std::string& hex) {
  ncclUniqueId id{};
  if (hex.size() != 2 * sizeof id.internal) {
    throw std::invalid_argument("an NCCL unique id is " + std::to_string(2 * sizeof id.internal) +
                                " hex digits, got " + std::to_string(hex.size()));
  }
  for (std::size_t i = 0; i < sizeof id.internal; ++i) {
    const int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      throw std::invalid_argument("an NCCL unique id has hex digits only, got '" +
                                  hex.substr(2 * i, 2) + "' at " + std::to_string(2 * i));
    }
    id.internal[i] = static_cast<char>(hi * 16 + lo);
  }
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

std::vector<int> start_ranks(const std::string& exe, const std::vector<std::string>& args,
                             int ranks, const std::string& id_hex) {
  std::vector<int> pids;
  for (int r = 1; r < ranks; ++r) {
    std::vector<std::string> line = rank_command_line(args, r, ranks, id_hex);
    line.insert(line.begin(), exe);
    std::vector<char*> argv;
    for (std::string& s : line) argv.push_back(s.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    // `environ` carries NCCL_NVLS_ENABLE=0 (course::set_nccl_nvls_off() ran before): the rank
    // inherits it.
    const int status = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (status != 0) {
      for (int p : pids) kill(p, SIGTERM);
      throw std::runtime_error("could not start rank " + std::to_string(r) + " (" + exe +
                               "): " + std::strerror(status));
    }
    pids.push_back(pid);
  }
  return pids;
}

namespace {
std::atomic<bool> g_ranks_done{false};
int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
}  // namespace

void watch_ranks(const std::vector<int>& pids) {
  std::thread([pids] {
    while (!g_ranks_done.load()) {
      for (std::size_t i = 0; i < pids.size(); ++i) {
        int status = 0;
        // WNOWAIT: leave the exit status for wait_ranks().
        siginfo_t info{};
        if (waitid(P_PID, static_cast<id_t>(pids[i]), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
            info.si_pid != 0) {
          status = info.si_code == CLD_EXITED ? info.si_status : 128 + info.si_status;
          if (status != 0 && !g_ranks_done.load()) {
            std::fprintf(stderr,
                         "17_nccl_overlap: rank %zu exited with code %d before the run ended; "
                         "stopping the other ranks\n",
                         i + 1, status);
            for (int p : pids) kill(p, SIGTERM);
            std::_Exit(status == 77 ? 77 : 1);
          }
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }).detach();
}

int wait_ranks(const std::vector<int>& pids) {
  g_ranks_done.store(true);
  int first = 0;
  for (std::size_t i = 0; i < pids.size(); ++i) {
    int status = 0;
    if (waitpid(pids[i], &status, 0) < 0) continue;
    const int code = exit_code_of(status);
    if (code != 0) {
      std::cerr << "17_nccl_overlap: rank " << i + 1 << " exited with code " << code << "\n";
      if (first == 0) first = code;
    }
  }
  return first;
}

void stop_ranks(const std::vector<int>& pids) {
  g_ranks_done.store(true);
  for (int p : pids) kill(p, SIGTERM);
  for (int p : pids) {
    int status = 0;
    waitpid(p, &status, 0);
  }
}

void end_with_parent() {
#ifdef __linux__
  prctl(PR_SET_PDEATHSIG, SIGTERM);
#endif
}

}  // namespace nccl_overlap
