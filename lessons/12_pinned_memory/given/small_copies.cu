// Lesson 12, part 5: what one small copy costs (read-only; pinned_memory_parts.h says
// what it measures). The rows go to the harness; the two models of the break-even sweep,
// your straight line (TODO 4) and the step model (overhead_model.h), are printed here,
// each judged against a large copy over the same link.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/check.h"
#include "course/data.h"
#include "course/table.h"
#include "overhead_model.h"
#include "pinned_memory_parts.h"

namespace pinned_memory {
namespace {

using Clock = std::chrono::steady_clock;

// The two models of one direction's break-even sweep, printed against the link.
CopyCostFit report_fits(Direction d, const std::vector<double>& xs, const std::vector<double>& us,
                        double link_gbps, std::size_t large_bytes) {
  std::cout << "  " << label(d) << ", " << human_bytes(xs.front()) << " to "
            << human_bytes(xs.back()) << " (a large pinned " << label(d) << " copy of "
            << human_bytes(static_cast<double>(large_bytes)) << " runs at "
            << course::fixed(link_gbps, 2) << " GB/s in this run):\n"
            << "    straight line (TODO 4): ";
  try {
    const OverheadModel line = fit_overhead(xs, us);
    std::cout << course::fixed(line.overhead_us, 3) << " us + bytes / ";
    if (physical_bandwidth(line.bandwidth_gbps, link_gbps)) {
      std::cout << course::fixed(line.bandwidth_gbps, 2)
                << " GB/s = " << course::fixed(line.bandwidth_gbps / link_gbps, 3)
                << " x the large copy, r^2 " << course::fixed(line.r_squared, 4);
      const double even = break_even_bytes(line);
      std::cout << "; break-even (TODO 5) "
                << (even > 0 ? human_bytes(even) : "none (the overhead is not positive)") << "\n";
    } else {
      std::cout << "a rate above the large copy's, r^2 " << course::fixed(line.r_squared, 4)
                << ": not physical, so no bandwidth and no break-even\n";
    }
  } catch (const std::exception& e) {
    std::cout << "none (" << e.what() << ")\n";
  }
  const CopyCostFit fit = fit_copy_cost(xs, us, link_gbps);
  std::cout << "    best shape: " << describe(fit) << " (rms residual "
            << course::fixed(fit.rms_residual_us, 3) << " us)\n";
  if (fit.shape == CostShape::step && fit.physical) {
    const double even = break_even_bytes(OverheadModel{fit.intercept_us, fit.bandwidth_gbps, 0});
    if (even > 0) {
      std::cout << "    break-even of the rising part (TODO 5): "
                << human_bytes(std::max(even, fit.rising_from_bytes)) << "\n";
    }
  }
  return fit;
}

/// What the three parts of time_small_copies() share: the loop counts, the lesson's own
/// pinned host buffer (in the starter it is pageable, and the figures show it) and a device
/// buffer, both holding the bench's data.
struct SmallCopies {
  SmallCopies(course::Harness& h, const CopyBench& b, const SmallCopyCounts& counts,
              std::size_t small)
      : harness(h),
        bench(b),
        calls(counts.calls),
        copies(counts.copies),
        reps(counts.reps),
        batch_total(counts.batch_total),
        stream(b.stream()),
        seed(b.seed()),
        host(HostMemory::pinned, small),
        device(small / 4) {
    bench.refill(host);
    course::fill_hash(device.span(), seed, stream);
    COURSE_CHECK(cudaStreamSynchronize(stream));
  }

  const std::uint32_t* words() const { return host.words().data(); }

  /// Where a copy of direction `d` writes and reads, and its cudaMemcpyKind.
  struct Ends {
    void* dst;
    const void* src;
    cudaMemcpyKind kind;
  };
  Ends ends(Direction d) const {
    if (d == Direction::h2d) return {device.data(), host.data(), cudaMemcpyHostToDevice};
    return {host.data(), device.data(), cudaMemcpyDeviceToHost};
  }

