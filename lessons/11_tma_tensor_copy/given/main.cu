// Lesson 11 driver: tensor copies (TMA) of 2-D fp32 tiles. A tile copy (tensor load +
// tensor store), the transpose with each shared-memory swizzle (none, 32, 64, 128 bytes),
// and a broadcast workload in clusters of 2 and 4 blocks with and without multicast; every
// output element checked against the CPU, every figure compared with a device-to-device
// cudaMemcpy and the SM copy roof of the same run. Bank conflicts and L2 traffic are hardware
// counters: the lesson's profile tests read them with Nsight Compute (see the README).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "course/buffers.h"
#include "course/data.h"
#include "course/harness.h"
#include "course/launch.h"
#include "lesson10_rows.h"
#include "tma_tensor_copy.cuh"

namespace {

using tma_tensor_copy::Shape;
using tma_tensor_copy::Swizzle;

constexpr const char* kLesson = "11_tma_tensor_copy";
constexpr std::uint64_t kDefaultSide = 8192;  // 8192 x 8192 floats = 256 MiB: far beyond L2
constexpr std::int64_t kQuickRows = 1021;     // quick: awkward on both sides, partial tiles
constexpr std::int64_t kQuickCols = 1023;
constexpr const char* kBaseline = "tensor-copy";
constexpr const char* kBroken = "transpose-128B-misaligned";

enum class Kind { copy, transpose, broadcast, lesson10 };

struct VariantSpec {
  std::string name;
  Kind kind;
  Swizzle swizzle = Swizzle::none;
  int cluster_size = 1;
  bool multicast = false;
  bool misaligned = false;
  bool stagger = false;
};

std::vector<VariantSpec> variants() {
  std::vector<VariantSpec> v = {{kBaseline, Kind::copy}};
  for (const std::string& name : lesson10_rows::names()) v.push_back({name, Kind::lesson10});
  for (Swizzle s : {Swizzle::none, Swizzle::b32, Swizzle::b64, Swizzle::b128}) {
    v.push_back({std::string("transpose-") + tma_tensor_copy::name(s), Kind::transpose, s});
  }
  for (int c : {2, 4}) {
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

std::vector<std::string> variant_names() {
  std::vector<std::string> names;
  for (const auto& v : variants()) names.push_back(v.name);
  names.emplace_back(kBroken);
  return names;
}

/// The command line: the common flags and the stages of the tile pipelines.
struct Settings {
  course::CommonOptions options;
  int stages = 4;
};

void add_flags(course::FlagParser& flags, Settings& s) {
  flags.add_common(s.options, "rows and columns of the square matrix (default 8192)",
                   variant_names());
  flags.add_int("stages", &s.stages, 0, "tiles in flight per block, 1 to 8 (default 4)");
}

/// The range checks the flag parser cannot do; run_driver calls it before opening the device.
void validate(const Settings& s) {
  course::require_in_range("stages", s.stages, tma_tensor_copy::kMinStages,
                           tma_tensor_copy::kMaxStages);
  if (s.options.size > 46340) {  // 46340^2 floats: the 32-bit tile indices of the kernels
    throw course::UsageError("--size must be at most 46340, got " + std::to_string(s.options.size));
  }
}

/// The matrix on the host and the device, its transposed shape, and an output large enough for
/// every variant (a transpose, or C copies of the input for a broadcast of clusters up to 4).
struct Matrix {
  explicit Matrix(const Shape& s)
      : shape(s),
        shape_t(tma_tensor_copy::transposed(s)),
        matrix_bytes(static_cast<double>(s.rows * s.cols) * sizeof(float)),
        host_in(tma_tensor_copy::hash_floats(s.elements(), 11)),
        in(s.elements()),
        out(std::max(4 * s.elements(), shape_t.elements())) {
    COURSE_CHECK(cudaMemcpy(in.data(), host_in.data(), in.bytes(), cudaMemcpyHostToDevice));
    // What poison() leaves in a float: padding elements nobody may write keep it.
    std::memset(&poisoned, course::kPoisonByte, sizeof(poisoned));
  }

  const Shape shape, shape_t;
  const double matrix_bytes;
  const std::vector<float> host_in;
  course::DeviceBuffer<float> in, out;
  float poisoned = 0;
};

/// A variant ready to run: its launch, what it must leave in `out` (compared bit for bit over
/// `checked_elements`), the bytes it moves, and the line that describes it.
struct Row {
  course::Launch run;
  std::size_t checked_elements = 0;
  std::vector<float> expected;
  double bytes = 0;
  std::string what;
};

Row prepare_copy(Matrix& m, const course::DeviceSummary& gpu, int stages) {
  Row row{{}, m.shape.elements(), {}, 2 * m.matrix_bytes, {}};
  const tma_tensor_copy::CopyConfig config{64, 64, stages, tma_tensor_copy::OobFill::zero};
  const int blocks = gpu.sm_count * tma_tensor_copy::copy_blocks_per_sm(config);
  row.run = tma_tensor_copy::prepare_tile_copy(m.in.cspan(), m.out.span(), m.shape, config, blocks);
  row.expected = m.host_in;  // out = in; padding as poisoned (see accept_chunk_padding)
  for (std::int64_t r = 0; r < m.shape.rows; ++r) {
    std::fill(row.expected.begin() + r * m.shape.ld + m.shape.cols,
              row.expected.begin() + (r + 1) * m.shape.ld, m.poisoned);
  }
  row.what = "64 x 64 boxes, one thread per block issues, " + std::to_string(blocks) + " blocks";
  return row;
}

Row prepare_transpose(const VariantSpec& spec, Matrix& m, const course::DeviceSummary& gpu,
                      int stages) {
  Row row{{}, m.shape_t.elements(), {}, 2 * m.matrix_bytes, {}};
  const tma_tensor_copy::TransposeConfig config{spec.swizzle, stages, spec.misaligned};
  const int blocks = gpu.sm_count * tma_tensor_copy::transpose_blocks_per_sm(config);
  row.run = tma_tensor_copy::prepare_transpose(m.in.cspan(), m.shape, m.out.span(), m.shape_t,
                                               config, blocks);
  row.expected = tma_tensor_copy::transpose_reference(m.host_in, m.shape, m.shape_t, m.poisoned);
  row.what = std::to_string(tma_tensor_copy::kTransposeTileCols /
                            tma_tensor_copy::transpose_box_cols(spec.swizzle)) +
             " box(es) of 64 x " +
             std::to_string(tma_tensor_copy::transpose_box_cols(spec.swizzle)) + " per tile, " +
             std::to_string(blocks) + " blocks" +
             (spec.misaligned ? "; DELIBERATELY BROKEN: tiles 128 bytes off their alignment" : "");
  return row;
}

Row prepare_broadcast(const VariantSpec& spec, Matrix& m, int stages) {
  Row row;
  const tma_tensor_copy::BroadcastConfig config{spec.cluster_size, spec.multicast, stages,
                                                spec.stagger};
  const int clusters = tma_tensor_copy::broadcast_max_active_clusters(config);
  if (clusters < 1) throw std::runtime_error(spec.name + ": no cluster fits on this GPU");
  row.run =
      tma_tensor_copy::prepare_broadcast(m.in.cspan(), m.shape, m.out.span(), config, clusters);
  row.checked_elements = m.shape.elements() * spec.cluster_size;
  row.expected =
      tma_tensor_copy::broadcast_reference(m.host_in, m.shape, spec.cluster_size, m.poisoned);
  row.bytes = (1.0 + spec.cluster_size) * m.matrix_bytes;  // the input once, C copies written
  row.what = std::to_string(clusters) + " clusters of " + std::to_string(spec.cluster_size) +
             (spec.multicast ? ", each tile multicast in slices"
              : spec.stagger ? ", each block loads the tile, blocks out of step"
                             : ", each block loads the tile, blocks in step");
  return row;
}

Row prepare_row(const VariantSpec& spec, Matrix& m, const course::DeviceSummary& gpu, int stages) {
  if (spec.kind == Kind::copy) return prepare_copy(m, gpu, stages);
  if (spec.kind == Kind::transpose) return prepare_transpose(spec, m, gpu, stages);
  if (spec.kind == Kind::lesson10) {
    lesson10_rows::Row row =
        lesson10_rows::prepare(spec.name, m.in.data(), m.out.data(), m.host_in, gpu);
    return {std::move(row.run), m.shape.elements(), std::move(row.expected), row.bytes,
            std::move(row.what)};
  }
  return prepare_broadcast(spec, m, stages);
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

int run(const Settings& settings, const course::DeviceSummary& gpu) {
  const course::CommonOptions& options = settings.options;
  course::require_compute_capability(
      gpu, {9, 0}, "lesson 11 uses the tensor memory accelerator (cp.async.bulk.tensor)");
  const auto side = static_cast<std::int64_t>(options.size ? options.size : kDefaultSide);
  const Shape shape = options.quick && !options.size
                          ? tma_tensor_copy::matrix(kQuickRows, kQuickCols)
                          : tma_tensor_copy::matrix(side, side);
  std::cout << "lesson 11 tma_tensor_copy: " << shape.rows << " x " << shape.cols
            << " fp32 (leading dimension " << shape.ld << "), " << settings.stages
            << " stages; GB/s counts bytes read + bytes written\n";

  Matrix m(shape);
  course::Harness harness(kLesson, options, gpu);
  harness.reference_d2d_copy(m.out.data(), m.in.data(), shape.elements() * sizeof(float));
  harness.roof_sm_copy(m.out.data(), m.in.data(), shape.elements() * sizeof(float));
  harness.baseline(kBaseline);
  harness.headline("transpose-128B");
  harness.target({"transpose-128B", 0.90, course::Yardstick::sm_copy_roof});

  std::vector<VariantSpec> specs = variants();
  if (options.variant == kBroken) specs.push_back(kBrokenVariant);
  for (const VariantSpec& spec : specs) {
    if (!options.variant.empty() && options.variant != spec.name) continue;
    Row row = prepare_row(spec, m, gpu, settings.stages);
    run_row(harness, m, spec, row);
  }
  std::cout << "Bank conflicts per swizzle and the L2 reads of multicast are hardware counters:\n"
               "  ctest -L profile -R L11 (Nsight Compute) measures them.\n";
  return harness.finish();
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  course::FlagParser flags(
      kLesson,
      "Lesson 11: 2-D tiles through the tensor memory accelerator (sm_90). 'tensor-copy'\n"
      "loads 64 x 64 tiles with cp.async.bulk.tensor and writes them back with the tensor\n"
      "store; 'transpose-<swizzle>' loads 64 x 32 tiles with that shared-memory swizzle and\n"
      "reads them column-wise; 'broadcast-c<C>-...' has every block of a cluster of C write\n"
      "its own copy of the same tile (out[j] = in + j): each block loads the tile itself, in\n"
      "step with its peers (plain) or out of step (staggered), or each loads one slice\n"
      "multicast to the whole cluster. The matrix is --size x --size floats (default 8192;\n"
      "--quick: 1021 x 1023).\n"
      "'transpose-128B-misaligned' is DELIBERATELY BROKEN (tiles 128 bytes off the 1024-byte\n"
      "alignment the 128-byte swizzle needs: wrong data, no error): it never runs unless\n"
      "--variant names it.");
  add_flags(flags, settings);
  return course::run_driver(
      flags, argc, argv, settings.options,
      [&](const course::DeviceSummary& gpu) { return run(settings, gpu); },
      [&] { validate(settings); });
}
