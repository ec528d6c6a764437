// Lesson 02 tests: built twice, against the starter (label `lesson`) and against the
// solution (label `solution`). GPU suites are named Gpu...; they skip without a GPU.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "cg_memcpy_async.cuh"
#include "course/buffers.h"
#include "course/data.h"
#include "course/inspect.h"
#include "course/workload.h"
#include "gpu_test.h"

namespace {

using cg_memcpy_async::Buffering;
using cg_memcpy_async::copy_and_compute;
using cg_memcpy_async::Granularity;
using cg_memcpy_async::LaunchShape;
using course::testing::concerns_todo;  // " [concerns TODO k]" on a failure: gpu_test.h
using course::testing::concerns_todos;

// Sizes around every boundary: one element, a partial group, whole and partial batches
// at both granularities and block sizes, a prime, and enough batches to wrap the grid.
// For the double-buffered kernel they also give blocks with no batch, one batch (no next
// copy at all), two batches, and a partial batch as the prefetched "next" one.
const std::vector<std::size_t> kAwkwardSizes = {
    1, 31, 32, 33, 255, 256, 257, 4095, 4096, 4097, 16383, 16385, 32769, 65537, 1000003};

std::string name(Granularity g) { return g == Granularity::fine ? "fine" : "coarse"; }
std::string name(Buffering b) { return b == Buffering::single ? "wait" : "double"; }

// The TODOs a failure of a kernel with buffering `b` concerns. The copies: copy_batch_async
// (TODO 1), and in the double-buffered kernel its calls before the loop (TODO 3) and for
// the next batch (TODO 4).
std::string copy_todos(Buffering b) {
  return b == Buffering::single ? concerns_todo(1) : concerns_todos({1, 3, 4});
}
// The wait for the batch: TODO 2 in the single-buffer kernel, TODO 4 in the other.
std::string wait_todos(Buffering b) {
  return b == Buffering::single ? concerns_todo(2) : concerns_todo(4);
}
// The block syncs: inside the wait, and (double-buffered, TODO 5) before a refill.
std::string sync_todos(Buffering b) {
  return b == Buffering::single ? concerns_todo(2) : concerns_todos({4, 5});
}
// Instructions memcpy_async never emits: a copy or a wait written some other way.
std::string copy_or_wait_todos(Buffering b) {
  return b == Buffering::single ? concerns_todos({1, 2}) : concerns_todos({1, 3, 4});
}
// Every element of the output: every TODO of the kernel.
std::string result_todos(Buffering b) {
  return b == Buffering::single ? concerns_todos({1, 2}) : concerns_todos({1, 3, 4, 5});
}

/// Runs the kernel on `in` (already filled) and checks every element of `out` against
/// the CPU reference and that `in` is unchanged. Returns a failure message, or "".
std::string run_and_check(cuda::std::span<const std::uint32_t> in,
                          cuda::std::span<std::uint32_t> out, Granularity g, Buffering b,
                          LaunchShape shape) {
  course::poison(out.data(), out.size_bytes());
  const auto before = course::to_host(in);
  copy_and_compute(in, out, g, b, shape, 0);
  COURSE_CHECK(cudaDeviceSynchronize());
  std::vector<std::uint32_t> expected(in.size());
  course::workload::reference(before, expected);
  const auto c = course::compare_exact<std::uint32_t>(
      expected, course::to_host(cuda::std::span<const std::uint32_t>(out)));
  if (!c.ok()) return c.summary();
  if (course::to_host(in) != before) return "the kernel wrote to its input";
  return "";
}

/// Whether a PTX body holds `cp.async.<cache>.shared.global [..], [..], size, size;`.
bool copies_with(const std::string& body, const std::string& cache, int bytes) {
  const std::string size = std::to_string(bytes);
  const std::regex line("cp\\.async\\." + cache +
                        "\\.shared\\.global\\s*\\[[^\\]]+\\],\\s*\\[[^\\]]+\\],\\s*" + size +
                        ",\\s*" + size + ";");
  return std::regex_search(body, line);
}

}  // namespace

