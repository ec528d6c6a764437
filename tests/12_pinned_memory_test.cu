// Lesson 12 tests: built twice, against the starter (label `lesson`) and against the
// solution (label `solution`). CPU suites check the flags, the straight-line overhead
// model and its arithmetic with exact answers, and the step model (overhead_model.h) on
// synthetic series; GPU suites (Gpu...) check what only a GPU can show:
// which memory is page-locked, that every copy kind delivers every word, that a copy
// from pinned memory returns before the copy has even started (ordering, not timing
// thresholds), and that registered and mapped memory work.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstring>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "course/buffers.h"
#include "course/check.h"
#include "course/data.h"
#include "course/inspect.h"
#include "course/stats.h"
#include "gpu_test.h"
#include "pinned_memory.cuh"

namespace pinned_memory {
// Readable parameter values in test names and failure messages.
void PrintTo(HostMemory kind, std::ostream* os) { *os << name(kind); }
}  // namespace pinned_memory

namespace {

using course::testing::concerns_todo;  // " [concerns TODO k]" on a failure: gpu_test.h
using course::testing::concerns_todos;
using pinned_memory::AsyncCallTiming;
using pinned_memory::HostBuffer;
using pinned_memory::HostMemory;
using pinned_memory::OverheadModel;

const std::vector<HostMemory> kPinnedKinds = {HostMemory::pinned,         HostMemory::host_alloc,
                                              HostMemory::portable,       HostMemory::mapped,
                                              HostMemory::write_combined, HostMemory::registered};

std::string identifier(HostMemory kind) {
  std::string text = pinned_memory::name(kind);
  for (char& c : text) c = (c == '-') ? '_' : c;
  return text;
}

// ---- CPU tests: the flags and the names ------------------------------------------------

TEST(PinnedMemoryKinds, HostAllocFlagsMatchTheKinds) {
  EXPECT_EQ(pinned_memory::host_alloc_flags(HostMemory::host_alloc), unsigned{cudaHostAllocDefault})
      << concerns_todo(1);
  EXPECT_EQ(pinned_memory::host_alloc_flags(HostMemory::portable), unsigned{cudaHostAllocPortable})
      << concerns_todo(1);
  EXPECT_EQ(pinned_memory::host_alloc_flags(HostMemory::mapped), unsigned{cudaHostAllocMapped})
      << concerns_todo(1);
  EXPECT_EQ(pinned_memory::host_alloc_flags(HostMemory::write_combined),
            unsigned{cudaHostAllocWriteCombined})
      << concerns_todo(1);
  // cudaHostAlloc does not make these: asking for their flags is a mistake.
  for (HostMemory kind : {HostMemory::pageable, HostMemory::pinned, HostMemory::registered}) {
    EXPECT_THROW(pinned_memory::host_alloc_flags(kind), std::invalid_argument)
        << pinned_memory::name(kind) << concerns_todo(1);
  }
}

TEST(PinnedMemoryKinds, RegisteredBuffersCoverWholePages) {
  EXPECT_EQ(pinned_memory::whole_pages(0), 0u);
  EXPECT_EQ(pinned_memory::whole_pages(1), 4096u);
  EXPECT_EQ(pinned_memory::whole_pages(4096), 4096u);
  EXPECT_EQ(pinned_memory::whole_pages(4097), 8192u);
  EXPECT_EQ(pinned_memory::whole_pages((1 << 20) + 12), (1u << 20) + 4096);
}

TEST(PinnedMemoryKinds, NamesAreDistinctAndFitACsvField) {
  std::set<std::string> names;
  for (HostMemory kind : pinned_memory::kAllHostMemory) {
    const std::string n = pinned_memory::name(kind);
    EXPECT_EQ(n.find_first_of(" ,\""), std::string::npos) << n;
    names.insert(n);
  }
  EXPECT_EQ(names.size(), pinned_memory::kAllHostMemory.size());
}

// ---- CPU tests: pageable buffers need no GPU ------------------------------------------

TEST(PinnedMemoryBuffer, EmptyBufferAllocatesNothing) {
  for (HostMemory kind : pinned_memory::kAllHostMemory) {
    const HostBuffer empty(kind, 0);
    EXPECT_EQ(empty.data(), nullptr) << pinned_memory::name(kind);
    EXPECT_EQ(empty.bytes(), 0u);
    EXPECT_TRUE(empty.words().empty());
    EXPECT_FALSE(empty.page_locked());  // answered without asking CUDA
  }
}

TEST(PinnedMemoryBuffer, PageableBufferHoldsItsBytesAndMoves) {
  HostBuffer a(HostMemory::pageable, 4096 + 4);
  ASSERT_NE(a.data(), nullptr) << concerns_todo(1);
  EXPECT_EQ(a.words().size(), 1025u);
  course::fill_hash_host(a.words(), 3);
  HostBuffer b(std::move(a));
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(b.words()[1024], course::hash32(1024, 3)) << concerns_todo(1);
  HostBuffer c;
  c = std::move(b);
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_EQ(c.kind(), HostMemory::pageable);
  EXPECT_EQ(c.words()[0], course::hash32(0, 3)) << concerns_todo(1);
}

TEST(PinnedMemoryHostAccess, PageableRatesArePositive) {
  const HostBuffer buffer(HostMemory::pageable, 64 << 10);
  const pinned_memory::HostAccess access = pinned_memory::measure_host_access(buffer, 64 << 10, 2);
  EXPECT_GT(access.write_gbps, 0.0);
  EXPECT_GT(access.read_gbps, 0.0);
}

// ---- CPU tests: preconditions are checked before any CUDA call --------------------------

TEST(PinnedMemoryPreconditions, RejectBadArgumentsBeforeTouchingTheDevice) {
  // Fake pointers: the functions must throw before they could use them.
  auto* fake = reinterpret_cast<void*>(std::uintptr_t{1} << 20);
  EXPECT_THROW(pinned_memory::time_async_copy(fake, fake, 0, cudaMemcpyHostToDevice, 0),
               std::invalid_argument);
  EXPECT_THROW(pinned_memory::async_copy_us_per_call(fake, fake, 4, cudaMemcpyHostToDevice, 0, 0),
               std::invalid_argument);
  EXPECT_THROW(pinned_memory::sync_copy_us_per_call(fake, fake, 4, cudaMemcpyDeviceToHost, 0),
               std::invalid_argument);
  EXPECT_THROW(pinned_memory::verify_hash(nullptr, 10, 1, 0), std::invalid_argument);
  const HostBuffer small(HostMemory::pageable, 64);
  EXPECT_THROW(pinned_memory::measure_host_access(small, 128, 1), std::invalid_argument);
  EXPECT_THROW(pinned_memory::measure_host_access(small, 6, 1), std::invalid_argument);
  EXPECT_THROW(pinned_memory::measure_host_access(small, 0, 1), std::invalid_argument);
  EXPECT_THROW(pinned_memory::measure_host_access(small, 64, 0), std::invalid_argument);
}

// ---- CPU tests: the overhead model, with exact answers ---------------------------------

std::vector<double> break_even_bytes_as_doubles() {
  const auto sizes = pinned_memory::break_even_sizes();
  return {sizes.begin(), sizes.end()};
}

TEST(PinnedMemoryModel, RecoversASyntheticOverheadAndBandwidth) {
  // Copies that cost 2.5 us + bytes / (50 GB/s): 50 GB/s moves 5e4 bytes per us.
  const std::vector<double> bytes = break_even_bytes_as_doubles();
  std::vector<double> us;
  for (double b : bytes) us.push_back(2.5 + b / 5e4);
  const OverheadModel model = pinned_memory::fit_overhead(bytes, us);
  EXPECT_NEAR(model.overhead_us, 2.5, 1e-9) << concerns_todo(4);
  EXPECT_NEAR(model.bandwidth_gbps, 50.0, 1e-9) << concerns_todo(4);
  EXPECT_NEAR(model.r_squared, 1.0, 1e-12) << concerns_todo(4);
  // Break-even: 2.5 us x 50 GB/s = 125000 bytes, where moving the bytes takes 2.5 us too.
  EXPECT_NEAR(pinned_memory::break_even_bytes(model), 125000.0, 1e-6) << concerns_todos({4, 5});
  EXPECT_NEAR(pinned_memory::predicted_us(model, 4096), 2.5 + 4096 / 5e4, 1e-12)
      << concerns_todos({4, 5});
  EXPECT_NEAR(pinned_memory::predicted_us(model, 125000), 5.0, 1e-12) << concerns_todos({4, 5});
  // ... so a copy of the break-even size reaches exactly half the bandwidth.
  EXPECT_NEAR(pinned_memory::effective_gbps(model, 125000), 25.0, 1e-9) << concerns_todos({4, 5});
}

TEST(PinnedMemoryModel, TheHandbookFigures) {
  // CUDA Handbook 6.2.1 on PCIe 2.0: intercept 3.3 us, slope 0.000170 us per byte.
  const std::vector<double> bytes = break_even_bytes_as_doubles();
  std::vector<double> us;
  for (double b : bytes) us.push_back(3.3 + 0.000170 * b);
  const OverheadModel model = pinned_memory::fit_overhead(bytes, us);
  EXPECT_NEAR(model.overhead_us, 3.3, 1e-9) << concerns_todo(4);
  // 5.88 GB/s, the book's 5.9; break-even 19412 bytes.
  EXPECT_NEAR(model.bandwidth_gbps, 5.88235294117647, 1e-9) << concerns_todo(4);
  EXPECT_NEAR(pinned_memory::break_even_bytes(model), 19411.76470588235, 1e-6)
      << concerns_todos({4, 5});
}

TEST(PinnedMemoryModel, NoisyMeasurementsGiveTheLeastSquaresModel) {
  // Least squares by hand: slope 7/204800 us per byte, intercept 2.85 us, r^2 0.7.
  const OverheadModel model =
      pinned_memory::fit_overhead({4096, 8192, 12288, 16384}, {3.0, 3.2, 3.1, 3.5});
  EXPECT_NEAR(model.overhead_us, 2.85, 1e-12) << concerns_todo(4);
  EXPECT_NEAR(model.bandwidth_gbps, 29.25714285714286, 1e-9) << concerns_todo(4);
  EXPECT_NEAR(model.r_squared, 0.7, 1e-12) << concerns_todo(4);
  EXPECT_NEAR(pinned_memory::break_even_bytes(model), 83382.85714285714, 1e-6)
      << concerns_todos({4, 5});
}

TEST(PinnedMemoryModel, BatchingSmallCopiesPaysTheOverheadOnce) {
  const OverheadModel model{2.0, 50.0, 1.0};
  // 256 copies of 4 KB: 256 overheads. One copy of 1 MB: one.
  const double many = 256 * pinned_memory::predicted_us(model, 4096);
  const double one = pinned_memory::predicted_us(model, 1 << 20);
  EXPECT_NEAR(many - one, 255 * 2.0, 1e-9) << concerns_todo(5);
}

TEST(PinnedMemoryModel, RejectsDataWithoutAPositiveSlope) {
  EXPECT_THROW(pinned_memory::fit_overhead({4096}, {3.0}), std::invalid_argument)
      << concerns_todo(4);
  EXPECT_THROW(pinned_memory::fit_overhead({4096, 4096}, {3.0, 4.0}), std::invalid_argument)
      << concerns_todo(4);
  EXPECT_THROW(pinned_memory::fit_overhead({4096, 8192}, {3.0}), std::invalid_argument)
      << concerns_todo(4);
  // Flat or falling times describe no bandwidth.
  EXPECT_THROW(pinned_memory::fit_overhead({4096, 8192}, {3.0, 3.0}), std::domain_error)
      << concerns_todo(4);
  EXPECT_THROW(pinned_memory::fit_overhead({4096, 8192}, {4.0, 3.0}), std::domain_error)
      << concerns_todo(4);
}

// ---- CPU tests: the step model (overhead_model.h), on synthetic data ---------------------

using pinned_memory::CopyCostFit;
using pinned_memory::CostShape;

/// Noise in [-amplitude, amplitude], from the course's hash (the same on every machine).
double noise(std::size_t i, std::uint32_t seed, double amplitude) {
  return (course::hash32(i, seed) / 4294967295.0 * 2 - 1) * amplitude;
}

/// 2 us per copy up to 36 KB (the host's pace), then 1.2 us + bytes / (40 GB/s).
std::vector<double> flat_then_rising(double noise_us, std::uint32_t seed) {
  std::vector<double> us;
  const std::vector<double> bytes = break_even_bytes_as_doubles();
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const double model = bytes[i] <= 36864 ? 2.0 : 1.2 + bytes[i] / 4e4;
    us.push_back(model + noise(i, seed, noise_us));
  }
  return us;
}

