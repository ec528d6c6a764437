// Lesson 10 tests: built twice, against the starter (label `lesson`) and against the
// solution (label `solution`). GPU suites are named Gpu...; they skip without a GPU and below
// compute capability 9.0 (bulk copies and mbarrier transaction counts are Hopper's).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <regex>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "course/buffers.h"
#include "course/check.h"
#include "course/data.h"
#include "course/inspect.h"
#include "course/workload.h"
#include "gpu_test.h"
#include "tma_bulk_copy.cuh"

namespace {

using course::testing::concerns_todo;
using course::testing::concerns_todos;
using tma_bulk_copy::Barrier;
using tma_bulk_copy::Config;
using tma_bulk_copy::copy_and_compute;
using tma_bulk_copy::kMaxStages;
using tma_bulk_copy::kMinStages;
using tma_bulk_copy::LaunchShape;
using tma_bulk_copy::Variant;

// Sizes around every boundary: fewer than 4 elements (no whole 16-byte chunk: nothing for a
// bulk copy), 1-3 leftover elements after whole chunks, whole and partial batches at every
// batch size the tests use (128 to 32768 elements), a prime, many batches per block.
const std::vector<std::size_t> kAwkwardSizes = {1,     2,     3,     4,      5,      7,    31,
                                                33,    255,   256,   257,    4095,   4096, 4097,
                                                16383, 16385, 65537, 131074, 1000003};

/// The TODOs a variant's values depend on.
std::string todos_of(Variant variant) {
  switch (variant) {
    case Variant::pipeline:
      return concerns_todos({2, 7, 8});
    case Variant::single_barrier:
      return concerns_todos({4, 5, 6});
    default:
      return concerns_todos({1, 2, 3, 4, 5});
  }
}

std::string describe(const Config& config, LaunchShape shape, std::size_t n) {
  return std::string(tma_bulk_copy::name(config.variant)) + ", " + std::to_string(config.stages) +
         " stages, " + std::to_string(config.vectors_per_thread) + " vectors per thread, " +
         std::to_string(shape.blocks) + "x" + std::to_string(shape.threads_per_block) +
         ", n=" + std::to_string(n);
}

/// Runs `config` on hash-filled input of `n` elements into a poisoned output; checks that no
/// bounded wait timed out, every element against the CPU reference, and the input unchanged.
::testing::AssertionResult matches_reference(const Config& config, LaunchShape shape, std::size_t n,
                                             tma_bulk_copy::TestHooks hooks = {}) {
  course::DeviceBuffer<std::uint32_t> in(n), out(n);
  const auto seed = static_cast<std::uint32_t>(n * 10 + config.stages);
  course::fill_hash(in.span(), seed);
  course::poison(out.data(), out.bytes());
  tma_bulk_copy::prepare_copy_and_compute(in.cspan(), out.span(), config, shape, hooks)(0);
  const unsigned errors = tma_bulk_copy::take_wait_errors();  // synchronises
  const std::string what = describe(config, shape, n);
  const std::string todos = todos_of(config.variant);
  if (errors != tma_bulk_copy::kNoWaitError) {
    return ::testing::AssertionFailure()
           << what << ": " << tma_bulk_copy::describe_wait_errors(errors) << todos;
  }
  const auto host_in = course::to_host(in.cspan());
  std::vector<std::uint32_t> expected(n);
  course::workload::reference(host_in, expected);
  const auto c = course::compare_exact<std::uint32_t>(expected, course::to_host(out.cspan()));
  if (!c.ok()) return ::testing::AssertionFailure() << what << ": " << c.summary() << todos;
  std::vector<std::uint32_t> original(n);
  course::fill_hash_host(original, seed);
  if (host_in != original) {
    return ::testing::AssertionFailure() << what << ": the input changed" << todos;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace

namespace tma_bulk_copy {
void PrintTo(Variant v, std::ostream* os) { *os << name(v); }
void PrintTo(Barrier b, std::ostream* os) { *os << name(b); }
}  // namespace tma_bulk_copy
namespace register_staged {
void PrintTo(LaunchShape s, std::ostream* os) { *os << s.blocks << "x" << s.threads_per_block; }
}  // namespace register_staged

namespace {

// ---- CPU tests: sizes, phases, names -------------------------------------------------------

TEST(TmaBulkCopyShape, DefaultConfigIsTheFourStagePipeline) {
  const Config best{};
  EXPECT_EQ(best.variant, Variant::pipeline);
  EXPECT_EQ(best.stages, 4);
  EXPECT_EQ(best.vectors_per_thread, 4);
  EXPECT_EQ(tma_bulk_copy::batch_elements(256, 4), 4096u);  // 16 KB: one bulk copy
  EXPECT_EQ(tma_bulk_copy::shared_bytes(best, 256), 65536u);
  EXPECT_EQ(tma_bulk_copy::shared_bytes({Variant::single_ptx, 8, 4}, 256), 32768u);  // in + out
  EXPECT_EQ(tma_bulk_copy::block_threads(best, 256), 288);  // + the producer warp
  EXPECT_EQ(tma_bulk_copy::block_threads({Variant::single_barrier, 4, 4}, 256), 256);
}

TEST(TmaBulkCopyShape, BulkBytesAreWholeSixteenByteChunks) {
  using tma_bulk_copy::bulk_bytes;
  EXPECT_EQ(bulk_bytes(0), 0u);
  EXPECT_EQ(bulk_bytes(1), 0u);  // one element: nothing for a bulk copy, a plain copy does it
  EXPECT_EQ(bulk_bytes(3), 0u);
  EXPECT_EQ(bulk_bytes(4), 16u);
  EXPECT_EQ(bulk_bytes(5), 16u);
  EXPECT_EQ(bulk_bytes(4096), 16384u);
  // --quick: the last 16 KB batch of 1000003 elements holds 579: 144 chunks + 3 elements.
  EXPECT_EQ(bulk_bytes(579), 2304u);
  for (std::size_t count = 0; count < 100; ++count) {
    EXPECT_EQ(bulk_bytes(count) % 16, 0u);
    EXPECT_LE(bulk_bytes(count) / 4, count);
    EXPECT_LT(count - bulk_bytes(count) / 4, 4u);  // at most 3 leftover elements
  }
}

TEST(TmaBulkCopyShape, PhaseParityFlipsEveryRound) {
  using tma_bulk_copy::phase_parity;
  EXPECT_EQ(phase_parity(0), 0u);
  EXPECT_EQ(phase_parity(1), 1u);
  EXPECT_EQ(phase_parity(2), 0u);
  EXPECT_EQ(phase_parity(7), 1u);
  // A transaction count fits one phase (2^20 - 1 bytes) at every batch size the launcher takes.
  EXPECT_LT(tma_bulk_copy::batch_elements(992, 8) * 4, (1u << 20) - 1);
}

TEST(TmaBulkCopyShape, NamesAndWaitErrors) {
  EXPECT_STREQ(tma_bulk_copy::name(Variant::pipeline), "pipeline");
  EXPECT_STREQ(tma_bulk_copy::name(Variant::single_ptx), "single-ptx");
  EXPECT_STREQ(tma_bulk_copy::name(Variant::single_barrier), "single-barrier");
  EXPECT_STREQ(tma_bulk_copy::name(Variant::broken_wrong_expect_tx), "broken-wrong-expect-tx");
  EXPECT_STREQ(tma_bulk_copy::name(Barrier::cuda_barrier), "cuda-barrier");
  EXPECT_TRUE(tma_bulk_copy::is_broken(Variant::broken_parity_not_flipped));
  EXPECT_FALSE(tma_bulk_copy::is_broken(Variant::pipeline));
  EXPECT_EQ(tma_bulk_copy::describe_wait_errors(0), "no wait error");
  const std::string data = tma_bulk_copy::describe_wait_errors(tma_bulk_copy::kDataNeverArrived);
  EXPECT_NE(data.find("never arrived"), std::string::npos) << data;
  EXPECT_NE(data.find("expect_tx"), std::string::npos) << data;
  const std::string both = tma_bulk_copy::describe_wait_errors(tma_bulk_copy::kDataNeverArrived |
                                                               tma_bulk_copy::kBufferNeverFreed);
  EXPECT_NE(both.find("never released"), std::string::npos) << both;
}

// ---- CPU tests: preconditions are checked before any CUDA call ---------------------------

TEST(TmaBulkCopyShape, RejectsBadLaunchesBeforeTouchingTheDevice) {
  // Fake device pointers: the launcher must throw before it could dereference them.
  const auto* in = reinterpret_cast<const std::uint32_t*>(std::uintptr_t{1} << 20);
  auto* out = reinterpret_cast<std::uint32_t*>(std::uintptr_t{2} << 20);
  const cuda::std::span<const std::uint32_t> src(in, 1000);
  const cuda::std::span<std::uint32_t> dst(out, 1000);
  for (Variant v : {Variant::pipeline, Variant::single_ptx, Variant::single_barrier,
                    Variant::broken_wrong_expect_tx}) {
    const Config ok{v, 4, 4};
    EXPECT_THROW(copy_and_compute(src, dst.first(999), ok, {1, 256}, 0), std::invalid_argument);
    EXPECT_THROW(copy_and_compute(src, dst, ok, {0, 256}, 0), std::invalid_argument);
    for (int threads : {0, 16, 100, 1024, 2048}) {
      EXPECT_THROW(copy_and_compute(src, dst, ok, {1, threads}, 0), std::invalid_argument)
          << threads << " threads";
    }
    for (int stages : {-1, 0, 1, 9}) {
      EXPECT_THROW(copy_and_compute(src, dst, {v, stages, 4}, {1, 256}, 0), std::invalid_argument);
      EXPECT_THROW((void)tma_bulk_copy::max_blocks_per_sm({v, stages, 4}, 256),
                   std::invalid_argument);
    }
    for (int vectors : {0, 3, 16}) {
      EXPECT_THROW(copy_and_compute(src, dst, {v, 4, vectors}, {1, 256}, 0), std::invalid_argument);
    }
    // A bulk copy needs 16-byte aligned addresses: rejected with the reason, before launch.
    try {
      (void)tma_bulk_copy::prepare_copy_and_compute(src.subspan(1), dst.subspan(1), ok, {1, 256});
      ADD_FAILURE() << "a misaligned input was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("16-byte aligned"), std::string::npos) << e.what();
    }
    EXPECT_THROW(
        (void)tma_bulk_copy::prepare_copy_and_compute(src, dst.subspan(2).first(998), ok, {1, 256}),
        std::invalid_argument);
  }
}

TEST(TmaBulkCopyShape, BulkCopyRejectsSizesAndAddressesItCannotMove) {
  const auto* src = reinterpret_cast<const char*>(std::uintptr_t{1} << 20);
  auto* dst = reinterpret_cast<char*>(std::uintptr_t{2} << 20);
  using tma_bulk_copy::prepare_bulk_copy;
  for (Barrier b : {Barrier::ptx, Barrier::cuda_barrier}) {
    for (std::size_t bytes : {1u, 4u, 15u, 17u, 1000004u}) {
      try {
        (void)prepare_bulk_copy(src, dst, bytes, b, {1, 256});
        ADD_FAILURE() << bytes << " bytes were accepted";
      } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("multiple of 16"), std::string::npos) << e.what();
      }
    }
    for (std::size_t offset : {1u, 4u, 8u, 12u}) {
      EXPECT_THROW((void)prepare_bulk_copy(src + offset, dst, 1024, b, {1, 256}),
                   std::invalid_argument)
          << "src + " << offset;
      EXPECT_THROW((void)prepare_bulk_copy(src, dst + offset, 1024, b, {1, 256}),
                   std::invalid_argument)
          << "dst + " << offset;
    }
    EXPECT_THROW((void)prepare_bulk_copy(src, dst, 1024, b, {0, 256}), std::invalid_argument);
    EXPECT_THROW((void)prepare_bulk_copy(src, dst, 1024, b, {1, 100}), std::invalid_argument);
    EXPECT_THROW((void)prepare_bulk_copy(src, dst, 1024, b, {1, 256}, 3), std::invalid_argument);
  }
}

TEST(TmaBulkCopyShape, EmptyInputLaunchesNothing) {
  EXPECT_NO_THROW(copy_and_compute({}, {}, Config{}, {1, 256}, 0));
  EXPECT_NO_THROW(copy_and_compute({}, {}, {Variant::single_barrier, 4, 1}, {1, 32}, 0));
  const course::Launch nothing = tma_bulk_copy::prepare_bulk_copy(
      reinterpret_cast<const void*>(std::uintptr_t{1} << 20),
      reinterpret_cast<void*>(std::uintptr_t{2} << 20), 0, Barrier::ptx, {1, 64});
  ASSERT_TRUE(static_cast<bool>(nothing));
  EXPECT_NO_THROW(nothing(0));
}

// ---- CPU tests: what the compiler emitted ---------------------------------------------------

const course::inspect::PtxModule& sm90_module() {
  static const auto modules =
      course::inspect::read_ptx_modules(course::testing::kernels_object_path());
  return course::inspect::module_for(modules, "sm_90");
}

bool built_for_sm90() {
  for (const auto& t : course::testing::ptx_targets()) {
    if (t.rfind("sm_90", 0) == 0) return true;
  }
  return false;
}

/// The mangled-name part of single_ptx_kernel<V, Compute>.
std::string single_ptx(Variant v, bool compute) {
  return "single_ptx_kernelILNS_7VariantE" + std::to_string(static_cast<int>(v)) + "ELb" +
         (compute ? "1" : "0") + "E";
}

TEST(TmaBulkCopyPtx, SinglePtxKernelLoadsAndStoresInBulk) {
  if (!built_for_sm90()) GTEST_SKIP() << "the build has no sm_90 target";
  using course::inspect::uses;
  const auto k = course::inspect::kernel(sm90_module(), single_ptx(Variant::single_ptx, true));
  EXPECT_TRUE(uses(k.body, "mbarrier.init")) << k.name << concerns_todo(1);
  EXPECT_TRUE(uses(k.body, "fence.mbarrier_init")) << k.name << concerns_todo(1);
  EXPECT_TRUE(uses(k.body, "mbarrier.arrive.expect_tx")) << k.name << concerns_todo(2);
  EXPECT_TRUE(uses(k.body, "cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes"))
      << k.name << concerns_todo(2);
  EXPECT_TRUE(uses(k.body, "mbarrier.try_wait.parity")) << k.name << concerns_todo(3);
  EXPECT_TRUE(uses(k.body, "cp.async.bulk.wait_group.read")) << k.name << concerns_todo(4);
  EXPECT_TRUE(uses(k.body, "fence.proxy.async.shared::cta")) << k.name << concerns_todo(5);
  EXPECT_TRUE(uses(k.body, "cp.async.bulk.global.shared::cta.bulk_group"))
      << k.name << concerns_todo(5);
  EXPECT_TRUE(uses(k.body, "cp.async.bulk.commit_group")) << k.name << concerns_todo(5);
}

TEST(TmaBulkCopyPtx, CudaBarrierKernelUsesMemcpyAsyncTx) {
  if (!built_for_sm90()) GTEST_SKIP() << "the build has no sm_90 target";
  using course::inspect::uses;
  const auto k = course::inspect::kernel(sm90_module(), "single_barrier_kernelILb1E");
  // memcpy_async_tx is a bulk copy counted on the barrier; barrier_arrive_tx an arrival
  // that also expects the bytes. The wait is the token form of try_wait.
  EXPECT_TRUE(uses(k.body, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"))
      << k.name << concerns_todo(6);
  EXPECT_TRUE(uses(k.body, "mbarrier.arrive.expect_tx")) << k.name << concerns_todo(6);
  EXPECT_TRUE(uses(k.body, "mbarrier.try_wait")) << k.name;
  EXPECT_TRUE(uses(k.body, "cp.async.bulk.wait_group.read")) << k.name << concerns_todo(4);
  EXPECT_TRUE(uses(k.body, "fence.proxy.async.shared::cta")) << k.name << concerns_todo(5);
  EXPECT_TRUE(uses(k.body, "cp.async.bulk.global.shared::cta.bulk_group"))
      << k.name << concerns_todo(5);
}

TEST(TmaBulkCopyPtx, PlainBulkCopyNeedsNoProxyFence) {
  if (!built_for_sm90()) GTEST_SKIP() << "the build has no sm_90 target";
  using course::inspect::uses;
  // Without the compute step no thread writes shared memory: load and store are both the
  // async proxy's, so the plain copy has no fence.proxy.async, and still the bulk store.
  for (const std::string& part :
       {single_ptx(Variant::single_ptx, false), std::string("single_barrier_kernelILb0E")}) {
    const auto k = course::inspect::kernel(sm90_module(), part);
    EXPECT_FALSE(uses(k.body, "fence.proxy.async")) << k.name;
    EXPECT_TRUE(uses(k.body, "cp.async.bulk.global.shared::cta.bulk_group"))
        << k.name << concerns_todo(5);
  }
}

TEST(TmaBulkCopyPtx, BrokenProxyFenceVariantLacksOnlyTheFence) {
  if (!built_for_sm90()) GTEST_SKIP() << "the build has no sm_90 target";
  using course::inspect::uses;
  const auto k =
      course::inspect::kernel(sm90_module(), single_ptx(Variant::broken_missing_proxy_fence, true));
  EXPECT_FALSE(uses(k.body, "fence.proxy.async")) << k.name;
  EXPECT_TRUE(uses(k.body, "cp.async.bulk.global.shared::cta.bulk_group"))
      << k.name << concerns_todo(5);
}

// The single kernels have one output buffer (one input buffer for the plain copy), written
// again every round: the wait before that (TODO 4) must leave no bulk store still reading
// it, wait_group.read 0. (GpuTmaStoreHazards shows what a larger count does.)
TEST(TmaBulkCopyPtx, TheSingleKernelsWaitUntilNoStoreReadsTheirBuffer) {
  if (!built_for_sm90()) GTEST_SKIP() << "the build has no sm_90 target";
  const std::regex wait(R"(cp\.async\.bulk\.wait_group\.read\s+(\d+)\s*;)");
  int kernels = 0;
  for (const auto& k : course::inspect::ptx_kernels(sm90_module())) {
    if (k.name.find("single_") == std::string::npos) continue;
    ++kernels;
    int waits = 0;
    for (auto it = std::sregex_iterator(k.body.begin(), k.body.end(), wait);
         it != std::sregex_iterator(); ++it) {
      ++waits;
      EXPECT_EQ((*it)[1].str(), "0") << k.name << ": a wait lets " << (*it)[1].str()
                                     << " bulk stores still read the one buffer the next round "
                                        "writes"
                                     << concerns_todo(4);
    }
    EXPECT_GE(waits, 1) << k.name << concerns_todo(4);
  }
  EXPECT_EQ(kernels, 5 + 2);
}

TEST(TmaBulkCopyPtx, PipelineKernelsUseFullAndEmptyBarriersAndOneElectedIssuer) {
  if (!built_for_sm90()) GTEST_SKIP() << "the build has no sm_90 target";
  using course::inspect::uses;
  int kernels = 0;
  for (const auto& k : course::inspect::ptx_kernels(sm90_module())) {
    if (k.name.find("pipeline_kernel") == std::string::npos) continue;
    ++kernels;
    EXPECT_TRUE(uses(k.body, "elect.sync")) << k.name;
    EXPECT_TRUE(uses(k.body, "cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes"))
        << k.name << concerns_todos({2, 7});
    EXPECT_TRUE(uses(k.body, "mbarrier.arrive.expect_tx")) << k.name << concerns_todos({2, 7});
    EXPECT_TRUE(uses(k.body, "mbarrier.try_wait.parity")) << k.name << concerns_todos({7, 8});
    // Consumers release a buffer with a plain arrival on its empty barrier.
    EXPECT_TRUE(uses(k.body, "mbarrier.arrive.shared")) << k.name << concerns_todo(8);
    // Consumers store straight to global memory: no bulk store in the pipeline.
    EXPECT_FALSE(uses(k.body, "cp.async.bulk.global")) << k.name;
  }
  EXPECT_EQ(kernels, kMaxStages - kMinStages + 1);
}

// Whether the PTX `body` has a block-wide barrier (bar.sync / barrier.sync, also the
// reduction forms of __syncthreads_or) between its last mbarrier.init and the first use of an
// mbarrier after it. A __syncwarp there (bar.warp.sync) lets the other warps wait on a
// barrier that one thread has not initialised yet: a race that no value test sees
// reliably, since those warps usually start late enough.
bool initialisation_is_followed_by_a_block_barrier(const std::string& body) {
  using course::inspect::uses;
  std::istringstream lines(body);
  std::vector<std::string> code;
  for (std::string line; std::getline(lines, line);) code.push_back(line);
  std::size_t last_init = code.size();
  for (std::size_t i = 0; i < code.size(); ++i) {
    if (uses(code[i], "mbarrier.init")) last_init = i;
  }
  if (last_init == code.size()) return true;  // no mbarrier in this kernel
  for (std::size_t i = last_init + 1; i < code.size(); ++i) {
    if (uses(code[i], "bar.sync") || uses(code[i], "barrier.sync") || uses(code[i], "bar.red") ||
        uses(code[i], "barrier.red")) {
      return true;
    }
    if (uses(code[i], "mbarrier.try_wait") || uses(code[i], "mbarrier.test_wait") ||
        uses(code[i], "mbarrier.arrive") || uses(code[i], "mbarrier.arrive.expect_tx") ||
        uses(code[i], "mbarrier.expect_tx")) {
      return false;
    }
  }
  return false;
}

TEST(TmaBulkCopyPtx, NoThreadUsesAnMbarrierBeforeTheBlockHasSeenItsInitialisation) {
  if (!built_for_sm90()) GTEST_SKIP() << "the build has no sm_90 target";
  int checked = 0;
  for (const auto& k : course::inspect::ptx_kernels(sm90_module())) {
    if (!course::inspect::uses(k.body, "mbarrier.init")) continue;
    ++checked;
    EXPECT_TRUE(initialisation_is_followed_by_a_block_barrier(k.body))
        << k.name << ": after one thread initialises the mbarrier, the whole block must sync "
        << "(__syncthreads) before any thread waits on it or arrives" << concerns_todo(1);
  }
  EXPECT_GT(checked, 0);
}

TEST(TmaBulkCopyPtx, Sm80BuildHasNoHopperInstructions) {
  // The Hopper code sits behind NV_IF_TARGET(NV_PROVIDES_SM_90): the sm_80 module exists
  // (the 80;90 build compiles) and holds no bulk copy, mbarrier or proxy fence.
  bool has_sm80 = false;
  for (const auto& t : course::testing::ptx_targets()) has_sm80 = has_sm80 || t == "sm_80";
  if (!has_sm80) GTEST_SKIP() << "the build has no sm_80 target";
  const auto modules = course::inspect::read_ptx_modules(course::testing::kernels_object_path());
  const auto& m = course::inspect::module_for(modules, "sm_80");
  int kernels = 0;
  for (const auto& k : course::inspect::ptx_kernels(m)) {
    ++kernels;
    for (const char* op : {"cp.async.bulk", "mbarrier", "fence.proxy.async", "elect.sync"}) {
      EXPECT_FALSE(course::inspect::uses(k.body, op)) << k.name << " (sm_80) uses " << op;
    }
  }
  EXPECT_GT(kernels, 0);
}

TEST(TmaBulkCopySass, BulkCopiesBecomeUblkcp) {
  const std::string cuobjdump = course::testing::cuobjdump_path();
  if (cuobjdump.empty()) GTEST_SKIP() << "cuobjdump not found: SASS checks need it";
  if (!built_for_sm90()) GTEST_SKIP() << "the build has no sm_90 target";
  const std::string listing = course::inspect::run_command(
      "'" + cuobjdump + "' -sass -arch sm_90 '" + course::testing::kernels_object_path() + "'");
  int kernels = 0;
  for (const auto& f : course::inspect::sass_functions(listing)) {
    const bool single = f.name.find("single_") != std::string::npos;
    const bool pipeline = f.name.find("pipeline_kernel") != std::string::npos;
    if (!single && !pipeline) continue;
    ++kernels;
    EXPECT_TRUE(course::inspect::uses(f.body, "UBLKCP"))
        << f.name << (pipeline ? concerns_todos({2, 7}) : concerns_todos({2, 5, 6}));
    EXPECT_TRUE(course::inspect::uses(f.body, "SYNCS")) << f.name;
    EXPECT_FALSE(course::inspect::uses(f.body, "LDGSTS")) << f.name;
  }
  EXPECT_EQ(kernels, (kMaxStages - kMinStages + 1) + 5 + 2) << listing.substr(0, 2000);
}

// ---- GPU tests (compute capability 9.0) -----------------------------------------------------

class GpuTmaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto reason = course::testing::gpu_unavailable({9, 0})) GTEST_SKIP() << *reason;
    (void)tma_bulk_copy::take_wait_errors();  // start clean
  }
};

template <class Param>
class GpuTmaTestWithParam : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    if (const auto reason = course::testing::gpu_unavailable({9, 0})) GTEST_SKIP() << *reason;
    (void)tma_bulk_copy::take_wait_errors();
  }
};

