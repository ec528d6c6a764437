// Lesson 12 driver: host<->device copies from every kind of host memory.
//
//   1. host memory kinds: what each allocation costs and whether CUDA sees it page-locked;
//   2. the bandwidth sweep: H2D and D2H from 4 KB to --size, every kind (CSV: *_sweep.csv);
//   3. when cudaMemcpyAsync returns: host clock around the call, on an idle stream;
//   4. what the CPU sees: writing and reading pinned vs write-combined memory;
//   5. small-copy overhead (CUDA Handbook 6.2): per-call costs, the 4-64 KB break-even
//      sweep and its least-squares fit (CSV: *_breakeven.csv), and batching;
//   6. the main table: every kind at --size against a large pinned copy (the reference).
// Every copy's data is verified, every element.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/buffers.h"
#include "course/data.h"
#include "course/harness.h"
#include "course/stats.h"
#include "course/timing.h"
#include "pinned_memory.cuh"

namespace {

using pinned_memory::HostBuffer;
using pinned_memory::HostMemory;
using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kDefaultBytes = 256ull << 20;  // 256 MB: several times any L2
constexpr std::uint64_t kQuickBytes = 1ull << 20;
constexpr std::size_t kSweepSmallest = 4096;
constexpr std::size_t kOverheadBytes = 1u << 20;  // the small-copy part's buffers (part 5)
constexpr std::uint32_t kSeed = 12;

enum class Direction { h2d, d2h };
const char* label(Direction d) { return d == Direction::h2d ? "H2D" : "D2H"; }
constexpr Direction kDirections[] = {Direction::h2d, Direction::d2h};

std::string variant_name(Direction d, HostMemory kind) {
  return std::string(label(d)) + " " + pinned_memory::name(kind);
}

std::vector<std::string> variant_names() {
  std::vector<std::string> names;
  for (Direction d : kDirections) {
    for (HostMemory kind : pinned_memory::kAllHostMemory) names.push_back(variant_name(d, kind));
  }
  return names;
}

const std::vector<std::string> kParts = {"table", "sweep", "async", "host-access", "overhead"};

/// "4 KB", "1.5 MB", "256 MB" (K = 1024).
std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB"};
  int u = 0;
  while (bytes >= 1024 && u < 3) {
    bytes /= 1024;
    ++u;
  }
  std::ostringstream out;
  out << (bytes == static_cast<double>(static_cast<long long>(bytes)) ? std::setprecision(0)
                                                                      : std::setprecision(1))
      << std::fixed << bytes << " " << units[u];
  return out.str();
}

double milliseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

/// What every part shares: the data, the device buffers, and the count of failed checks.
struct Run {
  std::size_t bytes = 0;                       // the largest copy
  course::DeviceBuffer<std::uint32_t> source;  // hash32(i, kSeed): what D2H copies read
  course::DeviceBuffer<std::uint32_t> target;  // where H2D copies write
  std::vector<std::uint32_t> expected;         // hash32(i, kSeed), on the host (>= bytes)
  cudaStream_t stream = nullptr;
  int warmup = 0;
  int iters = 0;
  int failures = 0;

