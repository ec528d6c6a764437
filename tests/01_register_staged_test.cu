// Lesson 01 tests: built twice, against the starter (label `lesson`) and against the
// solution (label `solution`). GPU suites are named Gpu...; they skip without a GPU.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "course/buffers.h"
#include "course/data.h"
#include "course/inspect.h"
#include "course/workload.h"
#include "gpu_test.h"
#include "register_staged.cuh"

namespace {

using course::testing::concerns_todo;  // " [concerns TODO k]" on a failure: gpu_test.h
using course::testing::concerns_todos;
using register_staged::copy_and_compute;
using register_staged::Granularity;
using register_staged::LaunchShape;

// Sizes around every boundary: one element, a partial group, whole and partial batches
// at both granularities and block sizes, a prime, and enough batches to wrap the grid.
const std::vector<std::size_t> kAwkwardSizes = {1,    31,   32,   33,    255,   256,   257,
                                                4095, 4096, 4097, 16383, 16385, 65537, 1000003};

std::string name(Granularity g) { return g == Granularity::fine ? "fine" : "coarse"; }

/// The TODOs an instruction the baseline must not have can come from: an asynchronous copy
/// from the staging (TODO 1), an mbarrier (SYNCS in SASS) from it or from a barrier put in
/// place of a __syncthreads (TODOs 2 and 3).
std::string todos_emitting(const std::string& op) {
  return op == "mbarrier" || op == "SYNCS" ? concerns_todos({1, 2, 3}) : concerns_todo(1);
}

}  // namespace

// Readable parameter values in test names and failure messages.
namespace register_staged {
void PrintTo(Granularity g, std::ostream* os) {
  *os << (g == Granularity::fine ? "fine" : "coarse");
}
void PrintTo(LaunchShape s, std::ostream* os) { *os << s.blocks << "x" << s.threads_per_block; }
}  // namespace register_staged

