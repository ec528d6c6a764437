// Lesson 14 tests: built twice, against the starter (label `lesson`) and against the
// solution (label `solution`). GPU suites are named Gpu...; they skip without a GPU.
//
// The engine-queue model (engine_model.cpp) is tested on the CPU with exact schedules
// worked out by hand from the blog post's pictures (4 streams, every stage one unit long).
// The GPU tests check every element that comes back from the exercise's issue orders
// (sequential, async V1 and V2) at chunk counts that do and do not divide the size, and
// that the two async orders issue exactly the blog post's sequences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <ostream>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "course/buffers.h"
#include "course/data.h"
#include "course/inspect.h"
#include "gpu_test.h"
#include "overlap_transfers.cuh"

// Readable stages and orders in failure messages and test names.
namespace overlap_transfers {
void PrintTo(Stage s, std::ostream* os) { *os << stage_name(s); }
void PrintTo(Order o, std::ostream* os) { *os << order_name(o); }
}  // namespace overlap_transfers

namespace {

using overlap_transfers::Chunk;
using overlap_transfers::chunk_of;
using overlap_transfers::Job;
using overlap_transfers::Order;
using overlap_transfers::Stage;
using overlap_transfers::StreamSet;
using overlap_transfers::transfer_and_compute;
namespace model = overlap_transfers::model;
using model::Engine;
using model::Gpu;
using model::ScheduledOperation;
using model::StageTimes;

const StageTimes kUnit{1, 1, 1};  // the blog post's schematic: every stage one unit

// ---- CPU tests: chunks, input, reference ----------------------------------------------

TEST(OverlapChunks, EveryElementBelongsToExactlyOneChunk) {
  for (std::size_t n : {0ul, 1ul, 31ul, 33ul, 4096ul, 1000003ul, 4194304ul}) {
    for (int chunks : {1, 2, 3, 4, 7, 16, 32, 33}) {
      std::size_t next = 0, smallest = n, largest = 0;
      for (int c = 0; c < chunks; ++c) {
        const Chunk part = chunk_of(n, chunks, c);
        ASSERT_EQ(part.first, next) << "n=" << n << ", chunk " << c << " of " << chunks;
        next += part.count;
        smallest = std::min(smallest, part.count);
        largest = std::max(largest, part.count);
      }
      EXPECT_EQ(next, n) << "n=" << n << ", chunks=" << chunks;
      EXPECT_LE(largest - std::min(smallest, largest), 1u) << "sizes differ by at most one";
    }
  }
  // The blog post's size cut in 4: four equal chunks of 1M floats.
  EXPECT_EQ(chunk_of(4194304, 4, 3).first, 3u * 1048576u);
  EXPECT_EQ(chunk_of(4194304, 4, 3).count, 1048576u);
  // A prime never divides: 1000003 = 3 * 333334 + 1.
  EXPECT_EQ(chunk_of(1000003, 3, 0).count, 333334u);
  EXPECT_EQ(chunk_of(1000003, 3, 2).count, 333335u);
}

TEST(OverlapChunks, RejectsChunksThatDoNotExist) {
  EXPECT_THROW(chunk_of(10, 0, 0), std::invalid_argument);
  EXPECT_THROW(chunk_of(10, 4, 4), std::invalid_argument);
  EXPECT_THROW(chunk_of(10, 4, -1), std::invalid_argument);
}

TEST(OverlapReference, AddsOneUnitPerRoundAndToleratesRounding) {
  std::vector<float> in(1000), out(1000);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = overlap_transfers::input_value(i, 5);
  for (std::size_t i = 0; i < in.size(); ++i) {
    ASSERT_GE(in[i], 1.0f);
    ASSERT_LT(in[i], 2.0f);
  }
  EXPECT_NE(in[0], in[1]);  // never a constant input
  overlap_transfers::reference(in, out, 7);
  for (std::size_t i = 0; i < in.size(); ++i) ASSERT_EQ(out[i], in[i] + 7.0f);
  EXPECT_THROW(overlap_transfers::reference(in, cuda::std::span<float>(out).first(999), 1),
               std::invalid_argument);
  EXPECT_THROW(overlap_transfers::reference(in, out, -1), std::invalid_argument);
  // Looser with more rounds, but always far tighter than one round is large.
  EXPECT_LT(overlap_transfers::relative_tolerance(0), overlap_transfers::relative_tolerance(50));
  EXPECT_LT(overlap_transfers::relative_tolerance(50) * 52, 0.01);
}

// ---- CPU tests: preconditions are checked before any CUDA call --------------------------

Job fake_job(std::size_t n) {
  // Fake pointers: the functions must throw before they could dereference them.
  Job job;
  job.host_in = reinterpret_cast<const float*>(std::uintptr_t{1} << 20);
  job.device = reinterpret_cast<float*>(std::uintptr_t{2} << 20);
  job.host_out = reinterpret_cast<float*>(std::uintptr_t{3} << 20);
  job.n = n;
  job.rounds = 1;
  return job;
}

TEST(OverlapPreconditions, RejectsBadJobsBeforeTouchingTheDevice) {
  const StreamSet no_streams;
  for (Order order : {Order::sequential, Order::per_chunk, Order::by_operation}) {
    Job job = fake_job(1000);
    job.host_in = nullptr;
    EXPECT_THROW(transfer_and_compute(order, job, 1, no_streams, 0), std::invalid_argument);
    job = fake_job(1000);
    job.host_out = nullptr;
    EXPECT_THROW(transfer_and_compute(order, job, 1, no_streams, 0), std::invalid_argument);
    job = fake_job(1000);
    job.rounds = -1;
    EXPECT_THROW(transfer_and_compute(order, job, 1, no_streams, 0), std::invalid_argument);
    for (int threads : {0, 31, 100, 2048}) {
      job = fake_job(1000);
      job.threads_per_block = threads;
      EXPECT_THROW(transfer_and_compute(order, job, 1, no_streams, 0), std::invalid_argument);
    }
  }
  // The async orders need 1 <= chunks <= streams.
  for (Order order : {Order::per_chunk, Order::by_operation}) {
    EXPECT_THROW(transfer_and_compute(order, fake_job(1000), 0, no_streams, 0),
                 std::invalid_argument);
    EXPECT_THROW(transfer_and_compute(order, fake_job(1000), 1, no_streams, 0),
                 std::invalid_argument);
  }
  EXPECT_THROW(overlap_transfers::issue_operation(Stage::h2d, fake_job(1000), 4, 4, 0),
               std::invalid_argument);
}

TEST(OverlapPreconditions, EmptyJobEnqueuesNothing) {
  // No device needed: nothing is enqueued for zero elements.
  Job empty;
  EXPECT_NO_THROW(transfer_and_compute(Order::sequential, empty, 1, StreamSet(), 0));
  EXPECT_NO_THROW(overlap_transfers::issue_operation(Stage::kernel, empty, 0, 4, 0));
  // More chunks than elements: the empty chunks enqueue nothing either.
  EXPECT_EQ(chunk_of(1, 4, 0).count, 0u);
}

TEST(OverlapPreconditions, PreparedLaunchesCheckBeforeReturning) {
  using overlap_transfers::prepare_copies_only;
  using overlap_transfers::prepare_stage;
  using overlap_transfers::prepare_transfer_and_compute;
  const StreamSet no_streams;
  Job bad = fake_job(1000);
  bad.rounds = -1;
  for (Order order : {Order::sequential, Order::per_chunk, Order::by_operation}) {
    EXPECT_THROW(prepare_transfer_and_compute(order, bad, 1, no_streams), std::invalid_argument);
  }
  EXPECT_THROW(prepare_transfer_and_compute(Order::per_chunk, fake_job(1000), 1, no_streams),
               std::invalid_argument);
  for (Stage stage : {Stage::h2d, Stage::kernel, Stage::d2h}) {
    EXPECT_THROW(prepare_stage(stage, bad, 4), std::invalid_argument);
    EXPECT_THROW(prepare_stage(stage, fake_job(1000), 0), std::invalid_argument);
  }
  EXPECT_THROW(prepare_copies_only(bad, nullptr, no_streams), std::invalid_argument);
  EXPECT_THROW(prepare_copies_only(fake_job(1000), nullptr, no_streams), std::invalid_argument);
  // An empty job's launches enqueue nothing: they run without a device.
  EXPECT_NO_THROW(prepare_transfer_and_compute(Order::sequential, Job{}, 1, no_streams)(0));
  EXPECT_NO_THROW(prepare_stage(Stage::kernel, Job{}, 3)(0));
}

TEST(OverlapDriverHelpers, TimelinePathAndMaxError) {
  EXPECT_EQ(overlap_transfers::timeline_csv_path("dir/14.csv"), "dir/14_timeline.csv");
  EXPECT_EQ(overlap_transfers::timeline_csv_path("out"), "out_timeline.csv");
  const std::vector<float> expected = {1.0f, 2.0f, 3.0f};
  const std::vector<float> actual = {1.0f, 2.5f, 2.0f};
  EXPECT_DOUBLE_EQ(overlap_transfers::max_abs_error(expected, actual), 1.0);
  EXPECT_DOUBLE_EQ(overlap_transfers::max_abs_error(expected, expected), 0.0);
  EXPECT_THROW(
      overlap_transfers::max_abs_error(expected, cuda::std::span<const float>(actual).first(2)),
      std::invalid_argument);
}

TEST(OverlapDriverHelpers, TimelineCsvHasOneRowPerOperation) {
  overlap_transfers::TimelineRun run;
  run.order = overlap_transfers::order_name(Order::per_chunk);
  run.measured = {{0, Stage::h2d, 0.0, 0.0, 1.0}, {0, Stage::kernel, 1.0, 1.0, 2.5}};
  run.model = model::simulate(model::issue_order(Order::per_chunk, 1, kUnit), model::tesla_k20());
  const std::string path = ::testing::TempDir() + "14_overlap_test_timeline.csv";
  overlap_transfers::write_timeline_csv(path, "14_overlap_transfers", "Test, GPU", 1, {run});
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 1u + 2u + 3u);
  EXPECT_EQ(lines[0], "lesson,gpu,source,order,chunks,chunk,stage,ready_ms,start_ms,end_ms");
  EXPECT_EQ(lines[2],
            "14_overlap_transfers,\"Test, GPU\",measured,async-v1,1,0,kernel,1.000000,1.000000,"
            "2.500000");
  EXPECT_EQ(lines[5],
            "14_overlap_transfers,\"Test, GPU\",model,async-v1,1,0,D2H,2.000000,2.000000,3.000000");
  std::remove(path.c_str());
  EXPECT_THROW(overlap_transfers::write_timeline_csv("/nonexistent-directory/t.csv",
                                                     "14_overlap_transfers", "x", 1, {run}),
               std::runtime_error);
}

