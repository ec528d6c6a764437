// Lesson 08's launchers and the driver's entanglement report: argument checks, the
// shared-memory opt-in, the choice of kernel, the occupancy query, the instrumented launch,
// and the table of model against measurement. Read-only: the build compiles this file in one
// unit with warp_entanglement.cu (yours, and separately the solution's), which defines the
// kernel; warp_entanglement.cuh declares it.
#include <algorithm>
#include <cstdint>
#include <iomanip>
#include <ostream>
#include <string>

#include "course/buffers.h"
#include "course/check.h"
#include "course/data.h"
#include "course/launch.h"
#include "course/table.h"
#include "course/timing.h"
#include "warp_entanglement.cuh"

namespace warp_entanglement {
namespace {

using Kernel = void (*)(const std::uint32_t*, std::uint32_t*, std::size_t, LanePaths, int,
                        Evidence*);

Kernel kernel_for(CommitMode mode) {
  switch (mode) {
    case CommitMode::converged:
      return entanglement_kernel<CommitMode::converged>;
    case CommitMode::diverged:
      return entanglement_kernel<CommitMode::diverged>;
    case CommitMode::diverged_syncwarp:
      return entanglement_kernel<CommitMode::diverged_syncwarp>;
    case CommitMode::diverged_no_syncwarp:
      return entanglement_kernel<CommitMode::diverged_no_syncwarp>;
  }
  throw std::invalid_argument("warp_entanglement: unknown commit mode");
}

constexpr const char* kWhere = "warp_entanglement";

void require_valid_threads(int threads_per_block) {
  course::require(
      threads_per_block >= 32 && threads_per_block <= 1024 && threads_per_block % 32 == 0, kWhere,
      "threads_per_block must be a multiple of 32 in [32, 1024], got " +
          std::to_string(threads_per_block));
}

/// Checks every precondition, before any CUDA call; returns the kernel for `mode`.
Kernel validated_kernel(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out,
                        CommitMode mode, const LanePaths& paths, LaunchShape shape) {
  course::require(
      in.size() == out.size(), kWhere,
      "in has " + std::to_string(in.size()) + " elements, out " + std::to_string(out.size()));
  const Kernel kernel = kernel_for(mode);  // throws for a mode that is not one of the four
  require_valid_threads(shape.threads_per_block);
  course::require(shape.blocks >= 1, kWhere,
                  "blocks must be >= 1, got " + std::to_string(shape.blocks));
  course::require(reinterpret_cast<std::uintptr_t>(in.data()) % 16 == 0 &&
                      reinterpret_cast<std::uintptr_t>(out.data()) % 16 == 0,
                  kWhere, "16-byte copies need both arrays 16-byte aligned");
  course::require(valid(paths), kWhere,
                  "every lane's path must be in [0, 32), and every path below the largest "
                  "must have a lane");
  return kernel;
}

/// Opts `kernel` in to its shared memory and returns its launch on a non-empty input;
/// `evidence` is a device pointer, or null for the uninstrumented kernel.
course::Launch launch_of(Kernel kernel, cuda::std::span<const std::uint32_t> in,
                         cuda::std::span<std::uint32_t> out, const LanePaths& paths,
                         LaunchShape shape, Evidence* evidence) {
  const std::size_t shared = shared_bytes(shape.threads_per_block);
  // 256 threads need exactly 48 KB; more threads need the opt-in beyond 48 KB.
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(shared)));
  const int count = path_count(paths);
  return [=](cudaStream_t stream) {
    kernel<<<shape.blocks, shape.threads_per_block, shared, stream>>>(
        in.data(), out.data(), in.size(), paths, count, evidence);
    COURSE_CHECK_LAUNCH();
  };
}