struct ShapeCase {
  int vectors_per_thread;
  LaunchShape shape;
};

using Case = std::tuple<Variant, int, ShapeCase>;

class GpuTmaCopyAndCompute : public GpuTmaTestWithParam<Case> {};

TEST_P(GpuTmaCopyAndCompute, EveryElementMatchesTheReference) {
  const auto [variant, stages, shape_case] = GetParam();
  const Config config{variant, stages, shape_case.vectors_per_thread};
  for (std::size_t n : kAwkwardSizes) ASSERT_TRUE(matches_reference(config, shape_case.shape, n));
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const auto [variant, stages, s] = info.param;
  std::string name = tma_bulk_copy::name(variant);
  for (char& c : name) c = c == '-' ? '_' : c;
  return name + "_" + std::to_string(stages) + "stages_" + std::to_string(s.vectors_per_thread) +
         "vec_" + std::to_string(s.shape.blocks) + "x" + std::to_string(s.shape.threads_per_block);
}

const auto kShapes =
    ::testing::Values(ShapeCase{1, {1, 32}}, ShapeCase{4, {3, 96}}, ShapeCase{4, {132, 256}},
                      ShapeCase{8, {2, 64}}, ShapeCase{2, {5, 512}});

INSTANTIATE_TEST_SUITE_P(Pipeline, GpuTmaCopyAndCompute,
                         ::testing::Combine(::testing::Values(Variant::pipeline),
                                            ::testing::Values(2, 3, 4, 8), kShapes),
                         case_name);
