// Lesson 13 tests: built twice, against the starter (label `lesson`) and against the
// solution (label `solution`). GPU suites are named Gpu...; they skip without a GPU.
//
// The GPU tests assert only what CUDA guarantees: ordering (one operation starts after
// another ended, on the GPU's global timer), what a wait or a query answers, and values.
// They never assert that two kernels ran concurrently: the programming model allows
// concurrency but does not promise it. A "does not wait" is shown with an event in an
// otherwise empty stream, which needs no free multiprocessor to complete.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "course/buffers.h"
#include "course/check.h"
#include "course/data.h"
#include "course/inspect.h"
#include "gpu_test.h"
#include "measure.h"
#include "streams_and_sync.cuh"

namespace {

using course::testing::concerns_todo;  // " [concerns TODO k]" on a failure: gpu_test.h
using streams_and_sync::Concurrency;
using streams_and_sync::Interval;
using streams_and_sync::KindStream;
using streams_and_sync::SpinRecord;
using streams_and_sync::StreamKind;

constexpr std::uint64_t kMs = 1'000'000;  // nanoseconds

const std::vector<StreamKind> kAllKinds = {StreamKind::legacy_default,
                                           StreamKind::per_thread_default, StreamKind::blocking,
                                           StreamKind::non_blocking};

std::string kind_id(StreamKind k) {
  std::string name = streams_and_sync::stream_kind_name(k);
  for (char& c : name) c = c == '-' ? '_' : c;
  return name;
}

}  // namespace

namespace streams_and_sync {
void PrintTo(StreamKind k, std::ostream* os) { *os << stream_kind_name(k); }
}  // namespace streams_and_sync