/// copy_and_compute_with_evidence(), and the instrumented kernel's time (CUDA events around
/// the kernel alone; 0 for an empty input).
Evidence run_with_evidence(cuda::std::span<const std::uint32_t> in,
                           cuda::std::span<std::uint32_t> out, CommitMode mode,
                           const LanePaths& paths, LaunchShape shape, cudaStream_t stream,
                           float* kernel_ms) {
  const Kernel kernel = validated_kernel(in, out, mode, paths, shape);
  Evidence evidence;
  if (kernel_ms != nullptr) *kernel_ms = 0;
  if (in.empty()) return evidence;
  course::DeviceBuffer<Evidence> counters(1);
  const course::Launch launch = launch_of(kernel, in, out, paths, shape, counters.data());
  COURSE_CHECK(cudaMemsetAsync(counters.data(), 0, sizeof(Evidence), stream));
  const course::Timing t = course::time_stream_work(launch, stream, /*warmup=*/0, /*iters=*/1);
  if (kernel_ms != nullptr) *kernel_ms = static_cast<float>(t.median_ms);
  COURSE_CHECK(cudaMemcpyAsync(&evidence, counters.data(), sizeof(Evidence), cudaMemcpyDeviceToHost,
                               stream));
  COURSE_CHECK(cudaStreamSynchronize(stream));
  return evidence;
}

}  // namespace

course::Launch prepare_copy_and_compute(cuda::std::span<const std::uint32_t> in,
                                        cuda::std::span<std::uint32_t> out, CommitMode mode,
                                        const LanePaths& paths, LaunchShape shape) {
  const Kernel kernel = validated_kernel(in, out, mode, paths, shape);
  if (in.empty()) return [](cudaStream_t) {};
  return launch_of(kernel, in, out, paths, shape, nullptr);
}

void copy_and_compute(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out,
                      CommitMode mode, const LanePaths& paths, LaunchShape shape,
                      cudaStream_t stream) {
  prepare_copy_and_compute(in, out, mode, paths, shape)(stream);
}

Evidence copy_and_compute_with_evidence(cuda::std::span<const std::uint32_t> in,
                                        cuda::std::span<std::uint32_t> out, CommitMode mode,
                                        const LanePaths& paths, LaunchShape shape,
                                        cudaStream_t stream) {
  return run_with_evidence(in, out, mode, paths, shape, stream, nullptr);
}

int max_blocks_per_sm(CommitMode mode, int threads_per_block) {
  require_valid_threads(threads_per_block);
  return course::max_resident_blocks(reinterpret_cast<const void*>(kernel_for(mode)),
                                     threads_per_block, shared_bytes(threads_per_block));
}

// ---- What the GPU measured, as rates ---------------------------------------------------------

Summary summarise(const Evidence& e) {
  auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  Summary s;
  s.commit_executions_per_round = ratio(e.commit_executions, e.commit_rounds);
  s.arrive_executions_per_round = ratio(e.arrive_executions, e.arrive_rounds);
  s.arrivals_per_round = ratio(e.arrivals_measured, e.arrive_rounds);
  unsigned long long cycles = 0, waits = 0, checked = 0, landed = 0, own_checked = 0,
                     own_landed = 0;
  for (int lane = 0; lane < kWarpSize; ++lane) {
    const LaneEvidence& l = e.lanes[lane];
    cycles += l.wait_cycles;
    waits += l.waits;
    checked += l.newer_checked;
    landed += l.newer_landed;
    own_checked += l.own_checked;
    own_landed += l.own_landed;
    s.lane_newer_landed_fraction[lane] = ratio(l.newer_landed, l.newer_checked);
  }
  s.mean_wait_cycles = ratio(cycles, waits);
  s.newer_landed_fraction = ratio(landed, checked);
  s.own_batches_landed = own_landed == own_checked;
  return s;
}

std::string lane_digits(const std::array<double, kWarpSize>& fractions) {
  std::string digits;
  for (double f : fractions) {
    const int d = std::clamp(static_cast<int>(f * 10), 0, 9);
    digits += static_cast<char>('0' + d);
  }
  return digits;
}

bool over_waiting_observed(double newer_landed_fraction, double control_fraction) {
  return newer_landed_fraction - control_fraction >= 0.25;
}