  void copy(Direction d, const HostBuffer& host, std::size_t n_bytes, cudaStream_t s) const {
    if (d == Direction::h2d) {
      COURSE_CHECK(cudaMemcpyAsync(target.data(), host.data(), n_bytes, cudaMemcpyHostToDevice, s));
    } else {
      COURSE_CHECK(cudaMemcpyAsync(host.data(), source.data(), n_bytes, cudaMemcpyDeviceToHost, s));
    }
  }
  /// Before a checked copy: the destination holds poison, so a missing byte is caught.
  void poison(Direction d, const HostBuffer& host, std::size_t n_bytes) const {
    COURSE_CHECK(cudaStreamSynchronize(stream));
    if (d == Direction::h2d) {
      course::poison(target.data(), n_bytes, stream);
      COURSE_CHECK(cudaStreamSynchronize(stream));
    } else {
      std::memset(host.data(), course::kPoisonByte, n_bytes);
    }
  }
  /// H2D copies read the host buffer: put the expected data (back) into it.
  void refill(const HostBuffer& host) const {
    std::memcpy(host.data(), expected.data(),
                std::min(host.bytes(), expected.size() * sizeof(std::uint32_t)));
  }
  /// After a copy (and a wait): did every word arrive?
  course::Comparison check(Direction d, const HostBuffer& host, std::size_t n_bytes) const {
    const std::size_t n = n_bytes / 4;
    if (d == Direction::h2d) return pinned_memory::verify_hash(target.data(), n, kSeed, stream);
    if (host.kind() == HostMemory::write_combined && host.page_locked()) {
      // The CPU reads write-combined memory without its caches, very slowly (part 4
      // measures it): let the GPU read it in place through its mapping instead.
      return pinned_memory::verify_hash(host.device_view(), n, kSeed, stream);
    }
    return course::compare_exact<std::uint32_t>(
        cuda::std::span<const std::uint32_t>(expected.data(), n),
        cuda::std::span<const std::uint32_t>(host.words().data(), n));
  }
  bool record(const course::Comparison& c, const std::string& what) {
    if (c.ok()) return true;
    std::cerr << "12_pinned_memory " << what << ": " << c.summary() << "\n";
    ++failures;
    return false;
  }
};

// ---- Part 2: the bandwidth sweep ----------------------------------------------------------

struct SweepRow {
  Direction direction;
  HostMemory kind;
  std::size_t bytes;
  double median_ms;
  bool passed;
  double gbps() const {
    return course::gigabytes_per_second(static_cast<double>(bytes), median_ms);
  }
};

void sweep(Run& run, const HostBuffer& host, const std::vector<std::size_t>& sizes,
           std::vector<SweepRow>& rows) {
  for (Direction d : kDirections) {
    if (d == Direction::h2d) run.refill(host);
    for (std::size_t bytes : sizes) {
      run.poison(d, host, bytes);
      run.copy(d, host, bytes, run.stream);
      COURSE_CHECK(cudaStreamSynchronize(run.stream));
      const bool passed =
          run.record(run.check(d, host, bytes), std::string("sweep ") + label(d) + " " +
                                                    pinned_memory::name(host.kind()) + " " +
                                                    std::to_string(bytes) + " bytes");
      const course::Timing t = course::time_stream_work(
          [&](cudaStream_t s) { run.copy(d, host, bytes, s); }, run.stream, run.warmup, run.iters);
      rows.push_back({d, host.kind(), bytes, t.median_ms, passed});
    }
  }
}

void print_sweep(const std::vector<SweepRow>& rows, const std::vector<std::size_t>& sizes,
                 const std::vector<HostMemory>& kinds) {
  for (Direction d : kDirections) {
    std::cout << "\n" << label(d) << " bandwidth in GB/s (event-timed medians; * = check failed)\n";
    std::cout << std::setw(8) << "size";
    for (HostMemory kind : kinds) std::cout << std::setw(16) << pinned_memory::name(kind);
    std::cout << "\n";
    for (std::size_t bytes : sizes) {
      std::cout << std::setw(8) << human_bytes(static_cast<double>(bytes));
      for (HostMemory kind : kinds) {
        std::string cell = "-";
        for (const SweepRow& r : rows) {
          if (r.direction == d && r.kind == kind && r.bytes == bytes) {
            cell = course::fixed(r.gbps(), 2) + (r.passed ? "" : "*");
          }
        }
        std::cout << std::setw(16) << cell;
      }
      std::cout << "\n";
    }
  }
}

// ---- Part 3: when does cudaMemcpyAsync return? --------------------------------------------

struct AsyncRow {
  Direction direction;
  HostMemory kind;
  std::size_t bytes;
  double call_us;
  double done_us;
  int in_flight;  // reps whose copy was still running when the call returned
  int reps;
  bool passed;
};