TEST(PinnedMemoryStepModel, FlatThenLinearRecoversTheBreakAndTheBandwidth) {
  const std::vector<double> bytes = break_even_bytes_as_doubles();
  const CopyCostFit fit = pinned_memory::fit_copy_cost(bytes, flat_then_rising(0, 0), 55.0);
  ASSERT_EQ(fit.shape, CostShape::step) << pinned_memory::describe(fit);
  EXPECT_EQ(fit.flat_points, 9u);
  EXPECT_EQ(fit.flat_until_bytes, 36864.0);
  EXPECT_EQ(fit.rising_from_bytes, 40960.0);
  EXPECT_NEAR(fit.flat_us, 2.0, 1e-9);
  EXPECT_NEAR(fit.intercept_us, 1.2, 1e-9);
  EXPECT_TRUE(fit.physical);
  EXPECT_NEAR(fit.bandwidth_gbps, 40.0, 1e-6);
  EXPECT_NEAR(fit.rms_residual_us, 0.0, 1e-9);
  EXPECT_NEAR(pinned_memory::model_us(fit, 8192), 2.0, 1e-9);
  EXPECT_NEAR(pinned_memory::model_us(fit, 65536), 1.2 + 65536 / 4e4, 1e-9);
  EXPECT_EQ(pinned_memory::describe(fit),
            "step: 2.00 us flat up to 36 KB; from 40 KB on 1.20 us + bytes / 40.00 GB/s");
}