// ---- CPU tests: the issue orders ------------------------------------------------------

std::vector<std::pair<int, Stage>> sequence(const std::vector<model::Operation>& ops) {
  std::vector<std::pair<int, Stage>> out;
  for (const auto& op : ops) out.emplace_back(op.chunk, op.stage);
  return out;
}

TEST(OverlapModelOrder, TheBlogPostsTwoOrders) {
  using P = std::pair<int, Stage>;
  const auto v1 = model::issue_order(Order::per_chunk, 2, kUnit);
  EXPECT_EQ(sequence(v1), (std::vector<P>{{0, Stage::h2d},
                                          {0, Stage::kernel},
                                          {0, Stage::d2h},
                                          {1, Stage::h2d},
                                          {1, Stage::kernel},
                                          {1, Stage::d2h}}));
  const auto v2 = model::issue_order(Order::by_operation, 2, kUnit);
  EXPECT_EQ(sequence(v2), (std::vector<P>{{0, Stage::h2d},
                                          {1, Stage::h2d},
                                          {0, Stage::kernel},
                                          {1, Stage::kernel},
                                          {0, Stage::d2h},
                                          {1, Stage::d2h}}));
  for (const auto& op : v2) EXPECT_EQ(op.stream, op.chunk) << "chunk c runs on stream c";
  // Sequential: the whole array in three operations on one stream, each chunks x as long.
  const auto seq = model::issue_order(Order::sequential, 4, StageTimes{1, 2, 3});
  ASSERT_EQ(seq.size(), 3u);
  EXPECT_DOUBLE_EQ(seq[0].duration, 4);
  EXPECT_DOUBLE_EQ(seq[1].duration, 8);
  EXPECT_DOUBLE_EQ(seq[2].duration, 12);
  EXPECT_THROW(model::issue_order(Order::per_chunk, 0, kUnit), std::invalid_argument);
}