AsyncRow time_async_calls(Run& run, Direction d, const HostBuffer& host, int reps) {
  std::vector<double> call, done;
  int in_flight = 0;
  bool passed = true;
  if (d == Direction::h2d) run.refill(host);
  for (int rep = 0; rep < reps; ++rep) {
    run.poison(d, host, run.bytes);
    void* dst = d == Direction::h2d ? static_cast<void*>(run.target.data()) : host.data();
    const void* src =
        d == Direction::h2d ? host.data() : static_cast<const void*>(run.source.data());
    const pinned_memory::AsyncCallTiming t = pinned_memory::time_async_copy(
        dst, src, run.bytes, d == Direction::h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost,
        run.stream);
    call.push_back(t.call_us);
    done.push_back(t.done_us);
    in_flight += t.in_flight_at_return ? 1 : 0;
    passed = run.record(run.check(d, host, run.bytes), std::string("async ") + label(d) + " " +
                                                           pinned_memory::name(host.kind())) &&
             passed;
  }
  return {d,         host.kind(), run.bytes, course::median(call), course::median(done),
          in_flight, reps,        passed};
}

void print_async(const std::vector<AsyncRow>& rows) {
  if (rows.empty()) return;
  std::cout << "\ncudaMemcpyAsync of " << rows.front().bytes << " bytes ("
            << human_bytes(static_cast<double>(rows.front().bytes))
            << ") on an idle stream, host clock, medians of " << rows.front().reps << ":\n";
  std::cout << std::left << std::setw(6) << "copy" << std::setw(12) << "memory" << std::right
            << std::setw(18) << "call returned" << std::setw(18) << "copy complete" << std::setw(12)
            << "call/copy" << std::setw(22) << "in flight at return" << std::setw(8) << "check\n";
  for (const AsyncRow& r : rows) {
    std::cout << std::left << std::setw(6) << label(r.direction) << std::setw(12)
              << pinned_memory::name(r.kind) << std::right << std::setw(15)
              << course::fixed(r.call_us, 1) << " us" << std::setw(15)
              << course::fixed(r.done_us, 1) << " us" << std::setw(12)
              << course::fixed(r.done_us > 0 ? r.call_us / r.done_us : 0, 3) << std::setw(22)
              << (std::to_string(r.in_flight) + " of " + std::to_string(r.reps)) << std::setw(7)
              << (r.passed ? "PASS" : "FAIL") << "\n";
  }
  std::cout << "(a call that returns while its copy is in flight leaves the host free: only\n"
               " pinned memory allows it; from pageable memory the call does the staging)\n";
}

// ---- Part 4: what the CPU sees ------------------------------------------------------------

struct AccessRow {
  HostMemory kind;
  pinned_memory::HostAccess access;
};

void print_access(const std::vector<AccessRow>& rows, std::size_t bytes) {
  if (rows.empty()) return;
  double pinned_read = 0;
  for (const AccessRow& r : rows) {
    if (r.kind == HostMemory::pinned) pinned_read = r.access.read_gbps;
  }
  std::cout << "\nCPU writing and reading " << human_bytes(static_cast<double>(bytes))
            << " of host memory (GB/s, medians):\n"
            << std::left << std::setw(16) << "memory" << std::right << std::setw(10) << "write"
            << std::setw(10) << "read" << std::setw(14) << "read x pinned\n";
  for (const AccessRow& r : rows) {
    std::cout << std::left << std::setw(16) << pinned_memory::name(r.kind) << std::right
              << std::setw(10) << course::fixed(r.access.write_gbps, 2) << std::setw(10)
              << course::fixed(r.access.read_gbps, 3) << std::setw(13)
              << (pinned_read > 0 ? course::fixed(r.access.read_gbps / pinned_read, 3) : "-")
              << "\n";
  }
  std::cout << "(write-combined memory is not cached by the CPU: writes stream out in bursts,\n"
               " every read goes all the way to memory. Fill it, never read it back)\n";
}

// ---- Part 5: small-copy overhead ----------------------------------------------------------

struct BreakEvenRow {
  Direction direction;
  std::size_t bytes;
  double us;
};