TEST(PinnedMemoryStepModel, NoisyStepStillFindsItsBreak) {
  const std::vector<double> bytes = break_even_bytes_as_doubles();
  for (std::uint32_t seed = 1; seed <= 20; ++seed) {
    const CopyCostFit fit = pinned_memory::fit_copy_cost(bytes, flat_then_rising(0.02, seed), 55.0);
    ASSERT_EQ(fit.shape, CostShape::step)
        << "seed " << seed << ": " << pinned_memory::describe(fit);
    EXPECT_EQ(fit.rising_from_bytes, 40960.0) << "seed " << seed;
    EXPECT_NEAR(fit.bandwidth_gbps, 40.0, 4.0) << "seed " << seed;
  }
}

TEST(PinnedMemoryStepModel, AStraightLineThroughAStepClaimsTooMuchBandwidth) {
  // What the step model is for: the least-squares line through the whole step is pulled
  // flat by its first part, so its slope claims more than the rising part's 40 GB/s: more
  // than 45 GB/s, 45000 bytes per us.
  const std::vector<double> bytes = break_even_bytes_as_doubles();
  const course::LinearFit line = course::fit_line(bytes, flat_then_rising(0, 0));
  EXPECT_LT(line.slope, 1.0 / 45000.0);
  EXPECT_LT(line.r_squared, 0.95);
}

TEST(PinnedMemoryStepModel, NoisySeriesWithoutASlopeNeverReportASuperLinkBandwidth) {
  // 2 us +- 0.1 us at every size: nothing about the bytes can be read from it. Whatever
  // shape the noise suggests, no reported bandwidth may exceed the link's.
  constexpr double kLinkGbps = 55.0;
  const std::vector<double> bytes = break_even_bytes_as_doubles();
  int flat = 0;
  constexpr int kSeries = 500;
  for (std::uint32_t seed = 0; seed < kSeries; ++seed) {
    std::vector<double> us;
    for (std::size_t i = 0; i < bytes.size(); ++i) us.push_back(2.0 + noise(i, 1000 + seed, 0.1));
    const CopyCostFit fit = pinned_memory::fit_copy_cost(bytes, us, kLinkGbps);
    EXPECT_LE(fit.bandwidth_gbps, kLinkGbps) << "seed " << seed;
    if (!fit.physical) {
      EXPECT_EQ(fit.bandwidth_gbps, 0.0);
      EXPECT_EQ(pinned_memory::describe(fit).find("GB/s"), std::string::npos)
          << pinned_memory::describe(fit);
    }
    flat += fit.shape == CostShape::flat ? 1 : 0;
  }
  // And the simplest description wins most of the time: it costs fewer parameters.
  EXPECT_GT(flat, kSeries * 3 / 4);
}

TEST(PinnedMemoryStepModel, AStraightLineIsALine) {
  // The Handbook's figures (3.3 us + 0.000170 us per byte) hold no step.
  const std::vector<double> bytes = break_even_bytes_as_doubles();
  std::vector<double> us;
  for (double b : bytes) us.push_back(3.3 + 0.000170 * b);
  const CopyCostFit fit = pinned_memory::fit_copy_cost(bytes, us, 6.0);
  ASSERT_EQ(fit.shape, CostShape::line) << pinned_memory::describe(fit);
  EXPECT_EQ(fit.rising_from_bytes, 4096.0);
  EXPECT_NEAR(fit.intercept_us, 3.3, 1e-9);
  EXPECT_TRUE(fit.physical);
  EXPECT_NEAR(fit.bandwidth_gbps, 5.88235294117647, 1e-6);
  // The same line judged against a slower link is not physical: no bandwidth.
  const CopyCostFit slow = pinned_memory::fit_copy_cost(bytes, us, 5.0);
  EXPECT_EQ(slow.shape, CostShape::line);
  EXPECT_FALSE(slow.physical);
  EXPECT_EQ(slow.bandwidth_gbps, 0.0);
  EXPECT_NE(pinned_memory::describe(slow).find("not physical"), std::string::npos);
}