// ---- CPU tests: the blog post's schematics, exactly ---------------------------------

std::vector<ScheduledOperation> schedule(const Gpu& gpu, Order order, int chunks = 4,
                                         StageTimes t = kUnit) {
  return model::simulate(model::issue_order(order, chunks, t), gpu);
}

/// The scheduled operation of `stage` of chunk `chunk`.
const ScheduledOperation& find(const std::vector<ScheduledOperation>& s, int chunk, Stage stage) {
  for (const auto& op : s) {
    if (op.op.chunk == chunk && op.op.stage == stage) return op;
  }
  throw std::logic_error("no such operation");
}

TEST(OverlapModelSchematic, SequentialTakesTwelveUnitsEverywhere) {
  for (const Gpu& gpu : {model::tesla_c1060(), model::tesla_c2050(), model::tesla_k20()}) {
    EXPECT_DOUBLE_EQ(model::predict(gpu, Order::sequential, 4, kUnit), 12) << gpu.name;
  }
}

TEST(OverlapModelSchematic, C1060OneCopyEngineV1GainsNothing) {
  // One copy engine, one queue for it: H0 D0 H1 D1 ... D0 waits for K0, and H1 waits
  // behind D0, so chunk 1 cannot start before chunk 0 is back. Fully serial: 12 units.
  const auto s = schedule(model::tesla_c1060(), Order::per_chunk);
  EXPECT_DOUBLE_EQ(model::makespan(s), 12);
  for (int c = 0; c < 4; ++c) {
    EXPECT_DOUBLE_EQ(find(s, c, Stage::h2d).start, 3 * c);
    EXPECT_DOUBLE_EQ(find(s, c, Stage::kernel).start, 3 * c + 1);
    EXPECT_DOUBLE_EQ(find(s, c, Stage::d2h).start, 3 * c + 2);
    EXPECT_EQ(find(s, c, Stage::d2h).engine, Engine::copy0) << "both directions share one";
  }
}

TEST(OverlapModelSchematic, C1060V2TakesEightTwelfths) {
  // Copy queue H0 H1 H2 H3 D0 D1 D2 D3: the copies in come back to back (0-4), each
  // kernel follows its copy (1-5), the copies out wait for the engine: 4, 5, 6, 7-8.
  const auto s = schedule(model::tesla_c1060(), Order::by_operation);
  EXPECT_DOUBLE_EQ(model::makespan(s), 8);
  EXPECT_DOUBLE_EQ(model::makespan(s) / 12, 8.0 / 12);
  for (int c = 0; c < 4; ++c) {
    EXPECT_DOUBLE_EQ(find(s, c, Stage::h2d).start, c);
    EXPECT_DOUBLE_EQ(find(s, c, Stage::kernel).start, c + 1);
    EXPECT_DOUBLE_EQ(find(s, c, Stage::d2h).start, c + 4);
  }
  EXPECT_DOUBLE_EQ(find(s, 0, Stage::d2h).ready, 2) << "ready at 2, its engine is busy until 4";
}

TEST(OverlapModelSchematic, C2050V1TakesHalf) {
  // Two copy engines: a copy out no longer blocks the next copy in. A perfect pipeline.
  const auto s = schedule(model::tesla_c2050(), Order::per_chunk);
  EXPECT_DOUBLE_EQ(model::makespan(s), 6);
  for (int c = 0; c < 4; ++c) {
    EXPECT_DOUBLE_EQ(find(s, c, Stage::h2d).start, c);
    EXPECT_DOUBLE_EQ(find(s, c, Stage::kernel).start, c + 1);
    EXPECT_DOUBLE_EQ(find(s, c, Stage::d2h).start, c + 2);
    EXPECT_EQ(find(s, c, Stage::d2h).engine, Engine::copy1);
  }
}

TEST(OverlapModelSchematic, C2050V2TakesNineTwelfthsBecauseKernelsSignalTogether) {
  // The four kernels are issued back to back: Fermi signals their completion only when
  // the last one (K3, 4-5) ends, so no copy out starts before 5: 5, 6, 7, 8-9.
  const auto s = schedule(model::tesla_c2050(), Order::by_operation);
  EXPECT_DOUBLE_EQ(model::makespan(s), 9);
  EXPECT_DOUBLE_EQ(model::makespan(s) / 12, 9.0 / 12);
  for (int c = 0; c < 4; ++c) {
    EXPECT_DOUBLE_EQ(find(s, c, Stage::kernel).start, c + 1);
    EXPECT_DOUBLE_EQ(find(s, c, Stage::kernel).end, c + 2) << "kernels run as before...";
    EXPECT_DOUBLE_EQ(find(s, c, Stage::d2h).ready, 5) << "...but all signal at 5";
    EXPECT_DOUBLE_EQ(find(s, c, Stage::d2h).start, c + 5);
  }
  // Without the delayed signal the same GPU would pipeline V2 as well as V1.
  Gpu without = model::tesla_c2050();
  without.delayed_kernel_signal = false;
  EXPECT_DOUBLE_EQ(model::predict(without, Order::by_operation, 4, kUnit), 6);
}

