// Lesson 16, the two GPUs' buffers and the size sweep of the driver (read-only;
// peer_to_peer_parts.h says what each does).
#include <exception>
#include <iostream>
#include <utility>

#include "course/check.h"
#include "course/data.h"
#include "course/flags.h"
#include "course/timing.h"
#include "peer_to_peer.cuh"
#include "peer_to_peer_parts.h"

namespace peer_to_peer::parts {
namespace {

constexpr std::uint64_t kSweepSmallest = 4096;
constexpr std::uint64_t kFitLargest = 16ull << 20;  // the fit uses the sizes up to 16 MiB
constexpr std::uint32_t kSeedA = 16, kSeedB = 61;

/// A device buffer of `words` words in the memory of `device`.
course::DeviceBuffer<std::uint32_t> buffer_on(int device, std::size_t words) {
  COURSE_CHECK(cudaSetDevice(device));
  return course::DeviceBuffer<std::uint32_t>(words);
}

}  // namespace

void poison_on(int device, void* data, std::size_t bytes) {
  const CurrentDeviceGuard keep_device;
  COURSE_CHECK(cudaSetDevice(device));
  course::poison(data, bytes, 0);
  COURSE_CHECK(cudaDeviceSynchronize());
}

course::Comparison compare_prefix(const std::vector<std::uint32_t>& expected,
                                  const std::uint32_t* device_data, std::size_t bytes) {
  const std::size_t words = bytes / 4;
  const auto got = course::to_host(cuda::std::span<const std::uint32_t>(device_data, words));
  return course::compare_exact(cuda::std::span<const std::uint32_t>(expected.data(), words),
                               cuda::std::span<const std::uint32_t>(got.data(), words));
}

PeerBuffers::PeerBuffers(int gpu_a, int gpu_b, std::uint64_t table_bytes,
                         std::uint64_t sweep_largest)
    : a(gpu_a),
      b(gpu_b),
      bytes(table_bytes),
      largest(sweep_largest),
      words(largest / 4),
      src_a(buffer_on(a, words)),
      dst_a(buffer_on(a, words)),
      src_b(buffer_on(b, words)),
      dst_b(buffer_on(b, words)),
      expected_a(words),
      expected_b(words) {
  COURSE_CHECK(cudaSetDevice(a));
  course::fill_hash_host({expected_a.data(), words}, kSeedA);
  course::fill_hash_host({expected_b.data(), words}, kSeedB);
  COURSE_CHECK(cudaMemcpy(src_a.data(), expected_a.data(), largest, cudaMemcpyHostToDevice));
  COURSE_CHECK(cudaMemcpy(src_b.data(), expected_b.data(), largest, cudaMemcpyHostToDevice));
}

void PeerBuffers::engine_b_to_a(cudaStream_t st, std::uint64_t n) const {
  COURSE_CHECK(cudaMemcpyPeerAsync(dst_a.data(), a, src_b.data(), b, n, st));
}

course::Variant PeerBuffers::into_a(const std::string& name, course::Launch run) {
  return {name, static_cast<double>(bytes), std::move(run),
          [this](cudaStream_t st) { course::poison(dst_a.data(), bytes, st); },
          [this] { return compare_prefix(expected_b, dst_a.data(), bytes); }};
}

course::Variant PeerBuffers::into_b(const std::string& name, course::Launch run) {
  return {name, static_cast<double>(bytes), std::move(run),
          [this](cudaStream_t) { poison_on(b, dst_b.data(), bytes); },
          [this] { return compare_prefix(expected_a, dst_b.data(), bytes); }};
}

void run_size_sweep(course::Harness& harness, PeerBuffers& p, int warmup, int iters) {
  const cudaStream_t s = harness.stream();
  std::vector<double> sizes, us;
  for (std::uint64_t n = kSweepSmallest; n <= p.largest; n *= 2) {
    const auto copy = [&, n](cudaStream_t st) { p.engine_b_to_a(st, n); };
    course::poison(p.dst_a.data(), n, s);
    copy(s);
    COURSE_CHECK(cudaStreamSynchronize(s));
    const bool ok = compare_prefix(p.expected_b, p.dst_a.data(), n).ok();
    const double ms = course::time_stream_work(copy, s, warmup, iters).median_ms;
    harness.record_sweep("size", {{"bytes", std::to_string(n)}},
                         "copy engine b->a " + course::bytes_text(n), ms, static_cast<double>(n),
                         ok ? "PASS" : "FAIL");
    sizes.push_back(static_cast<double>(n));
    us.push_back(ms * 1e3);
  }
  try {
    const halo::CopyFit fit = halo::fit_copy_sizes(sizes, us, kFitLargest);
    std::cout << "fit over " << fit.points << " sizes up to " << course::bytes_text(kFitLargest)
              << ": t = " << fit.overhead_us << " us + bytes / " << fit.bandwidth_gbps
              << " GB/s (r^2 " << fit.r_squared << "); half the bandwidth from "
              << fit.break_even_bytes / 1024 << " KiB on\n";
  } catch (const std::exception& e) {
    std::cout << "fit: none (" << e.what() << ")\n";
  }
}

}  // namespace peer_to_peer::parts