  /// "PASS" when the first `n` words of the destination of direction `d` hold the data.
  std::string check(Direction d, std::size_t n, const std::string& what) const {
    return check_text(d == Direction::h2d ? verify_hash(device.data(), n, seed, stream)
                                          : compare_host(bench.expected(), words(), n),
                      what);
  }

  course::Harness& harness;
  const CopyBench& bench;
  const int calls;   ///< copies per timed loop, per-call costs
  const int copies;  ///< copies per timed loop, break-even sweep
  const int reps;    ///< loops per figure (the median is reported)
  const std::size_t batch_total;
  const cudaStream_t stream;
  const std::uint32_t seed;
  HostBuffer host;
  course::DeviceBuffer<std::uint32_t> device;
};

/// 1. Per-call costs of 4-byte copies: the destination's first word is poisoned, then every
///    copy writes hash32(0, seed) into it.
void per_call_costs(SmallCopies& sc) {
  std::vector<std::string> per_call;
  for (const bool async : {true, false}) {
    for (const Direction d : kDirections) {
      if (d == Direction::h2d) {
        course::poison(sc.device.data(), 4, sc.stream);
        COURSE_CHECK(cudaStreamSynchronize(sc.stream));
      } else {
        std::memset(sc.host.data(), course::kPoisonByte, 4);
      }
      const SmallCopies::Ends e = sc.ends(d);
      const double us = median_of(sc.reps, [&] {
        return async ? async_copy_us_per_call(e.dst, e.src, 4, e.kind, sc.stream, sc.calls)
                     : sync_copy_us_per_call(e.dst, e.src, 4, e.kind, sc.calls);
      });
      const std::string call = async ? "cudaMemcpyAsync" : "cudaMemcpy";
      const std::string what =
          "4-byte " + call + " " + label(d) + (async ? ", back to back" : " (each call waits)");
      const std::string check = sc.check(d, 1, what);
      sc.harness.record_sweep("per-call cost",
                              {{"call", call},
                               {"direction", label(d)},
                               {"bytes", "4"},
                               {"copies", std::to_string(sc.calls)}},
                              what, us / 1e3, 4, check);
      per_call.push_back(course::fixed(us, 2) + " us");
    }
  }
  std::cout << "  per call of a 4-byte copy, " << sc.calls
            << " calls in a row: cudaMemcpyAsync H2D " << per_call[0] << ", D2H " << per_call[1]
            << " (back to back, one wait at the end); cudaMemcpy H2D " << per_call[2] << ", D2H "
            << per_call[3] << " (each call waits)\n";
}

/// 2. The break-even sweep, its two models, and the link they must not outrun. Returns the
///    H2D direction's fit (part 3 quotes its prediction).
CopyCostFit break_even_sweep(SmallCopies& sc) {
  const std::vector<std::size_t> sizes = break_even_sizes();
  const std::vector<double> xs(sizes.begin(), sizes.end());
  CopyCostFit h2d_fit;
  for (const Direction d : kDirections) {
    if (d == Direction::h2d) {
      course::poison(sc.device.data(), sc.device.bytes(), sc.stream);
      COURSE_CHECK(cudaStreamSynchronize(sc.stream));
    } else {
      std::memset(sc.host.data(), course::kPoisonByte, sc.host.bytes());
    }
    const SmallCopies::Ends e = sc.ends(d);
    std::vector<double> us;
    for (const std::size_t bytes : sizes) {
      us.push_back(median_of(sc.reps, [&] {
        return async_copy_us_per_call(e.dst, e.src, bytes, e.kind, sc.stream, sc.copies);
      }));
    }
    // The largest size covers the others: every word of it must hold the data now.
    const std::string check =
        sc.check(d, sizes.back() / 4, std::string("break-even sweep ") + label(d));
    const double link_gbps = sc.bench.large_pinned_gbps(d, sc.harness.warmup(), sc.harness.iters());
    const CopyCostFit fit = report_fits(d, xs, us, link_gbps, sc.bench.bytes());
    if (d == Direction::h2d) h2d_fit = fit;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      sc.harness.record_sweep("breakeven",
                              {{"direction", label(d)},
                               {"bytes", std::to_string(sizes[i])},
                               {"copies", std::to_string(sc.copies)},
                               {"model_us", course::fixed(model_us(fit, xs[i]), 4)},
                               {"model", describe(fit)}},
                              std::string(label(d)) + " " + human_bytes(xs[i]) + ", back to back",
                              us[i] / 1e3, xs[i], check);
    }
  }
  return h2d_fit;
}

/// 3. Batching: the same bytes as many small copies or as one, beside what the H2D model of
///    part 2 predicts for both.
void batching(SmallCopies& sc, const CopyCostFit& h2d_fit) {
  const std::size_t batch_total = sc.batch_total;
  const std::size_t piece = 4096;
  const std::size_t pieces = batch_total / piece;
  const std::string total = human_bytes(static_cast<double>(batch_total));
  const std::string as_pieces =
      " H2D as " + std::to_string(pieces) + " copies of " + human_bytes(static_cast<double>(piece));
  const auto checked = [&](const std::string& what) {
    return check_text(verify_hash(sc.device.data(), batch_total / 4, sc.seed, sc.stream), what);
  };
  sc.bench.refill(sc.host);
  course::poison(sc.device.data(), sc.device.bytes(), sc.stream);
  const double many_us = median_of(sc.reps, [&] {
    COURSE_CHECK(cudaStreamSynchronize(sc.stream));
    const Clock::time_point start = Clock::now();
    for (std::size_t i = 0; i < pieces; ++i) {
      COURSE_CHECK(cudaMemcpyAsync(reinterpret_cast<char*>(sc.device.data()) + i * piece,
                                   static_cast<const char*>(sc.host.data()) + i * piece, piece,
                                   cudaMemcpyHostToDevice, sc.stream));
    }
    COURSE_CHECK(cudaStreamSynchronize(sc.stream));
    return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  });
  const std::string many_check = checked("batched H2D, many copies");
  course::poison(sc.device.data(), sc.device.bytes(), sc.stream);
  const double one_us = median_of(sc.reps, [&] {
    return async_copy_us_per_call(sc.device.data(), sc.host.data(), batch_total,
                                  cudaMemcpyHostToDevice, sc.stream, 1);
  });
  const std::string one_check = checked("batched H2D, one copy");
  sc.harness.record_sweep("batching",
                          {{"direction", "H2D"},
                           {"bytes", std::to_string(batch_total)},
                           {"copies", std::to_string(pieces)}},
                          total + as_pieces, many_us / 1e3, static_cast<double>(batch_total),
                          many_check);
  sc.harness.record_sweep(
      "batching", {{"direction", "H2D"}, {"bytes", std::to_string(batch_total)}, {"copies", "1"}},
      total + " H2D as one copy", one_us / 1e3, static_cast<double>(batch_total), one_check);
  std::cout << "  " << total << as_pieces << ": " << course::fixed(many_us, 1)
            << " us; as one copy: " << course::fixed(one_us, 1) << " us ("
            << course::fixed(one_us > 0 ? many_us / one_us : 0, 1) << " x faster)";
  if (h2d_fit.shape != CostShape::flat && h2d_fit.physical) {
    std::cout << "; the H2D model above predicts "
              << course::fixed(static_cast<double>(pieces) * model_us(h2d_fit, piece), 1)
              << " us and " << course::fixed(model_us(h2d_fit, static_cast<double>(batch_total)), 1)
              << " us";
  }
  std::cout << "\n";
}

}  // namespace

void time_small_copies(course::Harness& harness, const CopyBench& bench,
                       const SmallCopyCounts& counts) {
  const std::size_t small = std::max<std::size_t>(64u << 10, counts.batch_total);
  if (bench.expected().size() * 4 < small) {
    throw std::logic_error("time_small_copies: too little data");
  }
  SmallCopies sc(harness, bench, counts, small);
  std::cout << "\nSmall copies (pinned memory, host clock, medians of " << sc.reps
            << " loops; their rows are in the tables below):\n";
  per_call_costs(sc);
  const CopyCostFit h2d_fit = break_even_sweep(sc);
  batching(sc, h2d_fit);
}

}  // namespace pinned_memory