TEST(PinnedMemoryStepModel, FlatDataIsFlat) {
  const std::vector<double> bytes = break_even_bytes_as_doubles();
  const CopyCostFit fit =
      pinned_memory::fit_copy_cost(bytes, std::vector<double>(bytes.size(), 1.75), 55.0);
  EXPECT_EQ(fit.shape, CostShape::flat);
  EXPECT_EQ(fit.flat_points, bytes.size());
  EXPECT_NEAR(fit.flat_us, 1.75, 1e-12);
  EXPECT_EQ(fit.bandwidth_gbps, 0.0);
  EXPECT_EQ(pinned_memory::model_us(fit, 1 << 20), 1.75);
}

TEST(PinnedMemoryStepModel, PhysicalMeansPositiveAndNoFasterThanTheLink) {
  EXPECT_TRUE(pinned_memory::physical_bandwidth(55.0, 55.0));
  EXPECT_TRUE(pinned_memory::physical_bandwidth(1.0, 55.0));
  EXPECT_FALSE(pinned_memory::physical_bandwidth(55.1, 55.0));
  EXPECT_FALSE(pinned_memory::physical_bandwidth(0.0, 55.0));
  EXPECT_FALSE(pinned_memory::physical_bandwidth(-3.0, 55.0));
}

TEST(PinnedMemoryStepModel, RejectsDataItCannotFit) {
  using pinned_memory::fit_copy_cost;
  EXPECT_THROW(fit_copy_cost({4096, 8192}, {1.0, 2.0}, 55.0), std::invalid_argument);
  EXPECT_THROW(fit_copy_cost({4096, 8192, 12288}, {1.0, 2.0}, 55.0), std::invalid_argument);
  EXPECT_THROW(fit_copy_cost({4096, 4096, 12288}, {1.0, 2.0, 3.0}, 55.0), std::invalid_argument);
  EXPECT_THROW(fit_copy_cost({8192, 4096, 12288}, {1.0, 2.0, 3.0}, 55.0), std::invalid_argument);
  EXPECT_THROW(fit_copy_cost({4096, 8192, 12288}, {1.0, 2.0, 3.0}, 0.0), std::invalid_argument);
}

TEST(PinnedMemoryStepModel, HumanBytes) {
  EXPECT_EQ(pinned_memory::human_bytes(4), "4 B");
  EXPECT_EQ(pinned_memory::human_bytes(4096), "4 KB");
  EXPECT_EQ(pinned_memory::human_bytes(1536 * 1024), "1.5 MB");
  EXPECT_EQ(pinned_memory::human_bytes(256.0 * (1 << 20)), "256 MB");
}

// ---- CPU tests: sizes ----------------------------------------------------------------

TEST(PinnedMemorySizes, SweepDoublesFromSmallestToLargest) {
  const auto full = pinned_memory::sweep_sizes(4096, 256u << 20);
  ASSERT_EQ(full.size(), 17u);  // 4 KB, 8 KB, ..., 256 MB
  EXPECT_EQ(full.front(), 4096u);
  EXPECT_EQ(full.back(), 256u << 20);
  for (std::size_t i = 1; i < full.size(); ++i) EXPECT_EQ(full[i], 2 * full[i - 1]);
  EXPECT_EQ(pinned_memory::sweep_sizes(4096, 4096), std::vector<std::size_t>({4096}));
  EXPECT_EQ(pinned_memory::sweep_sizes(4096, 12288), std::vector<std::size_t>({4096, 8192}));
  EXPECT_EQ(pinned_memory::sweep_sizes(4, 16), std::vector<std::size_t>({4, 8, 16}));
  EXPECT_THROW(pinned_memory::sweep_sizes(0, 16), std::invalid_argument);
  EXPECT_THROW(pinned_memory::sweep_sizes(6, 16), std::invalid_argument);
  EXPECT_THROW(pinned_memory::sweep_sizes(8, 4), std::invalid_argument);
}

TEST(PinnedMemorySizes, BreakEvenSweepIsTheHandbookRange) {
  const auto sizes = pinned_memory::break_even_sizes();
  ASSERT_EQ(sizes.size(), 16u);
  for (std::size_t i = 0; i < sizes.size(); ++i) EXPECT_EQ(sizes[i], 4096 * (i + 1));
}

// ---- CPU tests: what the compiler emitted -----------------------------------------------

TEST(PinnedMemoryPtx, VerifierReadsSixteenBytesPerLoad) {
  // A kernel reading mapped host memory sends each load over the link: 16-byte loads
  // make a quarter of the requests that 4-byte loads would. And this lesson's GPU code
  // copies nothing itself: the copy engines do, so no cp.async anywhere.
  const auto modules = course::inspect::read_ptx_modules(course::testing::kernels_object_path());
  const auto targets = course::testing::ptx_targets();
  ASSERT_FALSE(targets.empty());
  for (const std::string& target : targets) {
    const auto& module = course::inspect::module_for(modules, target);
    EXPECT_EQ(course::inspect::ptx_kernels(module).size(), 2u) << target;
    const auto vectors = course::inspect::kernel(module, "verify_hash_kernelILb1E");
    EXPECT_TRUE(course::inspect::uses(vectors.body, "ld.global.nc.v4.u32") ||
                course::inspect::uses(vectors.body, "ld.global.v4.u32"))
        << target << ": the vector verifier should load uint4";
    for (const auto& k : course::inspect::ptx_kernels(module)) {
      EXPECT_FALSE(course::inspect::uses(k.body, "cp.async")) << k.name;
    }
  }
}

TEST(PinnedMemorySass, ZeroCopyIsAnOrdinaryWideLoad) {
  const std::string cuobjdump = course::testing::cuobjdump_path();
  if (cuobjdump.empty()) GTEST_SKIP() << "cuobjdump not found: SASS checks need it";
  const std::string listing = course::inspect::run_command(
      "'" + cuobjdump + "' -sass -arch sm_90 '" + course::testing::kernels_object_path() + "'");
  bool found = false;
  for (const auto& f : course::inspect::sass_functions(listing)) {
    if (f.name.find("verify_hash_kernelILb1E") == std::string::npos) continue;
    found = true;
    // The same LDG reads device memory or, through its mapping, host memory: the page
    // tables decide where the bytes come from, not the instruction.
    bool wide_load = false;
    std::istringstream lines(f.body);
    for (std::string line; std::getline(lines, line);) {
      wide_load = wide_load ||
                  (line.find("LDG") != std::string::npos && line.find(".128") != std::string::npos);
    }
    EXPECT_TRUE(wide_load) << f.body.substr(0, 2000);
  }
  EXPECT_TRUE(found) << listing.substr(0, 2000);
}