namespace {

// ---- CPU tests: preconditions are checked before any CUDA call --------------------------

TEST(RegisterStagedShape, BatchAndSharedMemorySizes) {
  EXPECT_EQ(register_staged::batch_elements(Granularity::fine, 256), 256u);
  EXPECT_EQ(register_staged::batch_elements(Granularity::coarse, 256), 4096u);
  EXPECT_EQ(register_staged::shared_bytes(Granularity::coarse, 256), 16384u);
  // A batch always holds whole 32-element groups, so a partner never leaves its batch.
  for (int threads = 32; threads <= 1024; threads += 32) {
    EXPECT_EQ(register_staged::batch_elements(Granularity::fine, threads) % 32, 0u);
  }
}

TEST(RegisterStagedShape, RejectsBadLaunchesBeforeTouchingTheDevice) {
  // Fake device pointers: the launcher must throw before it could dereference them.
  const auto* in = reinterpret_cast<const std::uint32_t*>(std::uintptr_t{1} << 20);
  auto* out = reinterpret_cast<std::uint32_t*>(std::uintptr_t{2} << 20);
  const cuda::std::span<const std::uint32_t> src(in, 1000);
  const cuda::std::span<std::uint32_t> dst(out, 1000);
  for (Granularity g : {Granularity::fine, Granularity::coarse}) {
    EXPECT_THROW(copy_and_compute(src, dst.first(999), g, {1, 256}, 0), std::invalid_argument);
    EXPECT_THROW(copy_and_compute(src, dst, g, {0, 256}, 0), std::invalid_argument);
    EXPECT_THROW(copy_and_compute(src, dst, g, {1, 0}, 0), std::invalid_argument);
    EXPECT_THROW(copy_and_compute(src, dst, g, {1, 100}, 0), std::invalid_argument);
    EXPECT_THROW(copy_and_compute(src, dst, g, {1, 2048}, 0), std::invalid_argument);
  }
  // 16-byte vectors need 16-byte aligned arrays.
  EXPECT_THROW(copy_and_compute(src.subspan(1), dst.subspan(1), Granularity::coarse, {1, 256}, 0),
               std::invalid_argument);
}

TEST(RegisterStagedShape, EmptyInputLaunchesNothing) {
  // No device needed: nothing is launched for an empty input.
  EXPECT_NO_THROW(copy_and_compute({}, {}, Granularity::coarse, {1, 256}, 0));
}

// ---- CPU tests: what the compiler emitted -----------------------------------------------

TEST(RegisterStagedPtx, NoAsynchronousCopyInstructions) {
  // The baseline of the course must not use any of the instructions later lessons teach.
  const auto modules = course::inspect::read_ptx_modules(course::testing::kernels_object_path());
  const auto targets = course::testing::ptx_targets();
  ASSERT_FALSE(targets.empty());
  for (const std::string& target : targets) {
    const auto& module = course::inspect::module_for(modules, target);
    const auto kernels = course::inspect::ptx_kernels(module);
    ASSERT_EQ(kernels.size(), 2u) << "one kernel per granularity in " << target;
    for (const auto& kernel : kernels) {
      for (const char* async : {"cp.async", "cp.async.bulk", "mbarrier", "cp.reduce.async"}) {
        EXPECT_FALSE(course::inspect::uses(kernel.body, async))
            << kernel.name << " uses " << async << todos_emitting(async);
      }
      EXPECT_TRUE(course::inspect::uses(kernel.body, "bar.sync"))
          << kernel.name << ": no __syncthreads" << concerns_todos({2, 3});
    }
  }
}

TEST(RegisterStagedPtx, CoarseKernelMoves16ByteVectors) {
  const auto modules = course::inspect::read_ptx_modules(course::testing::kernels_object_path());
  // register_staged_kernel<Granularity::coarse>, by its mangled name.
  const auto coarse = course::inspect::kernel(
      course::inspect::module_for(modules, course::testing::ptx_targets().back()),
      "register_staged_kernelILNS_11GranularityE1E");
  EXPECT_TRUE(course::inspect::uses(coarse.body, "ld.global.nc.v4.u32") ||
              course::inspect::uses(coarse.body, "ld.global.v4.u32"))
      << "the coarse kernel should load uint4 vectors" << concerns_todo(1);
  EXPECT_TRUE(course::inspect::uses(coarse.body, "st.shared.v4.u32"))
      << "the coarse kernel should store uint4 vectors" << concerns_todo(1);
}

TEST(RegisterStagedSass, NoLdgstsOrBulkCopyInMachineCode) {
  const std::string cuobjdump = course::testing::cuobjdump_path();
  if (cuobjdump.empty()) GTEST_SKIP() << "cuobjdump not found: SASS checks need it";
  const std::string listing = course::inspect::run_command(
      "'" + cuobjdump + "' -sass -arch sm_90 '" + course::testing::kernels_object_path() + "'");
  const auto functions = course::inspect::sass_functions(listing);
  ASSERT_EQ(functions.size(), 2u) << listing.substr(0, 2000);
  for (const auto& f : functions) {
    for (const char* op : {"LDGSTS", "UBLKCP", "UTMALDG", "SYNCS"}) {
      EXPECT_FALSE(course::inspect::uses(f.body, op))
          << f.name << " uses " << op << todos_emitting(op);
    }
    // __syncthreads() is barrier 0 (the test-only hooks use another one).
    EXPECT_TRUE(course::inspect::uses(f.body, "BAR.SYNC.DEFER_BLOCKING 0x0"))
        << f.name << ": no BAR.SYNC of barrier 0" << concerns_todos({2, 3});
  }
}

// ---- GPU tests: every element of every awkward size, at several launch shapes ----------

using Case = std::tuple<Granularity, LaunchShape>;

class GpuRegisterStaged : public course::testing::GpuTestWithParam<Case> {};

TEST_P(GpuRegisterStaged, EveryElementMatchesTheReference) {
  const auto [granularity, shape] = GetParam();
  for (std::size_t n : kAwkwardSizes) {
    course::DeviceBuffer<std::uint32_t> in(n), out(n);
    course::fill_hash(in.span(), static_cast<std::uint32_t>(n));
    course::poison(out.data(), out.bytes());
    copy_and_compute(in.cspan(), out.span(), granularity, shape, 0);
    COURSE_CHECK(cudaDeviceSynchronize());

    const auto host_in = course::to_host(in.cspan());
    std::vector<std::uint32_t> expected(n);
    course::workload::reference(host_in, expected);
    const auto c = course::compare_exact<std::uint32_t>(expected, course::to_host(out.cspan()));
    ASSERT_TRUE(c.ok()) << name(granularity) << ", " << shape.blocks << "x"
                        << shape.threads_per_block << ", n=" << n << ": " << c.summary()
                        << concerns_todos({1, 2, 3});
    // The kernel must not write to its input.
    std::vector<std::uint32_t> original(n);
    course::fill_hash_host(original, static_cast<std::uint32_t>(n));
    ASSERT_EQ(host_in, original) << "the input changed, n=" << n << concerns_todo(1);
  }
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const auto [g, shape] = info.param;
  return name(g) + "_" + std::to_string(shape.blocks) + "x" +
         std::to_string(shape.threads_per_block);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GpuRegisterStaged,
    ::testing::Combine(::testing::Values(Granularity::fine, Granularity::coarse),
                       ::testing::Values(LaunchShape{1, 32}, LaunchShape{3, 96},
                                         LaunchShape{7, 256}, LaunchShape{264, 256},
                                         LaunchShape{2, 1024})),
    case_name);

// ---- GPU test: the barriers wait for the whole block, not one warp ------------------------
//
// A thread computes from its element and its partner, and the two barriers must cover every
// thread that staged or reads them. With the values alone, a barrier that waits only for the
// thread's own warp (a __syncwarp) mostly passes: the warps of a block run close together.
// With a HoldBack every warp but one (a different one in each block) stages each batch late
// and reads it late, so a warp that waited only for itself gets ahead of the others.
//
// Where that shows depends on who stages and who reads each element. Within one batch of this
// kernel the stager and every reader of an element are in the same warp (thread t stages and
// computes the same elements or 16-byte vectors, and the partners lie in its own warp), so a
// __syncwarp as the first barrier (TODO 2) is, here, enough. From one batch to the next it is
// not: a full coarse batch is staged and read as 16-byte vectors, the input's last, partial
// batch element by element, so when a block goes from a full batch to the tail, the runner
// stores tail elements into bytes that other warps are still held back from reading. With a
// __syncwarp as the second barrier (TODO 3, the lesson's bug hunt), those readers compute from
// the tail's elements: wrong values at coarse granularity, in the held_back_sizes() with
// several batches per block (the last one partial). Fine granularity cannot show it (both
// batches element by element): it runs first as the control.

TEST(GpuRegisterStagedHeldBack, EveryWarpIsWaitedForAtBothBarriers) {
  if (const auto reason = course::testing::gpu_unavailable()) GTEST_SKIP() << *reason;
  for (Granularity g : {Granularity::fine, Granularity::coarse}) {
    for (LaunchShape shape : {LaunchShape{16, 256}, LaunchShape{6, 96}}) {
      const std::size_t batch = register_staged::batch_elements(g, shape.threads_per_block);
      for (std::size_t n : course::testing::held_back_sizes(shape.blocks, batch)) {
        course::DeviceBuffer<std::uint32_t> in(n), out(n);
        course::fill_hash(in.span(), static_cast<std::uint32_t>(n + 1));
        course::poison(out.data(), out.bytes());
        register_staged::prepare_copy_and_compute(
            in.cspan(), out.span(), g, shape,
            register_staged::HoldBack{course::testing::kHoldBackNs})(0);
        COURSE_CHECK(cudaDeviceSynchronize());
        std::vector<std::uint32_t> expected(n);
        course::workload::reference(course::to_host(in.cspan()), expected);
        const auto c = course::compare_exact<std::uint32_t>(expected, course::to_host(out.cspan()));
        ASSERT_TRUE(c.ok()) << name(g) << ", " << shape.blocks << "x" << shape.threads_per_block
                            << ", n=" << n << ", warps held back: " << c.summary()
                            << " (does each barrier wait for every warp of the block?)"
                            << concerns_todos({1, 2, 3});
      }
    }
  }
}

TEST(GpuRegisterStagedOccupancy, MaxBlocksPerSmIsPositiveAndShrinksWithSharedMemory) {
  if (const auto reason = course::testing::gpu_unavailable()) GTEST_SKIP() << *reason;
  const int fine = register_staged::max_blocks_per_sm(Granularity::fine, 256);
  const int coarse = register_staged::max_blocks_per_sm(Granularity::coarse, 256);
  EXPECT_GE(fine, 1);
  EXPECT_GE(coarse, 1);
  EXPECT_LE(coarse, fine);  // 16 KB of shared memory per block can only lower occupancy
}

}  // namespace