// ---- The driver's entanglement report --------------------------------------------------------

const std::vector<VariantSpec>& variants() {
  static const std::vector<VariantSpec> kVariants = {
      {"converged", CommitMode::converged, 1, "", "no branch: copy, commit, arrive-on"},
      {"diverged-32", CommitMode::diverged, 32, "syncwarp-32",
       "32 paths (fully diverged): copy, commit, arrive-on inside the branch"},
      {"syncwarp-32", CommitMode::diverged_syncwarp, 32, "converged",
       "32 paths: copy in the branch; __syncwarp(); commit, arrive-on"},
      {"no-syncwarp-32", CommitMode::diverged_no_syncwarp, 32, "syncwarp-32",
       "32 paths: copy in the branch; commit, arrive-on after it, no __syncwarp()"},
      {"diverged-4", CommitMode::diverged, 4, "syncwarp-4",
       "4 paths (lane % 4): copy, commit, arrive-on inside the branch"},
      {"syncwarp-4", CommitMode::diverged_syncwarp, 4, "converged",
       "4 paths: copy in the branch; __syncwarp(); commit, arrive-on"},
  };
  return kVariants;
}

std::vector<std::string> with_controls(const std::string& name) {
  for (const VariantSpec& v : variants()) {
    if (name != v.name) continue;
    std::vector<std::string> names = {v.name};
    if (v.control[0] != '\0') names.emplace_back(v.control);
    if (v.mode != CommitMode::converged) names.emplace_back(variants().front().name);
    return names;
  }
  return {};
}

LanePaths lane_paths(int paths) {
  return paths == kWarpSize ? fully_diverged() : split_paths(paths);
}

EntanglementRow measure_entanglement(cuda::std::span<const std::uint32_t> in,
                                     cuda::std::span<std::uint32_t> out,
                                     const std::vector<std::uint32_t>& expected,
                                     const VariantSpec& spec, LaunchShape shape,
                                     cudaStream_t stream) {
  const LanePaths paths = lane_paths(spec.paths);
  EntanglementRow row{spec, model::predict(spec.mode, paths), {}, 0, false, false, ""};
  course::poison(out.data(), out.size_bytes(), stream);
  const Evidence evidence =
      run_with_evidence(in, out, spec.mode, paths, shape, stream, &row.kernel_ms);
  const std::vector<std::uint32_t> actual =
      course::to_host(cuda::std::span<const std::uint32_t>(out.data(), out.size()));
  const course::Comparison c = course::compare_exact<std::uint32_t>(expected, actual);
  row.measured = summarise(evidence);
  if (!c.ok()) {
    row.failure = c.summary();
  } else if (!row.measured.own_batches_landed ||
             evidence.arrivals_measured < evidence.arrive_executions ||
             evidence.arrivals_measured > evidence.arrivals_expected) {
    row.failure =
        "a wait returned before its own batch landed, or the arrival count is out of range";
  }
  return row;
}

void compare_with_controls(std::vector<EntanglementRow>& rows) {
  for (EntanglementRow& r : rows) {
    for (const EntanglementRow& control : rows) {
      if (std::string(control.spec.name) != r.spec.control) continue;
      r.control_measured = true;
      r.over_waiting = over_waiting_observed(r.measured.newer_landed_fraction,
                                             control.measured.newer_landed_fraction);
    }
  }
}

namespace {

/// "yes" / "no" against the row's control, "baseline" for the converged row, "-" when the
/// control was not measured.
std::string over_waiting_text(const EntanglementRow& r) {
  if (r.spec.control[0] == '\0') return "baseline";
  if (!r.control_measured) return "-";
  return r.over_waiting ? "yes" : "no";
}

}  // namespace