/// GB/s of large pinned copies of run.bytes bytes, H2D then D2H (course::PinnedBuffer,
/// not the lesson's HostBuffer, so that the yardstick does not depend on the exercise).
std::vector<double> large_pinned_gbps(Run& run) {
  course::PinnedBuffer<std::uint32_t> pinned(run.bytes / 4);
  std::memcpy(pinned.data(), run.expected.data(), run.bytes);
  std::vector<double> gbps;
  for (Direction d : kDirections) {
    const course::Timing t = course::time_stream_work(
        [&](cudaStream_t s) {
          if (d == Direction::h2d) {
            COURSE_CHECK(cudaMemcpyAsync(run.target.data(), pinned.data(), run.bytes,
                                         cudaMemcpyHostToDevice, s));
          } else {
            COURSE_CHECK(cudaMemcpyAsync(pinned.data(), run.source.data(), run.bytes,
                                         cudaMemcpyDeviceToHost, s));
          }
        },
        run.stream, run.warmup, run.iters);
    gbps.push_back(course::gigabytes_per_second(static_cast<double>(run.bytes), t.median_ms));
  }
  return gbps;
}

void overhead(Run& run, bool quick, std::vector<BreakEvenRow>& csv_rows,
              std::vector<std::pair<Direction, pinned_memory::OverheadModel>>& models) {
  const int calls = quick ? 4 : 1000;  // copies per timed loop, per-call costs
  const int copies = quick ? 3 : 200;  // copies per timed loop, break-even sweep
  const int reps = quick ? 1 : 5;      // loops per figure (the median is reported)
  const std::size_t batch_total = quick ? (64u << 10) : kOverheadBytes;
  const std::size_t small = std::max<std::size_t>(64u << 10, batch_total);

  // Pinned host and device buffers for the small copies (the host side is the lesson's
  // own pinned memory: in the starter it is pageable, and the figures show it).
  HostBuffer host(HostMemory::pinned, small);
  course::DeviceBuffer<std::uint32_t> device(small / 4);
  const auto host_words = host.words();
  const auto median_of = [&](auto&& measure) {
    std::vector<double> samples;
    for (int r = 0; r < reps; ++r) samples.push_back(measure());
    return course::median(samples);
  };

  std::cout << "\nSmall-copy overhead (host clock; " << calls << " calls per loop, medians of "
            << reps << " loops; the host buffer is the lesson's pinned memory)\n";
  // 1. Per-call costs of tiny copies.
  run.refill(host);
  COURSE_CHECK(cudaMemsetAsync(device.data(), 0, device.bytes(), run.stream));
  const double async_h2d = median_of([&] {
    return pinned_memory::async_copy_us_per_call(device.data(), host.data(), 4,
                                                 cudaMemcpyHostToDevice, run.stream, calls);
  });
  run.record(pinned_memory::verify_hash(device.data(), 1, kSeed, run.stream), "tiny async H2D");
  course::fill_hash(device.span(), kSeed, run.stream);
  COURSE_CHECK(cudaStreamSynchronize(run.stream));
  host_words[0] = 0;
  const double async_d2h = median_of([&] {
    return pinned_memory::async_copy_us_per_call(host.data(), device.data(), 4,
                                                 cudaMemcpyDeviceToHost, run.stream, calls);
  });
  run.record(course::compare_exact<std::uint32_t>(
                 cuda::std::span<const std::uint32_t>(run.expected.data(), 1),
                 cuda::std::span<const std::uint32_t>(host_words.data(), 1)),
             "tiny async D2H");
  host_words[0] = 0;
  const double sync_d2h = median_of([&] {
    return pinned_memory::sync_copy_us_per_call(host.data(), device.data(), 4,
                                                cudaMemcpyDeviceToHost, calls);
  });
  run.record(course::compare_exact<std::uint32_t>(
                 cuda::std::span<const std::uint32_t>(run.expected.data(), 1),
                 cuda::std::span<const std::uint32_t>(host_words.data(), 1)),
             "tiny sync D2H");
  course::poison(device.data(), 4, run.stream);
  COURSE_CHECK(cudaStreamSynchronize(run.stream));
  const double sync_h2d = median_of([&] {
    return pinned_memory::sync_copy_us_per_call(device.data(), host.data(), 4,
                                                cudaMemcpyHostToDevice, calls);
  });
  run.record(pinned_memory::verify_hash(device.data(), 1, kSeed, run.stream), "tiny sync H2D");
  std::cout << "  4-byte cudaMemcpyAsync H2D, back to back, one sync at the end  "
            << course::fixed(async_h2d, 2) << " us per copy\n"
            << "  4-byte cudaMemcpyAsync D2H, back to back, one sync at the end  "
            << course::fixed(async_d2h, 2) << " us per copy\n"
            << "  4-byte cudaMemcpy D2H (synchronous: every call waits)          "
            << course::fixed(sync_d2h, 2) << " us per copy\n"
            << "  4-byte cudaMemcpy H2D (synchronous)                            "
            << course::fixed(sync_h2d, 2) << " us per copy\n";

  // 2. The break-even sweep and its fit.
  const std::vector<std::size_t> sizes = pinned_memory::break_even_sizes();
  std::vector<double> xs(sizes.begin(), sizes.end());
  std::vector<std::vector<double>> ys(2);
  for (Direction d : kDirections) {
    auto& times = ys[d == Direction::h2d ? 0 : 1];
    if (d == Direction::h2d) {
      run.refill(host);
      course::poison(device.data(), device.bytes(), run.stream);
    } else {
      course::fill_hash(device.span(), kSeed, run.stream);
      COURSE_CHECK(cudaStreamSynchronize(run.stream));
      std::memset(host.data(), course::kPoisonByte, host.bytes());
    }
    for (std::size_t bytes : sizes) {
      void* dst = d == Direction::h2d ? static_cast<void*>(device.data()) : host.data();
      const void* src = d == Direction::h2d ? host.data() : static_cast<const void*>(device.data());
      const cudaMemcpyKind kind =
          d == Direction::h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
      times.push_back(median_of([&] {
        return pinned_memory::async_copy_us_per_call(dst, src, bytes, kind, run.stream, copies);
      }));
      csv_rows.push_back({d, bytes, times.back()});
    }
    // The last size was 64 KB: the whole range must hold the data now.
    const std::size_t n = sizes.back() / 4;
    if (d == Direction::h2d) {
      run.record(pinned_memory::verify_hash(device.data(), n, kSeed, run.stream), "break-even H2D");
    } else {
      run.record(course::compare_exact<std::uint32_t>(
                     cuda::std::span<const std::uint32_t>(run.expected.data(), n),
                     cuda::std::span<const std::uint32_t>(host_words.data(), n)),
                 "break-even D2H");
    }
  }

  std::cout << "\n  break-even sweep: " << copies
            << " back-to-back cudaMemcpyAsync per size, us per copy\n"
            << std::setw(10) << "size" << std::setw(12) << "H2D" << std::setw(12) << "D2H\n";
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::cout << std::setw(10) << human_bytes(xs[i]) << std::setw(12) << course::fixed(ys[0][i], 3)
              << std::setw(12) << course::fixed(ys[1][i], 3) << "\n";
  }
  const std::vector<double> large_gbps = large_pinned_gbps(run);
  for (Direction d : kDirections) {
    const auto& times = ys[d == Direction::h2d ? 0 : 1];
    const double large = large_gbps[d == Direction::h2d ? 0 : 1];
    try {
      const pinned_memory::OverheadModel m = pinned_memory::fit_overhead(xs, times);
      models.emplace_back(d, m);
      const double even = pinned_memory::break_even_bytes(m);
      std::cout << "  " << label(d) << " fit: t = " << course::fixed(m.overhead_us, 3)
                << " us + bytes / " << course::fixed(m.bandwidth_gbps, 2)
                << " GB/s (r^2 = " << course::fixed(m.r_squared, 4) << ")\n"
                << "      fitted bandwidth = " << course::fixed(m.bandwidth_gbps / large, 3)
                << " x a large pinned " << label(d) << " copy in this run ("
                << course::fixed(large, 2) << " GB/s, "
                << human_bytes(static_cast<double>(run.bytes)) << ")\n"
                << "      break-even size " << course::fixed(even, 0) << " bytes ("
                << human_bytes(even) << "): half the bandwidth; 90% needs copies of "
                << human_bytes(9 * even) << " or more\n";
    } catch (const std::exception& e) {
      std::cout << "  " << label(d) << " fit: none (" << e.what() << ")\n";
    }
  }

  // 3. Batching: the same bytes as many small copies or as one.
  const std::size_t piece = 4096;
  const std::size_t pieces = batch_total / piece;
  run.refill(host);
  course::poison(device.data(), device.bytes(), run.stream);
  const double many_us = median_of([&] {
    COURSE_CHECK(cudaStreamSynchronize(run.stream));
    const Clock::time_point start = Clock::now();
    for (std::size_t i = 0; i < pieces; ++i) {
      COURSE_CHECK(cudaMemcpyAsync(reinterpret_cast<char*>(device.data()) + i * piece,
                                   static_cast<const char*>(host.data()) + i * piece, piece,
                                   cudaMemcpyHostToDevice, run.stream));
    }
    COURSE_CHECK(cudaStreamSynchronize(run.stream));
    return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  });
  run.record(pinned_memory::verify_hash(device.data(), batch_total / 4, kSeed, run.stream),
             "batched H2D, many copies");
  course::poison(device.data(), device.bytes(), run.stream);
  const double one_us = median_of([&] {
    return pinned_memory::async_copy_us_per_call(device.data(), host.data(), batch_total,
                                                 cudaMemcpyHostToDevice, run.stream, 1);
  });
  run.record(pinned_memory::verify_hash(device.data(), batch_total / 4, kSeed, run.stream),
             "batched H2D, one copy");
  std::cout << "\n  " << human_bytes(static_cast<double>(batch_total)) << " H2D as " << pieces
            << " copies of 4 KB: " << course::fixed(many_us, 1)
            << " us; as one copy: " << course::fixed(one_us, 1) << " us ("
            << course::fixed(many_us / one_us, 1) << " x faster)";
  for (const auto& [d, m] : models) {
    if (d != Direction::h2d) continue;
    std::cout << "\n    the H2D model predicts "
              << course::fixed(pieces * pinned_memory::predicted_us(m, piece), 1) << " us and "
              << course::fixed(pinned_memory::predicted_us(m, static_cast<double>(batch_total)), 1)
              << " us";
  }
  std::cout << "\n";
}