TEST(OverlapModelSchematic, K20HyperQMakesBothOrdersTakeHalf) {
  EXPECT_DOUBLE_EQ(model::predict(model::tesla_k20(), Order::per_chunk, 4, kUnit), 6);
  EXPECT_DOUBLE_EQ(model::predict(model::tesla_k20(), Order::by_operation, 4, kUnit), 6);
  EXPECT_DOUBLE_EQ(model::predict(model::tesla_k20(), Order::by_operation, 4, kUnit) / 12, 0.5);
}

TEST(OverlapModelSchematic, TheBlogPostsTable) {
  // Sequential 12 units; V1 and V2 as fractions of it, as in the blog post's measurements:
  // C1060 13.6 / 12.9 and 8.8 / 12.9; C2050 5.7 / 10.0 and 7.6 / 10.0; K20 4.0 / 7.1 twice.
  struct Row {
    Gpu gpu;
    double v1, v2;
  };
  for (const Row& row : {Row{model::tesla_c1060(), 12.0 / 12, 8.0 / 12},
                         Row{model::tesla_c2050(), 6.0 / 12, 9.0 / 12},
                         Row{model::tesla_k20(), 6.0 / 12, 6.0 / 12}}) {
    const double seq = model::predict(row.gpu, Order::sequential, 4, kUnit);
    EXPECT_DOUBLE_EQ(model::predict(row.gpu, Order::per_chunk, 4, kUnit) / seq, row.v1)
        << row.gpu.name;
    EXPECT_DOUBLE_EQ(model::predict(row.gpu, Order::by_operation, 4, kUnit) / seq, row.v2)
        << row.gpu.name;
  }
}

// ---- CPU tests: Hyper-Q's connections, the bound, and invariants --------------------------

TEST(OverlapModelHyperQ, StreamsThatShareAConnectionBlockEachOtherInV2) {
  // 16 chunks on 8 connections: streams c and c + 8 share hardware queue c % 8, whose
  // order is H_c H_c+8 K_c K_c+8 D_c D_c+8. K_c reaches the head only when H_c+8 starts
  // (at c + 8), and D_c only when K_c+8 starts (at 16 + c): the copies out run 16-24 and
  // 24-32 instead of 2-18.
  const Gpu eight = model::current_gpu("8 connections", 3, 8);
  const auto s = schedule(eight, Order::by_operation, 16);
  EXPECT_DOUBLE_EQ(model::makespan(s), 32);
  EXPECT_DOUBLE_EQ(find(s, 0, Stage::kernel).start, 8);
  EXPECT_DOUBLE_EQ(find(s, 0, Stage::d2h).start, 16);
  EXPECT_DOUBLE_EQ(find(s, 15, Stage::d2h).start, 31);
  // V1's order keeps a connection's two streams 3 operations apart: no harm done.
  EXPECT_DOUBLE_EQ(model::predict(eight, Order::per_chunk, 16, kUnit), 18);
  // With a queue per stream (CUDA_DEVICE_MAX_CONNECTIONS=16 or more) both are ideal.
  for (int connections : {16, 32}) {
    const Gpu wide = model::current_gpu("wide", 3, connections);
    EXPECT_DOUBLE_EQ(model::predict(wide, Order::by_operation, 16, kUnit), 18);
    EXPECT_DOUBLE_EQ(model::predict(wide, Order::per_chunk, 16, kUnit), 18);
  }
}

TEST(OverlapModelBound, HyperQReachesThePipelineBoundAndOneCopyEngineV1IsSerial) {
  std::mt19937 random(14);
  std::uniform_real_distribution<double> time(0.1, 3.0);
  for (int trial = 0; trial < 50; ++trial) {
    const StageTimes t{time(random), time(random), time(random)};
    for (int chunks : {1, 2, 3, 4, 8, 16}) {
      const double bound = model::pipeline_bound(chunks, t);
      const Gpu wide = model::current_gpu("wide", 2, 32);
      EXPECT_NEAR(model::predict(wide, Order::per_chunk, chunks, t), bound, 1e-9);
      EXPECT_NEAR(model::predict(wide, Order::by_operation, chunks, t), bound, 1e-9);
      // The sequential run is the pipeline with nothing overlapped.
      EXPECT_NEAR(model::predict(wide, Order::sequential, chunks, t),
                  chunks * (t.h2d + t.kernel + t.d2h), 1e-9);
      EXPECT_NEAR(model::predict(model::tesla_c1060(), Order::per_chunk, chunks, t),
                  chunks * (t.h2d + t.kernel + t.d2h), 1e-9);
      // Nothing beats the bound, on any GPU, in any order.
      for (const Gpu& gpu : {model::tesla_c1060(), model::tesla_c2050(), model::tesla_k20(),
                             model::current_gpu("8", 3, 8)}) {
        for (Order order : {Order::per_chunk, Order::by_operation}) {
          EXPECT_GE(model::predict(gpu, order, chunks, t), bound - 1e-9) << gpu.name;
        }
      }
    }
  }
  EXPECT_DOUBLE_EQ(model::pipeline_bound(4, kUnit), 6);
  EXPECT_DOUBLE_EQ(model::pipeline_bound(4, StageTimes{1, 2, 1}), 10);  // 4 + 3 x 2
  EXPECT_THROW(model::pipeline_bound(0, kUnit), std::invalid_argument);
}

