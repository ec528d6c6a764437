// Lesson 03 tests: built twice, against the starter (label `lesson`) and against the
// solution (label `solution`). GPU suites are named Gpu...; they skip without a GPU.
#include <gtest/gtest.h>

#include <cuda/barrier>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "course/batches.cuh"
#include "course/buffers.h"
#include "course/check.h"
#include "course/data.h"
#include "course/device.h"
#include "course/inspect.h"
#include "course/workload.h"
#include "cuda_barrier.cuh"
#include "gpu_test.h"

namespace {

using course::testing::concerns_todo;  // " [concerns TODO k]" on a failure: gpu_test.h
using course::testing::concerns_todos;
using cuda_barrier::copy_and_compute;
using cuda_barrier::Kernel;
using cuda_barrier::LaunchShape;
using cuda_barrier::prepare_copy_and_compute;
using cuda_barrier::ReaderDelay;

// The correct kernels (the deliberately broken multi_stage_no_release has its own tests).
const std::vector<Kernel> kAllKernels = {Kernel::one_stage_words, Kernel::one_stage,
                                         Kernel::custom_group,    Kernel::two_buffers,
                                         Kernel::system_scope,    Kernel::multi_stage};

// Sizes around every boundary: one element, partial groups, whole and partial batches at
// several block sizes (a batch is 16 x threads elements), partial last batches whose size
// is and is not a multiple of 16 bytes (4100 = 4096 + 4: one whole chunk; 4097: 4 bytes
// only; 16385...), a prime, and enough batches to wrap the grid and every stage.
const std::vector<std::size_t> kAwkwardSizes = {1,     3,     4,     31,    32,    33,     255,
                                                256,   257,   4095,  4096,  4097,  4100,   16383,
                                                16384, 16385, 16388, 65537, 98306, 1000003};

constexpr auto kAsync = static_cast<std::uint32_t>(cuda::async_contract_fulfillment::async);
constexpr auto kNone = static_cast<std::uint32_t>(cuda::async_contract_fulfillment::none);

// The TODOs a failure of a kernel concerns. The copies: copy_words (TODO 1), copy_aligned
// (TODO 2), copy_partial_batch (TODO 3) and copy_two_buffers (TODO 4). one_stage starts a
// batch's copy and waits for it (TODO 5), then computes and syncs (TODO 6); multi_stage fills
// a stage and, before a refill, waits for its release (TODO 7), and waits for the batch,
// computes and releases it (TODO 8). system_scope_kernel is read-only but calls the copies.

// The aligned copies of full batches, and what starts them (the words kernel has none: its
// copy_words).
std::string aligned_copy_todos(Kernel k) {
  switch (k) {
    case Kernel::one_stage_words:
      return concerns_todos({1, 5});
    case Kernel::one_stage:
    case Kernel::custom_group:
      return concerns_todos({2, 5});
    case Kernel::two_buffers:
      return concerns_todos({2, 4, 5});
    case Kernel::system_scope:
      return concerns_todo(2);
    case Kernel::multi_stage:
    case Kernel::multi_stage_no_release:
      return concerns_todos({2, 7});
  }
  return "";
}
// The 4-byte copy of a partial batch's last 1-3 elements (the words kernel: every copy).
std::string tail_copy_todos(Kernel k) {
  switch (k) {
    case Kernel::one_stage_words:
      return concerns_todos({1, 5});
    case Kernel::one_stage:
    case Kernel::custom_group:
    case Kernel::two_buffers:
      return concerns_todos({1, 3, 5});
    case Kernel::system_scope:
      return concerns_todos({1, 3});
    case Kernel::multi_stage:
    case Kernel::multi_stage_no_release:
      return concerns_todos({1, 3, 7});
  }
  return "";
}
// Every copy of the kernel.
std::string copy_todos(Kernel k) {
  switch (k) {
    case Kernel::one_stage_words:
      return concerns_todos({1, 5});
    case Kernel::one_stage:
    case Kernel::custom_group:
      return concerns_todos({1, 2, 3, 5});
    case Kernel::two_buffers:
      return concerns_todos({1, 2, 3, 4, 5});
    case Kernel::system_scope:
      return concerns_todos({1, 2, 3});
    case Kernel::multi_stage:
    case Kernel::multi_stage_no_release:
      return concerns_todos({1, 2, 3, 7});
  }
  return "";
}
// The waits on an mbarrier (system_scope's barrier of atomics is read-only).
std::string wait_todos(Kernel k) {
  switch (k) {
    case Kernel::one_stage_words:
    case Kernel::one_stage:
    case Kernel::custom_group:
    case Kernel::two_buffers:
      return concerns_todo(5);
    case Kernel::system_scope:
      return "";
    case Kernel::multi_stage:
      return concerns_todos({7, 8});
    case Kernel::multi_stage_no_release:
      return concerns_todo(8);  // its wait for the release is compiled out
  }
  return "";
}
// Every element of the output: every TODO the kernel runs.
std::string result_todos(Kernel k) {
  switch (k) {
    case Kernel::one_stage_words:
      return concerns_todos({1, 5, 6});
    case Kernel::one_stage:
    case Kernel::custom_group:
      return concerns_todos({1, 2, 3, 5, 6});
    case Kernel::two_buffers:
      return concerns_todos({1, 2, 3, 4, 5, 6});
    case Kernel::system_scope:
      return concerns_todos({1, 2, 3});
    case Kernel::multi_stage:
    case Kernel::multi_stage_no_release:
      return concerns_todos({1, 2, 3, 7, 8});
  }
  return "";
}

std::string shape_text(LaunchShape s) {
  return std::to_string(s.blocks) + "x" + std::to_string(s.threads_per_block) +
         (s.stages > 1 ? "x" + std::to_string(s.stages) + "stages" : "");
}

}  // namespace