// Readable parameter values in test names and failure messages.
namespace register_staged {
void PrintTo(Granularity g, std::ostream* os) { *os << name(g); }
void PrintTo(LaunchShape s, std::ostream* os) { *os << s.blocks << "x" << s.threads_per_block; }
}  // namespace register_staged
namespace cg_memcpy_async {
void PrintTo(Buffering b, std::ostream* os) { *os << name(b); }
}  // namespace cg_memcpy_async

namespace {

// ---- CPU tests: sizes, and preconditions checked before any CUDA call -------------------

TEST(CgMemcpyAsyncShape, BatchesAreLesson01sAndDoubleBufferingDoublesSharedMemory) {
  EXPECT_EQ(cg_memcpy_async::batch_elements(Granularity::fine, 256), 256u);     // 1 KB
  EXPECT_EQ(cg_memcpy_async::batch_elements(Granularity::coarse, 256), 4096u);  // 16 KB
  EXPECT_EQ(cg_memcpy_async::buffer_count(Buffering::single), 1);
  EXPECT_EQ(cg_memcpy_async::buffer_count(Buffering::double_buffered), 2);
  EXPECT_EQ(cg_memcpy_async::shared_bytes(Granularity::fine, Buffering::single, 256), 1024u);
  EXPECT_EQ(cg_memcpy_async::shared_bytes(Granularity::coarse, Buffering::single, 256), 16384u);
  EXPECT_EQ(cg_memcpy_async::shared_bytes(Granularity::coarse, Buffering::double_buffered, 256),
            32768u);
  for (int threads = 32; threads <= 1024; threads += 32) {
    for (Granularity g : {Granularity::fine, Granularity::coarse}) {
      // Whole 32-element groups per batch: a partner never leaves its batch.
      EXPECT_EQ(cg_memcpy_async::batch_elements(g, threads) % 32, 0u);
      // Every batch, and the second buffer, start 16-byte aligned (128-byte, in fact).
      EXPECT_EQ(cg_memcpy_async::batch_elements(g, threads) * sizeof(std::uint32_t) % 128, 0u);
    }
  }
}

TEST(CgMemcpyAsyncShape, RejectsBadLaunchesBeforeTouchingTheDevice) {
  // Fake device pointers: the launcher must throw before it could dereference them.
  const auto* in = reinterpret_cast<const std::uint32_t*>(std::uintptr_t{1} << 20);
  auto* out = reinterpret_cast<std::uint32_t*>(std::uintptr_t{2} << 20);
  const cuda::std::span<const std::uint32_t> src(in, 1000);
  const cuda::std::span<std::uint32_t> dst(out, 1000);
  for (Granularity g : {Granularity::fine, Granularity::coarse}) {
    for (Buffering b : {Buffering::single, Buffering::double_buffered}) {
      EXPECT_THROW(copy_and_compute(src, dst.first(999), g, b, {1, 256}, 0), std::invalid_argument);
      EXPECT_THROW(copy_and_compute(src, dst, g, b, {0, 256}, 0), std::invalid_argument);
      EXPECT_THROW(copy_and_compute(src, dst, g, b, {-1, 256}, 0), std::invalid_argument);
      EXPECT_THROW(copy_and_compute(src, dst, g, b, {1, 0}, 0), std::invalid_argument);
      EXPECT_THROW(copy_and_compute(src, dst, g, b, {1, 100}, 0), std::invalid_argument);
      EXPECT_THROW(copy_and_compute(src, dst, g, b, {1, 2048}, 0), std::invalid_argument);
    }
  }
  // aligned_size_t<16> is a promise: at coarse granularity both arrays must be 16-byte
  // aligned, whichever of the two is not.
  for (Buffering b : {Buffering::single, Buffering::double_buffered}) {
    EXPECT_THROW(
        copy_and_compute(src.subspan(1), dst.subspan(1), Granularity::coarse, b, {1, 256}, 0),
        std::invalid_argument);
    EXPECT_THROW(copy_and_compute(src.subspan(4, 996), dst.subspan(1, 996), Granularity::coarse, b,
                                  {1, 256}, 0),
                 std::invalid_argument);
  }
}

TEST(CgMemcpyAsyncShape, EmptyInputLaunchesNothing) {
  // No device needed: nothing is launched for an empty input.
  for (Granularity g : {Granularity::fine, Granularity::coarse}) {
    for (Buffering b : {Buffering::single, Buffering::double_buffered}) {
      EXPECT_NO_THROW(copy_and_compute({}, {}, g, b, {1, 256}, 0));
    }
  }
}

// ---- CPU tests: what the compiler emitted -----------------------------------------------

// The kernels by their mangled names: <kind>_kernel<register_staged::Granularity::...>.
struct KernelName {
  const char* part;
  Granularity granularity;
  Buffering buffering;
};
const KernelName kKernels[] = {
    {"single_buffer_kernelILN15register_staged11GranularityE0E", Granularity::fine,
     Buffering::single},
    {"single_buffer_kernelILN15register_staged11GranularityE1E", Granularity::coarse,
     Buffering::single},
    {"double_buffered_kernelILN15register_staged11GranularityE0E", Granularity::fine,
     Buffering::double_buffered},
    {"double_buffered_kernelILN15register_staged11GranularityE1E", Granularity::coarse,
     Buffering::double_buffered},
};

TEST(CgMemcpyAsyncPtx, EveryKernelCopiesWithCpAsyncAndWaitsForItsGroups) {
  const auto modules = course::inspect::read_ptx_modules(course::testing::kernels_object_path());
  const auto targets = course::testing::ptx_targets();
  ASSERT_FALSE(targets.empty());
  for (const std::string& target : targets) {
    const auto& module = course::inspect::module_for(modules, target);
    ASSERT_EQ(course::inspect::ptx_kernels(module).size(), 4u) << "four kernels in " << target;
    for (const KernelName& k : kKernels) {
      const auto kernel = course::inspect::kernel(module, k.part);
      const std::string what = target + " " + name(k.granularity) + "/" + name(k.buffering);
      // The copy goes global -> shared without registers, one commit group per call...
      EXPECT_TRUE(course::inspect::uses(kernel.body, "cp.async"))
          << what << ": no cp.async" << copy_todos(k.buffering);
      EXPECT_TRUE(course::inspect::uses(kernel.body, "cp.async.commit_group"))
          << what << ": no commit_group" << copy_todos(k.buffering);
      // ...every batch is waited for: wait is cp.async.wait_group 0 (wait_all)...
      EXPECT_TRUE(course::inspect::uses(kernel.body, "cp.async.wait_group 0") ||
                  course::inspect::uses(kernel.body, "cp.async.wait_all"))
          << what << ": nothing waits for all copies" << wait_todos(k.buffering);
      // ...and the block syncs (inside wait, and before a buffer is refilled).
      EXPECT_TRUE(course::inspect::uses(kernel.body, "barrier.sync") ||
                  course::inspect::uses(kernel.body, "bar.sync"))
          << what << ": no block sync" << sync_todos(k.buffering);
      // Every batch and its tail may use 4-byte copies (cp.async.ca ... 4, 4).
      EXPECT_TRUE(copies_with(kernel.body, "ca", 4))
          << what << ": no 4-byte cp.async" << copy_todos(k.buffering);
      // cooperative_groups::memcpy_async never uses the Hopper bulk copy or an mbarrier.
      for (const char* other : {"cp.async.bulk", "mbarrier", "cp.async.mbarrier.arrive"}) {
        EXPECT_FALSE(course::inspect::uses(kernel.body, other))
            << what << " uses " << other << copy_or_wait_todos(k.buffering);
      }
    }
  }
}

TEST(CgMemcpyAsyncPtx, CoarseKernelsCopy16ByteChunksThroughAlignedSizeT) {
  const auto modules = course::inspect::read_ptx_modules(course::testing::kernels_object_path());
  for (const std::string& target : course::testing::ptx_targets()) {
    const auto& module = course::inspect::module_for(modules, target);
    for (const KernelName& k : kKernels) {
      const auto kernel = course::inspect::kernel(module, k.part);
      const std::string what = target + " " + name(k.granularity) + "/" + name(k.buffering);
      // aligned_size_t<16> selects cp.async.cg (L1 bypass) with 16 bytes per instruction;
      // the fine kernels never promise 16-byte alignment, so they must not have it.
      EXPECT_EQ(copies_with(kernel.body, "cg", 16), k.granularity == Granularity::coarse)
          << what << copy_todos(k.buffering);
    }
  }
}

TEST(CgMemcpyAsyncPtx, OnlyTheDoubleBufferedKernelsLeaveOneGroupInFlight) {
  const auto modules = course::inspect::read_ptx_modules(course::testing::kernels_object_path());
  for (const std::string& target : course::testing::ptx_targets()) {
    const auto& module = course::inspect::module_for(modules, target);
    for (const KernelName& k : kKernels) {
      const auto kernel = course::inspect::kernel(module, k.part);
      // wait_prior<1> is cp.async.wait_group 1: all groups but the newest are done.
      EXPECT_EQ(course::inspect::uses(kernel.body, "cp.async.wait_group 1"),
                k.buffering == Buffering::double_buffered)
          << target << " " << name(k.granularity) << "/" << name(k.buffering)
          << wait_todos(k.buffering);
    }
  }
}

TEST(CgMemcpyAsyncSass, LdgstsInMachineCodeAndNoBulkCopy) {
  const std::string cuobjdump = course::testing::cuobjdump_path();
  if (cuobjdump.empty()) GTEST_SKIP() << "cuobjdump not found: SASS checks need it";
  const std::string listing = course::inspect::run_command(
      "'" + cuobjdump + "' -sass -arch sm_90 '" + course::testing::kernels_object_path() + "'");
  const auto functions = course::inspect::sass_functions(listing);
  ASSERT_EQ(functions.size(), 4u) << listing.substr(0, 2000);
  for (const KernelName& k : kKernels) {
    const std::string what = name(k.granularity) + "/" + name(k.buffering);
    int found = 0;
    for (const auto& f : functions) {
      if (f.name.find(k.part) == std::string::npos) continue;
      ++found;
      // LDGSTS is cp.async in machine code; LDGDEPBAR commits a group, DEPBAR.LE SB0, N
      // waits until at most N groups are pending.
      EXPECT_TRUE(course::inspect::uses(f.body, "LDGSTS.E")) << what << copy_todos(k.buffering);
      EXPECT_TRUE(course::inspect::uses(f.body, "LDGDEPBAR")) << what << copy_todos(k.buffering);
      EXPECT_TRUE(course::inspect::uses(f.body, "DEPBAR.LE SB0, 0x0"))
          << what << wait_todos(k.buffering);
      EXPECT_EQ(course::inspect::uses(f.body, "DEPBAR.LE SB0, 0x1"),
                k.buffering == Buffering::double_buffered)
          << what << wait_todos(k.buffering);
      // 16-byte copies that bypass L1 (cp.async.cg) only where aligned_size_t<16> promised.
      EXPECT_EQ(course::inspect::uses(f.body, "LDGSTS.E.BYPASS.128"),
                k.granularity == Granularity::coarse)
          << what << copy_todos(k.buffering);
      for (const char* op : {"UBLKCP", "UTMALDG", "SYNCS"}) {
        EXPECT_FALSE(course::inspect::uses(f.body, op))
            << what << " uses " << op << copy_or_wait_todos(k.buffering);
      }
    }
    EXPECT_EQ(found, 1) << what << " in the SASS listing";
  }
}

// ---- GPU tests: every element of every awkward size, at several launch shapes ----------

using Case = std::tuple<Granularity, Buffering, LaunchShape>;

class GpuCgMemcpyAsync : public course::testing::GpuTestWithParam<Case> {};

TEST_P(GpuCgMemcpyAsync, EveryElementMatchesTheReference) {
  const auto [granularity, buffering, shape] = GetParam();
  for (std::size_t n : kAwkwardSizes) {
    course::DeviceBuffer<std::uint32_t> in(n), out(n);
    course::fill_hash(in.span(), static_cast<std::uint32_t>(n));
    const std::string failure =
        run_and_check(in.cspan(), out.span(), granularity, buffering, shape);
    ASSERT_EQ(failure, "") << name(granularity) << "/" << name(buffering) << ", " << shape.blocks
                           << "x" << shape.threads_per_block << ", n=" << n
                           << result_todos(buffering);
  }
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const auto [g, b, shape] = info.param;
  return name(g) + "_" + name(b) + "_" + std::to_string(shape.blocks) + "x" +
         std::to_string(shape.threads_per_block);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GpuCgMemcpyAsync,
    ::testing::Combine(::testing::Values(Granularity::fine, Granularity::coarse),
                       ::testing::Values(Buffering::single, Buffering::double_buffered),
                       ::testing::Values(LaunchShape{1, 32}, LaunchShape{3, 96},
                                         LaunchShape{7, 256}, LaunchShape{264, 256},
                                         LaunchShape{2, 1024})),
    case_name);

class GpuCgMemcpyAsyncOffsets : public course::testing::GpuTest {};

TEST_F(GpuCgMemcpyAsyncOffsets, FineGranularityNeedsOnly4ByteAlignment) {
  // Arrays that start 4, 8 or 12 bytes past a 16-byte boundary: the 4-byte copies of the
  // fine kernels must not care. (Coarse refuses them: see RejectsBadLaunches...)
  constexpr std::size_t kSpace = 70001;
  course::DeviceBuffer<std::uint32_t> in(kSpace), out(kSpace);
  course::fill_hash(in.span(), 7);
  for (Buffering b : {Buffering::single, Buffering::double_buffered}) {
    for (std::size_t offset : {1, 2, 3}) {
      for (std::size_t n : {std::size_t{33}, std::size_t{4097}, kSpace - 3}) {
        const std::string failure =
            run_and_check(in.cspan().subspan(offset, n), out.span().subspan(3 - offset, n),
                          Granularity::fine, b, LaunchShape{5, 128});
        ASSERT_EQ(failure, "") << name(b) << ", in + " << offset << ", out + " << 3 - offset
                               << ", n=" << n << result_todos(b);
      }
    }
  }
}

// ---- GPU test: the sync after the compute is what makes a refill safe ---------------------
//
// With one element per thread (fine granularity) only the first quarter of the block reads
// a full batch in the compute step (one 16-byte vector each), and those vectors were copied
// by the whole block. With a ReaderDelay the readers hold back before reading each batch,
// while the other threads run ahead into the next iteration, where they start the copy of
// batch k + 2 into the buffer batch k is still read from. Only the block sync after the
// compute (TODO 5) keeps them from doing so while anybody still reads.

TEST(GpuCgMemcpyAsyncRefill, HeldBackReadersStillGetTheirBatch) {
  if (const auto reason = course::testing::gpu_unavailable()) GTEST_SKIP() << *reason;
  constexpr LaunchShape kShape{2, 256};
  const std::size_t batch = batch_elements(Granularity::fine, kShape.threads_per_block);
  const std::size_t n = 2 * 6 * batch - 5;  // six batches per block, the input's last partial
  course::DeviceBuffer<std::uint32_t> in(n), out(n);
  course::fill_hash(in.span(), 11);
  course::poison(out.data(), out.bytes());
  cg_memcpy_async::prepare_copy_and_compute(in.cspan(), out.span(), Granularity::fine,
                                            Buffering::double_buffered, kShape,
                                            cg_memcpy_async::ReaderDelay{200000})(0);
  COURSE_CHECK(cudaDeviceSynchronize());
  std::vector<std::uint32_t> expected(n);
  course::workload::reference(course::to_host(in.cspan()), expected);
  const auto c = course::compare_exact<std::uint32_t>(expected, course::to_host(out.cspan()));
  EXPECT_TRUE(c.ok()) << c.summary()
                      << " (a copy into a buffer started while slower threads still read it: "
                         "what keeps the next iteration's copy waiting for every reader?)"
                      << concerns_todo(5);
}

// ---- GPU test: every wait and sync covers the whole block, not one warp -------------------
//
// cooperative_groups::memcpy_async splits a batch among the block's threads, and the compute
// step reads partners copied by other threads: the wait (TODO 2, TODO 4) and the sync before
// a refill (TODO 5) must cover every warp. A wait that covers only this thread's copies and
// its own warp (cp.async.wait_group, then __syncwarp or a tile's sync) mostly passes on
// values alone. With a HoldBack every warp but one (a different one per block) issues its
// copies late and reads late, so the one warp that runs ahead reads what the buffer held
// before (poison, or an earlier batch) wherever it reads what another warp copied.

TEST(GpuCgMemcpyAsyncHeldBack, EveryWaitCoversEveryWarp) {
  if (const auto reason = course::testing::gpu_unavailable()) GTEST_SKIP() << *reason;
  for (Granularity g : {Granularity::fine, Granularity::coarse}) {
    for (Buffering b : {Buffering::single, Buffering::double_buffered}) {
      for (LaunchShape shape : {LaunchShape{16, 256}, LaunchShape{6, 96}}) {
        const std::size_t batch = batch_elements(g, shape.threads_per_block);
        for (std::size_t n : course::testing::held_back_sizes(shape.blocks, batch)) {
          course::DeviceBuffer<std::uint32_t> in(n), out(n);
          course::fill_hash(in.span(), static_cast<std::uint32_t>(n + 2));
          course::poison(out.data(), out.bytes());
          cg_memcpy_async::prepare_copy_and_compute(
              in.cspan(), out.span(), g, b, shape, {},
              cg_memcpy_async::HoldBack{course::testing::kHoldBackNs})(0);
          COURSE_CHECK(cudaDeviceSynchronize());
          std::vector<std::uint32_t> expected(n);
          course::workload::reference(course::to_host(in.cspan()), expected);
          const auto c =
              course::compare_exact<std::uint32_t>(expected, course::to_host(out.cspan()));
          ASSERT_TRUE(c.ok()) << name(g) << "/" << name(b) << ", " << shape.blocks << "x"
                              << shape.threads_per_block << ", n=" << n
                              << ", warps held back: " << c.summary()
                              << " (does every wait and sync cover the whole block?)"
                              << result_todos(b);
        }
      }
    }
  }
}

TEST(GpuCgMemcpyAsyncOccupancy, DoubleBuffersCostOccupancyOnlyThroughSharedMemory) {
  if (const auto reason = course::testing::gpu_unavailable()) GTEST_SKIP() << *reason;
  for (Granularity g : {Granularity::fine, Granularity::coarse}) {
    const int single = cg_memcpy_async::max_blocks_per_sm(g, Buffering::single, 256);
    const int twice = cg_memcpy_async::max_blocks_per_sm(g, Buffering::double_buffered, 256);
    EXPECT_GE(twice, 1) << name(g);
    EXPECT_LE(twice, single) << name(g);  // twice the shared memory can only lower occupancy
  }
  // 1024 threads with two 64 KB buffers: needs the shared-memory opt-in, and must fit.
  EXPECT_GE(
      cg_memcpy_async::max_blocks_per_sm(Granularity::coarse, Buffering::double_buffered, 1024), 1);
}

}  // namespace