TEST(OverlapModelInvariants, EnginesRunOneOperationAtATimeAndStreamsStayInOrder) {
  std::mt19937 random(2050);
  std::uniform_real_distribution<double> time(0.0, 2.0);
  for (const Gpu& gpu : {model::tesla_c1060(), model::tesla_c2050(), model::tesla_k20(),
                         model::current_gpu("3 engines, 8 connections", 3, 8)}) {
    for (Order order : {Order::sequential, Order::per_chunk, Order::by_operation}) {
      for (int chunks : {1, 3, 5, 12}) {
        auto issued = model::issue_order(order, chunks, StageTimes{1, 1, 1});
        for (auto& op : issued) op.duration = time(random);  // every operation different
        const auto s = model::simulate(issued, gpu);
        ASSERT_EQ(s.size(), issued.size());
        std::map<int, double> stream_end;
        for (std::size_t i = 0; i < s.size(); ++i) {
          EXPECT_EQ(s[i].op.chunk, issued[i].chunk) << "returned in issue order";
          EXPECT_EQ(s[i].op.stage, issued[i].stage);
          EXPECT_NEAR(s[i].end - s[i].start, issued[i].duration, 1e-12);
          EXPECT_GE(s[i].start, s[i].ready);
          // Issue order is stream order: the last operation seen on this stream is its predecessor.
          if (stream_end.count(s[i].op.stream)) {
            EXPECT_GE(s[i].ready, stream_end[s[i].op.stream] - 1e-12) << gpu.name;
          }
          stream_end[s[i].op.stream] = s[i].end;
          for (std::size_t j = 0; j < i; ++j) {
            if (s[j].engine != s[i].engine) continue;
            const bool apart = s[j].end <= s[i].start + 1e-12 || s[i].end <= s[j].start + 1e-12;
            EXPECT_TRUE(apart) << gpu.name << ": two operations at once on "
                               << model::engine_name(s[i].engine);
          }
        }
      }
    }
  }
}

TEST(OverlapModelInvariants, RejectsWhatItCannotModel) {
  auto issued = model::issue_order(Order::per_chunk, 2, kUnit);
  issued[1].duration = -1;
  EXPECT_THROW(model::simulate(issued, model::tesla_k20()), std::invalid_argument);
  issued = model::issue_order(Order::per_chunk, 2, kUnit);
  issued[0].stream = -3;
  EXPECT_THROW(model::simulate(issued, model::tesla_k20()), std::invalid_argument);
  Gpu none = model::tesla_k20();
  none.copy_engines = 0;
  EXPECT_THROW(model::simulate(model::issue_order(Order::per_chunk, 2, kUnit), none),
               std::invalid_argument);
  EXPECT_THROW(model::current_gpu("x", 0, 8), std::invalid_argument);
  EXPECT_THROW(model::current_gpu("x", 3, 0), std::invalid_argument);
  EXPECT_DOUBLE_EQ(model::makespan(model::simulate({}, model::tesla_k20())), 0);
}

// ---- CPU tests: the timeline's inferred starts ---------------------------------------------

TEST(OverlapTimelineInference, CopiesThatWaitedForTheirEngineStartWhenTheOneBeforeEnded) {
  using overlap_transfers::TimedOperation;
  // Two copies in, both ready at 0 (both streams reached them at once): the engine took
  // the one that finished first, then the other. A kernel ready after its copy.
  std::vector<TimedOperation> ops = {{0, Stage::h2d, 0.0, 0, 1.0},
                                     {1, Stage::h2d, 0.0, 0, 2.0},
                                     {0, Stage::kernel, 1.0, 0, 2.5},
                                     {1, Stage::kernel, 2.0, 0, 4.0}};
  overlap_transfers::infer_engine_starts(ops);
  EXPECT_DOUBLE_EQ(ops[0].start_ms, 0.0);
  EXPECT_DOUBLE_EQ(ops[1].start_ms, 1.0);  // waited for copy 0
  EXPECT_DOUBLE_EQ(ops[2].start_ms, 1.0);  // its engine was free: starts when ready
  EXPECT_DOUBLE_EQ(ops[3].start_ms, 2.5);  // ready at 2, kernel engine busy until 2.5
  for (const auto& op : ops) EXPECT_LE(op.start_ms, op.end_ms);
}

// ---- CPU tests: what the compiler emitted -----------------------------------------------

// ---- The lesson's point: copies and kernels of different chunks run at the same time ------
//
// Every value comes back right whatever streams the operations are issued on: async V1 or
// V2 with all 3 x chunks operations on ONE stream computes the same array, only nothing
// overlaps any more, which is the whole point of the lesson. The timeline tells: read()
// gives every operation an interval [start_ms, end_ms] from its events, the start inferred
// conservatively (never before the event before it, never before the end of the operation
// its engine ran before it: infer_engine_starts), so each interval lies inside the time the
// operation really ran and an overlap of two intervals really happened. On one stream an
// operation's "before" event completes only after the previous operation's "after" event:
// no two intervals overlap at all.

/// Two operations of different chunks that ran at the same time: a kernel and a copy.
struct KernelCopyOverlap {
  double ms = 0;        ///< how long both ran
  double fraction = 0;  ///< ms / the shorter of the two operations
  std::string pair;     ///< which two, for the failure message
};

/// Of every (kernel of chunk a, copy of chunk b != a) pair of `ops`, the one that overlapped
/// longest (ms 0 when none did).
KernelCopyOverlap largest_kernel_copy_overlap(
    const std::vector<overlap_transfers::TimedOperation>& ops) {
  KernelCopyOverlap best;
  for (const auto& kernel : ops) {
    if (kernel.stage != Stage::kernel) continue;
    for (const auto& copy : ops) {
      if (copy.stage == Stage::kernel || copy.chunk == kernel.chunk) continue;
      const double both =
          std::min(kernel.end_ms, copy.end_ms) - std::max(kernel.start_ms, copy.start_ms);
      const double shorter = std::min(kernel.end_ms - kernel.start_ms, copy.end_ms - copy.start_ms);
      if (both > best.ms && shorter > 0) {
        best.ms = both;
        best.fraction = both / shorter;
        best.pair = "kernel of chunk " + std::to_string(kernel.chunk) + " and " +
                    overlap_transfers::stage_name(copy.stage) + " of chunk " +
                    std::to_string(copy.chunk);
      }
    }
  }
  return best;
}