// Readable parameter values in test names and failure messages.
namespace cuda_barrier {
void PrintTo(Kernel k, std::ostream* os) { *os << kernel_name(k); }
void PrintTo(LaunchShape s, std::ostream* os) { *os << shape_text(s); }
}  // namespace cuda_barrier

namespace {

// ---- CPU tests: sizes, and preconditions checked before any CUDA call ------------------

TEST(CudaBarrierShape, BatchAndSharedMemorySizes) {
  EXPECT_EQ(cuda_barrier::batch_elements(256), 4096u);  // 16 KB: lesson 01's coarse batch
  EXPECT_EQ(cuda_barrier::shared_bytes(Kernel::one_stage, 256), 16384u);
  EXPECT_EQ(cuda_barrier::shared_bytes(Kernel::multi_stage, 256, 4), 4u * 16384u);
  EXPECT_EQ(cuda_barrier::shared_bytes(Kernel::system_scope, 256), 0u);  // stages in global
  for (int threads = 32; threads <= 1024; threads += 32) {
    // Whole groups of 32, so a partner never leaves its batch; and the two_buffers halves
    // and the full-batch bulk copies are whole 16-byte chunks.
    EXPECT_EQ(cuda_barrier::batch_elements(threads) % 32, 0u);
    EXPECT_EQ(cuda_barrier::batch_elements(threads) / 2 * sizeof(std::uint32_t) % 16, 0u);
  }
}

TEST(CudaBarrierShape, RejectsBadLaunchesBeforeTouchingTheDevice) {
  // Fake device pointers: the launcher must throw before it could dereference them.
  const auto* in = reinterpret_cast<const std::uint32_t*>(std::uintptr_t{1} << 20);
  auto* out = reinterpret_cast<std::uint32_t*>(std::uintptr_t{2} << 20);
  auto* report = reinterpret_cast<std::uint32_t*>(std::uintptr_t{3} << 20);
  const cuda::std::span<const std::uint32_t> src(in, 1000);
  const cuda::std::span<std::uint32_t> dst(out, 1000);
  std::vector<Kernel> kernels = kAllKernels;
  kernels.push_back(Kernel::multi_stage_no_release);
  for (Kernel k : kernels) {
    const int stages = cuda_barrier::is_multi_stage(k) ? 2 : 1;
    SCOPED_TRACE(cuda_barrier::kernel_name(k));
    EXPECT_THROW(copy_and_compute(src, dst.first(999), k, {1, 256, stages}, 0),
                 std::invalid_argument);
    EXPECT_THROW(copy_and_compute(src, dst, k, {0, 256, stages}, 0), std::invalid_argument);
    EXPECT_THROW(copy_and_compute(src, dst, k, {1, 0, stages}, 0), std::invalid_argument);
    EXPECT_THROW(copy_and_compute(src, dst, k, {1, 100, stages}, 0), std::invalid_argument);
    EXPECT_THROW(copy_and_compute(src, dst, k, {1, 2048, stages}, 0), std::invalid_argument);
    // Every kernel promises 16-byte alignment (aligned_size_t<16>, uint4 accesses).
    EXPECT_THROW(copy_and_compute(src.subspan(1), dst.subspan(1), k, {1, 256, stages}, 0),
                 std::invalid_argument);
    // A report has kReportSlots elements.
    EXPECT_THROW(copy_and_compute(src, dst, k, {1, 256, stages}, 0, {report, 2}),
                 std::invalid_argument);
    EXPECT_THROW(prepare_copy_and_compute(src, dst.first(999), k, {1, 256, stages}),
                 std::invalid_argument);
    // A reader delay is a test knob of the multi-stage kernels only, a hold-back one of the
    // one-stage kernels.
    if (!cuda_barrier::is_multi_stage(k)) {
      EXPECT_THROW(prepare_copy_and_compute(src, dst, k, {1, 256, 1}, {}, ReaderDelay{1000}),
                   std::invalid_argument);
    }
    if (cuda_barrier::is_multi_stage(k) || k == Kernel::system_scope) {
      EXPECT_THROW(prepare_copy_and_compute(src, dst, k, {1, 256, stages}, {}, {},
                                            cuda_barrier::HoldBack{1000}),
                   std::invalid_argument);
    }
  }
  // Stage counts: the multi-stage kernels take 2..4, every other kernel exactly 1.
  for (Kernel k : {Kernel::multi_stage, Kernel::multi_stage_no_release}) {
    for (int stages : {0, 1, 5}) {
      EXPECT_THROW(copy_and_compute(src, dst, k, {1, 256, stages}, 0), std::invalid_argument);
      EXPECT_THROW(cuda_barrier::max_blocks_per_sm(k, 256, stages), std::invalid_argument);
    }
  }
  EXPECT_THROW(copy_and_compute(src, dst, Kernel::one_stage, {1, 256, 2}, 0),
               std::invalid_argument);
  EXPECT_THROW(cuda_barrier::max_blocks_per_sm(Kernel::one_stage, 256, 2), std::invalid_argument);
}

TEST(CudaBarrierShape, EmptyInputLaunchesNothing) {
  for (Kernel k : kAllKernels) {
    const int stages = cuda_barrier::is_multi_stage(k) ? 3 : 1;
    EXPECT_NO_THROW(copy_and_compute({}, {}, k, {1, 256, stages}, 0));
    EXPECT_NO_THROW(prepare_copy_and_compute({}, {}, k, {1, 256, stages})(0));
  }
}

TEST(CudaBarrierShape, KernelNamesAndStageKinds) {
  EXPECT_STREQ(cuda_barrier::kernel_name(Kernel::multi_stage), "multi_stage");
  EXPECT_STREQ(cuda_barrier::kernel_name(Kernel::multi_stage_no_release), "multi_stage_no_release");
  EXPECT_TRUE(cuda_barrier::is_multi_stage(Kernel::multi_stage_no_release));
  EXPECT_FALSE(cuda_barrier::is_multi_stage(Kernel::one_stage));
  EXPECT_EQ(cuda_barrier::shared_bytes(Kernel::multi_stage_no_release, 256, 3), 3u * 16384u);
}

TEST(CudaBarrierShape, ContractNames) {
  EXPECT_STREQ(cuda_barrier::contract_name(kAsync), "async");
  EXPECT_STREQ(cuda_barrier::contract_name(kNone), "none");
  EXPECT_STREQ(cuda_barrier::contract_name(cuda_barrier::kNotCalled), "not called");
}

// ---- CPU tests: what the compiler emitted -----------------------------------------------

// Kernels by a part of their mangled names.
constexpr const char* kWordsKernel = "one_stage_words_kernel";
// multi_stage_kernel<Stages, WaitForRelease>: Lb1E is multi_stage, Lb0E the broken one.
constexpr const char* kMultiStageKernels[] = {
    "multi_stage_kernelILi2ELb1E", "multi_stage_kernelILi3ELb1E", "multi_stage_kernelILi4ELb1E"};
constexpr const char* kNoReleaseKernels[] = {
    "multi_stage_kernelILi2ELb0E", "multi_stage_kernelILi3ELb0E", "multi_stage_kernelILi4ELb0E"};
constexpr const char* kAlignedKernels[] = {"one_stage_kernel",
                                           "custom_group_kernel",
                                           "two_buffers_kernel",
                                           "multi_stage_kernelILi2ELb1E",
                                           "multi_stage_kernelILi3ELb1E",
                                           "multi_stage_kernelILi4ELb1E",
                                           "multi_stage_kernelILi2ELb0E",
                                           "multi_stage_kernelILi3ELb0E",
                                           "multi_stage_kernelILi4ELb0E"};
constexpr const char* kSystemScopeKernel = "system_scope_kernel";

/// The kernel whose function a part of a mangled name (one of those above) names.
Kernel kernel_named(const std::string& name_part) {
  if (name_part.find("Lb0E") != std::string::npos) return Kernel::multi_stage_no_release;
  if (name_part.find("multi_stage") != std::string::npos) return Kernel::multi_stage;
  if (name_part == kWordsKernel) return Kernel::one_stage_words;
  if (name_part == kSystemScopeKernel) return Kernel::system_scope;
  if (name_part == "custom_group_kernel") return Kernel::custom_group;
  if (name_part == "two_buffers_kernel") return Kernel::two_buffers;
  return Kernel::one_stage;
}
// 4 one-stage kernels, system_scope, 3 multi_stage and 3 multi_stage_no_release.
constexpr std::size_t kKernelCount = 11;

TEST(CudaBarrierPtx, EveryKernelIsThere) {
  const auto modules = course::inspect::read_ptx_modules(course::testing::kernels_object_path());
  for (const std::string& target : course::testing::ptx_targets()) {
    const auto& module = course::inspect::module_for(modules, target);
    EXPECT_EQ(course::inspect::ptx_kernels(module).size(), kKernelCount) << target;
  }
}

TEST(CudaBarrierPtx, AlignedCopiesAreBulkOnSm90AndCpAsyncOnSm80) {
  const auto modules = course::inspect::read_ptx_modules(course::testing::kernels_object_path());
  for (const std::string& target : course::testing::ptx_targets()) {
    const auto& module = course::inspect::module_for(modules, target);
    const bool hopper = std::stoi(target.substr(3)) >= 90;  // "sm_90", "sm_90a"
    for (const char* name : kAlignedKernels) {
      const auto k = course::inspect::kernel(module, name);
      const Kernel kernel = kernel_named(name);
      SCOPED_TRACE(target + " " + name);
      if (hopper) {
        // One bulk copy for the batch, its byte count added to the barrier's transactions,
        // and the proxy fence after the barriers' initialisation (read-only code).
        EXPECT_TRUE(course::inspect::uses(k.body, "cp.async.bulk.shared::cluster.global"))
            << aligned_copy_todos(kernel);
        EXPECT_TRUE(course::inspect::uses(k.body, "mbarrier.expect_tx"))
            << aligned_copy_todos(kernel);
        EXPECT_TRUE(course::inspect::uses(k.body, "fence.proxy.async"));
        EXPECT_TRUE(course::inspect::uses(k.body, "mbarrier.try_wait")) << wait_todos(kernel);
      } else {
        EXPECT_FALSE(course::inspect::uses(k.body, "cp.async.bulk")) << aligned_copy_todos(kernel);
        EXPECT_TRUE(course::inspect::uses(k.body, "cp.async.cg.shared.global"))
            << "16-byte cp.async expected" << aligned_copy_todos(kernel);
        EXPECT_TRUE(course::inspect::uses(k.body, "cp.async.mbarrier.arrive"))
            << aligned_copy_todos(kernel);
        EXPECT_TRUE(course::inspect::uses(k.body, "mbarrier.test_wait")) << wait_todos(kernel);
      }
      // The partial last batch's last 1-3 elements: 4-byte cp.async on both.
      EXPECT_TRUE(course::inspect::uses(k.body, "cp.async.ca.shared.global"))
          << tail_copy_todos(kernel);
      EXPECT_TRUE(course::inspect::uses(k.body, "mbarrier.init"));  // read-only code
      // No staging through registers: no vector stores to shared memory.
      EXPECT_FALSE(course::inspect::uses(k.body, "st.shared.v4.u32")) << copy_todos(kernel);
    }
  }
}

TEST(CudaBarrierPtx, PlainByteCountsGiveFourByteCpAsyncEvenOnSm90) {
  const auto modules = course::inspect::read_ptx_modules(course::testing::kernels_object_path());
  for (const std::string& target : course::testing::ptx_targets()) {
    const auto k =
        course::inspect::kernel(course::inspect::module_for(modules, target), kWordsKernel);
    const std::string todos = copy_todos(Kernel::one_stage_words);
    EXPECT_TRUE(course::inspect::uses(k.body, "cp.async.ca.shared.global")) << target << todos;
    EXPECT_TRUE(course::inspect::uses(k.body, "cp.async.mbarrier.arrive")) << target << todos;
    EXPECT_FALSE(course::inspect::uses(k.body, "cp.async.bulk")) << target << todos;
    EXPECT_FALSE(course::inspect::uses(k.body, "cp.async.cg")) << target << todos;
  }
}

TEST(CudaBarrierPtx, SystemScopeCopiesInsideGlobalMemoryAreSynchronous) {
  const auto modules = course::inspect::read_ptx_modules(course::testing::kernels_object_path());
  for (const std::string& target : course::testing::ptx_targets()) {
    const auto k =
        course::inspect::kernel(course::inspect::module_for(modules, target), kSystemScopeKernel);
    // No asynchronous copy and no mbarrier: a plain copy loop and a barrier of atomics.
    for (const char* async : {"cp.async", "mbarrier", "cp.async.bulk", "fence.proxy.async"}) {
      EXPECT_FALSE(course::inspect::uses(k.body, async))
          << target << " uses " << async << copy_todos(Kernel::system_scope);
    }
    EXPECT_TRUE(course::inspect::uses(k.body, "atom"))
        << target << ": no atomics?" << copy_todos(Kernel::system_scope);
  }
}

// The release: only multi_stage waits on a barrier phase by its parity (the empty barrier,
// before each refill); its full barriers are waited on with the token of an arrival. The
// broken variant is the same kernel without that wait, and the one-stage kernels have none.
bool waits_on_parity(const std::string& body) {
  return course::inspect::uses(body, "mbarrier.try_wait.parity") ||
         course::inspect::uses(body, "mbarrier.test_wait.parity");
}

TEST(CudaBarrierPtx, OnlyMultiStageWaitsForTheEmptyBarriersPhase) {
  const auto modules = course::inspect::read_ptx_modules(course::testing::kernels_object_path());
  for (const std::string& target : course::testing::ptx_targets()) {
    const auto& module = course::inspect::module_for(modules, target);
    const bool hopper = std::stoi(target.substr(3)) >= 90;
    for (const char* name : kMultiStageKernels) {
      const auto k = course::inspect::kernel(module, name);
      EXPECT_TRUE(course::inspect::uses(
          k.body, hopper ? "mbarrier.try_wait.parity" : "mbarrier.test_wait.parity"))
          << target << " " << name << ": no wait on the empty barrier's phase (TODO 7)"
          << concerns_todo(7);
      EXPECT_TRUE(course::inspect::uses(k.body, "mbarrier.arrive"))
          << target << " " << name << ": no arrival (TODO 8)" << concerns_todo(8);
    }
    for (const char* name : kNoReleaseKernels) {
      // A parity wait there can only come from the fill (TODO 7) or the consumer (TODO 8).
      EXPECT_FALSE(waits_on_parity(course::inspect::kernel(module, name).body))
          << target << " " << name << concerns_todos({7, 8});
    }
    for (const char* name :
         {"one_stage_kernel", "custom_group_kernel", "two_buffers_kernel", kWordsKernel}) {
      EXPECT_FALSE(waits_on_parity(course::inspect::kernel(module, name).body))
          << target << " " << name << concerns_todos({5, 6});
    }
  }
}

std::string sass_of(const std::string& arch) {
  return course::inspect::run_command("'" + std::string(course::testing::cuobjdump_path()) +
                                      "' -sass -arch " + arch + " '" +
                                      course::testing::kernels_object_path() + "'");
}

const course::inspect::Function& sass_function(const std::vector<course::inspect::Function>& fs,
                                               const std::string& name_part) {
  for (const auto& f : fs) {
    if (f.name.find(name_part) != std::string::npos) return f;
  }
  throw std::runtime_error("no SASS function named like " + name_part);
}

TEST(CudaBarrierSass, BulkCopiesOnSm90AndLdgstsOnSm80) {
  if (std::string(course::testing::cuobjdump_path()).empty())
    GTEST_SKIP() << "cuobjdump not found: SASS checks need it";
  for (const std::string& target : course::testing::ptx_targets()) {
    const bool hopper = std::stoi(target.substr(3)) >= 90;
    const auto functions = course::inspect::sass_functions(sass_of(target));
    ASSERT_EQ(functions.size(), kKernelCount) << target;
    for (const char* name : kAlignedKernels) {
      const auto& f = sass_function(functions, name);
      const Kernel kernel = kernel_named(name);
      SCOPED_TRACE(target + " " + name);
      // sm_90: the bulk copy unit and the mbarrier unit; sm_80: LDGSTS, never UBLKCP.
      EXPECT_EQ(course::inspect::uses(f.body, "UBLKCP"), hopper) << aligned_copy_todos(kernel);
      if (hopper) {
        EXPECT_TRUE(course::inspect::uses(f.body, "SYNCS"))
            << aligned_copy_todos(kernel) << wait_todos(kernel);
      }
      // Both: LDGSTS for the 4-byte tail (sm_90) or for everything (sm_80).
      EXPECT_TRUE(course::inspect::uses(f.body, "LDGSTS"))
          << (hopper ? tail_copy_todos(kernel) : copy_todos(kernel));
    }
    const auto& words = sass_function(functions, kWordsKernel);
    EXPECT_TRUE(course::inspect::uses(words.body, "LDGSTS"))
        << target << copy_todos(Kernel::one_stage_words);
    EXPECT_FALSE(course::inspect::uses(words.body, "UBLKCP"))
        << target << copy_todos(Kernel::one_stage_words);
    const auto& system = sass_function(functions, kSystemScopeKernel);
    EXPECT_FALSE(course::inspect::uses(system.body, "LDGSTS"))
        << target << copy_todos(Kernel::system_scope);
    EXPECT_FALSE(course::inspect::uses(system.body, "UBLKCP"))
        << target << copy_todos(Kernel::system_scope);
  }
}

// ---- GPU tests: every element of every awkward size, at several launch shapes ----------

using Case = std::tuple<Kernel, LaunchShape>;

class GpuCudaBarrier : public course::testing::GpuTestWithParam<Case> {};

TEST_P(GpuCudaBarrier, EveryElementMatchesTheReference) {
  const auto [kernel, shape] = GetParam();
  for (std::size_t n : kAwkwardSizes) {
    course::DeviceBuffer<std::uint32_t> in(n), out(n);
    course::fill_hash(in.span(), static_cast<std::uint32_t>(n));
    course::poison(out.data(), out.bytes());
    copy_and_compute(in.cspan(), out.span(), kernel, shape, 0);
    COURSE_CHECK(cudaDeviceSynchronize());

    const auto host_in = course::to_host(in.cspan());
    std::vector<std::uint32_t> expected(n);
    course::workload::reference(host_in, expected);
    const auto c = course::compare_exact<std::uint32_t>(expected, course::to_host(out.cspan()));
    ASSERT_TRUE(c.ok()) << cuda_barrier::kernel_name(kernel) << ", " << shape_text(shape)
                        << ", n=" << n << ": " << c.summary() << result_todos(kernel);
    // The kernel must not write to its input.
    std::vector<std::uint32_t> original(n);
    course::fill_hash_host(original, static_cast<std::uint32_t>(n));
    ASSERT_EQ(host_in, original) << "the input changed, n=" << n << copy_todos(kernel);
  }
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  const std::vector<LaunchShape> one_stage_shapes = {
      {1, 32, 1}, {3, 96, 1}, {7, 256, 1}, {264, 256, 1}, {2, 1024, 1}};
  for (Kernel k : kAllKernels) {
    if (k == Kernel::multi_stage) continue;
    for (LaunchShape s : one_stage_shapes) cases.emplace_back(k, s);
  }
  // Every stage count, at shapes whose stages fit an A100's and an H100's shared memory.
  for (LaunchShape s : {LaunchShape{1, 32, 2}, LaunchShape{3, 96, 3}, LaunchShape{7, 256, 4},
                        LaunchShape{264, 256, 4}, LaunchShape{132, 256, 3}, LaunchShape{5, 512, 3},
                        LaunchShape{2, 1024, 2}}) {
    cases.emplace_back(Kernel::multi_stage, s);
  }
  return cases;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const auto [k, shape] = info.param;
  return std::string(cuda_barrier::kernel_name(k)) + "_" + shape_text(shape);
}

INSTANTIATE_TEST_SUITE_P(Shapes, GpuCudaBarrier, ::testing::ValuesIn(all_cases()), case_name);

// ---- GPU tests: what memcpy_async promised ----------------------------------------------

/// The contract each kernel's calls must report, from reading CCCL 3.0.1's dispatch
/// (cuda/__memcpy_async/memcpy_completion.h): a block-scope barrier in shared memory with a
/// global -> shared copy gets `async` on sm_80 (cp.async + cp.async.mbarrier.arrive) and on
/// sm_90 (bulk copy + expect_tx, or cp.async below 16-byte alignment); a global -> global
/// copy has no asynchronous mechanism and gets `none`, whatever the barrier.
std::uint32_t expected_contract(Kernel kernel, course::ComputeCapability cc) {
  if (kernel == Kernel::system_scope) return kNone;
  return cc >= course::ComputeCapability{8, 0} ? kAsync : kNone;
}

class GpuCudaBarrierContract : public course::testing::GpuTestWithParam<Kernel> {};

TEST_P(GpuCudaBarrierContract, EachCallReportsTheExpectedContract) {
  const Kernel kernel = GetParam();
  const course::DeviceSummary gpu = course::open_device(0);
  const std::uint32_t expected = expected_contract(kernel, gpu.cc);
  const LaunchShape shape{4, 256, kernel == Kernel::multi_stage ? 3 : 1};
  const std::size_t batch = cuda_barrier::batch_elements(shape.threads_per_block);
  // n % 4 != 0: a tail past the last 16-byte chunk; n % 4 == 0: none; n < batch: no full batch.
  for (std::size_t n : {std::size_t{1000003}, 3 * batch, batch + 8, std::size_t{5}}) {
    course::DeviceBuffer<std::uint32_t> in(n), out(n), report(cuda_barrier::kReportSlots);
    course::fill_hash(in.span(), 7);
    COURSE_CHECK(cudaMemset(report.data(), 0xFF, report.bytes()));
    copy_and_compute(in.cspan(), out.span(), kernel, shape, 0, report.span());
    COURSE_CHECK(cudaDeviceSynchronize());
    const auto r = course::to_host(report.cspan());
    const bool full_batch = n >= batch;
    const bool tail = n % 4 != 0;
    const auto name = [](std::uint32_t v) { return std::string(cuda_barrier::contract_name(v)); };
    SCOPED_TRACE(std::string(cuda_barrier::kernel_name(kernel)) + ", n=" + std::to_string(n) +
                 ", compute capability " + gpu.cc.str());
    // kBatchCopy: a full batch's (first) copy; kSecondCopy: two_buffers' buffer 2 only.
    EXPECT_EQ(name(r[cuda_barrier::kBatchCopy]),
              name(full_batch ? expected : cuda_barrier::kNotCalled))
        << aligned_copy_todos(kernel);
    EXPECT_EQ(
        name(r[cuda_barrier::kSecondCopy]),
        name(full_batch && kernel == Kernel::two_buffers ? expected : cuda_barrier::kNotCalled))
        << (kernel == Kernel::two_buffers ? aligned_copy_todos(kernel) : copy_todos(kernel));
    EXPECT_EQ(name(r[cuda_barrier::kTailCopy]), name(tail ? expected : cuda_barrier::kNotCalled))
        << tail_copy_todos(kernel);
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, GpuCudaBarrierContract, ::testing::ValuesIn(kAllKernels),
                         [](const ::testing::TestParamInfo<Kernel>& info) {
                           return std::string(cuda_barrier::kernel_name(info.param));
                         });

// ---- GPU test: the one-stage kernels wait for the whole block, not one warp ----------------
//
// compute_batch reads 16-byte vectors whose elements other threads copied (4-byte copies:
// thread t copies elements t, t + threads, ...; a bulk copy on sm_90: thread 0 copies the
// whole batch), so the wait for the batch (TODO 5) and the sync before the next copy (TODO 6)
// must cover every warp. A sync that covers only its own warp (a __syncwarp) mostly passes on
// values alone. With a HoldBack every warp but one (a different one per block) copies each
// batch late and reads it late: the warp that runs ahead then starts the next batch's copies
// while the others have yet to read this one.

TEST(GpuCudaBarrierHeldBack, OneStageKernelsWaitForEveryWarp) {
  if (const auto reason = course::testing::gpu_unavailable()) GTEST_SKIP() << *reason;
  for (Kernel kernel :
       {Kernel::one_stage_words, Kernel::one_stage, Kernel::custom_group, Kernel::two_buffers}) {
    for (LaunchShape shape : {LaunchShape{16, 256, 1}, LaunchShape{6, 96, 1}}) {
      const std::size_t batch = cuda_barrier::batch_elements(shape.threads_per_block);
      for (std::size_t n : course::testing::held_back_sizes(shape.blocks, batch)) {
        course::DeviceBuffer<std::uint32_t> in(n), out(n);
        course::fill_hash(in.span(), static_cast<std::uint32_t>(n + 3));
        course::poison(out.data(), out.bytes());
        prepare_copy_and_compute(in.cspan(), out.span(), kernel, shape, {}, {},
                                 cuda_barrier::HoldBack{course::testing::kHoldBackNs})(0);
        COURSE_CHECK(cudaDeviceSynchronize());
        std::vector<std::uint32_t> expected(n);
        course::workload::reference(course::to_host(in.cspan()), expected);
        const auto c = course::compare_exact<std::uint32_t>(expected, course::to_host(out.cspan()));
        ASSERT_TRUE(c.ok()) << cuda_barrier::kernel_name(kernel) << ", " << shape.blocks << "x"
                            << shape.threads_per_block << ", n=" << n
                            << ", warps held back: " << c.summary()
                            << " (do the wait and the sync cover every warp of the block?)"
                            << concerns_todos({5, 6});
      }
    }
  }
}

// ---- GPU tests: the empty barrier is what makes a refill safe ----------------------------
//
// Each block gets 2 x stages + 1 batches (the input's last one partial), so it refills a
// stage stages + 1 times. With a ReaderDelay every warp but the first holds back before
// reading a batch until the first word it reads changes (or 1 ms has passed: a 16 KB copy
// lands in microseconds), while warp 0 runs ahead into the next iteration and starts the
// refill of the stage it has just finished computing.

constexpr ReaderDelay kHoldBack{1000000};  // 1 ms per batch at most
constexpr int kReleaseBlocks = 2;

struct ReleaseRun {
  std::size_t n = 0;
  std::size_t batch = 0;
  std::vector<std::uint32_t> expected;
  std::vector<std::uint32_t> actual;
};

ReleaseRun run_held_back(Kernel kernel, int stages) {
  const LaunchShape shape{kReleaseBlocks, 256, stages};
  ReleaseRun r;
  r.batch = cuda_barrier::batch_elements(shape.threads_per_block);
  r.n = static_cast<std::size_t>(kReleaseBlocks) * (2 * stages + 1) * r.batch - 5;
  course::DeviceBuffer<std::uint32_t> in(r.n), out(r.n);
  course::fill_hash(in.span(), 3);
  course::poison(out.data(), out.bytes());
  prepare_copy_and_compute(in.cspan(), out.span(), kernel, shape, {}, kHoldBack)(0);
  COURSE_CHECK(cudaDeviceSynchronize());
  r.expected.resize(r.n);
  course::workload::reference(course::to_host(in.cspan()), r.expected);
  r.actual = course::to_host(out.cspan());
  return r;
}

class GpuCudaBarrierRelease : public course::testing::GpuTestWithParam<int> {};

TEST_P(GpuCudaBarrierRelease, HeldBackReadersStillGetTheirBatch) {
  // multi_stage waits for the empty barrier before every refill: however long the readers
  // take, no copy overwrites what they read. (A missing TODO 7 fails here on sm_90.)
  const int stages = GetParam();
  const ReleaseRun r = run_held_back(Kernel::multi_stage, stages);
  const auto c = course::compare_exact<std::uint32_t>(r.expected, r.actual);
  EXPECT_TRUE(c.ok()) << stages << " stages, n=" << r.n << ": " << c.summary()
                      << " (a refill overwrote a batch still being read: does every refill wait "
                         "for its stage's empty barrier?)"
                      << result_todos(Kernel::multi_stage);
}

TEST_P(GpuCudaBarrierRelease, WithoutTheWaitEveryRefillOverwritesABatchBeingRead) {
  // multi_stage_no_release is multi_stage without the wait on the empty barrier. On sm_90
  // thread 0 (warp 0) issues each refill of a whole stage as one bulk copy while the other
  // warps are held back before reading that stage's batch: every batch that is refilled is
  // read after the refill landed, so each holds wrong values; the last `stages` batches of
  // a block are never refilled and stay right. On sm_80 each thread copies its own 16-byte
  // chunks, which only its own warp reads, so held-back warps are never overwritten by warp
  // 0 there: the values come out right, and racecheck is what catches the missing wait
  // (L03.sanitize.racecheck_catches_broken).
  if (const auto reason = course::testing::gpu_unavailable({9, 0})) GTEST_SKIP() << *reason;
  const int stages = GetParam();
  const ReleaseRun r = run_held_back(Kernel::multi_stage_no_release, stages);
  const std::size_t batches = (r.n + r.batch - 1) / r.batch;
  std::size_t refilled = 0;
  for (std::size_t g = 0; g < batches; ++g) {
    const unsigned block = static_cast<unsigned>(g % kReleaseBlocks);
    const std::size_t local = g / kReleaseBlocks;
    const std::size_t mine = course::batches::batches_of_block(batches, block, kReleaseBlocks);
    const bool overwritten = local + static_cast<std::size_t>(stages) < mine;
    std::size_t wrong = 0;
    for (std::size_t i = g * r.batch; i < std::min(r.n, (g + 1) * r.batch); ++i) {
      wrong += r.actual[i] != r.expected[i] ? 1 : 0;
    }
    refilled += overwritten ? 1 : 0;
    if (overwritten) {
      EXPECT_GT(wrong, 0u) << "batch " << g << " (block " << block << ", its batch " << local
                           << " of " << mine << ") was read before its stage's refill landed"
                           << result_todos(Kernel::multi_stage_no_release);
    } else {
      EXPECT_EQ(wrong, 0u) << "batch " << g << " is never refilled, yet " << wrong
                           << " of its elements are wrong"
                           << result_todos(Kernel::multi_stage_no_release);
    }
  }
  EXPECT_EQ(refilled, static_cast<std::size_t>(kReleaseBlocks) * (stages + 1));
}

INSTANTIATE_TEST_SUITE_P(AllStageCounts, GpuCudaBarrierRelease,
                         ::testing::Range(cuda_barrier::kMinStages, cuda_barrier::kMaxStages + 1));

// ---- GPU tests: occupancy and shared memory limits ---------------------------------------

TEST(GpuCudaBarrierOccupancy, MaxBlocksPerSmShrinksWithStages) {
  if (const auto reason = course::testing::gpu_unavailable()) GTEST_SKIP() << *reason;
  const int one = cuda_barrier::max_blocks_per_sm(Kernel::one_stage, 256);
  const int two = cuda_barrier::max_blocks_per_sm(Kernel::multi_stage, 256, 2);
  const int four = cuda_barrier::max_blocks_per_sm(Kernel::multi_stage, 256, 4);
  EXPECT_GE(four, 1);
  EXPECT_LE(two, one);
  EXPECT_LE(four, two);  // each stage is another 16 KB of shared memory
}

TEST(GpuCudaBarrierOccupancy, StagesBeyondTheSharedMemoryOfABlockAreRejected) {
  if (const auto reason = course::testing::gpu_unavailable()) GTEST_SKIP() << *reason;
  // 1024 threads x 64 bytes x 4 stages = 256 KB: more than any sm_80/sm_90 block may have.
  course::DeviceBuffer<std::uint32_t> in(4096), out(4096);
  EXPECT_THROW(copy_and_compute(in.cspan(), out.span(), Kernel::multi_stage, {1, 1024, 4}, 0),
               std::invalid_argument);
}

}  // namespace
