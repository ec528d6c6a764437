// Lesson 17's driver parts (read-only): the settings, and one rank's run: Part 1 (the three
// collectives against a peer copy), Part 2 (the two layers, sequential and overlapped, every
// element checked against one-GPU cuBLAS), the SM cost of overlap (maxCTAs), lesson 14's
// engine-queue bound fed with this run's stage times, the timeline CSV and the targets.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "capstone.cuh"
#include "course/buffers.h"
#include "course/check.h"
#include "course/data.h"
#include "course/harness.h"
#include "course/multi_gpu.h"
#include "course/table.h"
#include "course/timing.h"
#include "nccl_overlap_run.h"

namespace nccl_overlap {
namespace {

namespace model = overlap_transfers::model;
constexpr const char* kLesson = "17_nccl_overlap";
// Defaults: per rank, an all-gather of 8192 x 4096 floats (128 MiB; the gathered X is 256 MiB)
// and a GEMM of 16384 x 4096 x 192: at ~250 GB/s bus bandwidth and ~50 TFLOP/s both take
// about 0.52-0.54 ms on two H100s. The reduce-scatter layer is the same shape the other way.
constexpr int kRows = 8192, kK = 4096, kNLocal = 192, kKLocal = 192, kNOut = 4096;
constexpr int kQuickRows = 37, kQuickK = 100, kQuickNLocal = 52, kQuickKLocal = 60,
              kQuickNOut = 100;
constexpr std::uint64_t kDefaultBytes = 256ull << 20;
constexpr std::size_t kQuickCount = 4099;  // floats per rank's share: prime
constexpr std::size_t kPeerBytes = 512ull << 20;
constexpr double kMinSpeedup = 1.25, kMaxOfBound = 1.15;

using Comm = std::unique_ptr<ncclComm, void (*)(ncclComm_t)>;
/// Destroys the communicator at the end of a run; while an exception unwinds the run, aborts it
/// instead: a destroy waits for the communicator's work, which may wait for a rank that is gone.
Comm own(ncclComm_t c) {
  return Comm(c, [](ncclComm_t p) {
    if (p == nullptr) return;
    if (std::uncaught_exceptions() > 0) {
      ncclCommAbort(p);
    } else {
      ncclCommDestroy(p);
    }
  });
}

/// The largest of `value` over the ranks: counts of collectives must agree on every rank.
long long agree_max(ncclComm_t comm, cudaStream_t s, long long value) {
  course::DeviceBuffer<long long> d(1);
  COURSE_CHECK(cudaMemcpyAsync(d.data(), &value, sizeof value, cudaMemcpyHostToDevice, s));
  COURSE_NCCL_CHECK(ncclAllReduce(d.data(), d.data(), 1, ncclInt64, ncclMax, comm, s));
  COURSE_CHECK(cudaMemcpyAsync(&value, d.data(), sizeof value, cudaMemcpyDeviceToHost, s));
  COURSE_CHECK(cudaStreamSynchronize(s));
  return value;
}

/// A check of every rank: this rank's comparison, with the other ranks' mismatches added.
course::Comparison all_ranks(ncclComm_t comm, cudaStream_t s, course::Comparison local) {
  course::DeviceBuffer<unsigned long long> d(1);
  unsigned long long count = local.mismatches;
  COURSE_CHECK(cudaMemcpyAsync(d.data(), &count, sizeof count, cudaMemcpyHostToDevice, s));
  COURSE_NCCL_CHECK(ncclAllReduce(d.data(), d.data(), 1, ncclUint64, ncclSum, comm, s));
  COURSE_CHECK(cudaMemcpyAsync(&count, d.data(), sizeof count, cudaMemcpyDeviceToHost, s));
  COURSE_CHECK(cudaStreamSynchronize(s));
  if (count > local.mismatches) {
    std::cerr << kLesson << ": " << count - local.mismatches << " mismatches on other ranks\n";
    local.mismatches = count;
  }
  return local;
}

/// A timing event (RAII).
class Event {
 public:
  Event() { COURSE_CHECK(cudaEventCreate(&event_)); }
  ~Event() { cudaEventDestroy(event_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

/// Part 1: all-gather, reduce-scatter and all-reduce through the harness (rate = busbw).
struct Part1 {
  std::size_t count;  // floats per rank's share
  int ranks, rank;
  course::DeviceBuffer<float> ag_in, ag_out, rs_in, rs_out, ar_in, ar_out;
  Part1(std::size_t n, int ranks_, int rank_, cudaStream_t s)
      : count(n),
        ranks(ranks_),
        rank(rank_),
        ag_in(n),
        ag_out(n * ranks_),
        rs_in(n * ranks_),
        rs_out(n),
        ar_in(n * ranks_),
        ar_out(n * ranks_) {
    const auto r = static_cast<std::uint32_t>(rank);
    capstone::fill_uniform(ag_in.span(), 100 + r, s);
    capstone::fill_uniform(rs_in.span(), 200 + r, s);
    capstone::fill_uniform(ar_in.span(), 300 + r, s);
  }
  /// The expected output: values k / 2048 in [-1, 1), so sums of <= 8 of them are exact.
  std::vector<float> expected(Collective c) const {
    std::vector<float> e(c == Collective::reduce_scatter ? count : count * ranks, 0.0f);
    for (std::size_t i = 0; i < e.size(); ++i) {
      if (c == Collective::all_gather) {
        e[i] = capstone::uniform_value(i % count, 100 + static_cast<std::uint32_t>(i / count));
        continue;
      }
      const std::size_t at = c == Collective::reduce_scatter ? rank * count + i : i;
      const std::uint32_t seed = c == Collective::reduce_scatter ? 200 : 300;
      for (int q = 0; q < ranks; ++q) e[i] += capstone::uniform_value(at, seed + q);
    }
    return e;
  }
};

}  // namespace

std::vector<std::string> variant_names() {
  return {collective_name(Collective::all_gather), collective_name(Collective::reduce_scatter),
          collective_name(Collective::all_reduce)};
}

namespace {

/// A shape flag's value, or its default when the flag was not given (0): --quick's or the
/// full run's.
int or_default(int value, bool quick, int quick_default, int full_default) {
  return value > 0 ? value : (quick ? quick_default : full_default);
}

}  // namespace

void complete_settings(RunSettings& run, const course::CommonOptions& options, int shard_rows,
                       int k, int n_local, int k_local, int n_out, const std::string& chunk_list,
                       const std::string& cta_list) {
  const bool q = options.quick;
  LayerShape& s = run.shape;
  s.ranks = run.ranks;
  s.shard_rows = or_default(shard_rows, q, kQuickRows, kRows);
  s.k = or_default(k, q, kQuickK, kK);
  s.n_local = or_default(n_local, q, kQuickNLocal, kNLocal);
  s.k_local = or_default(k_local, q, kQuickKLocal, kKLocal);
  s.n_out = or_default(n_out, q, kQuickNOut, kNOut);
  const double most = double(1u << 30);  // floats of the largest matrix (4 GiB)
  if (double(s.rows()) * std::max(s.k, s.n_out) > most ||
      double(s.rows()) * std::max(s.n_local, s.k_local) > most) {
    throw course::UsageError("--rows x nranks x a width must be at most 2^30 floats");
  }
  run.chunk_counts =
      course::parse_int_list("chunks", chunk_list.empty() ? (q ? "1,3" : "1,2,4,8") : chunk_list, 1,
                             std::min(s.shard_rows, 64));
  run.max_ctas =
      course::parse_int_list("ctas", cta_list.empty() ? (q ? "0,2" : "0,16,4") : cta_list, 0, 64);
  const std::uint64_t bytes = options.size != 0 ? options.size : (q ? 0 : kDefaultBytes);
  run.collective_count =
      bytes == 0 ? kQuickCount : static_cast<std::size_t>(bytes / (4ull * run.ranks));
  if (run.collective_count == 0) {
    throw course::UsageError("--size must be at least 4 x nranks bytes");
  }
  if (bytes > (8ull << 30)) throw course::UsageError("--size must be at most 8G");
}

namespace {

double time_ms(course::Harness& harness, const course::Launch& l) {
  return course::time_stream_work(l, harness.stream(), harness.warmup(), harness.iters()).median_ms;
}

/// This rank's communicator (every rank calls it with the same id), and the line naming NCCL.
Comm open_communicator(const RunSettings& run, const ncclUniqueId& id) {
  const ncclConfig_t defaults = NCCL_CONFIG_INITIALIZER;
  Comm comm = own(init_communicator(id, run.rank, run.ranks, defaults));
  int version = 0;
  COURSE_NCCL_CHECK(ncclGetVersion(&version));
  const char* nvls = std::getenv("NCCL_NVLS_ENABLE");
  std::cout << "lesson 17: " << run.ranks << " ranks (one process per GPU), NCCL " << version
            << ", NCCL_NVLS_ENABLE=" << (nvls != nullptr ? nvls : "(unset)") << "\n";
  return comm;
}

// ---- Part 1: the collectives, rate = nccl-tests' bus bandwidth ---------------------------------

/// Part 1's yardstick, in rank 0's process only: a copy engine over NVLink to the next GPU.
/// The buffers live as long as the run (the caller owns them).
struct PeerCopy {
  course::DeviceBuffer<std::uint8_t> src, dst;
};

void run_peer_reference(course::Harness& harness, const course::DeviceSummary& gpu, bool quick,
                        PeerCopy& peer_copy) {
  const int devices = course::visible_device_count();
  if (devices < 2) return;
  const int peer = (gpu.ordinal + 1) % devices;
  const std::size_t bytes = quick ? (1u << 20) : kPeerBytes;
  course::enable_peer_access(gpu.ordinal, peer);
  peer_copy.src = course::DeviceBuffer<std::uint8_t>(bytes);
  COURSE_CHECK(cudaMemset(peer_copy.src.data(), 0x5a, bytes));  // never copy uninitialised memory
  COURSE_CHECK(cudaSetDevice(peer));
  peer_copy.dst = course::DeviceBuffer<std::uint8_t>(bytes);
  COURSE_CHECK(cudaSetDevice(gpu.ordinal));
  harness.reference(
      "cudaMemcpyPeerAsync GPU " + std::to_string(gpu.ordinal) + " -> " + std::to_string(peer),
      static_cast<double>(bytes), [&, peer, bytes](cudaStream_t s) {
        COURSE_CHECK(cudaMemcpyPeerAsync(peer_copy.dst.data(), peer, peer_copy.src.data(),
                                         gpu.ordinal, bytes, s));
      });
}

/// One collective as a harness variant: its bus bytes, the output poisoned before the checked
/// run, and every element compared on every rank (all_ranks) after it.
course::Variant collective_variant(const Part1& p1, ncclComm_t comm, cudaStream_t stream,
                                   Collective c, void* out, std::size_t out_count,
                                   std::function<void(cudaStream_t)> enqueue) {
  const int ranks = p1.ranks;
  return course::Variant{
      collective_name(c),
      collective_bytes(c, c == Collective::all_reduce ? p1.count * ranks : p1.count, ranks) *
          bus_factor(c, ranks),
      std::move(enqueue),
      [out, out_count](cudaStream_t s) { course::poison(out, out_count * 4, s); },
      [&p1, comm, stream, c, out, out_count] {
        const std::vector<float> e = p1.expected(c);
        const cuda::std::span<const float> got(static_cast<const float*>(out), out_count);
        return all_ranks(comm, stream, course::compare_exact<float>(e, course::to_host(got)));
      }};
}

void run_part1(course::Harness& harness, Part1& p1, ncclComm_t comm) {
  const cudaStream_t stream = harness.stream();
  std::cout << "Part 1: " << course::fixed(p1.count * 4.0 * p1.ranks / (1 << 20), 1)
            << " MiB buffers; the rate column is bus bandwidth (nccl-tests: algbw x (n-1)/n, "
               "x 2(n-1)/n for all-reduce)\n";
  harness.run(collective_variant(p1, comm, stream, Collective::all_gather, p1.ag_out.data(),
                                 p1.ag_out.size(), [&](cudaStream_t s) {
                                   COURSE_NCCL_CHECK(ncclAllGather(p1.ag_in.data(),
                                                                   p1.ag_out.data(), p1.count,
                                                                   ncclFloat, comm, s));
                                 }));
  harness.run(collective_variant(p1, comm, stream, Collective::reduce_scatter, p1.rs_out.data(),
                                 p1.rs_out.size(), [&](cudaStream_t s) {
                                   COURSE_NCCL_CHECK(
                                       ncclReduceScatter(p1.rs_in.data(), p1.rs_out.data(),
                                                         p1.count, ncclFloat, ncclSum, comm, s));
                                 }));
  harness.run(collective_variant(p1, comm, stream, Collective::all_reduce, p1.ar_out.data(),
                                 p1.ar_out.size(), [&](cudaStream_t s) {
                                   COURSE_NCCL_CHECK(ncclAllReduce(
                                       p1.ar_in.data(), p1.ar_out.data(), p1.count * p1.ranks,
                                       ncclFloat, ncclSum, comm, s));
                                 }));
  harness.headline(collective_name(Collective::all_gather));
}

// ---- Part 2: the layers ---------------------------------------------------------------------

/// Part 2's data on this rank: X (every rank holds it, uses its rows), W_r, every rank's A_q
/// and B_q (the reference needs them all), the outputs, the layers over them, the one-GPU
/// references with their error bounds, every chunking of both layers, the overlap streams.
struct Part2 {
  Part2(const RunSettings& run, ncclComm_t comm, cudaStream_t s)
      : shape(run.shape),
        ranks(run.ranks),
        rank(run.rank),
        m(shape.rows()),
        stream(s),
        x(rows_of(shape.k)),
        w(static_cast<std::size_t>(shape.k) * shape.n_local),
        gathered(rows_of(shape.k)),
        y(rows_of(shape.n_local)),
        a_all(rows_of(shape.k_local) * ranks),
        b_all(static_cast<std::size_t>(shape.k_local) * shape.n_out * ranks),
        partial(rows_of(shape.n_out)),
        z(static_cast<std::size_t>(shape.shard_rows) * shape.n_out),
        a_size(rows_of(shape.k_local)),
        b_size(std::size_t(shape.k_local) * shape.n_out),
        layers{shape,
               comm,
               rank,
               x.data() + std::size_t(rank) * shape.shard_rows * shape.k,
               gathered.data(),
               y.data(),
               partial.data(),
               z.data()},
        ovl(run.chunk_counts.back()) {
    capstone::fill_uniform(x.span(), 1700, stream);  // X: every rank holds it, uses its rows
    capstone::fill_uniform(w.span(), 1710 + rank, stream);
    for (int q = 0; q < ranks; ++q) {  // every rank's A_q and B_q: the reference needs them all
      capstone::fill_uniform(a_all.span().subspan(q * a_size, a_size), 1800 + q, stream);
      capstone::fill_uniform(b_all.span().subspan(q * b_size, b_size), 1900 + q, stream);
    }
    compute_references();
    for (int c : run.chunk_counts) {
      ag[c] = allgather_chunks(layers, w.data(), c);
      rs[c] = reduce_scatter_chunks(layers, a(), b(), c);
    }
    ag_whole = allgather_chunks(layers, w.data(), 1);
    rs_whole = reduce_scatter_chunks(layers, a(), b(), 1);
  }

  std::size_t rows_of(int cols) const { return static_cast<std::size_t>(m) * cols; }
  const float* a() const { return a_all.data() + rank * a_size; }  ///< this rank's A_r
  const float* b() const { return b_all.data() + rank * b_size; }  ///< this rank's B_r

  /// The one-GPU references: Y_r = X W_r; Z = sum_q A_q B_q (this rank's rows), each once on
  /// the values and once on their absolute values (the error bound).
  void compute_references() {
    const LayerShape& s = shape;
    course::DeviceBuffer<float> out(rows_of(std::max(s.n_local, s.n_out))), abs_a(a_all.size()),
        abs_b(b_all.size()), abs_x(x.size()), abs_w(w.size());
    const auto run_sync = [&](const course::Launch& l) {
      l(stream);
      COURSE_CHECK(cudaStreamSynchronize(stream));
    };
    const auto z_rows = [&] {
      return course::to_host(out.cspan().subspan(std::size_t(rank) * s.shard_rows * s.n_out,
                                                 std::size_t(s.shard_rows) * s.n_out));
    };
    for (const bool absolute : {false, true}) {
      if (absolute) {
        capstone::absolute_values(x.cspan(), abs_x.span(), stream);
        capstone::absolute_values(w.cspan(), abs_w.span(), stream);
        capstone::absolute_values(a_all.cspan(), abs_a.span(), stream);
        capstone::absolute_values(b_all.cspan(), abs_b.span(), stream);
      }
      run_sync(capstone::prepare_cublas_sgemm(
          {m, s.n_local, s.k}, 1.0f, absolute ? abs_x.data() : x.data(),
          absolute ? abs_w.data() : w.data(), 0.0f, out.data()));
      (absolute ? y_bound : y_expected) = course::to_host(out.cspan().first(rows_of(s.n_local)));
      for (int q = 0; q < ranks; ++q) {
        run_sync(capstone::prepare_cublas_sgemm(
            {m, s.n_out, s.k_local}, 1.0f, (absolute ? abs_a.data() : a_all.data()) + q * a_size,
            (absolute ? abs_b.data() : b_all.data()) + q * b_size, q == 0 ? 0.0f : 1.0f,
            out.data()));
      }
      (absolute ? z_bound : z_expected) = z_rows();
    }
  }

  /// One checked run of a layer: every output poisoned, the run, then Y or Z compared with the
  /// reference on every rank. True when every rank matched.
  bool checked(bool gather_layer, const std::string& what,
               const std::function<void(cudaStream_t)>& launch) {
    COURSE_CHECK(cudaStreamSynchronize(stream));
    course::poison(gathered.data(), gathered.bytes(), stream);
    course::poison(y.data(), y.bytes(), stream);
    course::poison(partial.data(), partial.bytes(), stream);
    course::poison(z.data(), z.bytes(), stream);
    launch(stream);
    COURSE_CHECK(cudaStreamSynchronize(stream));
    // The sum over ranks adds `ranks` more roundings to each element's k_local x ranks.
    const int z_k = shape.k_local * ranks + ranks;
    const course::Comparison c =
        gather_layer
            ? capstone::compare_gemm(y_expected, y_bound, course::to_host(y.cspan()), shape.k)
            : capstone::compare_gemm(z_expected, z_bound, course::to_host(z.cspan()), z_k);
    const course::Comparison all = all_ranks(layers.comm, stream, c);
    if (!all.ok()) std::cerr << kLesson << " " << what << ": " << all.summary() << "\n";
    return all.ok();
  }

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

std::string layer_name(bool gather_layer) {
  return gather_layer ? "all-gather layer" : "reduce-scatter layer";
}

void print_layer_intro(const LayerShape& s, int m, bool gather_layer) {
  std::cout << "\nPart 2, " << layer_name(gather_layer) << ": " << m << " rows, "
            << (gather_layer ? "X (" + std::to_string(s.k) + " columns) gathered, W_r " +
                                   std::to_string(s.k) + " x " + std::to_string(s.n_local)
                             : "A_r " + std::to_string(s.k_local) + " columns, B_r " +
                                   std::to_string(s.k_local) + " x " + std::to_string(s.n_out))
            << "; rate column = the collective's bus bytes / the layer's time\n";
}

/// Stage times at `c` chunks: each stage's chunks back to back, alone, / c (lesson 14's
/// method); the collective is the layer's H2D (all-gather) or D2H (reduce-scatter) stage.
model::StageTimes layer_stage_times(course::Harness& harness, Part2& p2, bool gather_layer, int c) {
  const auto& list = p2.chunks(gather_layer, c);
  const Layers& layers = p2.layers;
  const double coll_ms =
      time_ms(harness,
              [&](cudaStream_t st) {
                for (const LayerChunk& ch : list) {
                  gather_layer ? all_gather(layers, ch, st) : reduce_scatter(layers, ch, st);
                }
              }) /
      c;
  const double gemm_ms = time_ms(harness,
                                 [&](cudaStream_t st) {
                                   for (const LayerChunk& ch : list) ch.gemm(st);
                                 }) /
                         c;
  return gather_layer ? model::StageTimes{coll_ms, gemm_ms, 0}
                      : model::StageTimes{0, gemm_ms, coll_ms};
}

/// One layer: sequential, then overlapped at every chunk count, each checked and timed
/// (sweep "<layer>"), beside the engine bound of its stage times (sweep "<layer> model").
LayerResult run_layer(course::Harness& harness, Part2& p2, const RunSettings& run,
                      bool gather_layer) {
  LayerResult r;
  const LayerShape& s = p2.shape;
  const Layers& layers = p2.layers;
  const std::string layer = layer_name(gather_layer);
  const double flops = gather_layer ? allgather_layer_flops(s) : reduce_scatter_layer_flops(s);
  const Collective coll = gather_layer ? Collective::all_gather : Collective::reduce_scatter;
  const std::size_t per_rank = std::size_t(s.shard_rows) * (gather_layer ? s.k : s.n_out);
  const double bus_bytes =
      collective_bytes(coll, per_rank, run.ranks) * bus_factor(coll, run.ranks);
  const auto& whole = p2.whole(gather_layer);
  const auto sequential = [&, gather_layer](cudaStream_t st) {
    gather_layer ? issue_allgather_sequential(layers, whole, st)
                 : issue_reduce_scatter_sequential(layers, whole, st);
  };
  print_layer_intro(s, p2.m, gather_layer);
  const bool seq_ok = p2.checked(gather_layer, layer + ", sequential", sequential);
  r.sequential_ms = time_ms(harness, sequential);
  const auto params = [&](int c, const std::string& order) {
    const model::StageTimes t = r.times.count(c) ? r.times[c] : model::StageTimes{};
    return course::SweepParams{{"layer", layer},
                               {"chunks", std::to_string(c)},
                               {"order", order},
                               {"collective_ms", course::fixed(gather_layer ? t.h2d : t.d2h, 6)},
                               {"gemm_ms", course::fixed(t.kernel, 6)}};
  };
  harness.record_sweep(layer, params(1, "sequential"), layer + ", sequential", r.sequential_ms,
                       bus_bytes, seq_ok ? "PASS" : "FAIL");
  std::cout << "  sequential: " << course::fixed(r.sequential_ms, 4) << " ms, "
            << course::fixed(flops / (r.sequential_ms * 1e9), 1) << " TFLOP/s\n";
  double best_ms = std::numeric_limits<double>::infinity();
  for (int c : run.chunk_counts) {
    const auto& list = p2.chunks(gather_layer, c);
    r.times[c] = layer_stage_times(harness, p2, gather_layer, c);
    const auto overlapped = [&, gather_layer](cudaStream_t st) {
      gather_layer ? issue_allgather_overlapped(layers, list, p2.ovl, st)
                   : issue_reduce_scatter_overlapped(layers, list, p2.ovl, st);
    };
    const std::string what = layer + ", overlapped, " + course::count_text(c, "chunk");
    const bool ok = p2.checked(gather_layer, what, overlapped);
    r.ms[c] = time_ms(harness, overlapped);
    r.bound[c] = model::pipeline_bound(c, r.times[c]);
    harness.record_sweep(layer, params(c, "overlapped"), what, r.ms[c], bus_bytes,
                         ok ? "PASS" : "FAIL");
    harness.record_sweep(layer + " model", params(c, "bound"),
                         "engine bound, " + course::count_text(c, "chunk"), r.bound[c], bus_bytes,
                         "-");
    const double coll_ms = gather_layer ? r.times[c].h2d : r.times[c].d2h;
    std::cout << "  " << course::count_text(c, "chunk") << ": collective "
              << course::fixed(coll_ms, 4) << " ms + GEMM " << course::fixed(r.times[c].kernel, 4)
              << " ms per chunk alone; overlapped " << course::fixed(r.ms[c], 4) << " ms ("
              << course::fixed(flops / (r.ms[c] * 1e9), 1) << " TFLOP/s, "
              << course::fixed(r.sequential_ms / r.ms[c], 2) << " x sequential), bound "
              << course::fixed(r.bound[c], 4) << " ms\n";
    if (ok && seq_ok && c >= 2 && r.ms[c] < best_ms) {
      best_ms = r.ms[c];
      r.best = c;
    }
  }
  return r;
}

// ---- What overlap costs: the GEMM beside a collective, at several maxCTAs ---------------------

/// The GEMM's median time while `repeats` all-gathers run beside it on the overlap stream.
double gemm_beside_all_gathers(course::Harness& harness, Part2& p2, const Layers& l,
                               const LayerChunk& gather, const Gemm& gemm, int repeats) {
  const cudaStream_t stream = harness.stream();
  Event e0, g0, g1;
  std::vector<double> samples;
  for (int it = 0; it < harness.warmup() + harness.iters(); ++it) {
    COURSE_CHECK(cudaEventRecord(e0.get(), stream));
    COURSE_CHECK(cudaStreamWaitEvent(p2.ovl.comm, e0.get(), 0));
    for (int i = 0; i < repeats; ++i) all_gather(l, gather, p2.ovl.comm);
    COURSE_CHECK(cudaEventRecord(g0.get(), stream));
    gemm(stream);
    COURSE_CHECK(cudaEventRecord(g1.get(), stream));
    COURSE_CHECK(cudaEventRecord(p2.ovl.comm_done, p2.ovl.comm));
    COURSE_CHECK(cudaStreamWaitEvent(stream, p2.ovl.comm_done, 0));
    COURSE_CHECK(cudaStreamSynchronize(stream));
    float ms = 0;
    COURSE_CHECK(cudaEventElapsedTime(&ms, g0.get(), g1.get()));
    if (it >= harness.warmup()) samples.push_back(ms);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

/// The reduce-scatter layer's whole GEMM alone, then beside back-to-back all-gathers of X with
/// each maxCTAs of the run (a split communicator each; 0: NCCL's default). Returns the GEMM's
/// slowdown beside a collective with NCCL's default CTAs (0 when that row was not run).
double measure_sm_contention(course::Harness& harness, Part2& p2, const RunSettings& run,
                             ncclComm_t comm) {
  double default_slowdown = 0;
  const Gemm& gemm = p2.rs_whole.front().gemm;     // the reduce-scatter layer's whole GEMM
  const LayerChunk& gather = p2.ag_whole.front();  // the all-gather layer's whole all-gather
  const double gemm_alone = time_ms(harness, gemm);
  const double flops = reduce_scatter_layer_flops(p2.shape);
  std::cout << "\nSM contention: the " << p2.m << " x " << p2.shape.n_out << " x "
            << p2.shape.k_local << " GEMM alone " << course::fixed(gemm_alone, 4) << " ms ("
            << course::fixed(flops / (gemm_alone * 1e9), 1)
            << " TFLOP/s), beside back-to-back all-gathers of X:\n";
  const double bus_bytes = collective_bytes(Collective::all_gather, gather.recv_count, run.ranks) *
                           bus_factor(Collective::all_gather, run.ranks);
  for (int ctas : run.max_ctas) {
    ncclComm_t raw = comm;
    Comm split = own(nullptr);
    if (ctas > 0) {
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.maxCTAs = ctas;
      config.minCTAs = std::min(ctas, 1);
      COURSE_NCCL_CHECK(ncclCommSplit(comm, 0, run.rank, &raw, &config));
      split = own(raw);
    }
    Layers l = p2.layers;
    l.comm = raw;
    const double coll_alone = time_ms(harness, [&](cudaStream_t st) { all_gather(l, gather, st); });
    // Enough all-gathers to cover the GEMM, the same count on every rank.
    const int repeats = static_cast<int>(
        agree_max(raw, harness.stream(), std::lround(std::ceil(gemm_alone / coll_alone)) + 1));
    const double beside = gemm_beside_all_gathers(harness, p2, l, gather, gemm, repeats);
    const std::string who =
        ctas == 0 ? std::string("NCCL's default CTAs") : "maxCTAs " + std::to_string(ctas);
    const course::SweepParams params{{"max_ctas", std::to_string(ctas)},
                                     {"gemm_alone_ms", course::fixed(gemm_alone, 6)},
                                     {"gemm_beside_ms", course::fixed(beside, 6)}};
    harness.record_sweep("SM contention", params, "all-gather alone, " + who, coll_alone, bus_bytes,
                         "-");
    if (ctas == 0) default_slowdown = beside / gemm_alone;
    std::cout << "  " << who << ": all-gather alone " << course::fixed(coll_alone, 4) << " ms ("
              << course::fixed(algbw_gbps(bus_bytes, coll_alone), 1)
              << " GB/s bus); the GEMM beside it " << course::fixed(beside, 4)
              << " ms = " << course::fixed(beside / gemm_alone, 2) << " x alone\n";
  }
  return default_slowdown;
}

// ---- The timeline: events around every operation, sequential and overlapped -----------------

/// Both layers, sequential and overlapped at the timeline's chunk count (2 to 4 when the run
/// has one), each with events around every operation beside the engine model's schedule;
/// rank 0 writes them to FILE_timeline.csv with --csv.
void write_timeline(Part2& p2, const course::DeviceSummary& gpu, const RunSettings& run,
                    std::map<bool, LayerResult>& results, const std::string& csv) {
  const model::Gpu engines = model::current_gpu(gpu.name + " (collective + SM engines)", 2, 8);
  const Layers& layers = p2.layers;
  int tc = run.chunk_counts.back();
  for (int c : run.chunk_counts) {
    if (c >= 2 && c <= 4) tc = c;
  }
  std::vector<ot::TimelineRun> runs;
  for (const bool gather_layer : {true, false}) {
    for (const bool overlapped : {false, true}) {
      Timeline timeline;
      const auto& list = overlapped ? p2.chunks(gather_layer, tc) : p2.whole(gather_layer);
      const std::string order = std::string(gather_layer ? "all-gather" : "reduce-scatter") +
                                (overlapped ? " overlapped" : " sequential");
      p2.checked(gather_layer, order + " (timeline)", [&](cudaStream_t st) {
        timeline.start(st);
        if (gather_layer) {
          overlapped ? issue_allgather_overlapped(layers, list, p2.ovl, st, &timeline)
                     : issue_allgather_sequential(layers, list, st, &timeline);
        } else {
          overlapped ? issue_reduce_scatter_overlapped(layers, list, p2.ovl, st, &timeline)
                     : issue_reduce_scatter_sequential(layers, list, st, &timeline);
        }
      });
      const model::StageTimes& t = results[gather_layer].times[tc];
      runs.push_back(
          {order, timeline.read(),
           model::simulate(
               model::issue_order(overlapped ? ot::Order::per_chunk : ot::Order::sequential, tc, t),
               engines)});
    }
  }
  if (!csv.empty() && run.rank == 0) {
    const std::string path = ot::timeline_csv_path(csv);
    ot::write_timeline_csv(path, kLesson, gpu.name, tc, runs);
    std::cout << "  wrote " << path
              << " (tools/plot_timeline.py; the all-gather is drawn as "
                 "H2D, the reduce-scatter as D2H)\n";
  }
}

// ---- Targets ----------------------------------------------------------------------------------

/// Each layer's best overlapped run against its sequential run and against the engine bound;
/// with the GEMM's measured slowdown beside a collective, the bound it implies is printed too.
void add_layer_targets(course::Harness& harness, const std::map<bool, LayerResult>& results,
                       double default_slowdown) {
  for (const bool gather_layer : {true, false}) {
    const LayerResult& r = results.at(gather_layer);
    const std::string layer = layer_name(gather_layer);
    if (r.best == 0) {
      std::cout << "  (no " << layer
                << " target: the sequential run and an overlapped run of 2 "
                   "or more chunks must pass their checks)\n";
      continue;
    }
    const double ms = r.ms.at(r.best), bound = r.bound.at(r.best);
    if (default_slowdown > 0) {  // the model with the GEMM as slow as it is beside a collective
      model::StageTimes slowed = r.times.at(r.best);
      slowed.kernel *= default_slowdown;
      std::cout << "  " << layer << ", " << course::count_text(r.best, "chunk") << ": engine bound "
                << course::fixed(bound, 4) << " ms; with the GEMM "
                << course::fixed(default_slowdown, 2) << " x slower (as beside a collective) "
                << course::fixed(model::pipeline_bound(r.best, slowed), 4) << " ms; measured "
                << course::fixed(ms, 4) << " ms\n";
    }
    const std::string who = layer + " overlapped (" + course::count_text(r.best, "chunk") + ")";
    harness.judged_target(who + " >= " + course::fixed(kMinSpeedup, 2) +
                              " x sequential (sequential time / overlapped time)",
                          r.sequential_ms / ms >= kMinSpeedup, r.sequential_ms / ms);
    harness.judged_target(who + " <= " + course::fixed(kMaxOfBound, 2) +
                              " x the engine bound (overlapped time / bound)",
                          ms / bound <= kMaxOfBound, ms / bound);
  }
}

}  // namespace

int run_lesson(course::Harness& harness, const course::DeviceSummary& gpu,
               const course::CommonOptions& options, const RunSettings& run,
               const ncclUniqueId& id) {
  Comm comm = open_communicator(run, id);
  // Every buffer lives until the run ends, then the communicator goes last.
  Part1 p1(run.collective_count, run.ranks, run.rank, harness.stream());
  PeerCopy peer_copy;
  if (run.rank == 0) run_peer_reference(harness, gpu, options.quick, peer_copy);
  run_part1(harness, p1, comm.get());

  Part2 p2(run, comm.get(), harness.stream());
  std::map<bool, LayerResult> results;
  for (const bool gather_layer : {true, false}) {
    results[gather_layer] = run_layer(harness, p2, run, gather_layer);
  }
  const double default_slowdown = measure_sm_contention(harness, p2, run, comm.get());
  write_timeline(p2, gpu, run, results, options.csv);
  add_layer_targets(harness, results, default_slowdown);
  return harness.finish();
}

}  // namespace nccl_overlap