void print_entanglement(const std::vector<EntanglementRow>& rows, const std::string& gpu,
                        std::ostream& out) {
  using course::fixed;
  out << "\nWarp entanglement on " << gpu << " (model = the Programming Guide's rules for "
      << "compute capability 8.x; measured = one instrumented launch):\n";
  const std::vector<std::string> header = {
      "variant",   "paths", "commits",     "meas.", "lanes W",  "next landed", "wait cycles",
      "over-wait", "vs",    "arrive upd.", "meas.", "arrivals", "meas.",       "check"};
  std::vector<std::vector<std::string>> cells;
  for (const EntanglementRow& r : rows) {
    cells.push_back(
        {r.spec.name, std::to_string(r.spec.paths), r.model.commit_groups.str(),
         fixed(r.measured.commit_executions_per_round, 2), r.model.over_waiting_lanes.str(),
         fixed(100 * r.measured.newer_landed_fraction, 1) + "%",
         fixed(r.measured.mean_wait_cycles, 0), over_waiting_text(r),
         r.spec.control[0] != '\0' ? r.spec.control : "-", r.model.arrive_on_updates.str(),
         fixed(r.measured.arrive_executions_per_round, 2), std::to_string(r.model.arrivals),
         fixed(r.measured.arrivals_per_round, 2), r.failure.empty() ? "PASS" : "FAIL"});
  }
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& row : cells) width[c] = std::max(width[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& row) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      out << (c == 0 ? std::left : std::right) << std::setw(static_cast<int>(width[c])) << row[c]
          << (c + 1 < row.size() ? "  " : "\n");
    }
  };
  line(header);
  for (const auto& row : cells) line(row);
  out << std::right;
  out << "commits, arrive upd.: executions of the commit and the arrive-on per warp and round "
         "(model; meas. by __activemask()).\nlanes W: lanes whose wait_prior("
      << kAllowedPending
      << ") also covers their own next batch, just started (model). next landed: waits after "
         "which\nthat batch had already landed (measured). over-wait: next landed >= that of the "
         "control vs (the same copies,\ncommit after __syncwarp()) + 25 points. arrivals: per "
         "warp and round (model: one per thread; meas.: counted by an\nmbarrier per warp). wait "
         "cycles: mean clock64() cycles of one wait_prior.\n";
  out << "\nPer lane, lane 0 first: model W = the wait also covers the lane's next batch, ? = "
         "only if the warp did not\nreconverge; measured = tenths of the waits after which that "
         "batch had already landed:\n";
  for (const EntanglementRow& r : rows) {
    out << "  " << std::left << std::setw(16) << r.spec.name << "model    "
        << r.model.lanes_over_waiting << "\n  " << std::setw(16) << ""
        << "measured " << lane_digits(r.measured.lane_newer_landed_fraction) << "\n"
        << std::right;
  }
}

std::vector<std::pair<std::string, std::string>> entanglement_columns(const EntanglementRow& r) {
  using course::fixed;
  return {
      {"commit_mode", name(r.spec.mode)},
      {"paths", std::to_string(r.spec.paths)},
      {"model_commits_per_round", r.model.commit_groups.str()},
      {"measured_commits_per_round", fixed(r.measured.commit_executions_per_round, 3)},
      {"model_lanes_over_waiting", r.model.over_waiting_lanes.str()},
      {"next_batch_landed_fraction", fixed(r.measured.newer_landed_fraction, 4)},
      {"mean_wait_cycles", fixed(r.measured.mean_wait_cycles, 1)},
      {"over_waiting_observed", over_waiting_text(r)},
      {"control", r.spec.control},
      {"model_arrive_on_updates", r.model.arrive_on_updates.str()},
      {"measured_arrive_on_updates", fixed(r.measured.arrive_executions_per_round, 3)},
      {"model_arrivals_per_round", std::to_string(r.model.arrivals)},
      {"measured_arrivals_per_round", fixed(r.measured.arrivals_per_round, 3)},
      {"model_lanes", r.model.lanes_over_waiting},
      {"measured_lanes", lane_digits(r.measured.lane_newer_landed_fraction)},
  };
}

}  // namespace warp_entanglement