// ---- GPU tests ---------------------------------------------------------------------------

bool host_register_supported() {
  int supported = 0;
  COURSE_CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrHostRegisterSupported, 0));
  return supported != 0;
}

/// Whether `event` has not happened yet; clears the "not ready" answer from the
/// runtime's last error (see pinned_memory::stream_busy).
bool event_pending(cudaEvent_t event) {
  const cudaError_t state = cudaEventQuery(event);
  if (state == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return true;
  }
  COURSE_CHECK(state);
  return false;
}

struct Event {
  cudaEvent_t event = nullptr;
  Event() { COURSE_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming)); }
  ~Event() { cudaEventDestroy(event); }
};

/// Keeps a stream busy for `nanoseconds` (by the GPU's global timer), so that whatever
/// is queued behind it cannot start before then.
__global__ void hold_kernel(unsigned long long nanoseconds) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < nanoseconds);
}

/// Every word of host buffer `host` (first n words) against hash32(i, seed). Write-combined
/// memory is read by the GPU through its mapping, as the driver does.
course::Comparison check_host(const HostBuffer& host, std::size_t n, std::uint32_t seed,
                              cudaStream_t stream) {
  if (host.kind() == HostMemory::write_combined && host.page_locked()) {
    return pinned_memory::verify_hash(host.device_view(), n, seed, stream);
  }
  std::vector<std::uint32_t> expected(n);
  course::fill_hash_host(expected, seed);
  return course::compare_exact<std::uint32_t>(
      expected, cuda::std::span<const std::uint32_t>(host.words().data(), n));
}

class GpuPinnedMemoryKind : public course::testing::GpuTestWithParam<HostMemory> {
 protected:
  void SetUp() override {
    course::testing::GpuTestWithParam<HostMemory>::SetUp();
    if (IsSkipped()) return;
    if (GetParam() == HostMemory::registered && !host_register_supported()) {
      GTEST_SKIP() << "this GPU does not support cudaHostRegister";
    }
  }
};

TEST_P(GpuPinnedMemoryKind, PageLockedExactlyWhenPinned) {
  const HostMemory kind = GetParam();
  const HostBuffer buffer(kind, 1 << 20);
  cudaPointerAttributes attributes{};
  COURSE_CHECK(cudaPointerGetAttributes(&attributes, buffer.data()));
  if (kind == HostMemory::pageable) {
    EXPECT_FALSE(buffer.page_locked()) << concerns_todo(1);
    EXPECT_EQ(attributes.type, cudaMemoryTypeUnregistered) << concerns_todo(1);
  } else {
    EXPECT_TRUE(buffer.page_locked())
        << pinned_memory::name(kind) << " memory is not page-locked" << concerns_todo(1);
    EXPECT_EQ(attributes.type, cudaMemoryTypeHost) << concerns_todo(1);
    EXPECT_NE(buffer.device_view(), nullptr) << concerns_todo(1);
  }
  if (kind == HostMemory::registered) {
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer.data()) % pinned_memory::kPageBytes, 0u)
        << "registered memory should start on a page" << concerns_todo(1);
  }
}

TEST_P(GpuPinnedMemoryKind, ReleaseUnpinsTheMemory) {
  const HostMemory kind = GetParam();
  void* address = nullptr;
  {
    const HostBuffer buffer(kind, 1 << 20);
    address = buffer.data();
  }
  // Only the address is used, never the memory: does CUDA still count it as pinned? A
  // registered buffer freed without cudaHostUnregister stays locked, for example.
  cudaPointerAttributes attributes{};
  const cudaError_t status = cudaPointerGetAttributes(&attributes, address);
  if (status == cudaErrorInvalidValue) {
    (void)cudaGetLastError();  // an unknown address: certainly not pinned any more
  } else {
    COURSE_CHECK(status);
    EXPECT_NE(attributes.type, cudaMemoryTypeHost)
        << pinned_memory::name(kind) << " memory is still pinned after its buffer died"
        << concerns_todo(2);
  }
}

TEST_P(GpuPinnedMemoryKind, EveryWordRoundTrips) {
  const HostMemory kind = GetParam();
  course::Stream stream;
  // One word, one page, a prime number of words, and a few MB plus a word.
  for (std::size_t n :
       {std::size_t{1}, std::size_t{1024}, std::size_t{1000003}, std::size_t{(1 << 20) + 1}}) {
    const std::size_t bytes = n * 4;
    HostBuffer host(kind, bytes);
    course::DeviceBuffer<std::uint32_t> device(n);

    course::fill_hash_host(host.words(), 5);
    course::poison(device.data(), bytes, stream);
    COURSE_CHECK(
        cudaMemcpyAsync(device.data(), host.data(), bytes, cudaMemcpyHostToDevice, stream));
    const course::Comparison h2d = pinned_memory::verify_hash(device.data(), n, 5, stream);
    EXPECT_TRUE(h2d.ok()) << "H2D from " << pinned_memory::name(kind) << ", " << bytes
                          << " bytes: " << h2d.summary() << concerns_todo(1);

    course::fill_hash(device.span(), 6, stream);
    COURSE_CHECK(cudaStreamSynchronize(stream));
    std::memset(host.data(), course::kPoisonByte, bytes);
    COURSE_CHECK(
        cudaMemcpyAsync(host.data(), device.data(), bytes, cudaMemcpyDeviceToHost, stream));
    COURSE_CHECK(cudaStreamSynchronize(stream));
    const course::Comparison d2h = check_host(host, n, 6, stream);
    EXPECT_TRUE(d2h.ok()) << "D2H to " << pinned_memory::name(kind) << ", " << bytes
                          << " bytes: " << d2h.summary() << concerns_todo(1);
  }
}

