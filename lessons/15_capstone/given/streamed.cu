// Lesson 15, Part 2: the streamed GEMM's read-only parts: the job's checks, the chunks, the
// prepared sequential and streamed runs (their per-chunk work is issue_chunk(), the
// exercise in capstone.cu), the stage times that feed lesson 14's engine-queue model, the
// timeline CSV, and the driver's Part 2 through the harness. Compiled once, linked into the
// starter's and the solution's executables and tests.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "capstone.cuh"
#include "course/buffers.h"
#include "course/check.h"
#include "course/data.h"
#include "course/flags.h"
#include "course/table.h"
#include "course/timing.h"
#include "streamed.cuh"

namespace capstone {
namespace {

namespace ot = overlap_transfers;
namespace model = overlap_transfers::model;
using ot::Stage;

const char* const kWhere = "capstone::streamed";

// The most floats of A or C a run may move (Part 2's defaults and kMaxDimension: streamed.cuh).
constexpr std::uint64_t kMaxFloats = 1ull << 30;
constexpr std::uint32_t kSeed = 1500;
// The two targets.
constexpr double kMinSpeedup = 1.80;
constexpr double kMinOfBound = 0.90;

/// [p, p + count floats) as addresses, for the overlap checks.
struct Span {
  std::uintptr_t begin;
  std::uintptr_t end;
};
Span span_of(const float* p, std::size_t count) {
  const auto begin = reinterpret_cast<std::uintptr_t>(p);
  return {begin, begin + count * sizeof(float)};
}
bool overlap(Span a, Span b) { return a.begin < b.end && b.begin < a.end; }

cudaMemoryType memory_type(const void* p) {
  cudaPointerAttributes attributes{};
  COURSE_CHECK(cudaPointerGetAttributes(&attributes, p));
  return attributes.type;
}

/// What only the runtime can tell: copies from pageable memory are staged through a driver
/// buffer and overlap nothing, which would turn the streamed version into a sequential one.
void check_memory(const StreamedJob& job) {
  for (const auto& [p, what] :
       {std::pair<const void*, const char*>{job.host_a, "host_a"}, {job.host_c, "host_c"}}) {
    course::require(memory_type(p) == cudaMemoryTypeHost, kWhere,
                    std::string(what) +
                        " is not pinned host memory (cudaMallocHost or cudaHostRegister): "
                        "copies from pageable memory cannot overlap kernels");
  }
  for (const auto& [p, what] : {std::pair<const void*, const char*>{job.device_w, "device_w"},
                                {job.device_a, "device_a"},
                                {job.device_c, "device_c"}}) {
    const cudaMemoryType type = memory_type(p);
    course::require(type == cudaMemoryTypeDevice || type == cudaMemoryTypeManaged, kWhere,
                    std::string(what) + " is not device memory");
  }
}

void check_chunks(const StreamedJob& job, int chunks) {
  course::require(chunks >= 1 && chunks <= job.rows, kWhere,
                  "chunks must be in [1, rows = " + std::to_string(job.rows) + "], got " +
                      std::to_string(chunks));
}

/// Every chunk with its GEMM prepared: rows r of device_c = rows r of device_a x device_w.
std::shared_ptr<const std::vector<StreamedChunk>> prepare_chunks(const StreamedJob& job,
                                                                 int chunks) {
  auto list = std::make_shared<std::vector<StreamedChunk>>();
  for (int c = 0; c < chunks; ++c) {
    const RowRange r = chunk_rows(job.rows, chunks, c);
    const auto first = static_cast<std::size_t>(r.first);
    list->push_back(
        {c, r,
         prepare_sgemm(job.config, {r.count, job.n, job.k}, 1.0f, job.device_a + first * job.k,
                       job.device_w, 0.0f, job.device_c + first * job.n)});
  }
  return list;
}

/// The measurements' own copy of the rows `rows` of one direction of the job (the stage
/// times and the two-way rate below): the job's A into its device staging for Stage::h2d,
/// its C back out of the staging for Stage::d2h.
void copy_job_rows(Stage direction, const StreamedJob& job, RowRange rows, cudaStream_t stream) {
  const bool into_device = direction == Stage::h2d;
  float* const dst = into_device ? job.device_a : job.host_c;
  const float* const src = into_device ? job.host_a : job.device_c;
  copy_rows(dst, src, rows, into_device ? job.k : job.n,
            into_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, stream);
}

}  // namespace

// ---- The job -----------------------------------------------------------------------------------

RowRange chunk_rows(int rows, int chunks, int index) {
  course::require(chunks >= 1 && chunks <= rows, kWhere,
                  "cannot cut " + std::to_string(rows) + " rows into " + std::to_string(chunks) +
                      " chunks of at least one row");
  const ot::Chunk c = ot::chunk_of(static_cast<std::size_t>(rows), chunks, index);
  return {static_cast<int>(c.first), static_cast<int>(c.count)};
}

void check_job(const StreamedJob& job) {
  course::require(job.rows >= 1 && job.k >= 1 && job.n >= 1, kWhere,
                  "rows, k and n must be >= 1, got " + std::to_string(job.rows) + ", " +
                      std::to_string(job.k) + ", " + std::to_string(job.n));
  course::require(job.host_a != nullptr && job.host_c != nullptr && job.device_w != nullptr &&
                      job.device_a != nullptr && job.device_c != nullptr,
                  kWhere, "host_a, host_c, device_w, device_a and device_c must all be set");
  const auto rows = static_cast<std::size_t>(job.rows);
  const Span host_a = span_of(job.host_a, rows * job.k), host_c = span_of(job.host_c, rows * job.n);
  const Span w = span_of(job.device_w, static_cast<std::size_t>(job.k) * job.n);
  const Span device_a = span_of(job.device_a, rows * job.k);
  const Span device_c = span_of(job.device_c, rows * job.n);
  course::require(!overlap(host_a, host_c), kWhere, "host_a and host_c overlap");
  course::require(!overlap(device_a, device_c) && !overlap(device_a, w) && !overlap(device_c, w),
                  kWhere, "device_a, device_c and device_w must not overlap");
}

// ---- One chunk's helpers
// -------------------------------------------------------------------------

void copy_rows(float* dst, const float* src, RowRange range, int row_floats, cudaMemcpyKind kind,
               cudaStream_t stream) {
  course::require(range.first >= 0 && range.count >= 0 && row_floats >= 0, kWhere,
                  "copy_rows: negative rows or row length");
  if (range.count == 0 || row_floats == 0) return;
  course::require(dst != nullptr && src != nullptr, kWhere, "copy_rows: a null matrix");
  const std::size_t offset = static_cast<std::size_t>(range.first) * row_floats;
  const std::size_t bytes = static_cast<std::size_t>(range.count) * row_floats * sizeof(float);
  COURSE_CHECK(cudaMemcpyAsync(dst + offset, src + offset, bytes, kind, stream));
}

// ---- Prepared runs
// -------------------------------------------------------------------------------

course::Launch prepare_sequential(const StreamedJob& job, ot::Timeline* timeline) {
  check_job(job);
  check_memory(job);
  const auto whole = prepare_chunks(job, 1);
  return [job, whole, timeline](cudaStream_t origin) {
    if (timeline != nullptr) timeline->start(origin);
    issue_chunk(job, whole->front(), origin, timeline);
  };
}

course::Launch prepare_streamed(const StreamedJob& job, int chunks, const ot::StreamSet& streams,
                                ot::Timeline* timeline) {
  check_job(job);
  check_chunks(job, chunks);
  course::require(chunks <= streams.size(), kWhere,
                  std::to_string(chunks) + " chunks need as many streams, got " +
                      std::to_string(streams.size()));
  check_memory(job);
  const auto list = prepare_chunks(job, chunks);
  const ot::StreamSet* set = &streams;
  return [job, list, set, timeline, chunks](cudaStream_t origin) {
    if (timeline != nullptr) timeline->start(origin);
    set->fork_from(origin, chunks);
    for (const StreamedChunk& chunk : *list) issue_chunk(job, chunk, (*set)[chunk.index], timeline);
    set->join_into(origin, chunks);
  };
}

course::Launch prepare_stage(Stage stage, const StreamedJob& job, int chunks) {
  check_job(job);
  check_chunks(job, chunks);
  check_memory(job);
  const auto list = prepare_chunks(job, chunks);
  return [stage, job, list](cudaStream_t stream) {
    for (const StreamedChunk& chunk : *list) {
      if (stage == Stage::kernel) {
        chunk.gemm(stream);
      } else {
        copy_job_rows(stage, job, chunk.rows, stream);
      }
    }
  };
}

course::Launch prepare_both_ways(const StreamedJob& job, const ot::StreamSet& streams) {
  check_job(job);
  course::require(streams.size() >= 2, kWhere, "both ways at once needs 2 streams");
  check_memory(job);
  const ot::StreamSet* set = &streams;
  const RowRange all{0, job.rows};
  return [job, set, all](cudaStream_t origin) {
    set->fork_from(origin, 2);
    copy_job_rows(Stage::h2d, job, all, (*set)[0]);
    copy_job_rows(Stage::d2h, job, all, (*set)[1]);
    set->join_into(origin, 2);
  };
}

double shared_link_bound(int chunks, model::StageTimes chunk, double both_ways) {
  course::require(chunks >= 1, kWhere, "shared_link_bound: chunks must be >= 1");
  course::require(chunk.h2d >= 0 && chunk.kernel >= 0 && chunk.d2h >= 0 && both_ways >= 0, kWhere,
                  "shared_link_bound: times must be >= 0");
  const double steady = std::max({chunk.h2d, chunk.kernel, chunk.d2h, both_ways});
  return chunk.h2d + chunk.kernel + chunk.d2h + (chunks - 1) * steady;
}

course::Comparison compare_bitwise(cuda::std::span<const float> expected,
                                   cuda::std::span<const float> actual) {
  course::require(expected.size() == actual.size(), kWhere,
                  "compare_bitwise: expected has " + std::to_string(expected.size()) +
                      " elements, actual " + std::to_string(actual.size()));
  course::Comparison result;
  result.checked = expected.size();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    std::uint32_t e = 0, a = 0;
    std::memcpy(&e, &expected[i], sizeof e);
    std::memcpy(&a, &actual[i], sizeof a);
    if (e == a) continue;
    if (result.first.size() < course::kReportedMismatches) {
      std::ostringstream want, got;
      want << std::setprecision(9) << expected[i];
      got << std::setprecision(9) << actual[i];
      result.first.push_back({i, want.str(), got.str()});
    }
    ++result.mismatches;
  }
  return result;
}