/// Whether a run overlapped as the lesson means it: some copy of one chunk and the kernel of
/// another ran at the same time for at least a quarter of the shorter one and 5 us (ten
/// times the events' resolution of about half a microsecond).
bool overlapped(const KernelCopyOverlap& o) { return o.ms >= 0.005 && o.fraction >= 0.25; }

TEST(OverlapTimelineOverlap, OneStreamNeverOverlapsAndTheH100sV2Did) {
  using overlap_transfers::TimedOperation;
  // Async V2 on one stream: each operation starts when the one before it ended.
  std::vector<TimedOperation> one_stream;
  double t = 0;
  for (Stage stage : {Stage::h2d, Stage::kernel, Stage::d2h}) {
    for (int c = 0; c < 4; ++c) {
      one_stream.push_back({c, stage, t, t, t + 0.08});
      t += 0.08;
    }
  }
  EXPECT_FALSE(overlapped(largest_kernel_copy_overlap(one_stream)));
  EXPECT_EQ(largest_kernel_copy_overlap(one_stream).ms, 0.0);
  // The H100's async V2 at 4 chunks (docs/results/nvidia-h100-80gb-hbm3, timeline CSV):
  // chunk 0's kernel ran while chunk 2 was copied in.
  const std::vector<TimedOperation> h100 = {{0, Stage::h2d, 0.000000, 0.000000, 0.090688},
                                            {1, Stage::h2d, 0.025600, 0.262240, 0.351104},
                                            {2, Stage::h2d, 0.039456, 0.090688, 0.174560},
                                            {3, Stage::h2d, 0.049824, 0.174560, 0.262240},
                                            {0, Stage::kernel, 0.092000, 0.092000, 0.202944},
                                            {1, Stage::kernel, 0.355040, 0.388480, 0.480416},
                                            {2, Stage::kernel, 0.177376, 0.202944, 0.296128},
                                            {3, Stage::kernel, 0.264800, 0.296128, 0.388480},
                                            {0, Stage::d2h, 0.210048, 0.210048, 0.314208},
                                            {1, Stage::d2h, 0.491136, 0.495296, 0.576192},
                                            {2, Stage::d2h, 0.303648, 0.314208, 0.400512},
                                            {3, Stage::d2h, 0.390784, 0.400512, 0.495296}};
  const KernelCopyOverlap o = largest_kernel_copy_overlap(h100);
  EXPECT_TRUE(overlapped(o)) << o.pair << ": " << o.ms << " ms, " << o.fraction;
  EXPECT_GT(o.ms, 0.08);
}

TEST(OverlapPtx, OneKernelWithAccurateMathAndNoAsyncCopies) {
  const auto modules = course::inspect::read_ptx_modules(course::testing::kernels_object_path());
  const auto targets = course::testing::ptx_targets();
  ASSERT_FALSE(targets.empty());
  for (const std::string& target : targets) {
    const auto& module = course::inspect::module_for(modules, target);
    ASSERT_EQ(course::inspect::ptx_kernels(module).size(), 1u) << target;
    const auto kernel = course::inspect::kernel(module, "trig_rounds_kernel");
    // Transfers here are the copy engines' business: the kernel only computes.
    for (const char* async : {"cp.async", "cp.async.bulk", "mbarrier"}) {
      EXPECT_FALSE(course::inspect::uses(kernel.body, async)) << target << " uses " << async;
    }
    // The tolerance assumes IEEE sqrtf and library sinf/cosf, not --use_fast_math's
    // approximations.
    EXPECT_TRUE(course::inspect::uses(kernel.body, "sqrt.rn.f32")) << target;
    EXPECT_FALSE(course::inspect::uses(kernel.body, "sin.approx")) << target;
    EXPECT_FALSE(course::inspect::uses(kernel.body, "cos.approx")) << target;
  }
}

TEST(OverlapSass, KernelComputesWithoutAsyncCopyInstructions) {
  const std::string cuobjdump = course::testing::cuobjdump_path();
  if (cuobjdump.empty()) GTEST_SKIP() << "cuobjdump not found: SASS checks need it";
  const std::string listing = course::inspect::run_command(
      "'" + cuobjdump + "' -sass -arch sm_90 '" + course::testing::kernels_object_path() + "'");
  const auto functions = course::inspect::sass_functions(listing);
  const auto kernel = std::find_if(functions.begin(), functions.end(), [](const auto& f) {
    return f.name.find("trig_rounds_kernel") != std::string::npos;
  });
  ASSERT_NE(kernel, functions.end()) << listing.substr(0, 2000);
  for (const char* op : {"LDGSTS", "UBLKCP", "UTMALDG", "SYNCS"}) {
    EXPECT_FALSE(course::inspect::uses(kernel->body, op)) << "uses " << op;
  }
  // IEEE sqrtf starts from the special-function unit's reciprocal square root.
  EXPECT_TRUE(course::inspect::uses(kernel->body, "MUFU.RSQ"));
}

// ---- GPU tests -------------------------------------------------------------------------

const std::vector<std::size_t> kAwkwardSizes = {1, 31, 33, 4095, 4097, 1000003};
constexpr int kTestRounds = 3;

/// The TODO that issues `order`'s operations, as a failure-message tag (gpu_test.h): async V1
/// is TODO 1, async V2 TODO 2; the sequential order is given.
std::string concerns_order(Order order) {
  switch (order) {
    case Order::per_chunk:
      return course::testing::concerns_todo(1);
    case Order::by_operation:
      return course::testing::concerns_todo(2);
    default:
      return "";
  }
}

