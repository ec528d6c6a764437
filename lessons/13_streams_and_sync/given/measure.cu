// Lesson 13, read-only: two operations in two streams, timed on the GPU's own clock.
//
// Each spin kernel writes when it started and stopped (on %globaltimer) into a record with a
// token of its own launch, so a run knows that each kernel ran, ran for its full time, and
// when. A copy is framed by two zero-length spins in its stream. pair_timing() turns two
// intervals into t1, t2, t_pair and the overlap; measure() takes medians over runs.
#include "measure.h"

#include <cuda_runtime.h>

#include <chrono>

#include "course/check.h"
#include "course/data.h"
#include "course/stats.h"

namespace streams_and_sync {
namespace {

double host_ms(const std::function<void()>& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

Interval interval(const SpinRecord& r) { return {r.start_ns, r.end_ns}; }

std::string first_of(const std::vector<std::string>& problems) {
  for (const std::string& p : problems) {
    if (!p.empty()) return p;
  }
  return "";
}

}  // namespace

PairBench::PairBench(std::uint64_t spin_ns, std::size_t copy_bytes)
    : spin_ns_(spin_ns),
      records_(kRecords),
      copy_src_(copy_bytes / sizeof(std::uint32_t)),
      copy_dst_(copy_bytes / sizeof(std::uint32_t)) {
  // Every byte the GPU or a copy reads is initialised first (compute-sanitizer initcheck).
  COURSE_CHECK(cudaMemset(records_.data(), 0, records_.bytes()));
  course::fill_hash_host(copy_src_.span(), /*seed=*/13);
  if (copy_dst_.size() > 0) course::poison(copy_dst_.data(), copy_dst_.bytes(), cudaStreamLegacy);
  COURSE_CHECK(cudaDeviceSynchronize());
}

Sample PairBench::kernel_pair(cudaStream_t first, cudaStream_t second,
                              const std::function<void()>& between) {
  COURSE_CHECK(cudaDeviceSynchronize());
  const std::uint32_t a = next_token();
  const std::uint32_t b = next_token();
  marker_token_ = 0;
  launch_spin(record(0), spin_ns_, a, first);
  Sample sample;
  if (between) sample.between_ms = host_ms(between);
  launch_spin(record(1), spin_ns_, b, second);
  COURSE_CHECK(cudaDeviceSynchronize());  // the times are read only after both ended

  const std::vector<SpinRecord> r = read_records();
  sample.problem = first_of({check(r[0], a, spin_ns_), check(r[1], b, spin_ns_),
                             marker_token_ ? check(r[2], marker_token_, 0) : ""});
  if (sample.problem.empty()) sample.timing = pair_timing(interval(r[0]), interval(r[1]));
  return sample;
}

void PairBench::launch_legacy_marker() {
  marker_token_ = next_token();
  launch_spin(record(2), 0, marker_token_, cudaStreamLegacy);
}

Sample PairBench::copy_and_kernel(cudaStream_t first, cudaStream_t second, bool check_values) {
  if (check_values) course::poison(copy_dst_.data(), copy_dst_.bytes(), cudaStreamLegacy);
  COURSE_CHECK(cudaDeviceSynchronize());
  const std::uint32_t before = next_token();
  const std::uint32_t after = next_token();
  const std::uint32_t b = next_token();
  launch_spin(record(2), 0, before, first);
  COURSE_CHECK(cudaMemcpyAsync(copy_dst_.data(), copy_src_.data(), copy_src_.bytes(),
                               cudaMemcpyHostToDevice, first));
  launch_spin(record(3), 0, after, first);
  launch_spin(record(1), spin_ns_, b, second);
  COURSE_CHECK(cudaDeviceSynchronize());

  const std::vector<SpinRecord> r = read_records();
  Sample sample;
  sample.problem =
      first_of({check(r[2], before, 0), check(r[3], after, 0), check(r[1], b, spin_ns_)});
  // The copy ran between the end of the first stamp and the start of the second.
  const Interval copy{r[2].end_ns, r[3].start_ns};
  if (sample.problem.empty() && !(copy.end_ns > copy.start_ns)) {
    sample.problem = "the copy's interval is empty: the two stamps did not frame it";
  }
  if (sample.problem.empty()) sample.timing = pair_timing(copy, interval(r[1]));
  if (check_values && sample.problem.empty()) {
    const auto c =
        course::compare_exact<std::uint32_t>(copy_src_.span(), course::to_host(copy_dst_.cspan()));
    if (!c.ok()) sample.problem = "host->device copy: " + c.summary();
  }
  return sample;
}

std::vector<SpinRecord> PairBench::read_records() const {
  std::vector<SpinRecord> host(kRecords);
  COURSE_CHECK(cudaMemcpy(host.data(), records_.data(), records_.bytes(), cudaMemcpyDeviceToHost));
  return host;
}

std::string PairBench::check(const SpinRecord& r, std::uint32_t token, std::uint64_t min_ns) {
  if (r.token != token) {
    return "a spin record holds token " + std::to_string(r.token) + ", expected " +
           std::to_string(token) + ": the launch did not run or wrote elsewhere";
  }
  if (r.stopped_by != kStoppedByTime) {
    return "a spin stopped at its iteration cap before its time was up";
  }
  if (r.end_ns < r.start_ns || r.end_ns - r.start_ns < min_ns) {
    return "a spin ran for less than the time it was given";
  }
  return "";
}

Measured measure(int warmup, int iters, const std::function<Sample(bool check_values)>& once) {
  std::vector<double> t1, t2, pair, overlap, between;
  Measured m;
  for (int i = 0; i < warmup + iters; ++i) {
    const Sample s = once(i == 0);
    if (!s.problem.empty()) {
      if (m.problem.empty()) m.problem = s.problem;
      continue;
    }
    if (i < warmup) continue;
    t1.push_back(s.timing.t1_ms);
    t2.push_back(s.timing.t2_ms);
    pair.push_back(s.timing.pair_ms);
    overlap.push_back(s.timing.overlap);
    between.push_back(s.between_ms);
  }
  if (!overlap.empty()) {
    m.timing = {course::median(t1), course::median(t2), course::median(pair),
                course::median(overlap)};
    m.between_ms = course::median(between);
  } else if (m.problem.empty()) {
    m.problem = "no timed run";
  }
  return m;
}

std::string judge(const Measured& m, std::optional<bool> must_serialise) {
  if (!m.problem.empty()) return "FAIL";
  const Concurrency c = classify(m.timing.overlap);
  if (!must_serialise) return "-";
  if (*must_serialise) {
    return c == Concurrency::serialised ? "PASS" : c == Concurrency::concurrent ? "FAIL" : "NOTE";
  }
  return c == Concurrency::concurrent ? "PASS" : "NOTE";
}

}  // namespace streams_and_sync
