// Lesson 15's driver, what its parts share: the plan (every size and count of the run, resolved
// from the flags before the device is opened), the problem a rung is checked on, and the parts
// that live in their own files (parts_sweep.cu, parts_targets.cu). main.cu reads the flags,
// makes the plan and runs the parts in the order of the output; Part 2 is streamed.cu's
// run_streamed. Read-only.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "capstone.cuh"
#include "course/buffers.h"
#include "course/check.h"
#include "course/data.h"
#include "course/flags.h"
#include "course/harness.h"
#include "course/launch.h"
#include "streamed.cuh"

namespace capstone::driver {

constexpr const char* kLesson = "15_capstone";
constexpr const char* kReference = "cuBLAS";
constexpr float kAlpha = 1.0f;
constexpr float kBeta = 0.0f;

/// Every size and count of the run, resolved from the flags (main.cu's plan_of) before the
/// device is opened: nothing below it asks whether --quick was given.
struct Plan {
  course::CommonOptions options;  ///< the common flags; `variant` also holds --rung's rung
  GemmShape shape;                ///< Part 1's problem: the main table
  int stages = 0;                 ///< of rungs 4 and 5
  bool ladder = false;            ///< Part 1's rungs run (--part gemm or all)
  std::vector<int> sweep_sizes;   ///< the square sweep's sizes; empty: no sweep
  bool judge_sweep = false;       ///< the full sweep ran: its sizes' targets are judged
  bool streamed = false;          ///< Part 2 runs (--part stream or all)
  StreamedSettings part2;         ///< Part 2's rows, k, n and chunk counts
};

/// One problem on the device: A, B, the C every run starts from, the expected C (cuBLAS) and
/// the per-element error bound |alpha| |A| |B| + |beta| |C0| (cuBLAS on absolute values).
struct Problem {
  GemmShape shape;
  course::DeviceBuffer<float> a, b, c0, c;
  std::vector<float> expected, bound;

  Problem(GemmShape s, std::uint32_t seed, cudaStream_t stream)
      : shape(s),
        a(static_cast<std::size_t>(s.m) * s.k),
        b(static_cast<std::size_t>(s.k) * s.n),
        c0(static_cast<std::size_t>(s.m) * s.n),
        c(static_cast<std::size_t>(s.m) * s.n) {
    fill_uniform(a.span(), seed, stream);
    fill_uniform(b.span(), seed + 1, stream);
    fill_uniform(c0.span(), seed + 2, stream);
    course::DeviceBuffer<float> out(c.size());
    COURSE_CHECK(
        cudaMemcpyAsync(out.data(), c0.data(), c0.bytes(), cudaMemcpyDeviceToDevice, stream));
    prepare_cublas_sgemm(s, kAlpha, a.data(), b.data(), kBeta, out.data())(stream);
    COURSE_CHECK(cudaStreamSynchronize(stream));
    expected = course::to_host(out.cspan());
    {
      course::DeviceBuffer<float> abs_a(a.size()), abs_b(b.size());
      absolute_values(a.cspan(), abs_a.span(), stream);
      absolute_values(b.cspan(), abs_b.span(), stream);
      absolute_values(c0.cspan(), out.span(), stream);
      prepare_cublas_sgemm(s, std::abs(kAlpha), abs_a.data(), abs_b.data(), std::abs(kBeta),
                           out.data())(stream);
      COURSE_CHECK(cudaStreamSynchronize(stream));
    }
    bound = course::to_host(out.cspan());
  }

  /// A rung as a harness variant: C poisoned (beta == 0: C must not be read) or reset to C0
  /// before the checked run, every element compared afterwards.
  course::Variant variant(const std::string& name, course::Launch run) {
    return course::Variant{
        name, flops(shape), std::move(run),
        [this](cudaStream_t s) {
          if (kBeta == 0.0f) {
            course::poison(c.data(), c.bytes(), s);
          } else {
            COURSE_CHECK(
                cudaMemcpyAsync(c.data(), c0.data(), c.bytes(), cudaMemcpyDeviceToDevice, s));
          }
        },
        [this, name] {
          if (const auto timeouts = take_wait_timeouts(); timeouts != 0) {
            throw std::runtime_error(name + ": " + std::to_string(timeouts) +
                                     " mbarrier waits gave up (a phase never completed)");
          }
          return compare_gemm(expected, bound, course::to_host(c.cspan()), shape.k);
        }};
  }

  course::Launch rung(Rung r, int stages) {
    return prepare_sgemm({r, stages}, shape, kAlpha, a.data(), b.data(), kBeta, c.data());
  }
};

// ---- The parts in their own files ----------------------------------------------------------

/// parts_sweep.cu: the sweep over the plan's square sizes: cuBLAS and every rung of `rungs`
/// at each size, each size its own problem. Nothing when the plan has no sweep sizes.
void run_square_sweep(course::Harness& harness, const Plan& plan, const std::vector<Rung>& rungs);

/// parts_targets.cu: the targets, ratios measured in this run: the main table's (`ran`: the
/// rungs it ran), then, when `judge_sweep`, the sweep's rows at 2048^3 and 8192^3. A row
/// that was not run is not judged.
void add_targets(course::Harness& harness, const std::vector<std::string>& ran, bool judge_sweep);

}  // namespace capstone::driver
