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
#include "tma_tensor_copy.cuh"
#if COURSE_L11_WITH_LESSON_10
#include "course/workload.h"
#include "tma_bulk_copy.cuh"
#endif

namespace {

using tma_tensor_copy::Shape;
using tma_tensor_copy::Swizzle;

constexpr const char* kLesson = "11_tma_tensor_copy";
constexpr std::uint64_t kDefaultSide = 8192;  // 8192 x 8192 floats = 256 MiB: far beyond L2
constexpr std::int64_t kQuickRows = 1021;     // quick: awkward on both sides, partial tiles
constexpr std::int64_t kQuickCols = 1023;
constexpr const char* kBaseline = "tensor-copy";
constexpr const char* kBroken = "transpose-128B-misaligned";

enum class Kind { copy, transpose, broadcast, lesson10_copy, lesson10_pipeline };

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
#if COURSE_L11_WITH_LESSON_10
  v.push_back({"10-bulk-copy", Kind::lesson10_copy});
  v.push_back({"10-tma-pipeline", Kind::lesson10_pipeline});
#endif
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

}  // namespace

int main(int argc, char** argv) {
  course::CommonOptions options;
  int stages = 4;
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
  flags.add_common(options, "rows and columns of the square matrix (default 8192)",
                   variant_names());
  flags.add_int("stages", &stages, 0, "tiles in flight per block, 1 to 8 (default 4)");

  auto validate = [&] {
    if (stages < tma_tensor_copy::kMinStages || stages > tma_tensor_copy::kMaxStages) {
      throw course::UsageError("--stages must be in [1, 8], got " + std::to_string(stages));
    }
    if (options.size > 46340) {  // 46340^2 floats: the 32-bit tile indices of the kernels
      throw course::UsageError("--size must be at most 46340, got " + std::to_string(options.size));
    }
  };

  auto body = [&](const course::DeviceSummary& gpu) {
    course::require_compute_capability(
        gpu, {9, 0}, "lesson 11 uses the tensor memory accelerator (cp.async.bulk.tensor)");
    const auto side = static_cast<std::int64_t>(options.size ? options.size : kDefaultSide);
    const Shape shape = options.quick && !options.size
                            ? tma_tensor_copy::matrix(kQuickRows, kQuickCols)
                            : tma_tensor_copy::matrix(side, side);
    const Shape shape_t = tma_tensor_copy::transposed(shape);
    const double matrix_bytes = static_cast<double>(shape.rows * shape.cols) * sizeof(float);
    std::cout << "lesson 11 tma_tensor_copy: " << shape.rows << " x " << shape.cols
              << " fp32 (leading dimension " << shape.ld << "), " << stages
              << " stages; GB/s counts bytes read + bytes written\n";

    const std::vector<float> host_in = tma_tensor_copy::hash_floats(shape.elements(), 11);
    course::DeviceBuffer<float> in(shape.elements());
    COURSE_CHECK(cudaMemcpy(in.data(), host_in.data(), in.bytes(), cudaMemcpyHostToDevice));
    const std::size_t out_elements = std::max(4 * shape.elements(), shape_t.elements());
    course::DeviceBuffer<float> out(out_elements);

    // What poison() leaves in a float: padding elements nobody may write keep it.
    float poisoned = 0;
    std::memset(&poisoned, course::kPoisonByte, sizeof(poisoned));

    course::Harness harness(kLesson, options, gpu);
    harness.reference_d2d_copy(out.data(), in.data(), shape.elements() * sizeof(float));
    harness.roof_sm_copy(out.data(), in.data(), shape.elements() * sizeof(float));
    harness.baseline(kBaseline);
    harness.headline("transpose-128B");
    harness.target({"transpose-128B", 0.90, course::Yardstick::sm_copy_roof});

    std::vector<VariantSpec> specs = variants();
    if (options.variant == kBroken) specs.push_back(kBrokenVariant);
    for (const VariantSpec& spec : specs) {
      if (!options.variant.empty() && options.variant != spec.name) continue;
      course::Launch run;
      std::size_t checked_elements = shape.elements();
      std::vector<float> expected;
      double bytes = 2 * matrix_bytes;
      std::string what;
      if (spec.kind == Kind::copy) {
        const tma_tensor_copy::CopyConfig config{64, 64, stages, tma_tensor_copy::OobFill::zero};
        const int blocks = gpu.sm_count * tma_tensor_copy::copy_blocks_per_sm(config);
        run = tma_tensor_copy::prepare_tile_copy(in.cspan(), out.span(), shape, config, blocks);
        expected = host_in;  // out = in; padding as poisoned (see accept_chunk_padding)
        for (std::int64_t r = 0; r < shape.rows; ++r) {
          std::fill(expected.begin() + r * shape.ld + shape.cols,
                    expected.begin() + (r + 1) * shape.ld, poisoned);
        }
        what = "64 x 64 boxes, one thread per block issues, " + std::to_string(blocks) + " blocks";
      } else if (spec.kind == Kind::transpose) {
        const tma_tensor_copy::TransposeConfig config{spec.swizzle, stages, spec.misaligned};
        const int blocks = gpu.sm_count * tma_tensor_copy::transpose_blocks_per_sm(config);
        run = tma_tensor_copy::prepare_transpose(in.cspan(), shape, out.span(), shape_t, config,
                                                 blocks);
        checked_elements = shape_t.elements();
        expected = tma_tensor_copy::transpose_reference(host_in, shape, shape_t, poisoned);
        what =
            std::to_string(tma_tensor_copy::kTransposeTileCols /
                           tma_tensor_copy::transpose_box_cols(spec.swizzle)) +
            " box(es) of 64 x " +
            std::to_string(tma_tensor_copy::transpose_box_cols(spec.swizzle)) + " per tile, " +
            std::to_string(blocks) + " blocks" +
            (spec.misaligned ? "; DELIBERATELY BROKEN: tiles 128 bytes off their alignment" : "");
#if COURSE_L11_WITH_LESSON_10
      } else if (spec.kind == Kind::lesson10_copy || spec.kind == Kind::lesson10_pipeline) {
        // Lesson 10 on the same bytes, read as uint32: its 1-D bulk copy (cp.async.bulk of
        // 16 KB chunks, the padding copied too) and its best copy-and-compute pipeline.
        const cuda::std::span<const std::uint32_t> in32(
            reinterpret_cast<const std::uint32_t*>(in.data()), shape.elements());
        const cuda::std::span<std::uint32_t> out32(reinterpret_cast<std::uint32_t*>(out.data()),
                                                   shape.elements());
        std::vector<std::uint32_t> host32(shape.elements());
        std::memcpy(host32.data(), host_in.data(), host32.size() * sizeof(std::uint32_t));
        std::vector<std::uint32_t> expected32 = host32;
        tma_bulk_copy::Config config{};
        if (spec.kind == Kind::lesson10_copy) config.variant = tma_bulk_copy::Variant::single_ptx;
        const int resident = std::max(tma_bulk_copy::max_blocks_per_sm(config, 256), 1);
        const register_staged::LaunchShape launch_shape{gpu.sm_count * resident, 256};
        if (spec.kind == Kind::lesson10_copy) {
          run = tma_bulk_copy::prepare_bulk_copy(in.data(), out.data(), in32.size_bytes(),
                                                 tma_bulk_copy::Barrier::ptx, launch_shape);
          what = "lesson 10's 1-D bulk copy of the whole allocation";
        } else {
          run = tma_bulk_copy::prepare_copy_and_compute(in32, out32, config, launch_shape);
          course::workload::reference(host32, expected32);
          what = "lesson 10's default pipeline (copy and compute on the same bytes)";
        }
        bytes = 2.0 * static_cast<double>(in32.size_bytes());
        expected.resize(expected32.size());  // compared as bits, like every row
        std::memcpy(expected.data(), expected32.data(), expected32.size() * sizeof(float));
        what += ", " + std::to_string(launch_shape.blocks) + " blocks";
#endif
      } else {
        const tma_tensor_copy::BroadcastConfig config{spec.cluster_size, spec.multicast, stages,
                                                      spec.stagger};
        const int clusters = tma_tensor_copy::broadcast_max_active_clusters(config);
        if (clusters < 1) throw std::runtime_error(spec.name + ": no cluster fits on this GPU");
        run = tma_tensor_copy::prepare_broadcast(in.cspan(), shape, out.span(), config, clusters);
        checked_elements = shape.elements() * spec.cluster_size;
        expected =
            tma_tensor_copy::broadcast_reference(host_in, shape, spec.cluster_size, poisoned);
        bytes = (1.0 + spec.cluster_size) * matrix_bytes;  // the input once, C copies written
        what = std::to_string(clusters) + " clusters of " + std::to_string(spec.cluster_size) +
               (spec.multicast ? ", each tile multicast in slices"
                : spec.stagger ? ", each block loads the tile, blocks out of step"
                               : ", each block loads the tile, blocks in step");
      }
      std::cout << "  " << spec.name << ": " << what << "\n";
      const std::string name = spec.name;
      harness.run(course::Variant{
          name, bytes, std::move(run),
          [&](cudaStream_t s) { course::poison(out.data(), out.bytes(), s); },
          [&, checked_elements, name, kind = spec.kind] {
            tma_tensor_copy::require_no_wait_timeouts(name);
#if COURSE_L11_WITH_LESSON_10
            if (kind == Kind::lesson10_copy || kind == Kind::lesson10_pipeline) {
              if (const unsigned e = tma_bulk_copy::take_wait_errors()) {
                throw std::runtime_error(name + ": " + tma_bulk_copy::describe_wait_errors(e));
              }
            }
#endif
            (void)kind;
            // Bit for bit: a copy, a transpose and in + j must reproduce every bit. The
            // tensor store writes a row's last 16-byte chunk whole, padding included.
            const std::vector<float> all = course::to_host(out.cspan());
            if (kind == Kind::copy || kind == Kind::broadcast) {
              tma_tensor_copy::accept_chunk_padding(
                  expected, all, shape, static_cast<int>(checked_elements / shape.elements()),
                  false);
            }
            return course::compare_exact<std::uint32_t>(
                {reinterpret_cast<const std::uint32_t*>(expected.data()), expected.size()},
                {reinterpret_cast<const std::uint32_t*>(all.data()), checked_elements});
          }});
    }
    std::cout << "Bank conflicts per swizzle and the L2 reads of multicast are hardware counters:\n"
                 "  ctest -L profile -R L11 (Nsight Compute) measures them.\n";
    return harness.finish();
  };

  return course::run_driver(flags, argc, argv, options, body, validate);
}