INSTANTIATE_TEST_SUITE_P(Single, GpuTmaCopyAndCompute,
                         ::testing::Combine(::testing::Values(Variant::single_ptx,
                                                              Variant::single_barrier),
                                            ::testing::Values(4), kShapes),
                         case_name);

// Batch counts around the stage count, every stage count: one block of 64 consumer threads,
// one vector each (batches of 256 elements, all owned by the block).
class GpuTmaPipelineStages : public GpuTmaTestWithParam<int> {};

TEST_P(GpuTmaPipelineStages, FewerAsManyAndMoreBatchesThanStages) {
  const int stages = GetParam();
  const Config config{Variant::pipeline, stages, 1};
  const std::size_t s = static_cast<std::size_t>(stages);
  for (std::size_t n : {std::size_t{1}, std::size_t{100}, (s - 1) * 256, s * 256, s * 256 + 1,
                        (2 * s + 1) * 256 - 3, 5 * s * 256 + 7}) {
    EXPECT_TRUE(matches_reference(config, {1, 64}, n));
  }
  // Blocks that own no batch leave at once (their producer warp too).
  EXPECT_TRUE(matches_reference(config, {8, 64}, 300));
}

INSTANTIATE_TEST_SUITE_P(AllStageCounts, GpuTmaPipelineStages,
                         ::testing::Range(kMinStages, kMaxStages + 1));