// ---- The driver's part
// ---------------------------------------------------------------------------

StreamedSettings streamed_settings(int rows, int width, const std::string& chunk_list, bool quick) {
  if (rows < 0 || width < 0) throw course::UsageError("--rows and --width must be positive");
  StreamedSettings s;
  s.rows = rows > 0 ? rows : (quick ? kQuickRows : kDefaultRows);
  s.k = width > 0 ? width : (quick ? kQuickK : kDefaultWidth);
  s.n = width > 0 ? width : (quick ? kQuickN : kDefaultWidth);
  if (s.rows > kMaxDimension || s.n > kMaxDimension) {
    throw course::UsageError("--rows and --width must be at most " + std::to_string(kMaxDimension));
  }
  if (static_cast<std::uint64_t>(s.rows) * static_cast<std::uint64_t>(std::max(s.k, s.n)) >
      kMaxFloats) {
    throw course::UsageError("--rows x --width must be at most 2^30 floats (4 GiB each way)");
  }
  const std::string text =
      !chunk_list.empty() ? chunk_list : (quick ? kQuickChunks : kDefaultChunks);
  s.chunk_counts = course::parse_int_list("chunks", text, 1, std::min(s.rows, kMaxChunks));
  return s;
}

namespace {

std::string check_text(bool ok) { return ok ? "PASS" : "FAIL"; }

/// The sweep's chunk counts plus 1: the whole job's stage times are always printed.
std::vector<int> with_whole_job(std::vector<int> counts) {
  counts.push_back(1);
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}

void print_part2_intro(const StreamedSettings& s, Config config, const model::Gpu& this_gpu) {
  const std::size_t a_count = static_cast<std::size_t>(s.rows) * s.k;
  const std::size_t c_count = static_cast<std::size_t>(s.rows) * s.n;
  const auto mib = [](std::size_t floats) {
    return course::fixed(static_cast<double>(floats) * sizeof(float) / (1 << 20), 1);
  };
  std::cout << "\nPart 2: the streamed GEMM, C (" << s.rows << " x " << s.n << ") = A (" << s.rows
            << " x " << s.k << ") W (" << s.k << " x " << s.n << ") by " << name(config.rung)
            << ". A and C in pinned host memory (" << mib(a_count) << " MiB in, " << mib(c_count)
            << " MiB out), W stays on the device.\n  sequential: A in, one GEMM, C out, on one "
               "stream. streamed: the rows in chunks, one stream each, issued chunk by chunk.\n"
               "  TFLOP/s counts the GEMM's flops over the whole run, copies included. Copy "
               "engines "
            << this_gpu.copy_engines << ", hardware queues " << this_gpu.connections << ".\n";
}

/// Part 2's job and what its steps share: A and C in pinned host memory, W and the staging of
/// A and C on the device, cuBLAS's C with its error bound, the launches (all prepared, checks
/// and GEMM attributes included, before any timing), and the stage times of this run.
struct StreamedPart {
  StreamedPart(course::Harness& h, const StreamedSettings& s, Config config)
      : harness(h),
        settings(s),
        rows(s.rows),
        k(s.k),
        n(s.n),
        a_count(static_cast<std::size_t>(rows) * k),
        c_count(static_cast<std::size_t>(rows) * n),
        host_a(a_count),
        host_c(c_count),
        w(static_cast<std::size_t>(k) * n),
        device_a(a_count),
        device_c(c_count),
        job{host_a.data(), host_c.data(), w.data(), device_a.data(), device_c.data(), rows, k, n,
            config},
        flops(job_flops(job)),
        stage_counts(with_whole_job(s.chunk_counts)),
        streams(std::max(2, s.chunk_counts.back())) {  // >= 2: both ways
    // The job: A hash-filled (through the device), W resident.
    fill_uniform(device_a.span(), kSeed, stream());
    fill_uniform(w.span(), kSeed + 1, stream());
    COURSE_CHECK(cudaMemcpyAsync(host_a.data(), device_a.data(), device_a.bytes(),
                                 cudaMemcpyDeviceToHost, stream()));
    COURSE_CHECK(cudaStreamSynchronize(stream()));
    compute_cublas_reference();
    sequential = prepare_sequential(job);
    for (int c : s.chunk_counts) streamed[c] = prepare_streamed(job, c, streams);
    for (int c : stage_counts) {
      for (Stage st : {Stage::h2d, Stage::kernel, Stage::d2h}) {
        stage_launches[c].push_back(prepare_stage(st, job, c));
      }
    }
  }

