// Lesson 11 driver: tensor copies (TMA) of 2-D fp32 tiles. A tile copy (tensor load +
// tensor store), the transpose with each shared-memory swizzle (none, 32, 64, 128 bytes),
// and a broadcast workload in clusters of 2 and 4 blocks with and without multicast; every
// output element checked against the CPU, every figure compared with a device-to-device
// cudaMemcpy and the SM copy roof of the same run. Bank conflicts and L2 traffic are hardware
// counters: the lesson's profile tests read them with Nsight Compute (see the README). Each
// row's launch and expected output are made in parts_rows.cu.
#include <cstdint>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "course/buffers.h"
#include "course/data.h"
#include "course/harness.h"
#include "course/launch.h"
#include "lesson10_rows.h"
#include "tma_tensor_copy.cuh"
#include "tma_tensor_copy_parts.h"

namespace {

using tma_tensor_copy::Shape;
using tma_tensor_copy::Swizzle;
using tma_tensor_copy::parts::kClusterSizes;
using tma_tensor_copy::parts::kCopyBox;
using tma_tensor_copy::parts::Kind;
using tma_tensor_copy::parts::Matrix;
using tma_tensor_copy::parts::Row;
using tma_tensor_copy::parts::VariantSpec;

constexpr const char* kLesson = "11_tma_tensor_copy";
constexpr const char* kHeadline = "transpose-128B";
constexpr std::uint64_t kDefaultSide = 8192;  // 8192 x 8192 floats = 256 MiB: far beyond L2
constexpr std::uint64_t kMaxSide = 46340;     // 46340^2 floats: the kernels' 32-bit tile indices
constexpr std::int64_t kQuickRows = 1021;     // quick: awkward on both sides, partial tiles
constexpr std::int64_t kQuickCols = 1023;
constexpr int kDefaultStages = 4;
constexpr const char* kBaseline = "tensor-copy";
constexpr const char* kBroken = "transpose-128B-misaligned";

std::vector<VariantSpec> variants() {
  std::vector<VariantSpec> v = {{kBaseline, Kind::copy}};
  for (const std::string& name : lesson10_rows::names()) v.push_back({name, Kind::lesson10});
  for (Swizzle s : {Swizzle::none, Swizzle::b32, Swizzle::b64, Swizzle::b128}) {
    v.push_back({std::string("transpose-") + tma_tensor_copy::name(s), Kind::transpose, s});
  }
  for (int c : kClusterSizes) {
    const std::string name = "broadcast-c" + std::to_string(c);
    v.push_back({name + "-plain", Kind::broadcast, Swizzle::none, c, false});
    v.push_back({name + "-staggered", Kind::broadcast, Swizzle::none, c, false, false, true});
    v.push_back({name + "-multicast", Kind::broadcast, Swizzle::none, c, true});
  }
  return v;
}

// DELIBERATELY BROKEN: the 128-byte swizzled tiles 128 bytes off their 1024-byte alignment.
// Its check fails (silently wrong data); it runs only when --variant names it.
const VariantSpec kBrokenVariant = {kBroken, Kind::transpose, Swizzle::b128, 1, false, true};

/// The command line, as given: the common flags and the stages of the tile pipelines.
struct Settings {
  course::CommonOptions options;
  int stages = kDefaultStages;
};

/// Every size and count of the run, resolved from the command line.
struct Plan {
  Shape shape;
  int stages = 0;       ///< tiles in flight per block
  std::string variant;  ///< the one row --variant asks for; empty: every correct row
};

Plan make_plan(const Settings& s);
void print_intro(const Plan& plan);
void add_yardsticks_and_targets(course::Harness& harness, Matrix& m);
void run_variants(course::Harness& harness, Matrix& m, const Plan& plan,
                  const course::DeviceSummary& gpu);
void print_counters_note();

/// The output, part by part: the intro line, the table, where the hardware counters are.
int run(const Settings& s, const course::DeviceSummary& gpu) {
  course::require_compute_capability(
      gpu, {9, 0}, "lesson 11 uses the tensor memory accelerator (cp.async.bulk.tensor)");
  const Plan plan = make_plan(s);
  print_intro(plan);
  Matrix m(plan.shape);
  course::Harness harness(kLesson, s.options, gpu);
  add_yardsticks_and_targets(harness, m);
  run_variants(harness, m, plan, gpu);
  print_counters_note();
  return harness.finish();
}

/// --size (or --quick's awkward shape), --stages and --variant resolved: the one place that
/// reads --quick.
Plan make_plan(const Settings& s) {
  const course::CommonOptions& options = s.options;
  const auto side = static_cast<std::int64_t>(options.size ? options.size : kDefaultSide);
  return {options.quick && !options.size ? tma_tensor_copy::matrix(kQuickRows, kQuickCols)
                                         : tma_tensor_copy::matrix(side, side),
          s.stages, options.variant};
}

void print_intro(const Plan& plan) {
  std::cout << "lesson 11 tma_tensor_copy: " << plan.shape.rows << " x " << plan.shape.cols
            << " fp32 (leading dimension " << plan.shape.ld << "), " << plan.stages
            << " stages; GB/s counts bytes read + bytes written\n";
}

void add_yardsticks_and_targets(course::Harness& harness, Matrix& m) {
  harness.reference_d2d_copy(m.out.data(), m.in.data(), m.shape.elements() * sizeof(float));
  harness.roof_sm_copy(m.out.data(), m.in.data(), m.shape.elements() * sizeof(float));
  harness.baseline(kBaseline);
  harness.headline(kHeadline);
  harness.target({kHeadline, 0.90, course::Yardstick::sm_copy_roof});
}

/// Runs one prepared row through the harness: the output poisoned, one run, any bounded wait
/// that gave up reported, then every checked element compared bit for bit.
void run_row(course::Harness& harness, Matrix& m, const VariantSpec& spec, Row& row) {
  std::cout << "  " << spec.name << ": " << row.what << "\n";
  const std::string name = spec.name;
  const std::size_t checked_elements = row.checked_elements;
  harness.run(course::Variant{
      name, row.bytes, std::move(row.run),
      [&](cudaStream_t s) { course::poison(m.out.data(), m.out.bytes(), s); },
      [&, checked_elements, name, kind = spec.kind] {
        tma_tensor_copy::require_no_wait_timeouts(name);
        if (kind == Kind::lesson10) lesson10_rows::require_no_wait_errors(name);
        // Bit for bit: a copy, a transpose and in + j must reproduce every bit. The
        // tensor store writes a row's last 16-byte chunk whole, padding included.
        const std::vector<float> all = course::to_host(m.out.cspan());
        if (kind == Kind::copy || kind == Kind::broadcast) {
          tma_tensor_copy::accept_chunk_padding(
              row.expected, all, m.shape, static_cast<int>(checked_elements / m.shape.elements()),
              false);
        }
        return course::compare_exact<std::uint32_t>(
            {reinterpret_cast<const std::uint32_t*>(row.expected.data()), row.expected.size()},
            {reinterpret_cast<const std::uint32_t*>(all.data()), checked_elements});
      }});
}

/// The table's rows: every correct variant, or the one --variant names (the broken one too).
void run_variants(course::Harness& harness, Matrix& m, const Plan& plan,
                  const course::DeviceSummary& gpu) {
  std::vector<VariantSpec> specs = variants();
  if (plan.variant == kBroken) specs.push_back(kBrokenVariant);
  for (const VariantSpec& spec : specs) {
    if (!plan.variant.empty() && plan.variant != spec.name) continue;
    Row row = tma_tensor_copy::parts::prepare_row(spec, m, gpu, plan.stages);
    run_row(harness, m, spec, row);
  }
}

void print_counters_note() {
  std::cout << "Bank conflicts per swizzle and the L2 reads of multicast are hardware counters:\n"
               "  ctest -L profile -R L11 (Nsight Compute) measures them.\n";
}

std::vector<std::string> variant_names() {
  std::vector<std::string> names;
  for (const auto& v : variants()) names.push_back(v.name);
  names.emplace_back(kBroken);
  return names;
}

void add_flags(course::FlagParser& flags, Settings& s) {
  flags.add_common(
      s.options,
      "rows and columns of the square matrix (default " + std::to_string(kDefaultSide) + ")",
      variant_names());
  flags.add_int("stages", &s.stages, 0,
                "tiles in flight per block, " + std::to_string(tma_tensor_copy::kMinStages) +
                    " to " + std::to_string(tma_tensor_copy::kMaxStages) + " (default " +
                    std::to_string(kDefaultStages) + ")");
}

/// The range checks the flag parser cannot do; run_driver calls it before opening the device.
void validate(const Settings& s) {
  course::require_in_range("stages", s.stages, tma_tensor_copy::kMinStages,
                           tma_tensor_copy::kMaxStages);
  if (s.options.size > kMaxSide) {
    throw course::UsageError("--size must be at most " + std::to_string(kMaxSide) + ", got " +
                             std::to_string(s.options.size));
  }
}

/// The usage text's description; the tiles and the matrix's sizes come from the constants
/// that define them.
std::string description() {
  const auto tile = [](int rows, int cols) {
    return std::to_string(rows) + " x " + std::to_string(cols) + " tiles";
  };
  return "Lesson 11: 2-D tiles through the tensor memory accelerator (sm_90). 'tensor-copy'\n"
         "loads " +
         tile(kCopyBox, kCopyBox) +
         " with cp.async.bulk.tensor and writes them back with the tensor\n"
         "store; 'transpose-<swizzle>' loads " +
         tile(tma_tensor_copy::kTransposeTileRows, tma_tensor_copy::kTransposeTileCols) +
         " with that shared-memory swizzle and\n"
         "reads them column-wise; 'broadcast-c<C>-...' has every block of a cluster of C write\n"
         "its own copy of the same tile (out[j] = in + j): each block loads the tile itself, in\n"
         "step with its peers (plain) or out of step (staggered), or each loads one slice\n"
         "multicast to the whole cluster. The matrix is --size x --size floats (default " +
         std::to_string(kDefaultSide) + ";\n--quick: " + std::to_string(kQuickRows) + " x " +
         std::to_string(kQuickCols) +
         ").\n"
         "'transpose-128B-misaligned' is DELIBERATELY BROKEN (tiles 128 bytes off the 1024-byte\n"
         "alignment the 128-byte swizzle needs: wrong data, no error): it never runs unless\n"
         "--variant names it.";
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  course::FlagParser flags(kLesson, description());
  add_flags(flags, settings);
  return course::run_driver(
      flags, argc, argv, settings.options,
      [&](const course::DeviceSummary& gpu) { return run(settings, gpu); },
      [&] { validate(settings); });
}