// The plain bulk copy: sizes that are multiples of 16 bytes, every byte checked, and nothing
// written past the end (the poison after it survives).
class GpuTmaBulkCopy : public GpuTmaTestWithParam<Barrier> {};

TEST_P(GpuTmaBulkCopy, CopiesEveryByteAndNothingMore) {
  const Barrier barrier = GetParam();
  for (std::size_t words : {std::size_t{4}, std::size_t{8}, std::size_t{1020}, std::size_t{4096},
                            std::size_t{4100}, std::size_t{65540}, std::size_t{1000000}}) {
    const std::size_t bytes = words * sizeof(std::uint32_t);
    course::DeviceBuffer<std::uint32_t> in(words), out(words + 16);
    course::fill_hash(in.span(), static_cast<std::uint32_t>(words));
    course::poison(out.data(), out.bytes());
    const std::vector<std::uint32_t> poisoned = course::to_host(out.cspan());
    for (LaunchShape shape : {LaunchShape{1, 32}, LaunchShape{7, 256}}) {
      course::poison(out.data(), out.bytes());
      tma_bulk_copy::prepare_bulk_copy(in.data(), out.data(), bytes, barrier, shape, 1)(0);
      const unsigned errors = tma_bulk_copy::take_wait_errors();
      ASSERT_EQ(errors, 0u) << tma_bulk_copy::describe_wait_errors(errors)
                            << concerns_todos({2, 3, 6});
      const auto got = course::to_host(out.cspan());
      const auto want = course::to_host(in.cspan());
      const auto c = course::compare_exact<std::uint32_t>(
          want, cuda::std::span<const std::uint32_t>(got.data(), words));
      ASSERT_TRUE(c.ok()) << words << " words, " << shape.blocks << "x" << shape.threads_per_block
                          << ": " << c.summary() << concerns_todos({2, 3, 4, 5, 6});
      for (std::size_t i = words; i < words + 16; ++i) {
        ASSERT_EQ(got[i], poisoned[i]) << "written past the end at word " << i << concerns_todo(5);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(BothFlavours, GpuTmaBulkCopy,
                         ::testing::Values(Barrier::ptx, Barrier::cuda_barrier));

// ---- GPU tests: races the values show only by luck, made to show (TestHooks) ---------------
//
// The wait for the bulk stores (TODO 4) must return only once every store has finished
// READING shared memory: the next round writes that buffer again. A wait that lets a store
// still be pending (wait_group.read 1, say) races with those writes through the async proxy,
// which racecheck cannot see, and the values are nearly always right, because the writes come
// microseconds after the store has read its batch. With poison_after_store_wait the issuing
// thread overwrites the buffer with poison right after its wait returns, starting with the
// chunk a store reads last: a store still reading copies poison out. Large batches (32 KB)
// and many rounds per block give a store that is still reading every chance to be caught;
// after a correct wait the poison is always overwritten first.

class GpuTmaStoreHazards : public GpuTmaTestWithParam<Variant> {};

TEST_P(GpuTmaStoreHazards, TheWaitForTheBulkStoresCoversEveryStoreThatReadsTheBuffer) {
  const Variant variant = GetParam();
  tma_bulk_copy::TestHooks hooks;
  hooks.poison_after_store_wait = true;
  for (const ShapeCase s :
       {ShapeCase{8, {16, 256}}, ShapeCase{1, {4, 64}}, ShapeCase{4, {3, 96}}}) {
    const std::size_t batch =
        tma_bulk_copy::batch_elements(s.shape.threads_per_block, s.vectors_per_thread);
    const std::size_t blocks = static_cast<std::size_t>(s.shape.blocks);
    for (std::size_t n : {blocks * 12 * batch, blocks * 9 * batch + 4097, blocks * batch - 3}) {
      ASSERT_TRUE(matches_reference({variant, 4, s.vectors_per_thread}, s.shape, n, hooks))
          << " (the bulk store of a round read its buffer after the wait for it returned: "
             "the next round's writes, poison here, reached the output)"
          << concerns_todo(4);
    }
  }
  // The plain bulk copy stores the very buffer the next round loads into.
  const Barrier barrier = variant == Variant::single_ptx ? Barrier::ptx : Barrier::cuda_barrier;
  const std::size_t words = 16 * 10 * 8192 + 36;
  course::DeviceBuffer<std::uint32_t> in(words), out(words);
  course::fill_hash(in.span(), 101);
  course::poison(out.data(), out.bytes());
  tma_bulk_copy::prepare_bulk_copy(in.data(), out.data(), words * sizeof(std::uint32_t), barrier,
                                   {16, 256}, 8, hooks)(0);
  const unsigned errors = tma_bulk_copy::take_wait_errors();
  ASSERT_EQ(errors, 0u) << tma_bulk_copy::describe_wait_errors(errors);
  const auto c = course::compare_exact<std::uint32_t>(course::to_host(in.cspan()),
                                                      course::to_host(out.cspan()));
  EXPECT_TRUE(c.ok()) << "plain bulk copy, " << name(barrier) << ": " << c.summary()
                      << concerns_todo(4);
}

// The barrier before the bulk store (TODO 5): the store is issued by one thread and reads
// the outputs every warp wrote into shared memory, so it must wait for every warp, not only
// its own. With hold_back, every warp but one (a different one in each block) computes its
// outputs late: a store issued after a warp-wide sync only stores poison or the last round.

TEST_P(GpuTmaStoreHazards, TheBulkStoreWaitsForEveryWarpsOutputs) {
  const Variant variant = GetParam();
  tma_bulk_copy::TestHooks hooks;
  hooks.hold_back = course::batches::HoldBack{50000};  // 50 us per batch
  for (const ShapeCase s : {ShapeCase{4, {16, 256}}, ShapeCase{2, {6, 96}}}) {
    const std::size_t batch =
        tma_bulk_copy::batch_elements(s.shape.threads_per_block, s.vectors_per_thread);
    const std::size_t blocks = static_cast<std::size_t>(s.shape.blocks);
    for (std::size_t n : {blocks * 3 * batch + 4097, blocks * batch}) {
      ASSERT_TRUE(matches_reference({variant, 4, s.vectors_per_thread}, s.shape, n, hooks))
          << " (a bulk store read outputs that another warp had not written yet)"
          << concerns_todo(5);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Single, GpuTmaStoreHazards,
                         ::testing::Values(Variant::single_ptx, Variant::single_barrier),
                         [](const ::testing::TestParamInfo<Variant>& info) {
                           return info.param == Variant::single_ptx ? std::string("single_ptx")
                                                                    : std::string("single_barrier");
                         });

// ---- GPU tests: the deliberately broken variants fail, in bounded time ----------------------

TEST_F(GpuTmaTest, WrongExpectTxEndsInBoundedTimeWithAClearError) {
  // 16 bytes more announced than copied: the phase never completes. The bounded wait must
  // record kDataNeverArrived and leave, so the kernel ends after about kWaitLimitNs (2 s).
  const std::size_t n = 3 * 4096 + 5;
  course::DeviceBuffer<std::uint32_t> in(n), out(n);
  course::fill_hash(in.span(), 7);
  const auto start = std::chrono::steady_clock::now();
  copy_and_compute(in.cspan(), out.span(), {Variant::broken_wrong_expect_tx, 4, 4}, {2, 256}, 0);
  const unsigned errors = tma_bulk_copy::take_wait_errors();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(errors & tma_bulk_copy::kDataNeverArrived)
      << tma_bulk_copy::describe_wait_errors(errors);
  EXPECT_LT(seconds, 30.0) << "the bounded wait took too long";
  // The error word is cleared by reading it, and the GPU is still usable.
  EXPECT_EQ(tma_bulk_copy::take_wait_errors(), 0u);
  EXPECT_TRUE(matches_reference({Variant::single_ptx, 4, 4}, {2, 256}, n));
}

TEST_F(GpuTmaTest, ParityThatDoesNotFlipIsCaught) {
  // From the second round on, waiting for parity 0 asks about a phase that is long over: the
  // wait returns at once and the block reads a batch that is still landing. Many rounds per
  // block make the stale reads certain to show in the values (or the bound to fire).
  const std::size_t n = 64 * 1024 + 3;
  const Config broken{Variant::broken_parity_not_flipped, 4, 1};
  course::DeviceBuffer<std::uint32_t> in(n), out(n);
  course::fill_hash(in.span(), 11);
  course::poison(out.data(), out.bytes());
  copy_and_compute(in.cspan(), out.span(), broken, {2, 64}, 0);
  const unsigned errors = tma_bulk_copy::take_wait_errors();
  std::vector<std::uint32_t> expected(n);
  course::workload::reference(course::to_host(in.cspan()), expected);
  const auto c = course::compare_exact<std::uint32_t>(expected, course::to_host(out.cspan()));
  EXPECT_TRUE(errors != 0 || !c.ok()) << "the non-flipping parity went unnoticed: " << c.summary();
}

}  // namespace