  /// The check of the sequential version: cuBLAS on the whole problem, within the bound
  /// |A| |W| (cuBLAS on absolute values; device_a is staging, every checked run refills it).
  void compute_cublas_reference() {
    const GemmShape whole{rows, n, k};
    course::DeviceBuffer<float> out(c_count), abs_w(w.size());
    prepare_cublas_sgemm(whole, 1.0f, device_a.data(), w.data(), 0.0f, out.data())(stream());
    COURSE_CHECK(cudaStreamSynchronize(stream()));
    expected = course::to_host(out.cspan());
    absolute_values(device_a.cspan(), device_a.span(), stream());
    absolute_values(w.cspan(), abs_w.span(), stream());
    prepare_cublas_sgemm(whole, 1.0f, device_a.data(), abs_w.data(), 0.0f, out.data())(stream());
    COURSE_CHECK(cudaStreamSynchronize(stream()));
    bound = course::to_host(out.cspan());
  }

  cudaStream_t stream() const { return harness.stream(); }
  double time_ms(const course::Launch& launch) const {
    return course::time_stream_work(launch, stream(), harness.warmup(), harness.iters()).median_ms;
  }
  cuda::std::span<const float> result() const { return {host_c.data(), c_count}; }

  /// One checked run. Poisons both ends and the staging of A first: a missing, misplaced or
  /// misordered operation leaves poison in C or computes from it.
  bool checked_run(const std::string& what, const course::Launch& launch,
                   const std::function<course::Comparison()>& compare) {
    COURSE_CHECK(cudaStreamSynchronize(stream()));
    std::memset(host_c.data(), course::kPoisonByte, host_c.bytes());
    course::poison(device_a.data(), device_a.bytes(), stream());
    course::poison(device_c.data(), device_c.bytes(), stream());
    launch(stream());
    COURSE_CHECK(cudaStreamSynchronize(stream()));
    if (const auto timeouts = take_wait_timeouts(); timeouts != 0) {  // rung 5's mbarriers
      std::cerr << "15_capstone " << what << ": " << timeouts << " mbarrier waits gave up\n";
      return false;
    }
    const course::Comparison c = compare();
    if (!c.ok()) std::cerr << "15_capstone " << what << ": " << c.summary() << "\n";
    return c.ok();
  }
  course::Comparison against_cublas() const { return compare_gemm(expected, bound, result(), k); }
  /// The streamed C must be the sequential C bit for bit; while the sequential one is wrong,
  /// it is held to cuBLAS's bound instead.
  course::Comparison against_sequential() const {
    return sequential_ok ? compare_bitwise(sequential_c, result()) : against_cublas();
  }

