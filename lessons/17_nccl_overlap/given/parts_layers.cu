// Lesson 17's driver, Part 2 (read-only): the two tensor-parallel layers on this rank, their
// data and one-GPU cuBLAS references, each layer sequential and then overlapped at every chunk
// count of the plan, every run checked on every rank, with the stage times lesson 14's engine
// model is fed with and the bound it gives.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "capstone.cuh"
#include "course/buffers.h"
#include "course/check.h"
#include "course/data.h"
#include "course/harness.h"
#include "course/table.h"
#include "nccl_overlap_driver.h"

namespace nccl_overlap::driver {

Part2::Part2(const Plan& plan, ncclComm_t comm, cudaStream_t s)
    : shape(plan.shape),
      ranks(plan.ranks),
      rank(plan.rank),
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
      ovl(plan.chunk_counts.back()) {
  capstone::fill_uniform(x.span(), 1700, stream);  // X: every rank holds it, uses its rows
  capstone::fill_uniform(w.span(), 1710 + rank, stream);
  for (int q = 0; q < ranks; ++q) {  // every rank's A_q and B_q: the reference needs them all
    capstone::fill_uniform(a_all.span().subspan(q * a_size, a_size), 1800 + q, stream);
    capstone::fill_uniform(b_all.span().subspan(q * b_size, b_size), 1900 + q, stream);
  }
  compute_references();
  for (int c : plan.chunk_counts) {
    ag[c] = allgather_chunks(layers, w.data(), c);
    rs[c] = reduce_scatter_chunks(layers, a(), b(), c);
  }
  ag_whole = allgather_chunks(layers, w.data(), 1);
  rs_whole = reduce_scatter_chunks(layers, a(), b(), 1);
}

void Part2::compute_references() {
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
    run_sync(capstone::prepare_cublas_sgemm({m, s.n_local, s.k}, 1.0f,
                                            absolute ? abs_x.data() : x.data(),
                                            absolute ? abs_w.data() : w.data(), 0.0f, out.data()));
    (absolute ? y_bound : y_expected) = course::to_host(out.cspan().first(rows_of(s.n_local)));
    for (int q = 0; q < ranks; ++q) {
      run_sync(capstone::prepare_cublas_sgemm(
          {m, s.n_out, s.k_local}, 1.0f, (absolute ? abs_a.data() : a_all.data()) + q * a_size,
          (absolute ? abs_b.data() : b_all.data()) + q * b_size, q == 0 ? 0.0f : 1.0f, out.data()));
    }
    (absolute ? z_bound : z_expected) = z_rows();
  }
}

bool Part2::checked(bool gather_layer, const std::string& what,
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

std::string layer_name(bool gather_layer) {
  return gather_layer ? "all-gather layer" : "reduce-scatter layer";
}

namespace {

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
LayerResult run_layer(course::Harness& harness, Part2& p2, const Plan& plan, bool gather_layer) {
  LayerResult r;
  const LayerShape& s = p2.shape;
  const Layers& layers = p2.layers;
  const std::string layer = layer_name(gather_layer);
  const double flops = gather_layer ? allgather_layer_flops(s) : reduce_scatter_layer_flops(s);
  const Collective coll = gather_layer ? Collective::all_gather : Collective::reduce_scatter;
  const std::size_t per_rank = std::size_t(s.shard_rows) * (gather_layer ? s.k : s.n_out);
  const double bus_bytes =
      collective_bytes(coll, per_rank, plan.ranks) * bus_factor(coll, plan.ranks);
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
  for (int c : plan.chunk_counts) {
    const auto& list = p2.chunks(gather_layer, c);
    r.times[c] = layer_stage_times(harness, p2, gather_layer, c);
    const auto overlapped = [&, gather_layer](cudaStream_t st) {
      gather_layer ? issue_allgather_overlapped(layers, list, p2.ovl, st)
                   : issue_reduce_scatter_overlapped(layers, list, p2.ovl, st);
    };
    const std::string what = layer + ", overlapped, " + course::counted(c, "chunk");
    const bool ok = p2.checked(gather_layer, what, overlapped);
    r.ms[c] = time_ms(harness, overlapped);
    r.bound[c] = model::pipeline_bound(c, r.times[c]);
    harness.record_sweep(layer, params(c, "overlapped"), what, r.ms[c], bus_bytes,
                         ok ? "PASS" : "FAIL");
    harness.record_sweep(layer + " model", params(c, "bound"),
                         "engine bound, " + course::counted(c, "chunk"), r.bound[c], bus_bytes,
                         "-");
    const double coll_ms = gather_layer ? r.times[c].h2d : r.times[c].d2h;
    std::cout << "  " << course::counted(c, "chunk") << ": collective "
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

}  // namespace

LayerResults run_layers(course::Harness& harness, Part2& p2, const Plan& plan) {
  LayerResults results;
  for (const bool gather_layer : {true, false}) {
    results[gather_layer] = run_layer(harness, p2, plan, gather_layer);
  }
  return results;
}

}  // namespace nccl_overlap::driver