/// Pinned input, device buffer and pinned output of n elements, with a poisoned output.
struct Buffers {
  explicit Buffers(std::size_t n) : in(n), device(n), out(n), expected(n) {
    for (std::size_t i = 0; i < n; ++i) in[i] = overlap_transfers::input_value(i, 14);
    overlap_transfers::reference(cuda::std::span<const float>(in.data(), n), expected, kTestRounds);
    std::memset(out.data(), course::kPoisonByte, out.bytes());
    course::poison(device.data(), device.bytes());
    COURSE_CHECK(cudaDeviceSynchronize());
  }
  Job job() const { return {in.data(), device.data(), out.data(), in.size(), kTestRounds, 256}; }
  course::Comparison compare() const {
    return course::compare_close<float>(expected,
                                        cuda::std::span<const float>(out.data(), out.size()),
                                        overlap_transfers::relative_tolerance(kTestRounds), 0.0);
  }
  course::PinnedBuffer<float> in;
  course::DeviceBuffer<float> device;
  course::PinnedBuffer<float> out;
  std::vector<float> expected;
};

using Case = std::tuple<Order, int>;

class GpuOverlapOrders : public course::testing::GpuTestWithParam<Case> {};

TEST_P(GpuOverlapOrders, EveryElementComesBackComputed) {
  const auto [order, chunks] = GetParam();
  const StreamSet streams(chunks);
  const course::Stream origin;
  for (std::size_t n : kAwkwardSizes) {
    Buffers b(n);
    transfer_and_compute(order, b.job(), chunks, streams, origin);
    // Only the caller's stream: the join must make it wait for every chunk's stream.
    COURSE_CHECK(cudaStreamSynchronize(origin));
    const course::Comparison c = b.compare();
    ASSERT_TRUE(c.ok()) << overlap_transfers::order_name(order) << ", " << chunks
                        << " chunks, n=" << n << ": " << c.summary() << concerns_order(order);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(b.in[i], overlap_transfers::input_value(i, 14))
          << "the input changed at " << i << concerns_order(order);
    }
  }
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const auto [order, chunks] = info.param;
  return std::string(order == Order::per_chunk ? "v1" : "v2") + "_" + std::to_string(chunks) +
         "_chunks";
}

// 3 and 7 divide none of the sizes; 32 chunks leave most of them empty for n = 1 or 31.
INSTANTIATE_TEST_SUITE_P(Chunks, GpuOverlapOrders,
                         ::testing::Combine(::testing::Values(Order::per_chunk,
                                                              Order::by_operation),
                                            ::testing::Values(1, 2, 3, 4, 7, 16, 32)),
                         case_name);

class GpuOverlap : public course::testing::GpuTest {};

TEST_F(GpuOverlap, SequentialIsCorrectToo) {
  const course::Stream origin;
  for (std::size_t n : kAwkwardSizes) {
    Buffers b(n);
    transfer_and_compute(Order::sequential, b.job(), 1, StreamSet(), origin);
    COURSE_CHECK(cudaStreamSynchronize(origin));
    const course::Comparison c = b.compare();
    ASSERT_TRUE(c.ok()) << "n=" << n << ": " << c.summary();
  }
}

TEST_F(GpuOverlap, AnyBlockSizeCoversEveryElement) {
  const StreamSet streams(3);
  const course::Stream origin;
  for (int threads : {32, 96, 1024}) {
    for (Order order : {Order::sequential, Order::per_chunk, Order::by_operation}) {
      Buffers b(1000003);
      Job job = b.job();
      job.threads_per_block = threads;
      transfer_and_compute(order, job, 3, streams, origin);
      COURSE_CHECK(cudaStreamSynchronize(origin));
      const course::Comparison c = b.compare();
      ASSERT_TRUE(c.ok()) << overlap_transfers::order_name(order) << ", " << threads
                          << " threads per block: " << c.summary() << concerns_order(order);
    }
  }
}

TEST_F(GpuOverlap, TheTimelineRecordsTheBlogPostsIssueOrders) {
  const StreamSet streams(7);
  const course::Stream origin;
  for (Order order : {Order::per_chunk, Order::by_operation}) {
    for (int chunks : {4, 7}) {
      Buffers b(1000003);
      overlap_transfers::Timeline timeline;
      transfer_and_compute(order, b.job(), chunks, streams, origin, &timeline);
      COURSE_CHECK(cudaStreamSynchronize(origin));
      const std::string todo = concerns_order(order);
      ASSERT_TRUE(b.compare().ok()) << b.compare().summary() << todo;
      const auto ops = timeline.read();
      // Recorded in issue order: exactly the model's sequence for this order.
      std::vector<std::pair<int, Stage>> recorded;
      for (const auto& op : ops) recorded.emplace_back(op.chunk, op.stage);
      EXPECT_EQ(recorded, sequence(model::issue_order(order, chunks, kUnit)))
          << overlap_transfers::order_name(order) << ", " << chunks << " chunks" << todo;
      double earliest = 1e30;
      std::map<std::pair<int, Stage>, overlap_transfers::TimedOperation> by_key;
      for (const auto& op : ops) {
        EXPECT_LE(op.ready_ms, op.start_ms) << todo;
        EXPECT_LE(op.start_ms, op.end_ms) << todo;
        earliest = std::min(earliest, op.ready_ms);
        by_key[{op.chunk, op.stage}] = op;
      }
      EXPECT_DOUBLE_EQ(earliest, 0.0) << todo;
      // Within a chunk's stream: the kernel is ready only after its copy in has ended,
      // the copy out only after the kernel (event resolution: about half a microsecond).
      for (int c = 0; c < chunks; ++c) {
        const auto& h2d = by_key[std::make_pair(c, Stage::h2d)];
        const auto& kernel = by_key[std::make_pair(c, Stage::kernel)];
        const auto& d2h = by_key[std::make_pair(c, Stage::d2h)];
        EXPECT_GE(kernel.ready_ms, h2d.end_ms - 1e-3) << "chunk " << c << todo;
        EXPECT_GE(d2h.ready_ms, kernel.end_ms - 1e-3) << "chunk " << c << todo;
      }
    }
  }
}