namespace {

// ---- CPU tests: the model -----------------------------------------------------------------

TEST(StreamsAndSyncModel, WhichPairsTheProgrammingModelSerialises) {
  const StreamKind L = StreamKind::legacy_default, P = StreamKind::per_thread_default,
                   B = StreamKind::blocking, N = StreamKind::non_blocking;
  struct Expectation {
    StreamKind first, second;
    bool serialised;
  };
  const std::vector<Expectation> table = {
      // The legacy stream with itself (one stream), with blocking streams and with the
      // per-thread default stream (both wait for it and it waits for them); never with a
      // non-blocking stream.
      {L, L, true},  {L, P, true},  {L, B, true},
      {L, N, false}, {P, L, true},  {P, P, true},  // one host thread has one per-thread stream
      {P, B, false}, {P, N, false}, {B, L, true},
      {B, P, false}, {B, B, false},  // two created streams do not wait for each other
      {B, N, false}, {N, L, false}, {N, P, false},
      {N, B, false}, {N, N, false},
  };
  for (const Expectation& e : table) {
    EXPECT_EQ(streams_and_sync::implicitly_serialised(e.first, e.second), e.serialised)
        << streams_and_sync::stream_kind_name(e.first) << " then "
        << streams_and_sync::stream_kind_name(e.second) << concerns_todo(2);
  }
}

TEST(StreamsAndSyncModel, Names) {
  EXPECT_STREQ(streams_and_sync::stream_kind_name(StreamKind::legacy_default), "legacy");
  EXPECT_STREQ(streams_and_sync::stream_kind_name(StreamKind::per_thread_default), "per-thread");
  EXPECT_STREQ(streams_and_sync::stream_kind_name(StreamKind::blocking), "blocking");
  EXPECT_STREQ(streams_and_sync::stream_kind_name(StreamKind::non_blocking), "non-blocking");
  EXPECT_STREQ(streams_and_sync::concurrency_name(Concurrency::serialised), "serialised");
  EXPECT_STREQ(streams_and_sync::concurrency_name(Concurrency::partial), "partial");
  EXPECT_STREQ(streams_and_sync::concurrency_name(Concurrency::concurrent), "concurrent");
}

// ---- CPU tests: the overlap arithmetic ----------------------------------------------------

TEST(StreamsAndSyncOverlap, RatioOfKnownPairs) {
  using streams_and_sync::overlap_ratio;
  SCOPED_TRACE(concerns_todo(6));  // on every failure below: all of them check TODO 6
  EXPECT_DOUBLE_EQ(overlap_ratio(5, 5, 5), 1.0);      // fully at once
  EXPECT_DOUBLE_EQ(overlap_ratio(5, 5, 10), 0.0);     // one after the other
  EXPECT_DOUBLE_EQ(overlap_ratio(5, 5, 7.5), 0.5);    // half
  EXPECT_DOUBLE_EQ(overlap_ratio(4, 4, 5), 0.75);     // 3 of 4 ms together
  EXPECT_DOUBLE_EQ(overlap_ratio(2, 8, 8), 1.0);      // the short one inside the long one
  EXPECT_DOUBLE_EQ(overlap_ratio(8, 2, 9), 0.5);      // divided by the shorter time
  EXPECT_DOUBLE_EQ(overlap_ratio(5, 5, 10.5), -0.1);  // a gap between them
}

TEST(StreamsAndSyncOverlap, RejectsTimesThatAreNotPositive) {
  EXPECT_THROW(streams_and_sync::overlap_ratio(0, 5, 5), std::invalid_argument);
  EXPECT_THROW(streams_and_sync::overlap_ratio(5, -1, 5), std::invalid_argument);
}

TEST(StreamsAndSyncOverlap, ClassificationKeepsAWideMargin) {
  using streams_and_sync::classify;
  EXPECT_EQ(classify(-0.3), Concurrency::serialised);
  EXPECT_EQ(classify(0.0), Concurrency::serialised);
  EXPECT_EQ(classify(0.099), Concurrency::serialised);
  EXPECT_EQ(classify(0.1), Concurrency::partial);
  EXPECT_EQ(classify(0.3), Concurrency::partial);
  EXPECT_EQ(classify(0.5), Concurrency::partial);
  EXPECT_EQ(classify(0.51), Concurrency::concurrent);
  EXPECT_EQ(classify(1.0), Concurrency::concurrent);
}

TEST(StreamsAndSyncOverlap, PairTimingFromGpuIntervals) {
  using streams_and_sync::pair_timing;
  // Nanoseconds on the global timer; times come out in milliseconds.
  const Interval a{1'000'000'000, 1'005'000'000};                 // 5 ms
  const auto t = pair_timing(a, {1'001'000'000, 1'006'000'000});  // starts 1 ms later
  EXPECT_DOUBLE_EQ(t.t1_ms, 5.0);
  EXPECT_DOUBLE_EQ(t.t2_ms, 5.0);
  EXPECT_DOUBLE_EQ(t.pair_ms, 6.0);
  EXPECT_DOUBLE_EQ(t.overlap, 0.8) << concerns_todo(6);
  const auto after = pair_timing(a, {1'005'000'000, 1'007'000'000});  // starts as a ends
  EXPECT_DOUBLE_EQ(after.pair_ms, 7.0);
  EXPECT_DOUBLE_EQ(after.overlap, 0.0) << concerns_todo(6);
  const auto earlier = pair_timing(a, {999'000'000, 1'002'000'000});  // the second starts first
  EXPECT_DOUBLE_EQ(earlier.pair_ms, 6.0);
  EXPECT_DOUBLE_EQ(earlier.overlap, 2.0 / 3.0) << concerns_todo(6);
  EXPECT_THROW(pair_timing(a, {7, 7}), std::invalid_argument);
  EXPECT_THROW(pair_timing({9, 3}, a), std::invalid_argument);
}

// ---- CPU tests: the child process's report line ---------------------------------------------

TEST(StreamsAndSyncChildReport, FormatsAndParsesBack) {
  streams_and_sync::ChildReport report;
  report.launch_blocking = true;
  report.timing = {5.25, 5.5, 10.75, -0.0625};
  report.values_ok = true;
  const std::string line = streams_and_sync::format_child_report(report);
  EXPECT_EQ(line,
            "CHILD-REPORT launch_blocking=1 t1_ms=5.250000 t2_ms=5.500000 pair_ms=10.750000 "
            "overlap=-0.062500 values=ok");
  const auto parsed = streams_and_sync::parse_child_report("GPU 0: something\n" + line + "\n");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_TRUE(parsed->launch_blocking);
  EXPECT_TRUE(parsed->values_ok);
  EXPECT_DOUBLE_EQ(parsed->timing.t1_ms, 5.25);
  EXPECT_DOUBLE_EQ(parsed->timing.t2_ms, 5.5);
  EXPECT_DOUBLE_EQ(parsed->timing.pair_ms, 10.75);
  EXPECT_DOUBLE_EQ(parsed->timing.overlap, -0.0625);

  report.launch_blocking = false;
  report.values_ok = false;
  const auto second =
      streams_and_sync::parse_child_report(streams_and_sync::format_child_report(report));
  ASSERT_TRUE(second.has_value());
  EXPECT_FALSE(second->launch_blocking);
  EXPECT_FALSE(second->values_ok);
}

TEST(StreamsAndSyncChildReport, RejectsMissingOrMalformedLines) {
  using streams_and_sync::parse_child_report;
  EXPECT_FALSE(parse_child_report("").has_value());
  EXPECT_FALSE(parse_child_report("RESULT: PASS\n").has_value());
  // A key missing, a value that is not a number, an unknown key, a bad flag value.
  EXPECT_FALSE(parse_child_report("CHILD-REPORT launch_blocking=1 t1_ms=1 t2_ms=1 pair_ms=2 "
                                  "values=ok")
                   .has_value());
  EXPECT_FALSE(parse_child_report("CHILD-REPORT launch_blocking=1 t1_ms=x t2_ms=1 pair_ms=2 "
                                  "overlap=0 values=ok")
                   .has_value());
  EXPECT_FALSE(parse_child_report("CHILD-REPORT launch_blocking=1 t1_ms=1 t2_ms=1 pair_ms=2 "
                                  "overlap=0 values=ok extra=3")
                   .has_value());
  EXPECT_FALSE(parse_child_report("CHILD-REPORT launch_blocking=yes t1_ms=1 t2_ms=1 pair_ms=2 "
                                  "overlap=0 values=ok")
                   .has_value());
}

// ---- CPU tests: the breaker matrix ---------------------------------------------------------

TEST(StreamsAndSyncBreakers, MatrixStartsWithTheControlAndHasUniqueNames) {
  const auto& matrix = streams_and_sync::breakers();
  ASSERT_FALSE(matrix.empty());
  EXPECT_STREQ(matrix.front().name, "nothing");
  EXPECT_EQ(matrix.front().model, streams_and_sync::Guarantee::no_implicit_sync);
  std::set<std::string> names;
  int in_child = 0;
  for (const auto& b : matrix) {
    EXPECT_TRUE(names.insert(b.name).second) << "two breakers named " << b.name;
    if (!b.between) {
      ++in_child;
      EXPECT_EQ(b.model, streams_and_sync::Guarantee::breaks) << b.name;
    }
  }
  EXPECT_EQ(in_child, 1) << "exactly one row (CUDA_LAUNCH_BLOCKING=1) runs in a child process";
  // What CUDA guarantees for a legacy-stream operation depends on the other streams' kind.
  for (const auto& b : matrix) {
    const std::string name = b.name;
    if (name.rfind("legacy-kernel/", 0) != 0 && name.rfind("cudaMemcpy/", 0) != 0) continue;
    EXPECT_EQ(b.model, b.streams == StreamKind::non_blocking
                           ? streams_and_sync::Guarantee::no_implicit_sync
                           : streams_and_sync::Guarantee::breaks)
        << name;
  }
  EXPECT_STREQ(streams_and_sync::guarantee_name(streams_and_sync::Guarantee::unspecified),
               "unspecified");
}

TEST(StreamsAndSyncBreakers, JudgeChecksOnlyWhatIsGuaranteed) {
  using streams_and_sync::judge;
  streams_and_sync::Measured serial, overlapped, partial, broken;
  serial.timing.overlap = 0.0;
  overlapped.timing.overlap = 0.99;
  partial.timing.overlap = 0.3;
  broken.problem = "the values did not verify";
  EXPECT_EQ(judge(serial, true), "PASS");
  EXPECT_EQ(judge(overlapped, true), "FAIL");
  EXPECT_EQ(judge(partial, true), "NOTE");
  EXPECT_EQ(judge(overlapped, false), "PASS");
  EXPECT_EQ(judge(serial, false), "NOTE");  // allowed: the GPU may choose not to overlap
  EXPECT_EQ(judge(serial, std::nullopt), "-");
  EXPECT_EQ(judge(overlapped, std::nullopt), "-");
  for (std::optional<bool> m :
       {std::optional<bool>(true), std::optional<bool>(false), std::optional<bool>()}) {
    EXPECT_EQ(judge(broken, m), "FAIL");
  }
}

TEST(StreamsAndSyncMeasure, MediansOverTheTimedRunsAndTheFirstProblem) {
  int calls = 0;
  std::vector<bool> checked;
  const auto m = streams_and_sync::measure(1, 3, [&](bool check_values) {
    checked.push_back(check_values);
    streams_and_sync::Sample s;
    ++calls;
    const double x = calls == 1 ? 100.0 : 0.1 * (calls - 1);  // the warm-up run is an outlier
    s.timing = {x, x, x, x};
    s.between_ms = x;
    return s;
  });
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(checked, (std::vector<bool>{true, false, false, false}));
  EXPECT_TRUE(m.problem.empty());
  EXPECT_DOUBLE_EQ(m.timing.overlap, 0.2);
  EXPECT_DOUBLE_EQ(m.timing.pair_ms, 0.2);
  EXPECT_DOUBLE_EQ(m.between_ms, 0.2);

  calls = 0;
  const auto bad = streams_and_sync::measure(0, 3, [&](bool) {
    streams_and_sync::Sample s;
    s.timing = {1, 1, 1, 1};
    if (++calls == 2) s.problem = "second run";
    return s;
  });
  EXPECT_EQ(bad.problem, "second run");
}

// ---- CPU tests: launchers check their arguments before any CUDA call ----------------------

TEST(StreamsAndSyncLaunchers, RejectBadArgumentsBeforeTouchingTheDevice) {
  auto* fake_record = reinterpret_cast<SpinRecord*>(std::uintptr_t{1} << 20);
  EXPECT_THROW(streams_and_sync::launch_spin(nullptr, kMs, 1, 0), std::invalid_argument);
  EXPECT_THROW(streams_and_sync::launch_spin(fake_record, streams_and_sync::kMaxSpinNs + 1, 1, 0),
               std::invalid_argument);

  auto* fake = reinterpret_cast<std::uint32_t*>(std::uintptr_t{2} << 20);
  const cuda::std::span<std::uint32_t> data(fake, 1000);
  EXPECT_THROW(streams_and_sync::launch_delayed_fill(data, 1, streams_and_sync::kMaxSpinNs + 1, 0),
               std::invalid_argument);
  EXPECT_NO_THROW(streams_and_sync::launch_delayed_fill({}, 1, kMs, 0));  // nothing to fill

  const cuda::std::span<const std::uint32_t> src(fake, 1000);
  EXPECT_THROW(streams_and_sync::copy_after_producer(src, data.first(999), 0, 0, nullptr),
               std::invalid_argument);
  EXPECT_NO_THROW(streams_and_sync::copy_after_producer({}, {}, 0, 0, nullptr));
}

TEST(StreamsAndSyncLaunchers, SpinIterationCapOutlastsTheTimeBound) {
  EXPECT_EQ(streams_and_sync::spin_iteration_cap(0), 1024u);
  EXPECT_EQ(streams_and_sync::spin_iteration_cap(5 * kMs), 20'001'024u);
  // A timer read takes more than 1/4 ns, so the time bound always ends a spin first.
  static_assert(streams_and_sync::spin_iteration_cap(streams_and_sync::kMaxSpinNs) >
                4 * streams_and_sync::kMaxSpinNs);
}

// ---- CPU tests: what the compiler emitted -------------------------------------------------

TEST(StreamsAndSyncPtx, KernelsAreTimedByTheGlobalTimer) {
  const auto modules = course::inspect::read_ptx_modules(course::testing::kernels_object_path());
  const auto targets = course::testing::ptx_targets();
  ASSERT_FALSE(targets.empty());
  for (const std::string& target : targets) {
    const auto& module = course::inspect::module_for(modules, target);
    ASSERT_EQ(course::inspect::ptx_kernels(module).size(), 2u)
        << "spin_kernel and delayed_fill_kernel in " << target;
    for (const char* name : {"spin_kernel", "delayed_fill_kernel"}) {
      const auto k = course::inspect::kernel(module, name);
      // The global timer counts nanoseconds on every SM alike; clock64 counts cycles of one
      // SM at whatever clock it runs, so intervals of two kernels could not be compared.
      EXPECT_TRUE(course::inspect::uses(k.body, "%globaltimer")) << name << " in " << target;
      EXPECT_FALSE(course::inspect::uses(k.body, "%clock64")) << name << " in " << target;
      EXPECT_TRUE(course::inspect::uses(k.body, "bra")) << name << ": no loop in " << target;
    }
  }
}

TEST(StreamsAndSyncSass, SpinKernelsReadTheGlobalTimerRegister) {
  const std::string cuobjdump = course::testing::cuobjdump_path();
  if (cuobjdump.empty()) GTEST_SKIP() << "cuobjdump not found: SASS checks need it";
  const std::string listing = course::inspect::run_command(
      "'" + cuobjdump + "' -sass -arch sm_90 '" + course::testing::kernels_object_path() + "'");
  const auto functions = course::inspect::sass_functions(listing);
  ASSERT_EQ(functions.size(), 2u) << listing.substr(0, 2000);
  for (const auto& f : functions) {
    // CS2R Rn, SR_GLOBALTIMERLO: a 64-bit read of the timer in one instruction.
    EXPECT_NE(f.body.find("SR_GLOBALTIMER"), std::string::npos) << f.name;
  }
}

// ---- GPU helpers ----------------------------------------------------------------------------

/// Spin records in device memory, zeroed so that every read is of initialised memory.
class Records {
 public:
  explicit Records(std::size_t count) : buffer_(count) {
    COURSE_CHECK(cudaMemset(buffer_.data(), 0, buffer_.bytes()));
    // cudaMemset runs in the legacy stream, which non-blocking streams do not wait for:
    // finish it before any kernel can write a record.
    COURSE_CHECK(cudaDeviceSynchronize());
  }
  SpinRecord* at(std::size_t i) const { return buffer_.data() + i; }
  /// Synchronous copy to the host (legacy stream: it waits for blocking streams' work).
  std::vector<SpinRecord> read() const {
    std::vector<SpinRecord> host(buffer_.size());
    COURSE_CHECK(cudaMemcpy(host.data(), buffer_.data(), buffer_.bytes(), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  course::DeviceBuffer<SpinRecord> buffer_;
};

/// cudaStreamQuery / cudaEventQuery without the lesson's helpers (so a test of one TODO
/// does not depend on another), forgetting a cudaErrorNotReady left as the last error.
cudaError_t raw_query(cudaError_t status) {
  if (status == cudaErrorNotReady && cudaPeekAtLastError() == cudaErrorNotReady) {
    (void)cudaGetLastError();
  }
  return status;
}

/// `todos`: the TODO tags of the test that asks (concerns_todo), or none.
void expect_spun(const SpinRecord& r, std::uint32_t token, std::uint64_t duration_ns,
                 const char* what, const std::string& todos = "") {
  EXPECT_EQ(r.token, token) << what << ": the record was not written by this launch" << todos;
  EXPECT_EQ(r.stopped_by, streams_and_sync::kStoppedByTime) << what << todos;
  EXPECT_GE(r.end_ns, r.start_ns + duration_ns) << what << ": spun for less than asked" << todos;
}

/// An event destroyed with its owner.
struct Event {
  cudaEvent_t event = nullptr;
  explicit Event(unsigned flags = cudaEventDefault) {
    COURSE_CHECK(cudaEventCreateWithFlags(&event, flags));
  }
  ~Event() { cudaEventDestroy(event); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  operator cudaEvent_t() const { return event; }
};

// ---- GPU tests: the instruments -------------------------------------------------------------

class GpuSpin : public course::testing::GpuTest {};

TEST_F(GpuSpin, RecordsItsOwnIntervalOnTheGlobalTimer) {
  Records records(2);
  course::Stream s;
  streams_and_sync::launch_spin(records.at(0), 20 * kMs, 7, s);
  streams_and_sync::launch_spin(records.at(1), 0, 8, s);  // a time stamp
  COURSE_CHECK(cudaStreamSynchronize(s));
  const auto r = records.read();
  expect_spun(r[0], 7, 20 * kMs, "20 ms spin");
  EXPECT_GT(r[0].iterations, 0u);
  EXPECT_EQ(r[1].token, 8u);
  EXPECT_EQ(r[1].iterations, 0u);
  EXPECT_EQ(r[1].stopped_by, streams_and_sync::kStoppedByTime);
  // One stream runs in order: the stamp starts after the spin ended.
  EXPECT_GE(r[1].start_ns, r[0].end_ns);
}

TEST_F(GpuSpin, DelayedFillWritesEveryElementAfterItsDelay) {
  course::Stream s;
  for (std::size_t n : {std::size_t{1}, std::size_t{31}, std::size_t{4097}, std::size_t{1000003}}) {
    course::DeviceBuffer<std::uint32_t> data(n);
    course::poison(data.data(), data.bytes(), s);
    Event start, stop;
    COURSE_CHECK(cudaEventRecord(start, s));
    streams_and_sync::launch_delayed_fill(data.span(), static_cast<std::uint32_t>(n), 5 * kMs, s);
    COURSE_CHECK(cudaEventRecord(stop, s));
    COURSE_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    COURSE_CHECK(cudaEventElapsedTime(&ms, start, stop));
    EXPECT_GE(ms, 4.9f) << "n=" << n << ": the producer did not wait its delay";
    std::vector<std::uint32_t> expected(n);
    course::fill_hash_host(expected, static_cast<std::uint32_t>(n));
    const auto c = course::compare_exact<std::uint32_t>(expected, course::to_host(data.cspan()));
    EXPECT_TRUE(c.ok()) << "n=" << n << ": " << c.summary();
  }
}

// ---- GPU tests: kinds of stream -------------------------------------------------------------

class GpuStreamKinds : public course::testing::GpuTest {};

TEST_F(GpuStreamKinds, MakeStreamReturnsTheRightKind) {
  {
    KindStream legacy(StreamKind::legacy_default);
    EXPECT_EQ(legacy.get(), cudaStreamLegacy)
        << "the legacy default stream's handle" << concerns_todo(1);
  }
  {
    KindStream per_thread(StreamKind::per_thread_default);
    EXPECT_EQ(per_thread.get(), cudaStreamPerThread)
        << "the per-thread default stream's handle" << concerns_todo(1);
  }
  for (StreamKind kind : {StreamKind::blocking, StreamKind::non_blocking}) {
    KindStream a(kind), b(kind);
    const std::string name = streams_and_sync::stream_kind_name(kind);
    for (cudaStream_t s : {a.get(), b.get()}) {
      EXPECT_NE(s, nullptr) << name << ": a created stream, not the default one"
                            << concerns_todo(1);
      EXPECT_NE(s, cudaStreamLegacy) << name << concerns_todo(1);
      EXPECT_NE(s, cudaStreamPerThread) << name << concerns_todo(1);
    }
    EXPECT_NE(a.get(), b.get()) << name << ": two streams, not one" << concerns_todo(1);
    if (a.get() == nullptr || a.get() == cudaStreamLegacy || a.get() == cudaStreamPerThread) {
      continue;  // not a created stream: its flags would say nothing
    }
    unsigned flags = 0xFFFF;
    COURSE_CHECK(cudaStreamGetFlags(a, &flags));
    EXPECT_EQ(flags, kind == StreamKind::non_blocking ? unsigned{cudaStreamNonBlocking}
                                                      : unsigned{cudaStreamDefault})
        << name << concerns_todo(1);
  }
}

// For every ordered pair of kinds: a 150 ms spin in the first stream, then work in the
// second. Where the model serialises the pair, the second stream's kernel starts only after
// the spin ended. Where it does not, an event recorded in the second stream completes while
// the spin still runs: nothing made the second stream wait.
using KindPair = std::tuple<StreamKind, StreamKind>;

class GpuStreamPairs : public course::testing::GpuTestWithParam<KindPair> {};

bool serialised_by_the_model(StreamKind first, StreamKind second) {
  // Written out here, not taken from the lesson's implicitly_serialised(), so this test
  // checks the GPU, not the student's table.
  const auto legacy_like = [](StreamKind k) { return k != StreamKind::non_blocking; };
  if (first == second &&
      (first == StreamKind::legacy_default || first == StreamKind::per_thread_default)) {
    return true;
  }
  if (first == StreamKind::legacy_default) return legacy_like(second);
  if (second == StreamKind::legacy_default) return legacy_like(first);
  return false;
}

TEST_P(GpuStreamPairs, SecondStreamWaitsExactlyWhenTheModelSaysSo) {
  const auto [first_kind, second_kind] = GetParam();
  KindStream first(first_kind);
  KindStream second(second_kind);
  Records records(2);
  constexpr std::uint64_t kSpin = 150 * kMs;
  streams_and_sync::launch_spin(records.at(0), kSpin, 1, first);
  if (serialised_by_the_model(first_kind, second_kind)) {
    streams_and_sync::launch_spin(records.at(1), 0, 2, second);
    COURSE_CHECK(cudaDeviceSynchronize());
    const auto r = records.read();
    expect_spun(r[0], 1, kSpin, "first", concerns_todo(1));
    EXPECT_EQ(r[1].token, 2u) << concerns_todo(1);
    EXPECT_GE(r[1].start_ns, r[0].end_ns)
        << "the second stream's kernel did not wait" << concerns_todo(1);
  } else {
    Event marker(cudaEventDisableTiming);
    COURSE_CHECK(cudaEventRecord(marker, second));
    COURSE_CHECK(cudaEventSynchronize(marker));
    EXPECT_EQ(raw_query(cudaStreamQuery(first)), cudaErrorNotReady)
        << "the second stream's event waited for the first stream's spin" << concerns_todo(1);
    COURSE_CHECK(cudaDeviceSynchronize());
    expect_spun(records.read()[0], 1, kSpin, "first", concerns_todo(1));
  }
}

std::string pair_name(const ::testing::TestParamInfo<KindPair>& info) {
  return kind_id(std::get<0>(info.param)) + "_then_" + kind_id(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Kinds, GpuStreamPairs,
                         ::testing::Combine(::testing::ValuesIn(kAllKinds),
                                            ::testing::ValuesIn(kAllKinds)),
                         pair_name);

// ---- GPU tests: the synchronisation calls ---------------------------------------------------

class GpuSyncCalls : public course::testing::GpuTest {};

TEST_F(GpuSyncCalls, StreamQueryIsNotReadyWhileWorkRunsAndSuccessAfterSynchronize) {
  Records records(1);
  course::Stream s;
  streams_and_sync::launch_spin(records.at(0), 100 * kMs, 3, s);
  EXPECT_FALSE(streams_and_sync::stream_is_idle(s))
      << "cudaStreamQuery during a 100 ms spin" << concerns_todo(3);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess)
      << "cudaErrorNotReady left behind as an error" << concerns_todo(3);
  COURSE_CHECK(cudaStreamSynchronize(s));
  EXPECT_TRUE(streams_and_sync::stream_is_idle(s))
      << "cudaStreamQuery after cudaStreamSynchronize" << concerns_todo(3);
  expect_spun(records.read()[0], 3, 100 * kMs, "spin", concerns_todo(3));
}

TEST_F(GpuSyncCalls, EventQueryIsNotReadyWhileItsWorkRunsAndSuccessAfterSynchronize) {
  Records records(1);
  course::Stream s;
  Event event;
  streams_and_sync::launch_spin(records.at(0), 100 * kMs, 4, s);
  COURSE_CHECK(cudaEventRecord(event, s));
  EXPECT_FALSE(streams_and_sync::event_has_completed(event))
      << "cudaEventQuery during the spin" << concerns_todo(4);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess)
      << "cudaErrorNotReady left behind as an error" << concerns_todo(4);
  COURSE_CHECK(cudaEventSynchronize(event));
  EXPECT_TRUE(streams_and_sync::event_has_completed(event)) << concerns_todo(4);
  expect_spun(records.read()[0], 4, 100 * kMs, "spin", concerns_todo(4));
}

TEST_F(GpuSyncCalls, AnEventNeverRecordedCountsAsCompleted) {
  Event event;
  EXPECT_TRUE(streams_and_sync::event_has_completed(event)) << concerns_todo(4);
}

TEST_F(GpuSyncCalls, EventSynchronizeWaitsForTheWorkBeforeTheEventOnly) {
  Records records(2);
  course::Stream s;
  Event event;
  streams_and_sync::launch_spin(records.at(0), 20 * kMs, 5, s);
  COURSE_CHECK(cudaEventRecord(event, s));
  streams_and_sync::launch_spin(records.at(1), 300 * kMs, 6, s);  // after the event
  COURSE_CHECK(cudaEventSynchronize(event));
  // The event marks a point in the stream: what came before it is done, what came after
  // is not.
  EXPECT_FALSE(streams_and_sync::stream_is_idle(s))
      << "the spin after the event is still running" << concerns_todo(3);
  expect_spun(records.read()[0], 5, 20 * kMs, "before the event", concerns_todo(3));
  COURSE_CHECK(cudaStreamSynchronize(s));
  expect_spun(records.read()[1], 6, 300 * kMs, "after the event", concerns_todo(3));
}

TEST_F(GpuSyncCalls, StreamSynchronizeWaitsForItsOwnStreamOnly) {
  Records records(1);
  course::Stream busy, empty;
  streams_and_sync::launch_spin(records.at(0), 200 * kMs, 9, busy);
  COURSE_CHECK(cudaStreamSynchronize(empty));
  EXPECT_FALSE(streams_and_sync::stream_is_idle(busy))
      << "synchronising an empty stream waited for another stream's work" << concerns_todo(3);
  COURSE_CHECK(cudaStreamSynchronize(busy));
  EXPECT_TRUE(streams_and_sync::stream_is_idle(busy)) << concerns_todo(3);
  expect_spun(records.read()[0], 9, 200 * kMs, "spin", concerns_todo(3));
}

TEST_F(GpuSyncCalls, DeviceSynchronizeWaitsForEveryStream) {
  Records records(3);
  course::Stream a, b;
  streams_and_sync::launch_spin(records.at(0), 50 * kMs, 10, a);
  streams_and_sync::launch_spin(records.at(1), 80 * kMs, 11, b);
  streams_and_sync::launch_spin(records.at(2), 30 * kMs, 12, cudaStreamPerThread);
  COURSE_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(streams_and_sync::stream_is_idle(a)) << concerns_todo(3);
  EXPECT_TRUE(streams_and_sync::stream_is_idle(b)) << concerns_todo(3);
  EXPECT_TRUE(streams_and_sync::stream_is_idle(cudaStreamPerThread)) << concerns_todo(3);
  const auto r = records.read();
  expect_spun(r[0], 10, 50 * kMs, "a", concerns_todo(3));
  expect_spun(r[1], 11, 80 * kMs, "b", concerns_todo(3));
  expect_spun(r[2], 12, 30 * kMs, "per-thread", concerns_todo(3));
}

TEST_F(GpuSyncCalls, WaitingForAnEventNeverRecordedIsANoOp) {
  Records records(1);
  course::Stream s;
  Event never_recorded;
  COURSE_CHECK(cudaStreamWaitEvent(s, never_recorded, cudaEventWaitDefault));
  streams_and_sync::launch_spin(records.at(0), 0, 13, s);
  COURSE_CHECK(cudaStreamSynchronize(s));  // returns: the wait was a no-op
  EXPECT_EQ(records.read()[0].token, 13u);
}

TEST_F(GpuSyncCalls, DestroyingABusyStreamReturnsAtOnceAndItsWorkStillFinishes) {
  Records records(1);
  cudaStream_t doomed = nullptr;
  COURSE_CHECK(cudaStreamCreateWithFlags(&doomed, cudaStreamNonBlocking));
  Event done(cudaEventDisableTiming);
  streams_and_sync::launch_spin(records.at(0), 100 * kMs, 14, doomed);
  COURSE_CHECK(cudaEventRecord(done, doomed));
  COURSE_CHECK(cudaStreamDestroy(doomed));
  EXPECT_EQ(raw_query(cudaEventQuery(done)), cudaErrorNotReady)
      << "cudaStreamDestroy waited for the stream's work";
  COURSE_CHECK(cudaEventSynchronize(done));
  expect_spun(records.read()[0], 14, 100 * kMs, "spin in the destroyed stream");
}

TEST_F(GpuSyncCalls, DestroyingAPendingEventDoesNotStopItsWork) {
  Records records(1);
  course::Stream s;
  streams_and_sync::launch_spin(records.at(0), 50 * kMs, 15, s);
  cudaEvent_t pending = nullptr;
  COURSE_CHECK(cudaEventCreate(&pending));
  COURSE_CHECK(cudaEventRecord(pending, s));
  COURSE_CHECK(cudaEventDestroy(pending));
  EXPECT_EQ(raw_query(cudaStreamQuery(s)), cudaErrorNotReady)
      << "cudaEventDestroy waited for the event";
  COURSE_CHECK(cudaStreamSynchronize(s));
  expect_spun(records.read()[0], 15, 50 * kMs, "spin");
}

// ---- GPU tests: a consumer ordered after its producer with an event -------------------------

enum class Handle { per_thread, blocking, non_blocking };

/// A stream made with the CUDA API directly, so that these tests check TODO 5 alone.
class RawStream {
 public:
  explicit RawStream(Handle h) : handle_(h) {
    if (h == Handle::blocking) COURSE_CHECK(cudaStreamCreate(&stream_));
    if (h == Handle::non_blocking) {
      COURSE_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    }
    if (h == Handle::per_thread) stream_ = cudaStreamPerThread;
  }
  ~RawStream() {
    if (handle_ != Handle::per_thread) cudaStreamDestroy(stream_);
  }
  RawStream(const RawStream&) = delete;
  RawStream& operator=(const RawStream&) = delete;
  operator cudaStream_t() const { return stream_; }

 private:
  Handle handle_;
  cudaStream_t stream_ = nullptr;
};

std::string handle_id(Handle h) {
  return h == Handle::per_thread ? "per_thread"
         : h == Handle::blocking ? "blocking"
                                 : "non_blocking";
}
void PrintTo(Handle h, std::ostream* os) { *os << handle_id(h); }

using ProducerConsumer = std::tuple<Handle, Handle>;

class GpuProducerConsumer : public course::testing::GpuTestWithParam<ProducerConsumer> {};

TEST_P(GpuProducerConsumer, ConsumerCopiesWhatTheLateProducerWrote) {
  const auto [producer_handle, consumer_handle] = GetParam();
  RawStream producer(producer_handle);
  RawStream consumer(consumer_handle);
  for (std::size_t n : {std::size_t{1}, std::size_t{31}, std::size_t{4097}, std::size_t{1000003}}) {
    course::DeviceBuffer<std::uint32_t> produced(n), consumed(n);
    course::poison(produced.data(), produced.bytes());
    course::poison(consumed.data(), consumed.bytes());
    COURSE_CHECK(cudaDeviceSynchronize());
    Event event(cudaEventDisableTiming);
    const auto seed = static_cast<std::uint32_t>(n) + 77;
    // The producer writes only after 30 ms: a consumer that does not wait copies poison.
    streams_and_sync::launch_delayed_fill(produced.span(), seed, 30 * kMs, producer);
    streams_and_sync::copy_after_producer(produced.cspan(), consumed.span(), producer, consumer,
                                          event);
    COURSE_CHECK(cudaStreamSynchronize(consumer));  // the consumer's stream only
    EXPECT_EQ(raw_query(cudaEventQuery(event)), cudaSuccess)
        << "the consumer finished before the producer's event completed" << concerns_todo(5);
    std::vector<std::uint32_t> expected(n);
    course::fill_hash_host(expected, seed);
    const auto c =
        course::compare_exact<std::uint32_t>(expected, course::to_host(consumed.cspan()));
    EXPECT_TRUE(c.ok()) << "n=" << n << ": " << c.summary() << concerns_todo(5);
    COURSE_CHECK(cudaDeviceSynchronize());
  }
}

// The ordering must happen on the GPU: waiting on the host for the producer also gives the
// right values, but stalls the host for the whole delay. So the call must return while the
// producer still runs, with the event it was given pending (recorded after the producer's
// work) and the consumer's copy held back by it.
TEST_P(GpuProducerConsumer, OrdersOnTheGpuWithoutWaitingOnTheHost) {
  const auto [producer_handle, consumer_handle] = GetParam();
  RawStream producer(producer_handle);
  RawStream consumer(consumer_handle);
  constexpr std::size_t n = 4097;
  course::DeviceBuffer<std::uint32_t> produced(n), consumed(n);
  course::poison(produced.data(), produced.bytes());
  course::poison(consumed.data(), consumed.bytes());
  COURSE_CHECK(cudaDeviceSynchronize());
  Event event(cudaEventDisableTiming);
  streams_and_sync::launch_delayed_fill(produced.span(), 5, 300 * kMs, producer);
  const auto start = std::chrono::steady_clock::now();
  streams_and_sync::copy_after_producer(produced.cspan(), consumed.span(), producer, consumer,
                                        event);
  const double call_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(raw_query(cudaStreamQuery(producer)), cudaErrorNotReady)
      << "copy_after_producer waited on the host for the producer (the call took " << call_ms
      << " ms)" << concerns_todo(5);
  EXPECT_EQ(raw_query(cudaEventQuery(event)), cudaErrorNotReady)
      << "the event was not recorded after the producer's work" << concerns_todo(5);
  EXPECT_EQ(raw_query(cudaStreamQuery(consumer)), cudaErrorNotReady)
      << "the consumer's copy did not wait for the producer" << concerns_todo(5);
  COURSE_CHECK(cudaStreamSynchronize(consumer));
  std::vector<std::uint32_t> expected(n);
  course::fill_hash_host(expected, 5);
  const auto c = course::compare_exact<std::uint32_t>(expected, course::to_host(consumed.cspan()));
  EXPECT_TRUE(c.ok()) << c.summary() << concerns_todo(5);
  COURSE_CHECK(cudaDeviceSynchronize());
}

// An event reused from an earlier, finished use: a wait issued before the new record waits
// for the old one, which completed long ago, and orders nothing.
TEST_P(GpuProducerConsumer, AReusedEventOrdersAfterTheNewWork) {
  const auto [producer_handle, consumer_handle] = GetParam();
  RawStream producer(producer_handle);
  RawStream consumer(consumer_handle);
  constexpr std::size_t n = 31;
  course::DeviceBuffer<std::uint32_t> produced(n), consumed(n);
  course::poison(produced.data(), produced.bytes());
  course::poison(consumed.data(), consumed.bytes());
  COURSE_CHECK(cudaDeviceSynchronize());
  Event event(cudaEventDisableTiming);
  COURSE_CHECK(cudaEventRecord(event, producer));
  COURSE_CHECK(cudaEventSynchronize(event));  // an earlier use, completed
  streams_and_sync::launch_delayed_fill(produced.span(), 6, 30 * kMs, producer);
  streams_and_sync::copy_after_producer(produced.cspan(), consumed.span(), producer, consumer,
                                        event);
  COURSE_CHECK(cudaStreamSynchronize(consumer));
  std::vector<std::uint32_t> expected(n);
  course::fill_hash_host(expected, 6);
  const auto c = course::compare_exact<std::uint32_t>(expected, course::to_host(consumed.cspan()));
  EXPECT_TRUE(c.ok()) << c.summary() << concerns_todo(5);
  COURSE_CHECK(cudaDeviceSynchronize());
}

std::string producer_consumer_name(const ::testing::TestParamInfo<ProducerConsumer>& info) {
  return handle_id(std::get<0>(info.param)) + "_to_" + handle_id(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(
    Streams, GpuProducerConsumer,
    ::testing::Values(ProducerConsumer{Handle::non_blocking, Handle::non_blocking},
                      ProducerConsumer{Handle::blocking, Handle::non_blocking},
                      ProducerConsumer{Handle::blocking, Handle::blocking},
                      ProducerConsumer{Handle::per_thread, Handle::non_blocking},
                      ProducerConsumer{Handle::non_blocking, Handle::per_thread}),
    producer_consumer_name);

// ---- GPU tests: the measurement the driver makes ---------------------------------------------

class GpuOverlapMeasurement : public course::testing::GpuTest {};

TEST_F(GpuOverlapMeasurement, OneStreamMeasuresSerialised) {
  Records records(2);
  course::Stream s;
  streams_and_sync::launch_spin(records.at(0), 10 * kMs, 21, s);
  streams_and_sync::launch_spin(records.at(1), 10 * kMs, 22, s);
  COURSE_CHECK(cudaStreamSynchronize(s));
  const auto r = records.read();
  expect_spun(r[0], 21, 10 * kMs, "first");
  expect_spun(r[1], 22, 10 * kMs, "second");
  const auto t =
      streams_and_sync::pair_timing({r[0].start_ns, r[0].end_ns}, {r[1].start_ns, r[1].end_ns});
  EXPECT_GE(t.pair_ms, t.t1_ms + t.t2_ms - 1e-3) << "one stream ran two kernels at once";
  EXPECT_LE(t.overlap, 1e-3) << concerns_todo(6);
  EXPECT_EQ(streams_and_sync::classify(t.overlap), Concurrency::serialised) << concerns_todo(6);
}

// ---- GPU tests: the driver's pair measurement covers the work it reports --------------------

class GpuPairBench : public course::testing::GpuTest {};

// The times come from the spins' own records, read after the device finished: a pair in
// one stream reports each kernel's full time and at least their sum, and the host time of
// the operation between the launches covers that operation.
TEST_F(GpuPairBench, TimesCoverTheWorkTheyReport) {
  streams_and_sync::PairBench bench(20 * kMs, std::size_t{1} << 20);
  course::Stream s, other;
  const auto one_stream =
      bench.kernel_pair(s, s, [] { std::this_thread::sleep_for(std::chrono::milliseconds(30)); });
  ASSERT_TRUE(one_stream.problem.empty()) << one_stream.problem;
  EXPECT_GE(one_stream.timing.t1_ms, 20.0);
  EXPECT_GE(one_stream.timing.t2_ms, 20.0);
  EXPECT_GE(one_stream.timing.pair_ms, 40.0);
  EXPECT_LE(one_stream.timing.overlap, 1e-3) << concerns_todo(6);
  EXPECT_GE(one_stream.between_ms, 30.0);

  const auto copy = bench.copy_and_kernel(s, other, /*check_values=*/true);
  ASSERT_TRUE(copy.problem.empty()) << copy.problem;
  EXPECT_GT(copy.timing.t1_ms, 0.0) << "the copy's own time";
  EXPECT_GE(copy.timing.t2_ms, 20.0);
  EXPECT_GE(copy.timing.pair_ms, std::max(copy.timing.t1_ms, copy.timing.t2_ms));
}

}  // namespace