std::string kind_name(const ::testing::TestParamInfo<HostMemory>& info) {
  return identifier(info.param);
}

INSTANTIATE_TEST_SUITE_P(Kinds, GpuPinnedMemoryKind,
                         ::testing::ValuesIn(pinned_memory::kAllHostMemory.begin(),
                                             pinned_memory::kAllHostMemory.end()),
                         kind_name);

// ---- GPU: a copy from pinned memory returns before it has even started ------------------

using AsyncCase = std::tuple<HostMemory, bool /* host to device */>;

class GpuPinnedMemoryAsync : public course::testing::GpuTestWithParam<AsyncCase> {};

TEST_P(GpuPinnedMemoryAsync, CallReturnsBeforeTheCopyStarts) {
  const auto [kind, to_device] = GetParam();
  if (kind == HostMemory::registered && !host_register_supported()) {
    GTEST_SKIP() << "this GPU does not support cudaHostRegister";
  }
  constexpr std::size_t n = 4 << 20;  // 16 MB
  constexpr std::uint32_t seed = 21;
  course::Stream stream;
  HostBuffer host(kind, n * 4);
  course::DeviceBuffer<std::uint32_t> device(n);
  if (to_device) {
    course::fill_hash_host(host.words(), seed);
    course::poison(device.data(), device.bytes(), stream);
  } else {
    course::fill_hash(device.span(), seed, stream);
    std::memset(host.data(), course::kPoisonByte, host.bytes());
  }
  COURSE_CHECK(cudaStreamSynchronize(stream));

  // The stream is busy for 200 ms before it reaches the copy; `reached_copy` happens
  // only then. If the call returns while `reached_copy` is still pending, the call did
  // not wait for the copy, or for anything queued before it: no timing threshold
  // involved. A call that had to stage pageable memory would have waited for the stream.
  Event reached_copy;
  hold_kernel<<<1, 1, 0, stream>>>(200ull * 1000 * 1000);
  COURSE_CHECK_LAUNCH();
  COURSE_CHECK(cudaEventRecord(reached_copy.event, stream));
  if (to_device) {
    COURSE_CHECK(
        cudaMemcpyAsync(device.data(), host.data(), host.bytes(), cudaMemcpyHostToDevice, stream));
  } else {
    COURSE_CHECK(
        cudaMemcpyAsync(host.data(), device.data(), host.bytes(), cudaMemcpyDeviceToHost, stream));
  }
  const bool returned_before_the_copy = event_pending(reached_copy.event);
  COURSE_CHECK(cudaStreamSynchronize(stream));

  EXPECT_TRUE(returned_before_the_copy)
      << "cudaMemcpyAsync " << (to_device ? "from " : "to ") << pinned_memory::name(kind)
      << " memory waited for the stream: is the memory page-locked?" << concerns_todo(1);
  const course::Comparison c = to_device
                                   ? pinned_memory::verify_hash(device.data(), n, seed, stream)
                                   : check_host(host, n, seed, stream);
  EXPECT_TRUE(c.ok()) << c.summary() << concerns_todo(1);
}

std::string async_case_name(const ::testing::TestParamInfo<AsyncCase>& info) {
  const auto [kind, to_device] = info.param;
  return identifier(kind) + (to_device ? "_H2D" : "_D2H");
}

INSTANTIATE_TEST_SUITE_P(PinnedKinds, GpuPinnedMemoryAsync,
                         ::testing::Combine(::testing::ValuesIn(kPinnedKinds), ::testing::Bool()),
                         async_case_name);

// ---- GPU: the host-side timing of one call (TODO 3) ---------------------------------------

class GpuPinnedMemoryTiming : public course::testing::GpuTest {};

TEST_F(GpuPinnedMemoryTiming, LargePinnedCopyIsStillInFlightWhenTheCallReturns) {
  constexpr std::size_t n = 16 << 20;  // 64 MB: about a millisecond at today's link rates
  constexpr std::uint32_t seed = 31;
  course::Stream stream;
  HostBuffer host(HostMemory::pinned, n * 4);
  course::DeviceBuffer<std::uint32_t> device(n);
  course::fill_hash_host(host.words(), seed);
  course::fill_hash(device.span(), seed + 1, stream);
  COURSE_CHECK(cudaStreamSynchronize(stream));

  for (bool to_device : {true, false}) {
    // A call returns in microseconds; the copy takes about a millisecond. Three tries,
    // so that one badly timed interruption of this thread cannot fail the test.
    bool seen_in_flight = false;
    for (int attempt = 0; attempt < 3 && !seen_in_flight; ++attempt) {
      AsyncCallTiming t;
      course::Comparison c;
      if (to_device) {
        course::poison(device.data(), device.bytes(), stream);
        t = pinned_memory::time_async_copy(device.data(), host.data(), host.bytes(),
                                           cudaMemcpyHostToDevice, stream);
        c = pinned_memory::verify_hash(device.data(), n, seed, stream);
      } else {
        // The H2D round above overwrote the device copy with `seed`: refill it with
        // seed + 1 (ordered before the copy on the same stream), then poison the host.
        course::fill_hash(device.span(), seed + 1, stream);
        COURSE_CHECK(cudaStreamSynchronize(stream));
        std::memset(host.data(), course::kPoisonByte, host.bytes());
        t = pinned_memory::time_async_copy(host.data(), device.data(), host.bytes(),
                                           cudaMemcpyDeviceToHost, stream);
        c = check_host(host, n, seed + 1, stream);
      }
      ASSERT_TRUE(c.ok()) << (to_device ? "H2D: " : "D2H: ") << c.summary() << concerns_todo(3);
      EXPECT_GT(t.call_us, 0.0) << concerns_todo(3);
      EXPECT_GE(t.done_us, t.call_us) << concerns_todo(3);
      seen_in_flight = t.in_flight_at_return;
    }
    EXPECT_TRUE(seen_in_flight) << (to_device ? "H2D" : "D2H")
                                << ": the copy was never running when the call returned"
                                << concerns_todos({1, 3});
  }
}