// The lesson's point, measured (see largest_kernel_copy_overlap above): with four chunks on
// four streams, a copy of one chunk runs while another chunk's kernel runs. The kernel is
// made about as long as a chunk's copy (32 rounds), so the overlap is tens of microseconds on
// any GPU. A GPU shared with other processes may time-slice a run; up to three runs are
// tried, and one that overlapped is enough: a schedule on one stream can never overlap.
TEST_F(GpuOverlap, ChunksOnTheirOwnStreamsOverlapCopiesWithKernels) {
  constexpr std::size_t kElements = (std::size_t{4} << 20) + 3;  // 16 MB each way, and 3 floats
  constexpr int kChunks = 4;
  constexpr int kRounds = 32;
  const StreamSet streams(kChunks);
  const course::Stream origin;
  for (Order order : {Order::per_chunk, Order::by_operation}) {
    Buffers b(kElements);
    Job job = b.job();
    job.rounds = kRounds;
    std::vector<float> expected(kElements);
    overlap_transfers::reference(cuda::std::span<const float>(b.in.data(), kElements), expected,
                                 kRounds);
    KernelCopyOverlap best;
    for (int attempt = 0; attempt < 3 && !overlapped(best); ++attempt) {
      overlap_transfers::Timeline timeline;
      transfer_and_compute(order, job, kChunks, streams, origin, &timeline);
      COURSE_CHECK(cudaStreamSynchronize(origin));
      const course::Comparison c = course::compare_close<float>(
          expected, cuda::std::span<const float>(b.out.data(), kElements),
          overlap_transfers::relative_tolerance(kRounds), 0.0);
      ASSERT_TRUE(c.ok()) << c.summary() << concerns_order(order);
      const KernelCopyOverlap o = largest_kernel_copy_overlap(timeline.read());
      if (o.ms >= best.ms) best = o;
    }
    EXPECT_TRUE(overlapped(best))
        << overlap_transfers::order_name(order) << ", " << kChunks
        << " chunks: no copy of one chunk ran while another chunk's kernel ran (longest: "
        << (best.pair.empty() ? "none" : best.pair) << ", " << best.ms * 1000 << " us, "
        << best.fraction * 100
        << "% of the shorter). The values are right, but the point of the lesson is lost: "
           "are the chunks' operations on their own streams, streams[c] for chunk c?"
        << concerns_order(order);
  }
}

TEST_F(GpuOverlap, StageLaunchesCoverEveryElement) {
  // The driver's stage timing: every chunk of one stage back to back on one stream.
  const course::Stream origin;
  for (std::size_t n : kAwkwardSizes) {
    Buffers b(n);
    for (Stage stage : {Stage::h2d, Stage::kernel, Stage::d2h}) {
      overlap_transfers::prepare_stage(stage, b.job(), 7)(origin);
    }
    COURSE_CHECK(cudaStreamSynchronize(origin));
    const course::Comparison c = b.compare();
    ASSERT_TRUE(c.ok()) << "n=" << n << ": " << c.summary();
  }
}

TEST_F(GpuOverlap, CopiesOnlyMovesBothWholeArrays) {
  const std::size_t n = 1000003;
  Buffers b(n);
  course::DeviceBuffer<float> scratch(n);
  COURSE_CHECK(cudaMemset(scratch.data(), 0, scratch.bytes()));
  COURSE_CHECK(cudaDeviceSynchronize());
  const StreamSet streams(2);
  const course::Stream origin;
  overlap_transfers::prepare_copies_only(b.job(), scratch.data(), streams)(origin);
  COURSE_CHECK(cudaStreamSynchronize(origin));  // the join makes the caller's stream wait
  const std::vector<float> on_device =
      course::to_host(cuda::std::span<const float>(b.device.data(), n));
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(on_device[i], b.in[i]) << "host -> device at " << i;
    ASSERT_EQ(b.out[i], 0.0f) << "device -> host at " << i;
  }
}

TEST_F(GpuOverlap, ModelOfThisDevice) {
  const model::Gpu gpu = overlap_transfers::model_of_device(0, "this GPU");
  EXPECT_EQ(gpu.name, "this GPU");
  EXPECT_GE(gpu.copy_engines, 1);
  EXPECT_GE(gpu.connections, 1);
  EXPECT_LE(gpu.connections, 32);
  EXPECT_FALSE(gpu.delayed_kernel_signal);
}

TEST_F(GpuOverlap, RejectsPageableHostMemory) {
  const std::size_t n = 1000;
  std::vector<float> pageable_in(n, 1.0f), pageable_out(n);
  course::PinnedBuffer<float> pinned(n);
  course::DeviceBuffer<float> device(n);
  const StreamSet streams(2);
  Job job{pageable_in.data(), device.data(), pinned.data(), n, 1, 256};
  EXPECT_THROW(transfer_and_compute(Order::per_chunk, job, 2, streams, 0), std::invalid_argument);
  job = Job{pinned.data(), device.data(), pageable_out.data(), n, 1, 256};
  EXPECT_THROW(transfer_and_compute(Order::by_operation, job, 2, streams, 0),
               std::invalid_argument);
}

TEST_F(GpuOverlap, OccupancyQueryAnswers) {
  EXPECT_GE(overlap_transfers::max_blocks_per_sm(256), 1);
  EXPECT_EQ(overlap_transfers::blocks_for(1000003, 256), 3907u);
}

}  // namespace
