// Lesson 17 tests: built twice, against the starter (label `lesson`) and against the solution
// (label `solution`). CPU suites: the unique id as hex, the bus-bandwidth convention, the
// chunks, the flags, the engine model of two engines, the ranks' command line, and the
// exercise on a fake GPU and communicator (every TODO: what it asks of NCCL, which stream
// each operation goes on, what each wait covers; tests/recorded/17_nccl_overlap.cu). GPU suites
// (Gpu...) need two GPUs and skip otherwise: the exercise in one process (one thread per
// rank, as separate processes would be), and the program itself with --quick.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "capstone.cuh"
#include "course/buffers.h"
#include "course/check.h"
#include "course/data.h"
#include "course/multi_gpu.h"
#include "gpu_test.h"
#include "nccl_overlap.cuh"
#include "nccl_overlap_driver.h"
#include "read_through.h"
#include "recorded/17_nccl_overlap.h"

namespace {

namespace no = nccl_overlap;
namespace model = overlap_transfers::model;
namespace ot = overlap_transfers;
using course::testing::concerns_todo;
using course::testing::concerns_todos;

// ---- CPU ----------------------------------------------------------------------------------------

TEST(UniqueIdHex, RoundTripsEveryByte) {
  std::mt19937 random(17);
  ncclUniqueId id{};
  for (auto& byte : id.internal) byte = static_cast<char>(random() & 0xff);
  id.internal[0] = static_cast<char>(0x00);
  id.internal[1] = static_cast<char>(0xff);
  const std::string hex = no::encode_unique_id(id);
  ASSERT_EQ(hex.size(), 2u * NCCL_UNIQUE_ID_BYTES);
  EXPECT_EQ(hex.substr(0, 4), "00ff");
  const ncclUniqueId back = no::decode_unique_id(hex);
  for (std::size_t i = 0; i < sizeof id.internal; ++i) EXPECT_EQ(back.internal[i], id.internal[i]);
  std::string upper = hex;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(no::decode_unique_id(upper).internal[1], id.internal[1]);
}

TEST(UniqueIdHex, RejectsWrongLengthAndNonHex) {
  const std::string good(2 * NCCL_UNIQUE_ID_BYTES, 'a');
  EXPECT_THROW(no::decode_unique_id(""), std::invalid_argument);
  EXPECT_THROW(no::decode_unique_id(good.substr(1)), std::invalid_argument);
  EXPECT_THROW(no::decode_unique_id(good + "a"), std::invalid_argument);
  std::string bad = good;
  bad[37] = 'g';
  EXPECT_THROW(no::decode_unique_id(bad), std::invalid_argument);
  EXPECT_NO_THROW(no::decode_unique_id(good));
}

TEST(BusBandwidth, NcclTestsConvention) {
  using no::Collective;
  EXPECT_DOUBLE_EQ(no::bus_factor(Collective::all_gather, 2), 0.5);
  EXPECT_DOUBLE_EQ(no::bus_factor(Collective::reduce_scatter, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(no::bus_factor(Collective::all_reduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(no::bus_factor(Collective::all_reduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(no::bus_factor(Collective::all_gather, 1), 0.0);
  EXPECT_THROW(no::bus_factor(Collective::all_gather, 0), std::invalid_argument);
  // 1000 floats per rank on 4 ranks: all-gather's buffer is the gathered 16000 bytes.
  EXPECT_DOUBLE_EQ(no::collective_bytes(Collective::all_gather, 1000, 4), 16000.0);
  EXPECT_DOUBLE_EQ(no::collective_bytes(Collective::reduce_scatter, 1000, 4), 16000.0);
  EXPECT_DOUBLE_EQ(no::collective_bytes(Collective::all_reduce, 1000, 4), 4000.0);
  // 256 MiB in 1 ms: algbw 268.4 GB/s; all-gather on 2 ranks: busbw half of it.
  const double bytes = 256.0 * (1 << 20);
  EXPECT_NEAR(no::algbw_gbps(bytes, 1.0), 268.435456, 1e-9);
  EXPECT_NEAR(no::busbw_gbps(Collective::all_gather, bytes, 1.0, 2), 134.217728, 1e-9);
  EXPECT_NEAR(no::busbw_gbps(Collective::all_reduce, bytes, 2.0, 2), 134.217728, 1e-9);
  EXPECT_EQ(no::algbw_gbps(bytes, 0.0), 0.0);
}

TEST(Chunks, CoverTheShardOnceWithSizesWithinOne) {
  for (int rows : {1, 2, 37, 8192}) {
    for (int chunks : {1, 2, 3, 7, 8}) {
      if (chunks > rows) {
        EXPECT_THROW(no::chunk_rows(rows, chunks, 0), std::invalid_argument);
        continue;
      }
      std::size_t next = 0, smallest = rows, largest = 0;
      for (int i = 0; i < chunks; ++i) {
        const auto c = no::chunk_rows(rows, chunks, i);
        EXPECT_EQ(c.first, next) << rows << " rows, chunk " << i << " of " << chunks;
        EXPECT_GE(c.count, 1u);
        next += c.count;
        smallest = std::min(smallest, c.count);
        largest = std::max(largest, c.count);
      }
      EXPECT_EQ(next, static_cast<std::size_t>(rows));
      EXPECT_LE(largest - smallest, 1u);
    }
  }
  EXPECT_THROW(no::chunk_rows(0, 1, 0), std::invalid_argument);
  EXPECT_THROW(no::chunk_rows(10, 3, 3), std::invalid_argument);
}

TEST(Settings, DefaultsQuickAndErrors) {
  namespace driver = no::driver;
  driver::Settings settings;
  driver::Plan run = driver::plan_of(settings);
  EXPECT_TRUE(run.launcher);
  EXPECT_EQ(run.shape.rows(), 2 * 8192);
  EXPECT_EQ(run.chunk_counts, (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(run.timeline_chunks, 4);
  EXPECT_EQ(run.collective_count, (256u << 20) / 8);
  // The default layers are balanced: at 250 GB/s bus bandwidth and 50 TFLOP/s (two H100s)
  // each collective and its GEMM take about the same time (within 20 %).
  const no::LayerShape& s = run.shape;
  const double gather_s =
      no::collective_bytes(no::Collective::all_gather, std::size_t(s.shard_rows) * s.k, 2) *
      no::bus_factor(no::Collective::all_gather, 2) / 250e9;
  const double scatter_s =
      no::collective_bytes(no::Collective::reduce_scatter, std::size_t(s.shard_rows) * s.n_out, 2) *
      no::bus_factor(no::Collective::reduce_scatter, 2) / 250e9;
  const double gather_gemm_s = no::allgather_layer_flops(s) / 50e12;
  const double scatter_gemm_s = no::reduce_scatter_layer_flops(s) / 50e12;
  EXPECT_LT(std::max(gather_s, gather_gemm_s) / std::min(gather_s, gather_gemm_s), 1.2);
  EXPECT_LT(std::max(scatter_s, scatter_gemm_s) / std::min(scatter_s, scatter_gemm_s), 1.2);
  settings.options.quick = true;
  run = driver::plan_of(settings);
  EXPECT_EQ(run.shape.shard_rows, 37);
  EXPECT_EQ(run.chunk_counts, (std::vector<int>{1, 3}));
  EXPECT_EQ(run.timeline_chunks, 3);
  settings.chunk_list = "8,2,2,4";
  EXPECT_EQ(driver::plan_of(settings).chunk_counts, (std::vector<int>{2, 4, 8}));
  for (const char* bad : {",", "1,", "0", "x", "1,,2", "38", "3a"}) {  // 37 rows: at most 37
    settings.chunk_list = bad;
    EXPECT_THROW(driver::plan_of(settings), course::UsageError) << bad;
  }
  settings.shard_rows = 5;
  settings.chunk_list = "6";
  EXPECT_THROW(driver::plan_of(settings), course::UsageError);
  settings.shard_rows = 0;
  settings.chunk_list = "";
  settings.options.size = 4;
  EXPECT_THROW(driver::plan_of(settings), course::UsageError);
}

TEST(Settings, AStartedRankDrivesItsOwnGpuAndWritesNoCsv) {
  namespace driver = no::driver;
  driver::Settings settings;
  settings.options.device = 2;
  settings.options.csv = "out.csv";
  settings.ranks = 4;
  settings.rank = 3;
  settings.id_hex = std::string(2 * NCCL_UNIQUE_ID_BYTES, 'a');
  const driver::Plan run = driver::plan_of(settings);
  EXPECT_FALSE(run.launcher);
  EXPECT_EQ(run.rank, 3);
  EXPECT_EQ(run.first_device, 2);
  EXPECT_EQ(run.options.device, 5);
  EXPECT_EQ(run.options.csv, "");
  EXPECT_EQ(static_cast<unsigned char>(run.id.internal[0]), 0xaa);
  settings.rank = 4;  // not below --nranks
  EXPECT_THROW(driver::plan_of(settings), course::UsageError);
  settings.rank = -1;  // an id without a rank
  EXPECT_THROW(driver::plan_of(settings), course::UsageError);
}

TEST(EngineModel, TwoEnginesBoundAndSchedule) {
  const model::Gpu two = model::current_gpu("collective + SMs", 2, 8);
  // All-gather layer: the collective on the first engine, the GEMM on the SMs.
  const model::StageTimes gather{1.0, 3.0, 0.0};
  EXPECT_DOUBLE_EQ(model::pipeline_bound(4, gather), 1.0 + 3.0 + 3 * 3.0);
  EXPECT_DOUBLE_EQ(model::predict(two, overlap_transfers::Order::sequential, 4, gather), 16.0);
  EXPECT_DOUBLE_EQ(model::predict(two, overlap_transfers::Order::per_chunk, 4, gather),
                   model::pipeline_bound(4, gather));
  // Reduce-scatter layer: the GEMM first, the collective after it.
  const model::StageTimes scatter{0.0, 2.0, 2.0};
  EXPECT_DOUBLE_EQ(model::predict(two, overlap_transfers::Order::per_chunk, 8, scatter),
                   2.0 + 2.0 + 7 * 2.0);
}

TEST(Ranks, CommandLineAddsTheRankFlags) {
  const auto line = no::rank_command_line({"--quick", "--csv", "x.csv"}, 1, 2, "abcd");
  EXPECT_EQ(line, (std::vector<std::string>{"--quick", "--csv", "x.csv", "--rank", "1", "--nranks",
                                            "2", "--nccl-id", "abcd"}));
}

TEST(Ranks, StartedRanksInheritNvlsOffAndReportTheirExitCodes) {
  course::set_nccl_nvls_off();
  const char* value = std::getenv("NCCL_NVLS_ENABLE");
  ASSERT_NE(value, nullptr);
  // The ranks are /bin/sh here: `sh -c SCRIPT --rank r ...` runs SCRIPT with the rank flags as
  // its arguments. Every rank must see the launcher's NCCL_NVLS_ENABLE.
  const std::string script = std::string("test \"$NCCL_NVLS_ENABLE\" = \"") + value +
                             "\" || exit 5; test \"$1\" = 1 -o \"$1\" = 2 || exit 6; exit 0";
  EXPECT_EQ(no::start_ranks("/bin/sh", {"-c", script}, 3, "ab").wait(), 0);
  EXPECT_EQ(no::start_ranks("/bin/sh", {"-c", "exit 3"}, 2, "ab").wait(), 3);
  EXPECT_THROW(no::start_ranks("/nonexistent/17_nccl_overlap", {}, 2, "ab"), std::runtime_error);
}

// ---- CPU: the exercise on a fake GPU and a fake communicator ---------------------------------
// tests/recorded/17_nccl_overlap.cu compiles this program's exercise file (the starter's or
// the solution's) a second time against test doubles of the CUDA runtime and NCCL: what
// init_communicator() asks of NCCL, and what the schedules issue to which stream, is recorded
// with CUDA's ordering rules (tests/support/schedule_record.h). No GPU needed.

namespace rec17 = course::testing::recorded17;
namespace schedule = course::testing::schedule;
using schedule::first_of;

TEST(NcclSchedule, InitJoinsWithTheCallersIdRankAndSettings) {
  const rec17::InitRun run = rec17::run_init(ncclSuccess);
  ASSERT_EQ(run.threw, "") << concerns_todo(1);
  ASSERT_EQ(run.calls.size(), 1u) << "init_communicator() must create one communicator, by one "
                                     "call that every rank makes"
                                  << concerns_todo(1);
  const schedule::NcclInitCall& call = run.calls[0];
  EXPECT_EQ(run.returned, run.made)
      << "init_communicator() did not return the communicator NCCL made" << concerns_todo(1);
  EXPECT_EQ(call.nranks, run.ranks) << "the number of ranks" << concerns_todo(1);
  EXPECT_EQ(call.rank, run.rank) << "this rank" << concerns_todo(1);
  EXPECT_EQ(std::memcmp(call.id.internal, run.id.internal, sizeof run.id.internal), 0)
      << "the id NCCL was given is not rank 0's" << concerns_todo(1);
  ASSERT_TRUE(call.has_config) << call.call << " takes no settings: the communicator must be "
                               << "created with the caller's config" << concerns_todo(1);
  EXPECT_EQ(call.config.maxCTAs, run.config.maxCTAs) << concerns_todo(1);
  EXPECT_EQ(call.config.minCTAs, run.config.minCTAs) << concerns_todo(1);
  EXPECT_EQ(call.config.magic, run.config.magic) << concerns_todo(1);
}

TEST(NcclSchedule, InitThrowsNcclErrorWhenNcclFails) {
  const rec17::InitRun run = rec17::run_init(ncclInvalidUsage);
  EXPECT_TRUE(run.threw_nccl_error)
      << "NCCL answered ncclInvalidUsage; init_communicator() must throw NcclError"
      << (run.threw.empty() ? std::string(", and it returned") : ", and it threw: " + run.threw)
      << concerns_todo(1);
}

/// Whether each run enqueued, for every chunk, one collective (`layer`) and one GEMM
/// (failures name the others).
bool one_of_each(const rec17::LayerRun& run, const char* layer, int todo) {
  bool complete = true;
  for (std::size_t k = 0; k < run.call_begin.size(); ++k) {
    for (int i = 0; i < run.chunks; ++i) {
      const auto c = static_cast<std::size_t>(i);
      for (const auto& [ops, what] :
           {std::pair{&run.collective[k][c], layer}, std::pair{&run.gemm[k][c], "GEMM"}}) {
        if (ops->size() != 1) {
          ADD_FAILURE() << "run " << k << ": chunk " << i << "'s " << what << " was enqueued "
                        << ops->size() << " times (once per run)" << concerns_todo(todo);
          complete = false;
        }
      }
    }
  }
  return complete;
}

/// What every overlapped schedule must show: each collective on streams.comm and each GEMM
/// on the caller's stream, each inside one call of the timeline wrapper for its chunk and the
/// stage of its kind, with the caller's timeline; no host wait; no event but those of
/// `streams`, and none recorded twice in a run.
void check_wrapped_and_on_their_streams(const rec17::LayerRun& run, ot::Stage stage, int todo) {
  const schedule::Recorder& r = run.record;
  for (std::size_t k = 0; k < run.call_begin.size(); ++k) {
    for (int i = 0; i < run.chunks; ++i) {
      const auto c = static_cast<std::size_t>(i);
      for (const bool is_gemm : {false, true}) {
        const int op = (is_gemm ? run.gemm : run.collective)[k][c][0];
        const cudaStream_t want = is_gemm ? run.compute : run.comm;
        EXPECT_TRUE(r.operations()[static_cast<std::size_t>(op)].stream == want)
            << r.describe(op) << ": it belongs in the order of " << r.name_of(want)
            << concerns_todo(todo);
        const ot::Stage want_stage = is_gemm ? no::kGemmStage : stage;
        bool inside = false;
        for (const rec17::Wrapped& w : run.wrapped) {
          inside |= w.first <= op && op < w.end && w.chunk == i && w.stage == want_stage &&
                    w.stream == want && w.timeline_passed;
        }
        EXPECT_TRUE(inside) << r.describe(op) << " was not enqueued through the timeline wrapper "
                            << "with the caller's timeline, chunk " << i << ", the stage of its "
                            << "kind and its own stream" << concerns_todo(todo);
      }
    }
    const int begin = run.call_begin[k], end = run.call_end[k];
    for (int wait : r.of_kind(schedule::Kind::host_wait, begin, end)) {
      ADD_FAILURE() << "run " << k << ": the host waits: " << r.describe(wait)
                    << concerns_todo(todo);
    }
    std::map<cudaEvent_t, int> records;
    for (int rec : r.of_kind(schedule::Kind::record, begin, end)) {
      const cudaEvent_t e = r.operations()[static_cast<std::size_t>(rec)].event;
      EXPECT_TRUE(std::find(run.events.begin(), run.events.end(), e) != run.events.end())
          << r.describe(rec) << ": every handover has an event of its own in `streams`"
          << concerns_todo(todo);
      ++records[e];
    }
    for (const auto& [e, count] : records) {
      EXPECT_EQ(count, 1) << "run " << k << ": " << r.name_of(e) << " is recorded " << count
                          << " times in one run: each chunk's handover has an event of its own"
                          << concerns_todo(todo);
    }
  }
}

TEST(NcclSchedule, AllGatherLayerWrapsEveryOperationOnItsStream) {
  for (const int chunks : {1, 4}) {
    const rec17::LayerRun run = rec17::run_allgather_layer(chunks, 2);
    ASSERT_EQ(run.threw, "") << concerns_todo(2);
    if (one_of_each(run, "all-gather", 2)) {
      check_wrapped_and_on_their_streams(run, no::kGatherStage, 2);
    }
  }
}

TEST(NcclSchedule, AllGatherGemmWaitsForItsOwnChunkOnly) {
  const rec17::LayerRun run = rec17::run_allgather_layer(4, 2);
  ASSERT_EQ(run.threw, "") << concerns_todo(2);
  ASSERT_TRUE(one_of_each(run, "all-gather", 2));
  const schedule::Recorder& r = run.record;
  const std::vector<std::string> races = r.races(run.call_begin[0]);
  EXPECT_TRUE(races.empty()) << races.size() << " pairs of operations share bytes without an "
                             << "order between them:" << first_of(races) << concerns_todo(2);
  for (std::size_t k = 0; k < run.call_begin.size(); ++k) {
    for (int i = 0; i < run.chunks; ++i) {
      const int gemm = run.gemm[k][static_cast<std::size_t>(i)][0];
      EXPECT_TRUE(r.finishes_before(run.collective[k][static_cast<std::size_t>(i)][0], gemm))
          << r.describe(gemm) << " may start before its chunk's all-gather is done"
          << concerns_todo(2);
      for (int j = i + 1; j < run.chunks; ++j) {
        const int later = run.collective[k][static_cast<std::size_t>(j)][0];
        EXPECT_FALSE(r.finishes_before(later, gemm))
            << r.describe(gemm) << " waits for " << r.describe(later)
            << ": a chunk's GEMM waits for its own all-gather only, so that the next chunk's "
               "all-gather runs while it computes"
            << concerns_todo(2);
      }
      for (int j = 0; j < run.chunks; ++j) {
        const int gather = run.collective[k][static_cast<std::size_t>(j)][0];
        EXPECT_FALSE(r.finishes_before(gemm, gather))
            << r.describe(gather) << " waits for " << r.describe(gemm)
            << ": no all-gather waits for a GEMM" << concerns_todo(2);
      }
    }
    // Whoever waits for `compute` waits for everything the run put on streams.comm.
    for (int i = run.call_begin[k]; i < run.call_end[k]; ++i) {
      if (r.operations()[static_cast<std::size_t>(i)].stream != run.comm) continue;
      EXPECT_TRUE(r.finishes_before(i, run.caller_after[k]))
          << "the caller's next work on compute may start before " << r.describe(i)
          << " has finished" << concerns_todo(2);
    }
  }
}

TEST(NcclSchedule, ReduceScatterLayerWrapsEveryOperationOnItsStream) {
  for (const int chunks : {1, 4}) {
    const rec17::LayerRun run = rec17::run_reduce_scatter_layer(chunks, 2);
    ASSERT_EQ(run.threw, "") << concerns_todos({3, 4});
    if (one_of_each(run, "reduce-scatter", 3)) {
      check_wrapped_and_on_their_streams(run, no::kScatterStage, 3);
    }
  }
}

TEST(NcclSchedule, ReduceScatterWaitsForItsGemmAndNoGemmWaits) {
  const rec17::LayerRun run = rec17::run_reduce_scatter_layer(4, 2);
  ASSERT_EQ(run.threw, "") << concerns_todos({3, 4});
  ASSERT_TRUE(one_of_each(run, "reduce-scatter", 3));
  const schedule::Recorder& r = run.record;
  for (std::size_t k = 0; k < run.call_begin.size(); ++k) {
    for (int i = 0; i < run.chunks; ++i) {
      const int scatter = run.collective[k][static_cast<std::size_t>(i)][0];
      EXPECT_TRUE(r.finishes_before(run.gemm[k][static_cast<std::size_t>(i)][0], scatter))
          << r.describe(scatter) << " may start before its chunk's GEMM is done"
          << concerns_todo(3);
      for (int j = 0; j < run.chunks; ++j) {
        const int gemm = run.gemm[k][static_cast<std::size_t>(j)][0];
        EXPECT_FALSE(r.finishes_before(scatter, gemm))
            << r.describe(gemm) << " waits for " << r.describe(scatter)
            << ": no GEMM waits for a reduce-scatter" << concerns_todo(3);
        if (j > i) {
          EXPECT_FALSE(r.finishes_before(gemm, scatter))
              << r.describe(scatter) << " waits for " << r.describe(gemm)
              << ": chunk i's reduce-scatter runs while chunk i + 1's GEMM does"
              << concerns_todo(3);
        }
      }
    }
  }
}

TEST(NcclSchedule, ReduceScatterLayerEndsWhenComputeEnds) {
  const rec17::LayerRun run = rec17::run_reduce_scatter_layer(3, 2);
  ASSERT_EQ(run.threw, "") << concerns_todos({3, 4});
  const schedule::Recorder& r = run.record;
  for (std::size_t k = 0; k < run.call_begin.size(); ++k) {
    for (int i = run.call_begin[k]; i < run.call_end[k]; ++i) {
      if (r.operations()[static_cast<std::size_t>(i)].stream != run.comm) continue;
      EXPECT_TRUE(r.finishes_before(i, run.caller_after[k]))
          << "run " << k << ": the caller synchronises `compute` alone, and " << r.describe(i)
          << " may still be running then" << concerns_todo(4);
    }
  }
  // Nothing the caller does next (read Z, the next run's GEMMs overwrite partial) meets a
  // reduce-scatter still running.
  const std::vector<std::string> races = r.races(run.call_begin[0]);
  EXPECT_TRUE(races.empty()) << races.size() << " pairs of operations share bytes without an "
                             << "order between them:" << first_of(races) << concerns_todos({3, 4});
}

// ---- GPU: the exercise in one process, one thread per rank -------------------------------------

class GpuTwoRanks : public course::testing::GpuTest {
 protected:
  void SetUp() override {
    course::testing::GpuTest::SetUp();
    if (IsSkipped()) return;
    if (course::visible_device_count() < 2) GTEST_SKIP() << "needs two GPUs";
    course::set_nccl_nvls_off();
  }
};

/// One rank's layers with small awkward shapes, its reference computed on the host.
struct Rank {
  int rank = 0;
  no::LayerShape s;
  course::DeviceBuffer<float> x, w, gathered, y, a, b, partial, z;
  ncclComm_t comm = nullptr;
  std::string failure;
};

/// Keeps a stream busy for about `cycles` clock cycles (tens of milliseconds): a communication
/// stream that starts late shows every missing wait, deterministically.
__global__ void hold_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

std::vector<float> host_values(std::size_t n, std::uint32_t seed) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = capstone::uniform_value(i, seed);
  return v;
}

const char* mode_name(int mode) {
  return mode == 0   ? "sequential: "
         : mode == 1 ? "overlapped, legacy stream held: "
                     : "overlapped, inputs late and comm stream held: ";
}

void run_ranks(int ranks, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) threads.emplace_back(body, r);
  for (std::thread& t : threads) t.join();
}

/// Every rank joins one communicator, each from its own thread as separate processes would
/// (TODO 1); a failure fails the test (check HasFatalFailure()).
void join_communicator(std::vector<Rank>& rank) {
  const int ranks = static_cast<int>(rank.size());
  ncclUniqueId id{};
  COURSE_NCCL_CHECK(ncclGetUniqueId(&id));
  run_ranks(ranks, [&](int r) {
    try {
      COURSE_CHECK(cudaSetDevice(r));
      rank[r].comm = no::init_communicator(id, r, ranks, NCCL_CONFIG_INITIALIZER);
    } catch (const std::exception& e) {
      rank[r].failure = e.what();
    }
  });
  for (int r = 0; r < ranks; ++r) {
    ASSERT_TRUE(rank[r].failure.empty()) << rank[r].failure << concerns_todo(1);
    ASSERT_NE(rank[r].comm, nullptr)
        << "init_communicator returned no communicator" << concerns_todo(1);
    int count = 0, me = -1;
    COURSE_NCCL_CHECK(ncclCommCount(rank[r].comm, &count));
    COURSE_NCCL_CHECK(ncclCommUserRank(rank[r].comm, &me));
    EXPECT_EQ(count, ranks) << concerns_todo(1);
    EXPECT_EQ(me, r) << concerns_todo(1);
  }
}

/// Every rank destroys its communicator from its own thread: destroying may wait for the
/// other ranks (as separate processes would, each on its own).
void leave_communicator(std::vector<Rank>& rank) {
  run_ranks(static_cast<int>(rank.size()), [&](int r) {
    cudaSetDevice(r);
    if (rank[r].comm != nullptr) ncclCommDestroy(rank[r].comm);
  });
}

TEST_F(GpuTwoRanks, OverlappedLayersMatchTheReference) {
  const int ranks = 2;
  no::LayerShape s{ranks, 37, 100, 52, 60, 100};
  std::vector<Rank> rank(ranks);
  join_communicator(rank);
  if (HasFatalFailure()) return leave_communicator(rank);

  const int m = s.rows();
  const std::vector<float> x = host_values(std::size_t(m) * s.k, 1700);
  for (const int chunks : {1, 3, 37}) {
    // 0: sequential; 1: overlapped, the legacy stream held; 2: overlapped, the inputs written
    // late on the compute stream and the communication stream held.
    for (const int mode : {0, 1, 2}) {
      const bool overlapped = mode > 0, legacy_held = mode == 1, held = mode == 2;
      std::vector<std::vector<float>> y(ranks), z(ranks);
      run_ranks(ranks, [&](int r) {
        try {
          COURSE_CHECK(cudaSetDevice(r));
          Rank& me = rank[r];
          course::Stream stream, reader;  // non-blocking: neither waits for the legacy stream
          course::DeviceBuffer<float> xd(x.size()), w(std::size_t(s.k) * s.n_local),
              gathered(x.size()), yd(std::size_t(m) * s.n_local), a(std::size_t(m) * s.k_local),
              b(std::size_t(s.k_local) * s.n_out), partial(std::size_t(m) * s.n_out),
              zd(std::size_t(s.shard_rows) * s.n_out);
          if (held) {  // X arrives late: a collective not ordered after `stream` reads poison
            course::poison(xd.data(), xd.bytes(), stream);
            hold_kernel<<<1, 1, 0, stream>>>(100'000'000);
            COURSE_CHECK_LAUNCH();
          }
          capstone::fill_uniform(xd.span(), 1700, stream);
          capstone::fill_uniform(w.span(), 1710 + r, stream);
          capstone::fill_uniform(a.span(), 1800 + r, stream);
          capstone::fill_uniform(b.span(), 1900 + r, stream);
          for (auto* buffer : {&gathered, &yd, &partial, &zd}) {
            course::poison(buffer->data(), buffer->bytes(), stream);
          }
          no::Layers layers{s,
                            me.comm,
                            r,
                            xd.data() + std::size_t(r) * s.shard_rows * s.k,
                            gathered.data(),
                            yd.data(),
                            partial.data(),
                            zd.data()};
          const auto ag = no::allgather_chunks(layers, w.data(), chunks);
          const auto rs = no::reduce_scatter_chunks(layers, a.data(), b.data(), chunks);
          const no::OverlapStreams ovl(chunks);
          if (overlapped) {
            // With `held`, the communication stream is busy for a while before each layer: a
            // GEMM that does not wait for its all-gather reads poison, and a missing join lets
            // the host read Z before any reduce-scatter ran. Without it, a reduce-scatter that
            // does not wait for its GEMM sends poison. With `legacy_held`, work a schedule
            // put on the legacy stream (0) instead of its own streams is still waiting when
            // `stream` has finished.
            if (legacy_held) {
              hold_kernel<<<1, 1, 0, cudaStreamLegacy>>>(200'000'000);
              COURSE_CHECK_LAUNCH();
            }
            if (held) {
              hold_kernel<<<1, 1, 0, ovl.comm>>>(100'000'000);
              COURSE_CHECK_LAUNCH();
            }
            no::issue_allgather_overlapped(layers, ag, ovl, stream);
            if (held) {
              hold_kernel<<<1, 1, 0, ovl.comm>>>(100'000'000);
              COURSE_CHECK_LAUNCH();
            }
            no::issue_reduce_scatter_overlapped(layers, rs, ovl, stream);
          } else {
            no::issue_allgather_sequential(layers, ag, stream);
            no::issue_reduce_scatter_sequential(layers, rs, stream);
          }
          // Only the compute stream is synchronised: the schedule's join must cover the rest.
          // The results are read on a stream of their own, not the legacy stream (which
          // would first wait for what a wrong schedule left there).
          COURSE_CHECK(cudaStreamSynchronize(stream));
          y[r] = course::testing::to_host_through(reader, yd.cspan());
          z[r] = course::testing::to_host_through(reader, zd.cspan());
          COURSE_CHECK(cudaDeviceSynchronize());
        } catch (const std::exception& e) {
          rank[r].failure = e.what();
        }
      });
      for (int r = 0; r < ranks; ++r) ASSERT_TRUE(rank[r].failure.empty()) << rank[r].failure;

      // The host reference, in double, with the tolerance of lesson 15's compare_gemm.
      for (int r = 0; r < ranks; ++r) {
        const std::vector<float> w = host_values(std::size_t(s.k) * s.n_local, 1710 + r);
        std::vector<float> expected(y[r].size()), bound(y[r].size());
        for (int i = 0; i < m; ++i) {
          for (int j = 0; j < s.n_local; ++j) {
            double sum = 0, abs_sum = 0;
            for (int q = 0; q < s.k; ++q) {
              const double p =
                  double(x[std::size_t(i) * s.k + q]) * w[std::size_t(q) * s.n_local + j];
              sum += p;
              abs_sum += std::abs(p);
            }
            expected[std::size_t(i) * s.n_local + j] = static_cast<float>(sum);
            bound[std::size_t(i) * s.n_local + j] = static_cast<float>(abs_sum);
          }
        }
        const course::Comparison c = capstone::compare_gemm(expected, bound, y[r], s.k);
        EXPECT_TRUE(c.ok()) << "all-gather layer, rank " << r << ", " << chunks << " chunks, "
                            << mode_name(mode) << c.summary()
                            << (overlapped ? concerns_todo(2) : "");
      }
      std::vector<std::vector<float>> a(ranks), b(ranks);
      for (int q = 0; q < ranks; ++q) {
        a[q] = host_values(std::size_t(m) * s.k_local, 1800 + q);
        b[q] = host_values(std::size_t(s.k_local) * s.n_out, 1900 + q);
      }
      for (int r = 0; r < ranks; ++r) {
        std::vector<float> expected(z[r].size()), bound(z[r].size());
        for (int i = 0; i < s.shard_rows; ++i) {
          const int row = r * s.shard_rows + i;
          for (int j = 0; j < s.n_out; ++j) {
            double sum = 0, abs_sum = 0;
            for (int q = 0; q < ranks; ++q) {
              for (int t = 0; t < s.k_local; ++t) {
                const double p = double(a[q][std::size_t(row) * s.k_local + t]) *
                                 b[q][std::size_t(t) * s.n_out + j];
                sum += p;
                abs_sum += std::abs(p);
              }
            }
            expected[std::size_t(i) * s.n_out + j] = static_cast<float>(sum);
            bound[std::size_t(i) * s.n_out + j] = static_cast<float>(abs_sum);
          }
        }
        const course::Comparison c =
            capstone::compare_gemm(expected, bound, z[r], s.k_local * ranks + ranks);
        EXPECT_TRUE(c.ok()) << "reduce-scatter layer, rank " << r << ", " << chunks << " chunks, "
                            << mode_name(mode) << c.summary()
                            << (overlapped ? concerns_todos({3, 4}) : "");
      }
    }
  }
  leave_communicator(rank);
}

/// The longest time, in ms, that one communication operation of `operations` ran beside one
/// GEMM: both between their "before" (the stream reached it) and "after" events. Operations
/// of one stream never share time (its events are in order), so a schedule that put its
/// collectives and GEMMs on one stream, or wrapped an operation in events of the other
/// stream than the one it runs on, shows 0 or less.
double longest_overlap_ms(const std::vector<ot::TimedOperation>& operations) {
  double longest = -1;
  for (const ot::TimedOperation& comm : operations) {
    if (comm.stage == no::kGemmStage) continue;
    for (const ot::TimedOperation& gemm : operations) {
      if (gemm.stage != no::kGemmStage) continue;
      const double shared =
          std::min(comm.end_ms, gemm.end_ms) - std::max(comm.ready_ms, gemm.ready_ms);
      longest = std::max(longest, shared);
    }
  }
  return longest;
}

/// What the overlapped schedules are for: chunk i + 1's all-gather runs while chunk i's GEMM
/// does, and chunk i's reduce-scatter while chunk i + 1's GEMM does. Values cannot show it
/// (OverlappedLayersMatchTheReference checks them); the timeline's events can. The layers
/// are large enough that each GEMM and collective of 4 chunks takes tens of microseconds.
TEST_F(GpuTwoRanks, OverlappedSchedulesRunCollectivesBesideGemms) {
  constexpr int kRanks = 2, kChunks = 4;
  constexpr double kMinimumOverlapMs = 0.002;  // a correct schedule shows 10 us or more
  const no::LayerShape s{kRanks, 512, 2048, 1024, 2048, 1024};
  std::vector<Rank> rank(kRanks);
  join_communicator(rank);
  if (HasFatalFailure()) return leave_communicator(rank);
  std::vector<std::array<double, 2>> overlap_ms(kRanks);  // [rank][all-gather, reduce-scatter]
  run_ranks(kRanks, [&](int r) {
    try {
      COURSE_CHECK(cudaSetDevice(r));
      const int m = s.rows();
      course::Stream stream;
      course::DeviceBuffer<float> x(std::size_t(m) * s.k), w(std::size_t(s.k) * s.n_local),
          gathered(x.size()), y(std::size_t(m) * s.n_local), a(std::size_t(m) * s.k_local),
          b(std::size_t(s.k_local) * s.n_out), partial(std::size_t(m) * s.n_out),
          z(std::size_t(s.shard_rows) * s.n_out);
      for (auto [buffer, seed] :
           {std::pair{&x, 1}, std::pair{&w, 2}, std::pair{&a, 3}, std::pair{&b, 4}}) {
        capstone::fill_uniform(buffer->span(), 1700 + 10 * seed + r, stream);
      }
      const no::Layers layers{s,
                              rank[r].comm,
                              r,
                              x.data() + std::size_t(r) * s.shard_rows * s.k,
                              gathered.data(),
                              y.data(),
                              partial.data(),
                              z.data()};
      const auto ag = no::allgather_chunks(layers, w.data(), kChunks);
      const auto rs = no::reduce_scatter_chunks(layers, a.data(), b.data(), kChunks);
      const no::OverlapStreams ovl(kChunks);
      for (const bool gather_layer : {true, false}) {
        const auto issue = [&](no::Timeline* timeline) {
          gather_layer ? no::issue_allgather_overlapped(layers, ag, ovl, stream, timeline)
                       : no::issue_reduce_scatter_overlapped(layers, rs, ovl, stream, timeline);
        };
        issue(nullptr);  // warm-up: NCCL and cuBLAS set up on first use
        no::Timeline timeline;
        timeline.start(stream);
        issue(&timeline);
        COURSE_CHECK(cudaDeviceSynchronize());
        overlap_ms[r][gather_layer ? 0 : 1] = longest_overlap_ms(timeline.read());
      }
    } catch (const std::exception& e) {
      rank[r].failure = e.what();
    }
  });
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(rank[r].failure.empty()) << rank[r].failure;
    EXPECT_GT(overlap_ms[r][0], kMinimumOverlapMs)
        << "rank " << r << ": no all-gather ran beside a GEMM (longest overlap "
        << overlap_ms[r][0] * 1000 << " us): chunk i + 1's all-gather belongs on streams.comm "
        << "while chunk i's GEMM runs on `compute`" << concerns_todo(2);
    EXPECT_GT(overlap_ms[r][1], kMinimumOverlapMs)
        << "rank " << r << ": no reduce-scatter ran beside a GEMM (longest overlap "
        << overlap_ms[r][1] * 1000 << " us): chunk i's reduce-scatter belongs on streams.comm "
        << "while chunk i + 1's GEMM runs on `compute`" << concerns_todo(3);
  }
  leave_communicator(rank);
}

// ---- GPU: the program itself, its ranks started by rank 0 ---------------------------------------

std::string program_path() {
  // The test executable sits beside the lesson's executables; the one of the same build
  // (starter or solution) is chosen by where this test's kernels are.
  const std::string kernels = course::testing::kernels_object_path();
  const bool starter = kernels.find("starter") != std::string::npos;
  return std::string(COURSE_L17_BIN_DIR) +
         (starter ? "/17_nccl_overlap" : "/17_nccl_overlap_solution");
}

TEST_F(GpuTwoRanks, ProgramQuickPassesOnTwoRanks) {
  const std::string out = ::testing::TempDir() + "l17_quick.txt";
  const std::string csv = ::testing::TempDir() + "l17_quick.csv";
  const std::string command = program_path() + " --quick --csv " + csv + " > " + out + " 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  ASSERT_TRUE(WIFEXITED(status)) << text.str();
  EXPECT_EQ(WEXITSTATUS(status), 0) << text.str() << concerns_todo(1);
  EXPECT_NE(text.str().find("RESULT: PASS"), std::string::npos) << text.str();
  std::ifstream timeline(csv.substr(0, csv.size() - 4) + "_timeline.csv");
  EXPECT_TRUE(timeline.good()) << "no timeline CSV";
}

}  // namespace