// ---- CSV files next to --csv ----------------------------------------------------------------

std::ofstream open_csv(const std::string& path) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("could not write " + path);
  return out;
}

void write_csvs(const std::string& csv, const std::string& gpu, const std::vector<SweepRow>& sweep,
                const std::vector<AsyncRow>& async, const std::vector<BreakEvenRow>& even,
                const std::vector<std::pair<Direction, pinned_memory::OverheadModel>>& models) {
  const std::string context = "12_pinned_memory," + course::csv_field(gpu) + ",";
  if (!sweep.empty()) {
    std::ofstream out = open_csv(pinned_memory::derived_csv_path(csv, "sweep"));
    out << "lesson,gpu,direction,memory,bytes,median_ms,gbps,check\n";
    for (const SweepRow& r : sweep) {
      out << context << label(r.direction) << "," << pinned_memory::name(r.kind) << "," << r.bytes
          << "," << course::fixed(r.median_ms, 6) << "," << course::fixed(r.gbps(), 3) << ","
          << (r.passed ? "PASS" : "FAIL") << "\n";
    }
  }
  if (!async.empty()) {
    std::ofstream out = open_csv(pinned_memory::derived_csv_path(csv, "async"));
    out << "lesson,gpu,direction,memory,bytes,call_us,done_us,in_flight_reps,reps,check\n";
    for (const AsyncRow& r : async) {
      out << context << label(r.direction) << "," << pinned_memory::name(r.kind) << "," << r.bytes
          << "," << course::fixed(r.call_us, 3) << "," << course::fixed(r.done_us, 3) << ","
          << r.in_flight << "," << r.reps << "," << (r.passed ? "PASS" : "FAIL") << "\n";
    }
  }
  if (!even.empty()) {
    std::ofstream out = open_csv(pinned_memory::derived_csv_path(csv, "breakeven"));
    out << "lesson,gpu,direction,bytes,us_per_copy,fit_overhead_us,fit_gbps,fit_r2\n";
    for (const BreakEvenRow& r : even) {
      std::string fit = ",,";
      for (const auto& [d, m] : models) {
        if (d == r.direction) {
          fit = course::fixed(m.overhead_us, 4) + "," + course::fixed(m.bandwidth_gbps, 4) + "," +
                course::fixed(m.r_squared, 5);
        }
      }
      out << context << label(r.direction) << "," << r.bytes << "," << course::fixed(r.us, 4) << ","
          << fit << "\n";
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  course::CommonOptions options;
  std::string part;
  course::FlagParser flags(
      "12_pinned_memory",
      "Lesson 12: pinned memory and small-copy overhead. Copies between the GPU and host\n"
      "memory of every kind (pageable malloc, cudaMallocHost, cudaHostAlloc with each flag,\n"
      "cudaHostRegister): a bandwidth sweep from 4 KB up, when cudaMemcpyAsync returns,\n"
      "what the CPU sees of write-combined memory, the per-copy overhead and its\n"
      "break-even fit, and a table of every kind against a large pinned copy. --variant\n"
      "picks a row of that table; --part runs one part only. --csv FILE also writes\n"
      "FILE_sweep.csv, FILE_async.csv and FILE_breakeven.csv (FILE without '.csv').");
  flags.add_common(options,
                   "bytes per copy in the table and the async part, and the sweep's largest "
                   "(a multiple of 4; default 256M, 1M with --quick; K/M/G suffixes)",
                   variant_names());
  flags.add_choice("part", &part, kParts, "run only this part (default: all of them)");

  return course::run_driver(flags, argc, argv, options, [&](const course::DeviceSummary& gpu) {
    const std::uint64_t bytes =
        options.size ? options.size : (options.quick ? kQuickBytes : kDefaultBytes);
    if (bytes % 4 != 0) throw course::UsageError("--size must be a multiple of 4 bytes");
    const auto runs = [&](const char* name) { return part.empty() || part == name; };

    int unified = 0, registrable = 0;
    COURSE_CHECK(cudaDeviceGetAttribute(&unified, cudaDevAttrUnifiedAddressing, gpu.ordinal));
    COURSE_CHECK(
        cudaDeviceGetAttribute(&registrable, cudaDevAttrHostRegisterSupported, gpu.ordinal));
    std::cout << "lesson 12 pinned_memory: copies of up to " << bytes << " bytes ("
              << human_bytes(static_cast<double>(bytes)) << "; KB = 1024 bytes); GB/s counts "
              << "each byte once (it crosses the link once)\n"
              << "  unified addressing: " << (unified ? "yes" : "no")
              << (unified ? " (so every page-locked buffer is also mapped and portable)" : "")
              << "; cudaHostRegister supported: " << (registrable ? "yes" : "no") << "\n";

    course::Harness harness("12_pinned_memory", options, gpu);
    Run run;
    run.bytes = bytes;
    run.source = course::DeviceBuffer<std::uint32_t>(bytes / 4);
    run.target = course::DeviceBuffer<std::uint32_t>(bytes / 4);
    run.expected.resize(std::max<std::size_t>(bytes, kOverheadBytes) / 4);
    course::fill_hash_host(run.expected, kSeed);
    run.stream = harness.stream();
    run.warmup = harness.warmup();
    run.iters = harness.iters();
    // Fill on the harness's stream and wait: its non-blocking stream would not wait for
    // work on the legacy default stream.
    course::fill_hash(run.source.span(), kSeed, run.stream);
    course::poison(run.target.data(), run.target.bytes(), run.stream);
    COURSE_CHECK(cudaStreamSynchronize(run.stream));

    {
      // The yardstick: a large copy from cudaMallocHost memory, made by the course's own
      // PinnedBuffer so that it does not depend on the exercise.
      course::PinnedBuffer<std::uint32_t> pinned(bytes / 4);
      std::memcpy(pinned.data(), run.expected.data(), bytes);
      harness.reference("H2D pinned (reference)", static_cast<double>(bytes), [&](cudaStream_t s) {
        COURSE_CHECK(
            cudaMemcpyAsync(run.target.data(), pinned.data(), bytes, cudaMemcpyHostToDevice, s));
      });
    }
    harness.baseline("H2D pageable");
    harness.headline("H2D pageable");
    // Pinned memory must beat pageable memory clearly, and reach the link's rate in both
    // directions, however it was pinned.
    harness.ratio_target({"H2D pinned", "H2D pageable", 2.0});
    harness.target({"D2H pinned", 0.85});
    harness.target({"H2D registered", 0.85});
    harness.target({"D2H registered", 0.85});

    std::vector<HostMemory> kinds;
    for (HostMemory kind : pinned_memory::kAllHostMemory) {
      if (kind == HostMemory::registered && !registrable) continue;
      kinds.push_back(kind);
    }
    const std::vector<std::size_t> sizes =
        pinned_memory::sweep_sizes(std::min<std::size_t>(kSweepSmallest, bytes), bytes);
    const int async_reps = options.quick ? 1 : 5;
    const std::size_t access_bytes =
        std::min<std::size_t>(bytes, options.quick ? (64u << 10) : (8u << 20));
    const int access_reps = options.quick ? 1 : 3;

    std::vector<SweepRow> sweep_rows;
    std::vector<AsyncRow> async_rows;
    std::vector<AccessRow> access_rows;

    std::cout << "\nHost memory kinds (" << human_bytes(static_cast<double>(bytes)) << " each):\n"
              << std::left << std::setw(16) << "memory" << std::setw(30) << "allocated by"
              << std::right << std::setw(14) << "allocation" << std::setw(13) << "page-locked\n";
    for (HostMemory kind : kinds) {
      const Clock::time_point start = Clock::now();
      HostBuffer host(kind, bytes);
      const double alloc_ms = milliseconds_since(start);
      std::cout << std::left << std::setw(16) << pinned_memory::name(kind) << std::setw(30)
                << pinned_memory::api(kind) << std::right << std::setw(11)
                << course::fixed(alloc_ms, 2) << " ms" << std::setw(12)
                << (host.page_locked() ? "yes" : "no") << std::endl;
      run.refill(host);

      if (runs("table")) {
        for (Direction d : kDirections) {
          harness.run({variant_name(d, kind), static_cast<double>(bytes),
                       [&, d](cudaStream_t s) { run.copy(d, host, bytes, s); },
                       [&, d](cudaStream_t) { run.poison(d, host, bytes); },
                       [&, d] { return run.check(d, host, bytes); }});
        }
      }
      if (runs("sweep")) sweep(run, host, sizes, sweep_rows);
      if (runs("async") && (kind == HostMemory::pageable || kind == HostMemory::pinned ||
                            kind == HostMemory::registered)) {
        for (Direction d : kDirections)
          async_rows.push_back(time_async_calls(run, d, host, async_reps));
      }
      if (runs("host-access") && (kind == HostMemory::pageable || kind == HostMemory::pinned ||
                                  kind == HostMemory::write_combined)) {
        access_rows.push_back(
            {kind, pinned_memory::measure_host_access(host, access_bytes, access_reps)});
      }
    }
    std::cout << "(pageable memory is only reserved by malloc: its pages are found, and\n"
                 " faulted in, on first touch. Pinning finds and locks every page up front)\n";

    if (runs("sweep")) print_sweep(sweep_rows, sizes, kinds);
    print_async(async_rows);
    print_access(access_rows, access_bytes);
    std::vector<BreakEvenRow> even_rows;
    std::vector<std::pair<Direction, pinned_memory::OverheadModel>> models;
    if (runs("overhead")) overhead(run, options.quick, even_rows, models);
    if (!options.csv.empty())
      write_csvs(options.csv, gpu.name, sweep_rows, async_rows, even_rows, models);

    if (run.failures > 0) {
      throw std::runtime_error(std::to_string(run.failures) +
                               " checks failed in the parts above (see the messages before)");
    }
    return harness.finish();
  });
}
