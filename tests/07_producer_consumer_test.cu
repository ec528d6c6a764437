// Lesson 07 tests: built twice, against the starter (label `lesson`) and against the
// solution (label `solution`). GPU suites are named Gpu...; they skip without a GPU.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "course/buffers.h"
#include "course/data.h"
#include "course/inspect.h"
#include "course/workload.h"
#include "gpu_test.h"
#include "producer_consumer.cuh"

namespace {

using producer_consumer::Config;
using producer_consumer::copy_and_compute;
using producer_consumer::kMaxStages;
using producer_consumer::kMinStages;
using producer_consumer::Partition;

// Sizes around every boundary: one element, a partial group, whole and partial batches at
// every batch size the tests use (32 to 4096 elements), a prime, and enough batches to wrap
// the grid many times.
const std::vector<std::size_t> kAwkwardSizes = {1,    31,   32,   33,    255,   256,   257,
                                                4095, 4096, 4097, 16383, 16385, 65537, 1000003};

const Partition kPartitions[] = {Partition::role, Partition::producer_count};

std::string label(const Config& c, int blocks, std::size_t n) {
  return producer_consumer::describe(c) + ", " + std::to_string(blocks) +
         " blocks, n=" + std::to_string(n);
}

using course::testing::concerns_todo;
using course::testing::concerns_todos;

/// Runs `config` on hash-filled input of `n` elements into a poisoned output and compares
/// every element with the CPU reference; also checks that the input is unchanged. The values
/// depend on every TODO (the stage's buffer, the producers' copy, the consumers' share), and
/// a failure names them all.
::testing::AssertionResult matches_reference(const Config& config, int blocks, std::size_t n) {
  course::DeviceBuffer<std::uint32_t> in(n), out(n);
  const auto seed = static_cast<std::uint32_t>(n * 16 + config.stages);
  course::fill_hash(in.span(), seed);
  course::poison(out.data(), out.bytes());
  copy_and_compute(in.cspan(), out.span(), config, blocks, 0);
  COURSE_CHECK(cudaDeviceSynchronize());

  const auto host_in = course::to_host(in.cspan());
  std::vector<std::uint32_t> expected(n);
  course::workload::reference(host_in, expected);
  const auto c = course::compare_exact<std::uint32_t>(expected, course::to_host(out.cspan()));
  const std::string todos = concerns_todos({1, 2, 3});
  if (!c.ok()) {
    return ::testing::AssertionFailure()
           << label(config, blocks, n) << ": " << c.summary() << todos;
  }
  std::vector<std::uint32_t> original(n);
  course::fill_hash_host(original, seed);
  if (host_in != original) {
    return ::testing::AssertionFailure()
           << label(config, blocks, n) << ": the input changed" << todos;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace

// Readable parameter values in test names and failure messages.
namespace producer_consumer {
void PrintTo(Partition p, std::ostream* os) { *os << name(p); }
}  // namespace producer_consumer

namespace {

// ---- CPU tests: sizes and the partition's arithmetic, exact values -----------------------

TEST(ProducerConsumerShape, ThreadsBatchesAndSharedMemory) {
  const Config standard{};  // 1 producer warp + 8 consumer warps, 4 stages of 16 KB, role
  EXPECT_EQ(standard.partition, Partition::role);
  EXPECT_EQ(producer_consumer::threads_per_block(standard), 288);
  EXPECT_EQ(producer_consumer::producer_threads(standard), 32);
  EXPECT_EQ(producer_consumer::consumer_threads(standard), 256);
  EXPECT_EQ(producer_consumer::batch_elements(standard), 4096u);  // lessons 01 and 06's batch
  EXPECT_EQ(producer_consumer::batch_bytes(standard), 16384u);
  EXPECT_EQ(producer_consumer::shared_bytes(standard), 65536u);
  const Config small{Partition::producer_count, 2, 1, 1, 8};
  EXPECT_EQ(producer_consumer::threads_per_block(small), 64);
  EXPECT_EQ(producer_consumer::batch_elements(small), 32u);  // one 32-element group
  EXPECT_EQ(producer_consumer::shared_bytes(small), 256u);
  EXPECT_EQ(producer_consumer::shared_bytes({Partition::role, 8, 2, 8, 4096}), 524288u);
}

TEST(ProducerConsumerShape, OneProducerWarpIssuesEightTimesTheCopiesOfAUnifiedThread) {
  // 16 KB = 1024 16-byte copies per batch. Lesson 06 spread them over 256 threads (4 each);
  // one producer warp issues all of them: 32 per thread and batch.
  EXPECT_EQ(producer_consumer::copies_per_producer_thread({}), 32);
  EXPECT_EQ(producer_consumer::copies_per_producer_thread({Partition::role, 4, 2, 8, 1024}), 16);
  EXPECT_EQ(producer_consumer::copies_per_producer_thread({Partition::role, 4, 4, 8, 1024}), 8);
  // A batch smaller than the producer threads: one copy each at most (some issue none).
  EXPECT_EQ(producer_consumer::copies_per_producer_thread({Partition::role, 4, 1, 1, 8}), 1);
  EXPECT_EQ(producer_consumer::copies_per_producer_thread({Partition::role, 4, 1, 1, 40}), 2);
}

TEST(ProducerConsumerShape, BatchesAreDealtToBlocksAsInLesson06) {
  using producer_consumer::batch_count;
  using producer_consumer::batches_of_block;
  EXPECT_EQ(batch_count(1000003, 4096), 245u);  // --quick: 244 whole batches and 579 elements
  // More blocks than batches: blocks 5..7 own nothing and must still exit cleanly.
  EXPECT_EQ(batches_of_block(5, 4, 8), 1u);
  EXPECT_EQ(batches_of_block(5, 5, 8), 0u);
  EXPECT_EQ(batches_of_block(0, 0, 1), 0u);
  EXPECT_EQ(batches_of_block(10, 0, 3), 4u);
}

TEST(ProducerConsumerShape, NamesAndDescriptions) {
  EXPECT_STREQ(producer_consumer::name(Partition::role), "role");
  EXPECT_STREQ(producer_consumer::name(Partition::producer_count), "producer-count");
  EXPECT_EQ(producer_consumer::describe({}),
            "1 producer warp + 8 consumer warps (288 threads), 4 stages of 16 KB, role");
  EXPECT_EQ(producer_consumer::describe({Partition::producer_count, 2, 2, 1, 8}),
            "2 producer warps + 1 consumer warp (96 threads), 2 stages of 128 B, producer-count");
}

TEST(ProducerConsumerShape, InvalidConfigsAreNamed) {
  EXPECT_EQ(producer_consumer::invalid_reason({}), "");
  EXPECT_EQ(producer_consumer::invalid_reason({Partition::role, 8, 31, 1, 4096}), "");
  EXPECT_NE(producer_consumer::invalid_reason({Partition::role, 1, 1, 8, 1024}), "");
  EXPECT_NE(producer_consumer::invalid_reason({Partition::role, 9, 1, 8, 1024}), "");
  EXPECT_NE(producer_consumer::invalid_reason({Partition::role, 4, 0, 8, 1024}), "");
  EXPECT_NE(producer_consumer::invalid_reason({Partition::role, 4, 1, 0, 1024}), "");
  EXPECT_NE(producer_consumer::invalid_reason({Partition::role, 4, 1, 32, 1024}), "");
  EXPECT_NE(producer_consumer::invalid_reason({Partition::role, 4, 16, 17, 1024}), "");
  EXPECT_NE(producer_consumer::invalid_reason({Partition::role, 4, 1, 8, 0}), "");
  EXPECT_NE(producer_consumer::invalid_reason({Partition::role, 4, 1, 8, 12}), "");
  EXPECT_NE(producer_consumer::invalid_reason({Partition::role, 4, 1, 8, 8192}), "");
  EXPECT_NE(producer_consumer::invalid_reason({static_cast<Partition>(7), 4, 1, 8, 1024}), "");
}

// ---- CPU tests: preconditions are checked before any CUDA call --------------------------

TEST(ProducerConsumerShape, RejectsBadLaunchesBeforeTouchingTheDevice) {
  // Fake device pointers: the launcher must throw before it could dereference them.
  const auto* in = reinterpret_cast<const std::uint32_t*>(std::uintptr_t{1} << 20);
  auto* out = reinterpret_cast<std::uint32_t*>(std::uintptr_t{2} << 20);
  const cuda::std::span<const std::uint32_t> src(in, 1000);
  const cuda::std::span<std::uint32_t> dst(out, 1000);
  for (Partition p : kPartitions) {
    const Config ok{p, 4, 1, 8, 1024};
    EXPECT_THROW(copy_and_compute(src, dst.first(999), ok, 1, 0), std::invalid_argument);
    EXPECT_THROW(copy_and_compute(src, dst, ok, 0, 0), std::invalid_argument);
    EXPECT_THROW(copy_and_compute(src, dst, ok, -3, 0), std::invalid_argument);
    for (const Config& bad :
         {Config{p, 1, 1, 8, 1024}, Config{p, 9, 1, 8, 1024}, Config{p, 4, 0, 8, 1024},
          Config{p, 4, 1, 0, 1024}, Config{p, 4, 8, 25, 1024}, Config{p, 4, 1, 8, 100},
          Config{p, 4, 1, 8, 0}, Config{p, 4, 1, 8, 8192}}) {
      EXPECT_THROW(copy_and_compute(src, dst, bad, 1, 0), std::invalid_argument)
          << producer_consumer::describe(bad);
      EXPECT_THROW((void)producer_consumer::max_blocks_per_sm(bad), std::invalid_argument)
          << producer_consumer::describe(bad);
    }
    // 16-byte copies need 16-byte aligned arrays.
    EXPECT_THROW(copy_and_compute(src.subspan(1), dst.subspan(1), ok, 1, 0), std::invalid_argument);
    // The prepared launch checks the same, when it is prepared (before any timing).
    using producer_consumer::prepare_copy_and_compute;
    EXPECT_THROW((void)prepare_copy_and_compute(src, dst.first(999), ok, 1), std::invalid_argument);
    EXPECT_THROW((void)prepare_copy_and_compute(src, dst, ok, 0), std::invalid_argument);
    EXPECT_THROW((void)prepare_copy_and_compute(src, dst, Config{p, 9, 1, 8, 1024}, 1),
                 std::invalid_argument);
    EXPECT_THROW((void)prepare_copy_and_compute(src, dst, Config{p, 4, 1, 8, 100}, 1),
                 std::invalid_argument);
    EXPECT_THROW((void)prepare_copy_and_compute(src.subspan(1), dst.subspan(1), ok, 1),
                 std::invalid_argument);
  }
}

TEST(ProducerConsumerShape, EmptyInputLaunchesNothing) {
  // No device needed: nothing is launched for an empty input.
  EXPECT_NO_THROW(copy_and_compute({}, {}, Config{}, 1, 0));
  EXPECT_NO_THROW(copy_and_compute({}, {}, Config{Partition::producer_count, 8, 2, 2, 8}, 5, 0));
  const course::Launch nothing = producer_consumer::prepare_copy_and_compute({}, {}, Config{}, 3);
  ASSERT_TRUE(static_cast<bool>(nothing));
  EXPECT_NO_THROW(nothing(0));
}

// ---- CPU tests: what the compiler emitted -----------------------------------------------

/// The partitioned kernels of `module`.
std::vector<course::inspect::Function> partitioned_kernels(
    const course::inspect::PtxModule& module) {
  std::vector<course::inspect::Function> found;
  for (auto& k : course::inspect::ptx_kernels(module)) {
    if (k.name.find("producer_consumer_kernel") != std::string::npos) found.push_back(k);
  }
  return found;
}

/// How many times `pattern` occurs in `text`.
std::size_t count_matches(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return static_cast<std::size_t>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

/// The Partition template argument of a kernel, from its mangled name
/// (producer_consumer_kernelILi4ELNS_9PartitionE0EE...): 0 role, 1 producer_count, -1 unknown.
int partition_of(const std::string& mangled) {
  std::smatch m;
  if (!std::regex_search(mangled, m, std::regex("PartitionE(\\d+)E"))) return -1;
  return std::stoi(m[1]);
}

TEST(ProducerConsumerPtx, PartitionedKernelsUseCpAsyncCompletedThroughMbarriers) {
  const auto modules = course::inspect::read_ptx_modules(course::testing::kernels_object_path());
  const auto targets = course::testing::ptx_targets();
  ASSERT_FALSE(targets.empty());
  for (const std::string& target : targets) {
    const auto kernels = partitioned_kernels(course::inspect::module_for(modules, target));
    ASSERT_EQ(kernels.size(), static_cast<std::size_t>(2 * (kMaxStages - kMinStages + 1)))
        << "one kernel per stage count and partition in " << target;
    for (const auto& k : kernels) {
      const std::string where = k.name + " (" + target + ")";
      // The producer warps' copies: 16-byte L1-bypassing cp.async for full batches
      // (aligned_size_t<16>), 4-byte cp.async for the partial last batch.
      EXPECT_TRUE(course::inspect::uses(k.body, "cp.async.cg.shared.global"))
          << where << concerns_todo(2);
      EXPECT_TRUE(course::inspect::uses(k.body, "cp.async.ca.shared.global"))
          << where << concerns_todo(2);
      // The stages are mbarriers: initialised by make_pipeline, closed by producer_commit
      // (an arrival when the copies land, plus an arrival now), waited on with a parity
      // wait, invalidated by the last thread's quit().
      EXPECT_TRUE(course::inspect::uses(k.body, "mbarrier.init")) << where;
      EXPECT_TRUE(course::inspect::uses(k.body, "cp.async.mbarrier.arrive")) << where;
      EXPECT_TRUE(course::inspect::uses(k.body, "mbarrier.arrive")) << where;
      EXPECT_TRUE(course::inspect::uses(k.body, "mbarrier.try_wait.parity") ||
                  course::inspect::uses(k.body, "mbarrier.test_wait.parity"))
          << where;
      EXPECT_TRUE(course::inspect::uses(k.body, "mbarrier.inval")) << where;
      // Completion goes through the mbarriers only: no per-thread cp.async groups, and a
      // cuda::pipeline never issues a bulk (TMA) copy, even on sm_90.
      // (The producers' copy, TODO 2, is the student's only copy: these would come from it.)
      EXPECT_FALSE(course::inspect::uses(k.body, "cp.async.commit_group"))
          << where << concerns_todo(2);
      EXPECT_FALSE(course::inspect::uses(k.body, "cp.async.wait_group"))
          << where << concerns_todo(2);
      EXPECT_FALSE(course::inspect::uses(k.body, "cp.async.wait_all")) << where << concerns_todo(2);
      EXPECT_FALSE(course::inspect::uses(k.body, "cp.async.bulk")) << where << concerns_todo(2);
    }
  }
}

TEST(ProducerConsumerPtx, RoleOverloadCountsProducersWithMatchAnyAndTwoMoreBlockSyncs) {
  const auto modules = course::inspect::read_ptx_modules(course::testing::kernels_object_path());
  for (const std::string& target : course::testing::ptx_targets()) {
    int roles = 0;
    int counts = 0;
    for (const auto& k : partitioned_kernels(course::inspect::module_for(modules, target))) {
      const std::string where = k.name + " (" + target + ")";
      const int partition = partition_of(k.name);
      ASSERT_GE(partition, 0) << where << ": cannot read the partition from the name";
      // make_pipeline syncs the block once (producer_count) or three times (role), and
      // nothing else in the kernel is a block barrier. The kernel is read-only: an extra
      // barrier or match.any would come from the producers' copy (TODO 2), say a wait on
      // the whole block or a group made with labeled_partition.
      const std::size_t block_syncs = count_matches(k.body, "\\b(bar|barrier)\\.sync");
      // quit() elects one thread per warp with match.any; the role overload does it once
      // more, to count the producers of each warp.
      const std::size_t match_any = count_matches(k.body, "\\bmatch\\.any\\.sync");
      if (partition == static_cast<int>(Partition::role)) {
        ++roles;
        EXPECT_EQ(block_syncs, 3u) << where << concerns_todo(2);
        EXPECT_EQ(match_any, 2u) << where << concerns_todo(2);
      } else {
        ++counts;
        EXPECT_EQ(block_syncs, 1u) << where << concerns_todo(2);
        EXPECT_EQ(match_any, 1u) << where << concerns_todo(2);
      }
    }
    EXPECT_EQ(roles, kMaxStages - kMinStages + 1) << target;
    EXPECT_EQ(counts, kMaxStages - kMinStages + 1) << target;
  }
}

TEST(ProducerConsumerSass, LdgstsArrivesAndPhaseChecksButNoBulkCopies) {
  const std::string cuobjdump = course::testing::cuobjdump_path();
  if (cuobjdump.empty()) GTEST_SKIP() << "cuobjdump not found: SASS checks need it";
  const std::string listing = course::inspect::run_command(
      "'" + cuobjdump + "' -sass -arch sm_90 '" + course::testing::kernels_object_path() + "'");
  int kernels = 0;
  for (const auto& f : course::inspect::sass_functions(listing)) {
    if (f.name.find("producer_consumer_kernel") == std::string::npos) continue;
    ++kernels;
    // cp.async is LDGSTS; cp.async.mbarrier.arrive (producer_commit) is ARRIVES.LDGSTSBAR;
    // the stage waits are mbarrier phase checks (SYNCS.PHASECHK).
    EXPECT_TRUE(course::inspect::uses(f.body, "LDGSTS")) << f.name << concerns_todo(2);
    EXPECT_TRUE(course::inspect::uses(f.body, "ARRIVES.LDGSTSBAR")) << f.name;
    EXPECT_TRUE(course::inspect::uses(f.body, "SYNCS.PHASECHK")) << f.name;
    // No bulk (TMA) copies, and no per-thread cp.async groups (LDGDEPBAR is commit_group).
    for (const char* op : {"UBLKCP", "UTMALDG", "LDGDEPBAR"}) {
      EXPECT_FALSE(course::inspect::uses(f.body, op))
          << f.name << " uses " << op << concerns_todo(2);
    }
  }
  EXPECT_EQ(kernels, 2 * (kMaxStages - kMinStages + 1)) << listing.substr(0, 2000);
}

// ---- GPU tests: every element of every awkward size, at several shapes -------------------

/// Warps, batch size and grid: shared memory stays <= 128 KB at 8 stages, so every case fits
/// on any sm_80+ GPU.
struct ShapeCase {
  int producer_warps;
  int consumer_warps;
  int batch_vectors;
  int blocks;
};

using Case = std::tuple<Partition, int, ShapeCase>;

class GpuProducerConsumer : public course::testing::GpuTestWithParam<Case> {};

TEST_P(GpuProducerConsumer, EveryElementMatchesTheReference) {
  const auto [partition, stages, s] = GetParam();
  const Config config{partition, stages, s.producer_warps, s.consumer_warps, s.batch_vectors};
  for (std::size_t n : kAwkwardSizes) ASSERT_TRUE(matches_reference(config, s.blocks, n));
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const auto [partition, stages, s] = info.param;
  return std::string(partition == Partition::role ? "role" : "count") + "_" +
         std::to_string(stages) + "stages_" + std::to_string(s.producer_warps) + "p" +
         std::to_string(s.consumer_warps) + "c_" + std::to_string(s.batch_vectors) + "vec_" +
         std::to_string(s.blocks) + "blocks";
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GpuProducerConsumer,
    ::testing::Combine(::testing::ValuesIn(kPartitions), ::testing::Values(2, 3, 4, 8),
                       ::testing::Values(ShapeCase{1, 1, 8, 1}, ShapeCase{1, 4, 64, 3},
                                         ShapeCase{1, 8, 1024, 7}, ShapeCase{2, 8, 256, 264},
                                         ShapeCase{1, 2, 1024, 2}, ShapeCase{4, 3, 200, 5})),
    case_name);

// ---- GPU tests: batch counts around the stage count, and blocks with no batch ------------

using StageCase = std::tuple<Partition, int>;

class GpuProducerConsumerBatchCounts : public course::testing::GpuTestWithParam<StageCase> {};

// 1 producer warp + 2 consumer warps, 64-vector batches (256 elements).
constexpr int kVectors = 64;
constexpr std::size_t kBatch = 256;

Config small_config(const StageCase& c) { return {std::get<0>(c), std::get<1>(c), 1, 2, kVectors}; }

TEST_P(GpuProducerConsumerBatchCounts, FewerBatchesThanStages) {
  const Config config = small_config(GetParam());
  const std::size_t fewer = static_cast<std::size_t>(config.stages - 1);  // >= 1 batch
  EXPECT_TRUE(matches_reference(config, 1, fewer * kBatch));
  EXPECT_TRUE(matches_reference(config, 1, (fewer - 1) * kBatch + 100));  // last partial
}

TEST_P(GpuProducerConsumerBatchCounts, ExactlyOneBatch) {
  const Config config = small_config(GetParam());
  EXPECT_TRUE(matches_reference(config, 1, kBatch));  // one whole batch
  EXPECT_TRUE(matches_reference(config, 1, 100));     // one partial batch
  EXPECT_TRUE(matches_reference(config, 1, 1));       // one element
}

TEST_P(GpuProducerConsumerBatchCounts, OddNumbersOfBatches) {
  const Config config = small_config(GetParam());
  const std::size_t odd = 2 * static_cast<std::size_t>(config.stages) + 1;
  EXPECT_TRUE(matches_reference(config, 1, odd * kBatch));
  EXPECT_TRUE(matches_reference(config, 1, (odd - 1) * kBatch + 7));  // last partial
  EXPECT_TRUE(matches_reference(config, 1, 3 * kBatch));
  EXPECT_TRUE(matches_reference(config, 3, 7 * kBatch - 1));  // 3, 2 and 2 batches
}

TEST_P(GpuProducerConsumerBatchCounts, AsManyBatchesAsStagesAndOneMore) {
  const Config config = small_config(GetParam());
  const auto stages = static_cast<std::size_t>(config.stages);
  EXPECT_TRUE(matches_reference(config, 1, stages * kBatch));
  EXPECT_TRUE(matches_reference(config, 1, (stages + 1) * kBatch - 1));
}

TEST_P(GpuProducerConsumerBatchCounts, MoreBlocksThanBatches) {
  // Blocks that own no batch make their pipeline, acquire nothing, wait for nothing and
  // exit; the others must not be disturbed. A hang here would end in the test's timeout.
  const Config config = small_config(GetParam());
  EXPECT_TRUE(matches_reference(config, 8, 1));
  EXPECT_TRUE(matches_reference(config, 3, 2 * kBatch));
  EXPECT_TRUE(matches_reference(config, 264, 5 * kBatch - 9));
  EXPECT_TRUE(matches_reference(config, 132, 131 * kBatch));
}

TEST_P(GpuProducerConsumerBatchCounts, ABatchSmallerThanTheConsumerThreads) {
  // A 32-element batch (8 vectors): most consumer threads compute nothing but still wait
  // for and release every stage, and most producer threads issue no copy but still commit.
  const auto [partition, stages] = GetParam();
  const Config config{partition, stages, 2, 8, 8};
  for (std::size_t n : {std::size_t{1}, std::size_t{32}, std::size_t{33}, std::size_t{1000}}) {
    EXPECT_TRUE(matches_reference(config, 2, n));
  }
}

std::string stage_case_name(const ::testing::TestParamInfo<StageCase>& info) {
  const auto [partition, stages] = info.param;
  return std::string(partition == Partition::role ? "role" : "count") + "_" +
         std::to_string(stages) + "stages";
}

INSTANTIATE_TEST_SUITE_P(AllStageCounts, GpuProducerConsumerBatchCounts,
                         ::testing::Combine(::testing::ValuesIn(kPartitions),
                                            ::testing::Range(kMinStages, kMaxStages + 1)),
                         stage_case_name);

// ---- GPU tests: the driver's shapes, and occupancy ---------------------------------------

TEST(GpuProducerConsumerDriverShapes, DefaultBatchesWithFourAndEightConsumerWarps) {
  if (const auto reason = course::testing::gpu_unavailable()) GTEST_SKIP() << *reason;
  int device = 0;
  int sms = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  for (Partition p : kPartitions) {
    for (const auto& [producers, consumers] : {std::pair{1, 4}, std::pair{1, 8}, std::pair{2, 8}}) {
      const Config config{p, 4, producers, consumers, producer_consumer::kDefaultBatchVectors};
      const int resident = producer_consumer::max_blocks_per_sm(config);
      ASSERT_GE(resident, 1) << producer_consumer::describe(config);
      EXPECT_TRUE(matches_reference(config, sms, 1000003));
      EXPECT_TRUE(matches_reference(config, sms * resident, 1000003));
    }
  }
}

TEST(GpuProducerConsumerOccupancy, MoreStagesNeverFitMoreBlocks) {
  if (const auto reason = course::testing::gpu_unavailable()) GTEST_SKIP() << *reason;
  int device = 0;
  int max_shared = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(
      cudaDeviceGetAttribute(&max_shared, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  for (Partition p : kPartitions) {
    int previous = 1 << 30;
    for (int stages = kMinStages; stages <= kMaxStages; ++stages) {
      const Config config{p, stages, 1, 8, 1024};
      const int blocks = producer_consumer::max_blocks_per_sm(config);
      EXPECT_GE(blocks, 1) << producer_consumer::describe(config);  // <= 128 KB: fits sm_80+
      EXPECT_LE(blocks, previous) << producer_consumer::describe(config);
      previous = blocks;
    }
    // 8 stages of 64 KB (512 KB) fit no GPU: 0, not an error.
    EXPECT_EQ(producer_consumer::max_blocks_per_sm({p, 8, 1, 8, 4096}), 0);
  }
}

}  // namespace
