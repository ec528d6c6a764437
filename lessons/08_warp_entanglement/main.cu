// Lesson 08 driver: what warp entanglement does on this GPU.
//
// 1. The model: the Programming Guide's fully diverged example (PB, TB, what a wait covers),
//    then what the model predicts for each variant of the kernel.
// 2. The entanglement table: one instrumented launch per variant (converged; diverged with
//    32 and 4 paths; the same copies with the commit after __syncwarp(), the control of each
//    diverged variant; and after the branch without __syncwarp()). Per variant: commits per
//    warp and round (model vs executions seen by __activemask()), the lanes whose wait also
//    covers their own next batch (model) vs how often that batch had already landed when
//    the wait returned (measured), the mean wait in clock64 cycles, whether over-waiting was
//    observed (against the control), arrive-on updates (model vs executions) and arrivals
//    (model vs what the counting mbarriers received), and the value check. --csv FILE writes
//    it to FILE_entanglement.csv.
// 3. The harness table: the same kernels uninstrumented, timed against a D2D cudaMemcpy,
//    every output checked (the effect of entanglement is on time, never on values).
#include <algorithm>
#include <cstdint>
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
#include "course/table.h"
#include "course/workload.h"
#include "warp_entanglement.cuh"

namespace {

namespace we = warp_entanglement;
using we::CommitMode;

constexpr int kThreads = 256;
constexpr std::uint64_t kDefaultElements = 256ull << 20;  // 1 GiB of input: far beyond L2
constexpr std::uint64_t kQuickElements = 1000003;         // prime: never a whole batch
constexpr const char* kLesson = "08_warp_entanglement";
constexpr const char* kBaseline = "converged";

struct VariantSpec {
  const char* name;
  CommitMode mode;
  int paths;            // 1, 4 or 32: lane l takes path l % paths
  const char* control;  // the variant with the same copies and a converged commit
  const char* what;
};

// The converged variant first: it is the baseline of both tables. Each diverged variant has a
// control that issues its copies from the same branch but commits after a __syncwarp(): the
// two differ only in where the commit and the arrive-on run.
const std::vector<VariantSpec> kVariants = {
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

std::vector<std::string> variant_names() {
  std::vector<std::string> names;
  for (const auto& v : kVariants) names.emplace_back(v.name);
  return names;
}

/// The control of the variant named `name` ("" for none or an unknown name).
std::string control_of(const std::string& name) {
  for (const auto& v : kVariants) {
    if (name == v.name) return v.control;
  }
  return "";
}

we::LanePaths lane_paths(int paths) {
  return paths == we::kWarpSize ? we::fully_diverged() : we::split_paths(paths);
}

/// "{0..31}" or "{0}" or "{0, 2, 5}": a sorted list of batch indices, runs shortened.
std::string batches_text(const std::vector<int>& batches) {
  std::ostringstream text;
  text << "{";
  for (std::size_t i = 0; i < batches.size();) {
    std::size_t j = i;
    while (j + 1 < batches.size() && batches[j + 1] == batches[j] + 1) ++j;
    if (i > 0) text << ", ";
    text << batches[i];
    if (j > i + 1) text << ".." << batches[j];
    if (j == i + 1) text << ", " << batches[j];
    i = j + 1;
  }
  text << "}";
  return text.str();
}

/// The Programming Guide's example, computed by the model: a fully diverged warp commits once.
void print_model_example() {
  we::model::WarpSequence sequence;
  for (int lane = 0; lane < we::kWarpSize; ++lane) sequence.commit(we::model::LaneMask{1} << lane);
  std::vector<int> actual;
  for (int b = 0; b <= sequence.actual_last(); ++b) actual.push_back(b);
  const we::model::Wait wait = sequence.wait_prior(0, 0);
  std::cout << "\nThe model: a fully diverged warp in which every lane commits once\n"
            << "  actual, warp-shared sequence PB = " << batches_text(actual)
            << " (PL = " << sequence.actual_last() << ")\n"
            << "  perceived sequence of every lane TB = " << batches_text({0})
            << " (TL = " << sequence.perceived_last(0) << "); lane t's batch 0 is PB batch t\n"
            << "  wait_prior<0> in lane 0 needs PB batch " << wait.needed_through
            << " but waits for PB 0.." << wait.waited_through << ": " << wait.batches_waited()
            << " batches, " << wait.over_waited() << " of them newer than its own\n"
            << "  arrive-on by the 32 diverged lanes: "
            << we::model::arrive_on(we::model::groups_of(we::fully_diverged())).updates
            << " barrier updates (converged: "
            << we::model::arrive_on({we::model::kFullWarp}).updates << ")\n";
}

/// One row of the entanglement table.
struct Row {
  VariantSpec spec;
  we::model::Prediction model;
  we::Summary measured;
  bool over_waiting = false;
  bool control_measured = false;
  bool values_ok = false;
  bool invariants_ok = false;
};

std::string fixed(double value, int digits) { return course::fixed(value, digits); }

/// "yes" / "no" against the row's control, "baseline" for the converged row, "-" when the
/// control was not measured.
std::string over_waiting_text(const Row& r) {
  if (r.spec.control[0] == '\0') return "baseline";
  if (!r.control_measured) return "-";
  return r.over_waiting ? "yes" : "no";
}

void print_table(const std::vector<Row>& rows, std::ostream& out) {
  const std::vector<std::string> header = {
      "variant",   "paths", "commits",     "meas.", "lanes W",  "next landed", "wait cycles",
      "over-wait", "vs",    "arrive upd.", "meas.", "arrivals", "meas.",       "check"};
  std::vector<std::vector<std::string>> cells;
  for (const Row& r : rows) {
    cells.push_back(
        {r.spec.name, std::to_string(r.spec.paths), r.model.commit_groups.str(),
         fixed(r.measured.commit_executions_per_round, 2), r.model.over_waiting_lanes.str(),
         fixed(100 * r.measured.newer_landed_fraction, 1) + "%",
         fixed(r.measured.mean_wait_cycles, 0), over_waiting_text(r),
         r.spec.control[0] != '\0' ? r.spec.control : "-", r.model.arrive_on_updates.str(),
         fixed(r.measured.arrive_executions_per_round, 2), std::to_string(r.model.arrivals),
         fixed(r.measured.arrivals_per_round, 2),
         r.values_ok && r.invariants_ok ? "PASS" : "FAIL"});
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
}

void write_csv(const std::vector<Row>& rows, const std::string& gpu, const std::string& path) {
  std::ofstream csv(path);
  csv << "lesson,gpu,variant,commit_mode,paths,model_commits_per_round,"
         "measured_commits_per_round,model_lanes_over_waiting,next_batch_landed_fraction,"
         "mean_wait_cycles,over_waiting_observed,control,model_arrive_on_updates,"
         "measured_arrive_on_updates,model_arrivals_per_round,measured_arrivals_per_round,"
         "model_lanes,measured_lanes,check\n";
  for (const Row& r : rows) {
    csv << kLesson << "," << course::csv_field(gpu) << "," << r.spec.name << ","
        << course::csv_field(we::name(r.spec.mode)) << "," << r.spec.paths << ","
        << r.model.commit_groups.str() << "," << fixed(r.measured.commit_executions_per_round, 3)
        << "," << r.model.over_waiting_lanes.str() << ","
        << fixed(r.measured.newer_landed_fraction, 4) << ","
        << fixed(r.measured.mean_wait_cycles, 1) << "," << over_waiting_text(r) << ","
        << r.spec.control << "," << r.model.arrive_on_updates.str() << ","
        << fixed(r.measured.arrive_executions_per_round, 3) << "," << r.model.arrivals << ","
        << fixed(r.measured.arrivals_per_round, 3) << "," << r.model.lanes_over_waiting << ","
        << we::lane_digits(r.measured.lane_newer_landed_fraction) << ","
        << (r.values_ok && r.invariants_ok ? "PASS" : "FAIL") << "\n";
  }
  if (!csv) throw std::runtime_error("could not write " + path);
}

}  // namespace

int main(int argc, char** argv) {
  course::CommonOptions options;
  int blocks_per_sm = 1;
  course::FlagParser flags(
      kLesson,
      "Lesson 08: warp entanglement. The same copy-and-compute kernel (pipeline primitives,\n"
      "3 buffers of 16 KB; each step starts batch k+1, then waits with __pipeline_wait_prior(1)\n"
      "for batch k and computes it) commits and arrives on (cp.async.mbarrier.arrive)\n"
      "converged, from a data-dependent branch with 32 or 4 paths, or after that branch with\n"
      "and without __syncwarp(). The driver prints what the model of the warp-shared batch\n"
      "sequence predicts next to what one instrumented launch per variant measured (with\n"
      "--csv FILE: FILE_entanglement.csv), then times the uninstrumented kernels against a\n"
      "D2D cudaMemcpy (FILE).");
  flags.add_common(options, "uint32 elements of input (default 256M = 1 GiB; K/M/G suffixes)",
                   variant_names());
  flags.add_int("blocks-per-sm", &blocks_per_sm, 0,
                "blocks per SM (default 1, where one block's pipeline is all there is to hide "
                "latency; 0: as many as fit)");

  return course::run_driver(flags, argc, argv, options, [&](const course::DeviceSummary& gpu) {
    const std::size_t n =
        options.size ? options.size : (options.quick ? kQuickElements : kDefaultElements);
    std::cout << "lesson 08 warp_entanglement: " << n << " uint32 elements, " << kThreads
              << " threads per block, " << we::kStages << " buffers of "
              << we::batch_elements(kThreads) * sizeof(std::uint32_t) / 1024
              << " KB; batch k+1 starts before wait_prior(" << we::kAllowedPending
              << ") for batch k; GB/s counts bytes read + bytes written\n";

    course::DeviceBuffer<std::uint32_t> in(n), out(n);
    course::fill_hash(in.span(), /*seed=*/8);
    // to_host is a synchronous cudaMemcpy: when it returns, the fill is done too.
    const std::vector<std::uint32_t> host_in = course::to_host(in.cspan());
    std::vector<std::uint32_t> expected(n);
    course::workload::reference(host_in, expected);

    print_model_example();

    course::Harness harness(kLesson, options, gpu);
    harness.reference_d2d_copy(out.data(), in.data(), in.bytes());
    harness.baseline(kBaseline);
    harness.headline(kBaseline);

    // ---- the entanglement table: one instrumented launch per variant ----------------------
    std::cout << "\nVariants (" << kThreads << " threads per block):\n";
    std::vector<Row> rows;
    std::vector<std::string> failures;
    std::vector<we::LaunchShape> shapes;
    for (const VariantSpec& spec : kVariants) {
      const int resident = we::max_blocks_per_sm(spec.mode, kThreads);
      if (resident < 1) throw std::runtime_error("one block does not fit on an SM");
      const int per_sm = blocks_per_sm > 0 ? std::min(blocks_per_sm, resident) : resident;
      const we::LaunchShape shape{gpu.sm_count * per_sm, kThreads};
      shapes.push_back(shape);
      // With --variant, its control (and the converged baseline) are measured too.
      const bool selected = options.variant.empty() || options.variant == spec.name ||
                            spec.mode == CommitMode::converged ||
                            control_of(options.variant) == spec.name;
      if (!selected) continue;
      std::cout << "  " << spec.name << ": " << shape.blocks << " blocks (" << per_sm
                << " per SM; at most " << resident << " fit); " << spec.what << "\n";

      const we::LanePaths paths = lane_paths(spec.paths);
      Row row{spec, we::model::predict(spec.mode, paths), {}, false, false, false, false};
      course::poison(out.data(), out.bytes(), harness.stream());
      const we::Evidence evidence = we::copy_and_compute_with_evidence(
          in.cspan(), out.span(), spec.mode, paths, shape, harness.stream());
      const course::Comparison c =
          course::compare_exact<std::uint32_t>(expected, course::to_host(out.cspan()));
      row.values_ok = c.ok();
      row.measured = we::summarise(evidence);
      // What holds whatever the hardware entangles: every wait returned after the thread's
      // own batch had landed, and the arrive-ons delivered at least one arrival per execution
      // and at most one per thread.
      row.invariants_ok = row.measured.own_batches_landed &&
                          evidence.arrivals_measured >= evidence.arrive_executions &&
                          evidence.arrivals_measured <= evidence.arrivals_expected;
      if (!row.values_ok) failures.push_back(std::string(spec.name) + ": " + c.summary());
      if (!row.invariants_ok) {
        failures.push_back(std::string(spec.name) +
                           ": a wait returned before its own batch landed, or the arrival "
                           "count is out of range");
      }
      rows.push_back(row);
    }
    // Over-waiting shows as next batches that had already landed when the wait returned,
    // beyond what the same copies with a converged commit (the control) show.
    for (Row& r : rows) {
      for (const Row& control : rows) {
        if (std::string(control.spec.name) != r.spec.control) continue;
        r.control_measured = true;
        r.over_waiting = we::over_waiting_observed(r.measured.newer_landed_fraction,
                                                   control.measured.newer_landed_fraction);
      }
    }

    std::cout << "\nWarp entanglement on " << gpu.name << " (model = the Programming Guide's "
              << "rules for compute capability 8.x; measured = one instrumented launch):\n";
    print_table(rows, std::cout);
    std::cout << "commits, arrive upd.: executions of the commit and the arrive-on per warp and "
                 "round (model; meas. by __activemask()).\nlanes W: lanes whose wait_prior("
              << we::kAllowedPending
              << ") also covers their own next batch, just started (model). next landed: waits "
                 "after which\nthat batch had already landed (measured). over-wait: next landed "
                 ">= that of the control vs (the same copies,\ncommit after __syncwarp()) + 25 "
                 "points. arrivals: per warp and round (model: one per thread; meas.: counted by "
                 "an\nmbarrier per warp). wait cycles: mean clock64() cycles of one wait_prior.\n";
    std::cout << "\nPer lane, lane 0 first: model W = the wait also covers the lane's next batch, "
                 "? = only if the warp did not\nreconverge; measured = tenths of the waits after "
                 "which that batch had already landed:\n";
    for (const Row& r : rows) {
      std::cout << "  " << std::left << std::setw(16) << r.spec.name << "model    "
                << r.model.lanes_over_waiting << "\n  " << std::setw(16) << ""
                << "measured " << we::lane_digits(r.measured.lane_newer_landed_fraction) << "\n"
                << std::right;
    }
    if (!options.csv.empty()) {
      const std::string path = we::entanglement_csv_path(options.csv);
      write_csv(rows, gpu.name, path);
      std::cout << "(entanglement CSV: " << path << ")\n";
    }

    // ---- the harness table: the same kernels, uninstrumented, timed -----------------------
    for (std::size_t i = 0; i < kVariants.size(); ++i) {
      const VariantSpec spec = kVariants[i];
      const we::LaunchShape shape = shapes[i];
      const we::LanePaths paths = lane_paths(spec.paths);
      harness.run({
          spec.name,
          course::workload::bytes_moved(n),
          [&, spec, shape, paths](cudaStream_t s) {
            we::copy_and_compute(in.cspan(), out.span(), spec.mode, paths, shape, s);
          },
          [&](cudaStream_t s) { course::poison(out.data(), out.bytes(), s); },
          [&] {
            const auto actual = course::to_host(out.cspan());
            return course::compare_exact<std::uint32_t>(expected, actual);
          },
      });
    }
    if (!failures.empty()) {
      throw std::runtime_error(std::to_string(failures.size()) +
                               " instrumented run(s) failed; first: " + failures.front());
    }
    std::cout << "\nBandwidth of the uninstrumented kernels:\n";
    return harness.finish();
  });
}
