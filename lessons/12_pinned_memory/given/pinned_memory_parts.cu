// Lesson 12: the driver's measurements, parts 3 and 4, and the device side of every copy
// (read-only; pinned_memory_parts.h says what each part does). Rows go to the harness,
// which prints them and writes the sweep CSV. Part 5 is in small_copies.cu.
#include "pinned_memory_parts.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "course/check.h"
#include "course/data.h"
#include "course/stats.h"
#include "course/timing.h"

namespace pinned_memory {

const char* label(Direction d) { return d == Direction::h2d ? "H2D" : "D2H"; }

std::string check_text(const course::Comparison& c, const std::string& what) {
  if (c.ok()) return "PASS";
  std::cerr << "12_pinned_memory " << what << ": " << c.summary() << "\n";
  return "FAIL";
}

course::Comparison compare_host(const std::vector<std::uint32_t>& expected,
                                const std::uint32_t* actual, std::size_t n) {
  return course::compare_exact<std::uint32_t>(
      cuda::std::span<const std::uint32_t>(expected.data(), n),
      cuda::std::span<const std::uint32_t>(actual, n));
}

// ---- The device side and the data ----------------------------------------------------------

CopyBench::CopyBench(std::size_t bytes, std::size_t host_words, std::uint32_t seed,
                     cudaStream_t stream)
    : bytes_(bytes),
      seed_(seed),
      stream_(stream),
      source_(bytes / 4),
      target_(bytes / 4),
      expected_(std::max(bytes / 4, host_words)) {
  course::fill_hash_host(expected_, seed);
  // On the bench's stream, then a wait: a non-blocking stream would not wait for work on
  // the legacy default stream.
  course::fill_hash(source_.span(), seed, stream);
  course::poison(target_.data(), target_.bytes(), stream);
  COURSE_CHECK(cudaStreamSynchronize(stream));
}

void CopyBench::copy(Direction d, const HostBuffer& host, std::size_t n_bytes,
                     cudaStream_t s) const {
  if (d == Direction::h2d) {
    COURSE_CHECK(cudaMemcpyAsync(target_.data(), host.data(), n_bytes, cudaMemcpyHostToDevice, s));
  } else {
    COURSE_CHECK(cudaMemcpyAsync(host.data(), source_.data(), n_bytes, cudaMemcpyDeviceToHost, s));
  }
}

void CopyBench::poison(Direction d, const HostBuffer& host, std::size_t n_bytes) const {
  COURSE_CHECK(cudaStreamSynchronize(stream_));
  if (d == Direction::h2d) {
    course::poison(target_.data(), n_bytes, stream_);
    COURSE_CHECK(cudaStreamSynchronize(stream_));
  } else {
    std::memset(host.data(), course::kPoisonByte, n_bytes);
  }
}

void CopyBench::refill(const HostBuffer& host) const {
  std::memcpy(host.data(), expected_.data(),
              std::min(host.bytes(), expected_.size() * sizeof(std::uint32_t)));
}

course::Comparison CopyBench::check(Direction d, const HostBuffer& host,
                                    std::size_t n_bytes) const {
  const std::size_t n = n_bytes / 4;
  if (d == Direction::h2d) return verify_hash(target_.data(), n, seed_, stream_);
  if (host.kind() == HostMemory::write_combined && host.page_locked()) {
    return verify_hash(host.device_view(), n, seed_, stream_);
  }
  return compare_host(expected_, host.words().data(), n);
}

course::Variant CopyBench::variant(std::string name, Direction d, const HostBuffer& host,
                                   std::size_t n_bytes) const {
  return {std::move(name), static_cast<double>(n_bytes),
          [this, d, &host, n_bytes](cudaStream_t s) { copy(d, host, n_bytes, s); },
          [this, d, &host, n_bytes](cudaStream_t) { poison(d, host, n_bytes); },
          [this, d, &host, n_bytes] { return check(d, host, n_bytes); }};
}

double CopyBench::large_pinned_gbps(Direction d, int warmup, int iters) const {
  course::PinnedBuffer<std::uint32_t> pinned(bytes_ / 4);
  std::memcpy(pinned.data(), expected_.data(), pinned.bytes());
  const course::Timing t = course::time_stream_work(
      [&](cudaStream_t s) {
        if (d == Direction::h2d) {
          COURSE_CHECK(cudaMemcpyAsync(target_.data(), pinned.data(), pinned.bytes(),
                                       cudaMemcpyHostToDevice, s));
        } else {
          COURSE_CHECK(cudaMemcpyAsync(pinned.data(), source_.data(), pinned.bytes(),
                                       cudaMemcpyDeviceToHost, s));
        }
      },
      stream_, warmup, iters);
  return course::gigabytes_per_second(static_cast<double>(pinned.bytes()), t.median_ms);
}

// ---- Part 3: when does cudaMemcpyAsync return? --------------------------------------------

void time_async_calls(course::Harness& harness, const CopyBench& bench, Direction d,
                      const HostBuffer& host, int reps) {
  const std::size_t bytes = bench.bytes();
  const std::string what = std::string(label(d)) + " " + name(host.kind());
  std::vector<double> call_us, done_us;
  int in_flight = 0;
  std::string check = "PASS";
  if (d == Direction::h2d) bench.refill(host);
  for (int rep = 0; rep < reps; ++rep) {
    bench.poison(d, host, bytes);
    const AsyncCallTiming t = d == Direction::h2d
                                  ? time_async_copy(bench.target(), host.data(), bytes,
                                                    cudaMemcpyHostToDevice, bench.stream())
                                  : time_async_copy(host.data(), bench.source(), bytes,
                                                    cudaMemcpyDeviceToHost, bench.stream());
    call_us.push_back(t.call_us);
    done_us.push_back(t.done_us);
    in_flight += t.in_flight_at_return ? 1 : 0;
    if (check_text(bench.check(d, host, bytes), "async " + what) == "FAIL") check = "FAIL";
  }
  const std::string in_flight_text = std::to_string(in_flight) + " of " + std::to_string(reps);
  course::SweepParams params = {{"direction", label(d)},
                                {"memory", name(host.kind())},
                                {"bytes", std::to_string(bytes)},
                                {"in_flight", in_flight_text}};
  params.push_back({"until", "call returned"});
  // The call moves nothing by itself: its row has no rate.
  harness.record_sweep("async", params,
                       what + ": call returned (copy in flight " + in_flight_text + ")",
                       course::median(call_us) / 1e3, 0, check);
  params.back().second = "copy complete";
  harness.record_sweep("async", params, what + ": copy complete", course::median(done_us) / 1e3,
                       static_cast<double>(bytes), check);
}

// ---- Part 4: what the CPU sees ------------------------------------------------------------

void time_host_access(course::Harness& harness, const HostBuffer& host, std::size_t bytes,
                      int reps) {
  const HostAccess access = measure_host_access(host, bytes, reps);
  const std::pair<const char*, double> rates[] = {{"write", access.write_gbps},
                                                  {"read", access.read_gbps}};
  for (const auto& [what, gbps] : rates) {
    harness.record_sweep(
        "host access",
        {{"memory", name(host.kind())}, {"access", what}, {"bytes", std::to_string(bytes)}},
        std::string("CPU ") + what + "s " + name(host.kind()) + " memory",
        gbps > 0 ? static_cast<double>(bytes) / (gbps * 1e6) : 0, static_cast<double>(bytes), "-");
  }
}

}  // namespace pinned_memory