/// Keeps its stream busy for `ns` nanoseconds of the GPU's global timer: work that anything
/// queued behind it on the same stream waits for.
__global__ void hold_stream(unsigned long long ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

// done_us is the time until the copy has finished: the function waits for the stream before
// it takes that time, so when it returns the stream is idle. A 64 MB copy takes a millisecond
// or more on any host link; a function that did not wait returns while it still runs.
TEST_F(GpuPinnedMemoryTiming, TheCallReturnsOnlyAfterTheCopyHasFinished) {
  constexpr std::size_t n = 16 << 20;  // 64 MB
  course::Stream stream;
  HostBuffer host(HostMemory::pinned, n * 4);
  course::DeviceBuffer<std::uint32_t> device(n);
  course::fill_hash_host(host.words(), 61);
  course::poison(device.data(), device.bytes(), stream);
  COURSE_CHECK(cudaStreamSynchronize(stream));
  const AsyncCallTiming t = pinned_memory::time_async_copy(device.data(), host.data(),
                                                           host.bytes(), cudaMemcpyHostToDevice,
                                                           stream);
  const cudaError_t idle = cudaStreamQuery(stream);  // right after the return
  COURSE_CHECK(cudaStreamSynchronize(stream));
  EXPECT_EQ(idle, cudaSuccess)
      << "the copy was still running when time_async_copy returned: wait for the stream "
         "before taking the done time"
      << concerns_todo(3);
  EXPECT_GE(t.done_us, t.call_us) << concerns_todo(3);
  const course::Comparison c = pinned_memory::verify_hash(device.data(), n, 61, stream);
  ASSERT_TRUE(c.ok()) << c.summary() << concerns_todo(3);
}

// The copy and the wait belong to the stream the caller gave. The test's stream is
// non-blocking (course::Stream): it neither waits for the legacy stream (0) nor is waited for
// by it. A 20 ms kernel on the legacy stream therefore cannot delay a copy on `stream` and a
// wait for `stream`; a copy queued on 0, or a wait on 0, waits for that kernel and shows as a
// copy that took 20 ms. Up to three tries: a copy on the wrong stream waits every time, while
// the other GPU test programs that share the GPU in a parallel test run can hold this one's
// context off the GPU for a while once.
TEST_F(GpuPinnedMemoryTiming, TheCopyAndTheWaitUseTheCallersStream) {
  constexpr std::size_t n = 1 << 16;
  constexpr double kHoldUs = 20000;  // far longer than the 256 KiB copy
  constexpr int kTries = 3;
  course::Stream stream;
  HostBuffer host(HostMemory::pinned, n * 4);
  course::DeviceBuffer<std::uint32_t> device(n);
  course::fill_hash_host(host.words(), 51);
  std::string times;
  bool waited_every_time = true;
  for (int attempt = 0; attempt < kTries && waited_every_time; ++attempt) {
    course::poison(device.data(), device.bytes(), stream);
    COURSE_CHECK(cudaStreamSynchronize(stream));
    hold_stream<<<1, 1, 0, cudaStreamLegacy>>>(static_cast<unsigned long long>(kHoldUs * 1e3));
    COURSE_CHECK(cudaGetLastError());
    const pinned_memory::AsyncCallTiming t = pinned_memory::time_async_copy(
        device.data(), host.data(), host.bytes(), cudaMemcpyHostToDevice, stream);
    COURSE_CHECK(cudaDeviceSynchronize());  // the kernel on the legacy stream too
    times += (times.empty() ? "" : ", ") + std::to_string(t.done_us) + " us";
    waited_every_time = t.done_us >= 0.5 * kHoldUs;
    const course::Comparison c = pinned_memory::verify_hash(device.data(), n, 51, stream);
    ASSERT_TRUE(c.ok()) << c.summary() << concerns_todo(3);
  }
  EXPECT_FALSE(waited_every_time)
      << "the copy waited for a kernel on the legacy stream in every try (" << times
      << "; a copy on `stream` takes far less than " << 0.5 * kHoldUs
      << " us): copy on, and wait for, `stream` (it is non-blocking), not stream 0"
      << concerns_todo(3);
}

TEST_F(GpuPinnedMemoryTiming, PageableCopiesAreTimedAndDelivered) {
  constexpr std::size_t n = 1 << 20;
  course::Stream stream;
  HostBuffer host(HostMemory::pageable, n * 4);
  course::DeviceBuffer<std::uint32_t> device(n);
  course::fill_hash_host(host.words(), 41);
  course::poison(device.data(), device.bytes(), stream);
  const AsyncCallTiming up = pinned_memory::time_async_copy(
      device.data(), host.data(), host.bytes(), cudaMemcpyHostToDevice, stream);
  const course::Comparison h2d = pinned_memory::verify_hash(device.data(), n, 41, stream);
  EXPECT_TRUE(h2d.ok()) << h2d.summary() << concerns_todo(3);
  EXPECT_GT(up.done_us, 0.0) << concerns_todo(3);
  EXPECT_GE(up.done_us, up.call_us) << concerns_todo(3);

  course::fill_hash(device.span(), 42, stream);
  std::memset(host.data(), course::kPoisonByte, host.bytes());
  const AsyncCallTiming down = pinned_memory::time_async_copy(
      host.data(), device.data(), host.bytes(), cudaMemcpyDeviceToHost, stream);
  const course::Comparison d2h = check_host(host, n, 42, stream);
  EXPECT_TRUE(d2h.ok()) << d2h.summary() << concerns_todo(3);
  EXPECT_GT(down.done_us, 0.0) << concerns_todo(3);
  EXPECT_GE(down.done_us, down.call_us) << concerns_todo(3);
}

// ---- GPU: registered and mapped memory ---------------------------------------------------

class GpuPinnedMemoryRegistered : public course::testing::GpuTest {};

TEST_F(GpuPinnedMemoryRegistered, AsyncCopiesOfAPartOfARegisteredRange) {
  if (!host_register_supported()) GTEST_SKIP() << "this GPU does not support cudaHostRegister";
  // Not a whole number of pages, and copies of a piece in the middle of the range.
  constexpr std::size_t n = (1 << 18) + 3;
  constexpr std::size_t offset = 1001, count = 70001;
  course::Stream stream;
  HostBuffer host(HostMemory::registered, n * 4);
  ASSERT_TRUE(host.page_locked()) << concerns_todo(1);
  course::DeviceBuffer<std::uint32_t> device(count);
  const auto words = host.words();

  course::fill_hash_host(words, 51);
  course::poison(device.data(), device.bytes(), stream);
  COURSE_CHECK(cudaMemcpyAsync(device.data(), words.data() + offset, count * 4,
                               cudaMemcpyHostToDevice, stream));
  const std::vector<std::uint32_t> arrived = [&] {
    COURSE_CHECK(cudaStreamSynchronize(stream));
    return course::to_host(device.cspan());
  }();
  for (std::size_t i = 0; i < count; ++i) {
    ASSERT_EQ(arrived[i], course::hash32(offset + i, 51)) << "H2D word " << i << concerns_todo(1);
  }

  // Back into the middle of the range: the words around it must not change.
  course::fill_hash(device.span(), 52, stream);
  COURSE_CHECK(cudaMemcpyAsync(words.data() + offset, device.data(), count * 4,
                               cudaMemcpyDeviceToHost, stream));
  COURSE_CHECK(cudaStreamSynchronize(stream));
  for (std::size_t i = 0; i < n; ++i) {
    const bool inside = i >= offset && i < offset + count;
    ASSERT_EQ(words[i], inside ? course::hash32(i - offset, 52) : course::hash32(i, 51))
        << "word " << i << concerns_todo(1);
  }
}

class GpuPinnedMemoryMapped : public course::testing::GpuTestWithParam<HostMemory> {};

TEST_P(GpuPinnedMemoryMapped, KernelsReadPinnedMemoryInPlace) {
  const HostMemory kind = GetParam();
  if (kind == HostMemory::registered && !host_register_supported()) {
    GTEST_SKIP() << "this GPU does not support cudaHostRegister";
  }
  constexpr std::size_t n = 1000003;
  course::Stream stream;
  HostBuffer host(kind, n * 4);
  course::fill_hash_host(host.words(), 61);
  // The kernel reads host memory over the link: no copy at all ("zero-copy").
  const course::Comparison whole = pinned_memory::verify_hash(host.device_view(), n, 61, stream);
  EXPECT_TRUE(whole.ok()) << whole.summary() << concerns_todo(1);
  // And it sees what the CPU writes (the stream is idle: no race with the kernel).
  host.words()[777777] ^= 1u;
  const course::Comparison one_off = pinned_memory::verify_hash(host.device_view(), n, 61, stream);
  EXPECT_EQ(one_off.mismatches, 1u) << concerns_todo(1);
  ASSERT_EQ(one_off.first.size(), 1u) << concerns_todo(1);
  EXPECT_EQ(one_off.first[0].index, 777777u) << concerns_todo(1);
}

INSTANTIATE_TEST_SUITE_P(PinnedKinds, GpuPinnedMemoryMapped, ::testing::ValuesIn(kPinnedKinds),
                         kind_name);

// ---- GPU: the verifier itself --------------------------------------------------------------

class GpuPinnedMemoryVerify : public course::testing::GpuTest {};

TEST_F(GpuPinnedMemoryVerify, FindsEveryWrongWordAlignedOrNot) {
  constexpr std::size_t n = 100003;
  course::Stream stream;
  std::vector<std::uint32_t> host(n);
  course::fill_hash_host(host, 71);
  // One word past a 16-byte boundary as well: the verifier's scalar path.
  course::DeviceBuffer<std::uint32_t> device(n + 1);
  for (std::size_t shift : {std::size_t{0}, std::size_t{1}}) {
    std::uint32_t* data = device.data() + shift;
    COURSE_CHECK(cudaMemcpy(data, host.data(), n * 4, cudaMemcpyHostToDevice));
    // cudaMemcpy and cudaMemset run on the legacy default stream, which `stream` (a
    // non-blocking one) does not wait for; and a cudaMemcpy from pageable memory may
    // return before its DMA is done. Wait for the device before the verifier reads.
    COURSE_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(pinned_memory::verify_hash(data, n, 71, stream).ok()) << "shift " << shift;
    // Three wrong words: counted, and the first one reported with its value.
    for (std::size_t i : {std::size_t{5}, std::size_t{4096}, n - 1}) {
      COURSE_CHECK(cudaMemset(data + i, 0, 4));
    }
    COURSE_CHECK(cudaDeviceSynchronize());
    const course::Comparison c = pinned_memory::verify_hash(data, n, 71, stream);
    EXPECT_EQ(c.checked, n);
    EXPECT_EQ(c.mismatches, 3u) << "shift " << shift;
    ASSERT_EQ(c.first.size(), 1u);
    EXPECT_EQ(c.first[0].index, 5u);
    EXPECT_EQ(c.first[0].actual, "0");
  }
}

// ---- GPU: the overhead measurements run and move the data ---------------------------------

class GpuPinnedMemoryOverhead : public course::testing::GpuTest {};

TEST_F(GpuPinnedMemoryOverhead, PerCallCostsArePositiveAndTheWordsArrive) {
  course::Stream stream;
  course::PinnedBuffer<std::uint32_t> host(1024);
  course::DeviceBuffer<std::uint32_t> device(1024);
  course::fill_hash_host(host.span(), 81);
  course::poison(device.data(), device.bytes(), stream);
  EXPECT_GT(pinned_memory::async_copy_us_per_call(device.data(), host.data(), 4096,
                                                  cudaMemcpyHostToDevice, stream, 10),
            0.0);
  EXPECT_TRUE(pinned_memory::verify_hash(device.data(), 1024, 81, stream).ok());

  course::fill_hash(device.span(), 82, stream);
  COURSE_CHECK(cudaStreamSynchronize(stream));
  EXPECT_GT(pinned_memory::sync_copy_us_per_call(host.data(), device.data(), 4096,
                                                 cudaMemcpyDeviceToHost, 10),
            0.0);
  for (std::size_t i = 0; i < 1024; ++i) ASSERT_EQ(host[i], course::hash32(i, 82)) << i;
}

}  // namespace