  /// A sweep row's parameters: the shape, the chunks, the order and one chunk's stage times
  /// (the model's input rides along in the sweep CSV).
  course::SweepParams params(int c, const char* order) {
    const model::StageTimes& t = times[c];
    return course::SweepParams{{"rows", std::to_string(rows)},
                               {"k", std::to_string(k)},
                               {"n", std::to_string(n)},
                               {"chunks", std::to_string(c)},
                               {"order", order},
                               {"h2d_ms", course::fixed(t.h2d, 6)},
                               {"kernel_ms", course::fixed(t.kernel, 6)},
                               {"d2h_ms", course::fixed(t.d2h, 6)}};
  }

  course::Harness& harness;
  const StreamedSettings& settings;
  const int rows, k, n;
  const std::size_t a_count, c_count;
  course::PinnedBuffer<float> host_a, host_c;
  course::DeviceBuffer<float> w, device_a, device_c;
  const StreamedJob job;
  const double flops;
  std::vector<float> expected, bound;  ///< cuBLAS's C and its per-element error bound
  const std::vector<int> stage_counts;
  const ot::StreamSet streams;
  course::Launch sequential;
  std::map<int, course::Launch> streamed;
  std::map<int, std::vector<course::Launch>> stage_launches;
  std::map<int, model::StageTimes> times;  ///< one chunk's stage times, per chunk count
  double both_ways_ms = 0;
  bool sequential_ok = false;
  std::vector<float> sequential_c;  ///< the sequential version's C, once it passed
};

/// One chunk's operation inside a running pipeline (the stage's chunks back to back, / c) at
/// every chunk count, both copy directions at once, and the line about the whole job's.
void measure_stage_times(StreamedPart& p) {
  for (int c : p.stage_counts) {
    const std::vector<course::Launch>& l = p.stage_launches[c];
    p.times[c] = {p.time_ms(l[0]) / c, p.time_ms(l[1]) / c, p.time_ms(l[2]) / c};
  }
  const model::StageTimes& whole = p.times[1];
  // Both copy directions at once: the two-way rate the chunks of a pipeline share.
  p.both_ways_ms = p.time_ms(prepare_both_ways(p.job, p.streams));
  const double a_bytes = p.a_count * 4.0, c_bytes = p.c_count * 4.0;
  std::cout << "  whole job, each operation alone: H2D " << course::fixed(whole.h2d, 4) << " ms ("
            << course::fixed(course::gigabytes_per_second(a_bytes, whole.h2d), 1) << " GB/s), GEMM "
            << course::fixed(whole.kernel, 4) << " ms ("
            << course::fixed(p.flops / (whole.kernel * 1e9), 1) << " TFLOP/s), D2H "
            << course::fixed(whole.d2h, 4) << " ms ("
            << course::fixed(course::gigabytes_per_second(c_bytes, whole.d2h), 1)
            << " GB/s); both copies at once " << course::fixed(p.both_ways_ms, 4) << " ms ("
            << course::fixed(
                   course::gigabytes_per_second((p.a_count + p.c_count) * 4.0, p.both_ways_ms), 1)
            << " GB/s together, against "
            << course::fixed(course::gigabytes_per_second(a_bytes, whole.h2d) +
                                 course::gigabytes_per_second(c_bytes, whole.d2h),
                             1)
            << " GB/s if each kept its own rate)\n";
}

/// What the measured sweep found: the sequential time, the shared-link bound of every chunk
/// count, and the fastest streamed run of 2 or more chunks that passed its check.
struct SweepOutcome {
  double sequential_ms = 0;
  std::map<int, double> bound_of;
  double best_ms = std::numeric_limits<double>::infinity();
  int best = 0;
};

/// Measured (sweep "streamed"): sequential, then every chunk count, each checked and timed;
/// beside them (sweep "streamed model") the engine-queue model and its bound.
SweepOutcome run_sweep(StreamedPart& p, const model::Gpu& this_gpu) {
  course::Harness& harness = p.harness;
  SweepOutcome r;
  p.sequential_ok = p.checked_run("sequential", p.sequential, [&] {
    const course::Comparison c = p.against_cublas();
    const cuda::std::span<const float> result = p.result();
    p.sequential_c.assign(result.begin(), result.end());
    return c;
  });
  const auto against_sequential = [&] { return p.against_sequential(); };
  r.sequential_ms = p.time_ms(p.sequential);
  harness.record_sweep("streamed", p.params(1, "sequential"), "sequential (one stream)",
                       r.sequential_ms, p.flops, check_text(p.sequential_ok));
  harness.record_sweep("streamed model", p.params(1, "sequential"), "model, sequential",
                       model::predict(this_gpu, ot::Order::sequential, 1, p.times[1]), p.flops,
                       "-");
  for (int c : p.settings.chunk_counts) {
    const std::string what = "streamed, " + course::counted(c, "chunk");
    const bool ok = p.checked_run(what, p.streamed[c], against_sequential);
    const double ms = p.time_ms(p.streamed[c]);
    harness.record_sweep("streamed", p.params(c, "streamed"), what, ms, p.flops, check_text(ok));
    r.bound_of[c] = shared_link_bound(c, p.times[c], p.both_ways_ms / c);
    harness.record_sweep(
        "streamed model", p.params(c, "streamed"), "model, " + course::counted(c, "chunk"),
        model::predict(this_gpu, ot::Order::per_chunk, c, p.times[c]), p.flops, "-");
    harness.record_sweep("streamed model", p.params(c, "bound"),
                         "bound (any order, shared link), " + course::counted(c, "chunk"),
                         r.bound_of[c], p.flops, "-");
    if (ok && c >= 2 && ms < r.best_ms) {
      r.best_ms = ms;
      r.best = c;
    }
  }
  return r;
}

/// The timeline (sweep "streamed timeline"): events around every operation of one
/// sequential and one streamed run, beside the model's schedule; FILE_timeline.csv with --csv.
void run_timeline(StreamedPart& p, const model::Gpu& this_gpu, const std::string& gpu_name,
                  int timeline_chunks, const std::string& csv) {
  std::vector<ot::TimelineRun> runs;
  for (const bool chunked : {false, true}) {
    ot::Timeline timeline;
    const std::string order = chunked ? "streamed" : "sequential";
    const std::string what = chunked ? "streamed, " + course::counted(timeline_chunks, "chunk")
                                     : std::string("sequential");
    const auto compare = [&p, chunked] {
      return chunked ? p.against_sequential() : p.against_cublas();
    };
    const bool ok =
        p.checked_run(what + " (timeline)",
                      chunked ? prepare_streamed(p.job, timeline_chunks, p.streams, &timeline)
                              : prepare_sequential(p.job, &timeline),
                      compare);
    runs.push_back(
        {order, timeline.read(),
         model::simulate(model::issue_order(chunked ? ot::Order::per_chunk : ot::Order::sequential,
                                            timeline_chunks, p.times[timeline_chunks]),
                         this_gpu)});
    p.harness.record_sweep("streamed timeline", p.params(timeline_chunks, order.c_str()),
                           what + ", events around every operation",
                           ot::last_end_ms(runs.back().measured), p.flops, check_text(ok));
  }
  if (!csv.empty()) {
    const std::string path = ot::timeline_csv_path(csv);
    ot::write_timeline_csv(path, "15_capstone", gpu_name, timeline_chunks, runs);
    std::cout << "  wrote " << path << " (tools/plot_timeline.py)\n";
  }
}

/// The targets: the best streamed run against sequential and against the engine bound.
void add_streamed_targets(course::Harness& harness, const SweepOutcome& r, bool sequential_ok) {
  if (r.best == 0 || !sequential_ok) {
    std::cout << "  (no streamed target: the sequential run and a streamed run of 2 or more "
                 "chunks must pass their checks first)\n";
    return;
  }
  const double speedup = r.sequential_ms / r.best_ms;
  const double of_bound = r.bound_of.at(r.best) / r.best_ms;
  const std::string who = "streamed (" + course::counted(r.best, "chunk") + ")";
  harness.judged_target(who + " >= " + course::fixed(kMinSpeedup, 2) +
                            " x sequential (sequential time / streamed time)",
                        speedup >= kMinSpeedup, speedup);
  harness.judged_target(who + " >= " + course::fixed(kMinOfBound, 2) +
                            " x the engine bound, both copies sharing the link (bound time / "
                            "streamed time)",
                        of_bound >= kMinOfBound, of_bound);
}

}  // namespace

void run_streamed(course::Harness& harness, const course::DeviceSummary& gpu,
                  const StreamedSettings& settings, Config config, const std::string& csv) {
  const model::Gpu this_gpu = ot::model_of_device(gpu.ordinal, gpu.name);
  print_part2_intro(settings, config, this_gpu);
  StreamedPart p(harness, settings, config);
  measure_stage_times(p);
  const SweepOutcome sweep = run_sweep(p, this_gpu);
  const int timeline_chunks = sweep.best > 0 ? sweep.best : settings.chunk_counts.back();
  run_timeline(p, this_gpu, gpu.name, timeline_chunks, csv);
  model::print_predictions(
      std::cout, {model::tesla_c1060(), model::tesla_c2050(), model::tesla_k20(), this_gpu},
      timeline_chunks, p.times[timeline_chunks]);
  add_streamed_targets(harness, sweep, p.sequential_ok);
}

}  // namespace capstone
