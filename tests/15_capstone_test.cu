// Lesson 15 tests: built twice, against the starter (label `lesson`) and against the
// solution (label `solution`). GPU suites are named Gpu...; they skip without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "capstone.cuh"
#include "course/buffers.h"
#include "course/check.h"
#include "course/data.h"
#include "course/inspect.h"
#include "gpu_test.h"

namespace {

using capstone::Config;
using capstone::GemmShape;
using capstone::Rung;
using course::testing::concerns_todo;
using course::testing::concerns_todos;

/// The TODOs a rung's values depend on.
std::string todos_of(Rung rung) {
  switch (rung) {
    case Rung::smem_tiled:
      return concerns_todo(1);
    case Rung::register_blocked:
      return concerns_todo(2);
    case Rung::warp_tiled:
      return concerns_todos({2, 3});
    case Rung::cp_async:
      return concerns_todos({2, 3, 4});
  }
  return "";
}

// ---- CPU tests: names, geometry, the tolerance model -------------------------------------

TEST(CapstoneShape, NamesAndGeometryAreStable) {
  std::vector<std::string> names;
  for (Rung r : capstone::kRungs) names.emplace_back(capstone::name(r));
  EXPECT_EQ(names, (std::vector<std::string>{"1-smem", "2-regblock", "3-warptile", "4-cp-async"}));
  EXPECT_EQ(capstone::kBlockM * capstone::kBlockN,
            capstone::kThreads * capstone::kMicroM * capstone::kMicroN);
  EXPECT_EQ((capstone::kBlockM / capstone::kWarpM) * (capstone::kBlockN / capstone::kWarpN),
            capstone::kThreads / 32);
  EXPECT_EQ(capstone::kWarpM * capstone::kWarpN, 32 * capstone::kMicroM * capstone::kMicroN);
  EXPECT_EQ(capstone::cp_async_shared_bytes(4), 65536u);
  EXPECT_EQ(capstone::cp_async_shared_bytes(2), 32768u);
  EXPECT_EQ(capstone::flops({2, 3, 4}), 48.0);
  EXPECT_EQ(capstone::to_string({33, 17, 129}), "33x17x129");
}

TEST(CapstoneShape, ChunkBytesAreTheSrcSizeOfAPartialChunk) {
  using capstone::chunk_bytes;
  EXPECT_EQ(chunk_bytes(0, 129), 16u);
  EXPECT_EQ(chunk_bytes(124, 129), 16u);
  EXPECT_EQ(chunk_bytes(128, 129), 4u);
  EXPECT_EQ(chunk_bytes(128, 130), 8u);
  EXPECT_EQ(chunk_bytes(128, 131), 12u);
  EXPECT_EQ(chunk_bytes(128, 132), 16u);
  EXPECT_EQ(chunk_bytes(132, 132), 0u);
  EXPECT_EQ(chunk_bytes(200, 1), 0u);
}

TEST(CapstoneShape, ASwizzleIsAPermutationThatSeparatesRowsFourApart) {
  for (int row = 0; row < capstone::kBlockM; ++row) {
    std::set<int> chunks;
    for (int c = 0; c < 4; ++c) chunks.insert(capstone::a_chunk_swizzle(row, c));
    EXPECT_EQ(chunks, (std::set<int>{0, 1, 2, 3})) << "row " << row;
  }
  // A warp reads rows r, r + 4, r + 8, r + 12 of one k-chunk together: four different chunks.
  for (int c = 0; c < 4; ++c) {
    std::set<int> placed;
    for (int i = 0; i < 4; ++i) placed.insert(capstone::a_chunk_swizzle(4 * i, c));
    EXPECT_EQ(placed.size(), 4u) << "chunk " << c;
  }
}

TEST(CapstoneTolerance, ErrorFactorIsGammaOfKPlusTwo) {
  const double u = capstone::kUnitRoundoff;
  EXPECT_DOUBLE_EQ(u, std::ldexp(1.0, -24));
  EXPECT_NEAR(capstone::error_factor(0), 2 * u, 1e-13);
  EXPECT_NEAR(capstone::error_factor(4094), 4096 * u / (1 - 4096 * u), 1e-18);
  // Linear in k while k u is small: about 2.4e-4 at k = 4096.
  EXPECT_NEAR(capstone::error_factor(4096) / capstone::error_factor(2046), 2.0, 2e-3);
  EXPECT_LT(capstone::error_factor(8192), 5e-4);
}

TEST(CapstoneTolerance, CompareGemmHoldsEveryElementToItsBound) {
  const int k = 1022;  // 2 gamma(1024) = 1.2207e-4 (to 5 digits)
  const double f = 2 * capstone::error_factor(k);
  const std::vector<float> expected{1.0f, -2.0f, 0.0f, 100.0f};
  const std::vector<float> bound{10.0f, 10.0f, 0.0f, 1000.0f};
  std::vector<float> actual = expected;
  EXPECT_TRUE(capstone::compare_gemm(expected, bound, actual, k).ok());
  actual[0] = static_cast<float>(1.0 + 0.9 * f * 10);  // inside
  actual[3] = static_cast<float>(100.0 - 0.9 * f * 1000);
  EXPECT_TRUE(capstone::compare_gemm(expected, bound, actual, k).ok());
  actual[1] = static_cast<float>(-2.0 - 1.2 * f * 10);  // outside
  auto c = capstone::compare_gemm(expected, bound, actual, k);
  EXPECT_EQ(c.mismatches, 1u);
  ASSERT_EQ(c.first.size(), 1u);
  EXPECT_EQ(c.first[0].index, 1u);
  actual = expected;
  actual[2] = std::numeric_limits<float>::quiet_NaN();  // a zero bound: only exact passes
  EXPECT_EQ(capstone::compare_gemm(expected, bound, actual, k).mismatches, 1u);
  actual[2] = 1e-20f;
  EXPECT_EQ(capstone::compare_gemm(expected, bound, actual, k).mismatches, 1u);
  actual[2] = 0.0f;
  actual[3] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(capstone::compare_gemm(expected, bound, actual, k).mismatches, 1u);
  const std::vector<float> shorter{1.0f};
  EXPECT_THROW(capstone::compare_gemm(expected, bound, shorter, k), std::invalid_argument);
}

TEST(CapstoneTolerance, InputsHaveTwelveBitsSoProductsAreExact) {
  for (std::uint64_t i = 0; i < 4096; ++i) {
    const float a = capstone::uniform_value(i, 15), b = capstone::uniform_value(i, 16);
    ASSERT_GE(a, -1.0f);
    ASSERT_LT(a, 1.0f);
    ASSERT_EQ(a * 2048.0f, std::floor(a * 2048.0f)) << i;
    ASSERT_EQ(static_cast<double>(a * b), static_cast<double>(a) * static_cast<double>(b)) << i;
  }
}

TEST(CapstoneShape, RejectsBadLaunchesBeforeTouchingTheDevice) {
  float* p = reinterpret_cast<float*>(256);  // never dereferenced: the checks come first
  const Config rung4{Rung::cp_async, 4};
  EXPECT_THROW(capstone::prepare_sgemm(rung4, {-1, 4, 4}, 1, p, p, 0, p), std::invalid_argument);
  EXPECT_THROW(capstone::prepare_sgemm(rung4, {4, 4, -4}, 1, p, p, 0, p), std::invalid_argument);
  EXPECT_THROW(capstone::prepare_sgemm(rung4, {4, 4, 4}, 1, nullptr, p, 0, p),
               std::invalid_argument);
  EXPECT_THROW(capstone::prepare_sgemm(rung4, {4, 4, 4}, 1, p, p, 0, nullptr),
               std::invalid_argument);
  EXPECT_THROW(capstone::prepare_sgemm({Rung::cp_async, 1}, {4, 4, 4}, 1, p, p, 0, p),
               std::invalid_argument);
  EXPECT_THROW(capstone::prepare_sgemm({Rung::cp_async, 5}, {4, 4, 4}, 1, p, p, 0, p),
               std::invalid_argument);
  EXPECT_THROW(capstone::prepare_sgemm({static_cast<Rung>(9), 4}, {4, 4, 4}, 1, p, p, 0, p),
               std::invalid_argument);
  EXPECT_THROW(capstone::prepare_sgemm(rung4, {3000000, 4, 4}, 1, p, p, 0, p),
               std::invalid_argument);
  EXPECT_THROW(capstone::prepare_cublas_sgemm({4, -4, 4}, 1, p, p, 0, p), std::invalid_argument);
  EXPECT_THROW(capstone::prepare_cublas_sgemm({4, 4, 4}, 1, p, nullptr, 0, p),
               std::invalid_argument);
  // An empty C: a launch that does nothing, whatever the pointers.
  EXPECT_NO_THROW(capstone::prepare_sgemm(rung4, {0, 4, 4}, 1, nullptr, nullptr, 0, nullptr)(0));
  EXPECT_FALSE(capstone::vector_path({4, 4, 5}, p, p, p));
  EXPECT_FALSE(capstone::vector_path({4, 6, 4}, p, p, p));
  EXPECT_FALSE(capstone::vector_path({4, 4, 4}, p + 1, p, p));
  EXPECT_TRUE(capstone::vector_path({3, 4, 4}, p, p, p));
}

// ---- CPU tests: what the compiler emitted ------------------------------------------------

std::vector<course::inspect::Function> kernels_named(const course::inspect::PtxModule& module,
                                                     const std::string& part) {
  std::vector<course::inspect::Function> found;
  for (auto& k : course::inspect::ptx_kernels(module)) {
    if (k.name.find(part) != std::string::npos) found.push_back(k);
  }
  return found;
}

struct KernelFamily {
  Rung rung;
  std::string name_part;
  std::size_t instances;  // Vec true/false (x stage counts for rung 4)
};

const std::vector<KernelFamily> kFamilies = {
    {Rung::smem_tiled, "sgemm_smem_kernel", 1},
    {Rung::register_blocked, "sgemm_regblock_kernel", 2},
    {Rung::warp_tiled, "sgemm_warptile_kernel", 2},
    {Rung::cp_async, "sgemm_cp_async_kernel",
     2 * static_cast<std::size_t>(capstone::kMaxStages - capstone::kMinStages + 1)},
};

TEST(CapstonePtx, EveryRungIsFp32FmaAndOnlyRungFourUsesCpAsync) {
  const auto modules = course::inspect::read_ptx_modules(course::testing::kernels_object_path());
  for (const std::string& target : course::testing::ptx_targets()) {
    const auto& module = course::inspect::module_for(modules, target);
    for (const KernelFamily& family : kFamilies) {
      const auto kernels = kernels_named(module, family.name_part);
      EXPECT_EQ(kernels.size(), family.instances) << family.name_part << " " << target;
      for (const auto& k : kernels) {
        const std::string where = target + " " + k.name;
        EXPECT_TRUE(course::inspect::uses(k.body, "fma.rn.f32"))
            << where << ": no fp32 FMA" << todos_of(family.rung);
        for (const char* tensor : {"mma", "wgmma", "cvt.rna.tf32"}) {
          EXPECT_FALSE(course::inspect::uses(k.body, tensor)) << where << ": " << tensor;
        }
        const bool async = family.rung == Rung::cp_async;
        EXPECT_EQ(course::inspect::uses(k.body, "cp.async"), async) << where << concerns_todo(4);
        if (async) {
          EXPECT_TRUE(course::inspect::uses(k.body, "cp.async.wait_group"))
              << where << concerns_todo(4);
          EXPECT_TRUE(course::inspect::uses(k.body, "cp.async.commit_group")) << where;
        }
        EXPECT_FALSE(course::inspect::uses(k.body, "cp.async.bulk")) << where;
      }
    }
  }
}

TEST(CapstonePtx, TheStageCountIsTheWaitDepth) {
  const auto modules = course::inspect::read_ptx_modules(course::testing::kernels_object_path());
  const std::regex wait(R"(cp\.async\.wait_group\s+(\d+);)");
  for (const std::string& target : course::testing::ptx_targets()) {
    const auto& module = course::inspect::module_for(modules, target);
    for (int stages = capstone::kMinStages; stages <= capstone::kMaxStages; ++stages) {
      // sgemm_cp_async_kernel<true, stages>: "...ILb1ELi4E..."
      const auto kernels =
          kernels_named(module, "sgemm_cp_async_kernelILb1ELi" + std::to_string(stages) + "E");
      ASSERT_EQ(kernels.size(), 1u) << target << " stages " << stages;
      std::set<int> counts;
      const std::string& body = kernels[0].body;
      for (auto it = std::sregex_iterator(body.begin(), body.end(), wait);
           it != std::sregex_iterator(); ++it) {
        counts.insert(std::stoi((*it)[1]));
      }
      EXPECT_EQ(counts, (std::set<int>{stages - 2})) << target << concerns_todo(4);
    }
  }
}

TEST(CapstoneSass, RungFourCopiesWithLdgstsAndNoRungUsesTensorCores) {
  const std::string cuobjdump = course::testing::cuobjdump_path();
  if (cuobjdump.empty()) GTEST_SKIP() << "cuobjdump not found: SASS checks need it";
  const std::string listing = course::inspect::run_command(
      "'" + cuobjdump + "' -sass -arch sm_90 '" + course::testing::kernels_object_path() + "'");
  int found = 0;
  for (const auto& fn : course::inspect::sass_functions(listing)) {
    for (const KernelFamily& family : kFamilies) {
      if (fn.name.find(family.name_part) == std::string::npos) continue;
      ++found;
      EXPECT_NE(fn.body.find("FFMA"), std::string::npos) << fn.name << todos_of(family.rung);
      for (const char* tensor : {"HMMA", "IMMA", "HGMMA", "UTMALDG"}) {
        EXPECT_EQ(fn.body.find(tensor), std::string::npos) << fn.name << ": " << tensor;
      }
      const bool async = family.rung == Rung::cp_async;
      EXPECT_EQ(fn.body.find("LDGSTS") != std::string::npos, async) << fn.name << concerns_todo(4);
      EXPECT_EQ(fn.body.find("LDGDEPBAR") != std::string::npos, async) << fn.name;
    }
  }
  EXPECT_EQ(found, 1 + 2 + 2 + 2 * (capstone::kMaxStages - capstone::kMinStages + 1));
}

// ---- GPU tests: every element against cuBLAS ---------------------------------------------

/// C = alpha A B + beta C by `config` and by cuBLAS, on uniform inputs; every element within
/// the bound. nan_c: C starts as NaN (only with beta == 0: C must not be read). offset:
/// A, B and C start one float past an aligned address (the element-wise paths).
::testing::AssertionResult matches_cublas(const Config& config, GemmShape s, float alpha,
                                          float beta, bool nan_c = false, bool offset = false) {
  const std::size_t sa = static_cast<std::size_t>(s.m) * s.k,
                    sb = static_cast<std::size_t>(s.k) * s.n,
                    sc = static_cast<std::size_t>(s.m) * s.n;
  const std::size_t o = offset ? 1 : 0;
  course::DeviceBuffer<float> a(sa + o), b(sb + o), c(sc + o), ref(sc + o);
  course::DeviceBuffer<float> abs_a(sa + 1), abs_b(sb + 1), bound(sc + 1);
  const auto seed = static_cast<std::uint32_t>(s.m * 7 + s.n * 3 + s.k);
  capstone::fill_uniform(a.span(), seed, 0);
  capstone::fill_uniform(b.span(), seed + 1, 0);
  if (nan_c) {
    COURSE_CHECK(cudaMemset(c.data(), 0xFF, c.bytes()));  // all-ones: a NaN
  } else {
    capstone::fill_uniform(c.span(), seed + 2, 0);
  }
  COURSE_CHECK(cudaMemcpy(ref.data(), c.data(), c.bytes(), cudaMemcpyDeviceToDevice));
  capstone::absolute_values(a.cspan(), abs_a.span().subspan(0, a.size()), 0);
  capstone::absolute_values(b.cspan(), abs_b.span().subspan(0, b.size()), 0);
  capstone::absolute_values(c.cspan(), bound.span().subspan(0, c.size()), 0);
  capstone::prepare_cublas_sgemm(s, std::fabs(alpha), abs_a.data() + o, abs_b.data() + o,
                                 std::fabs(beta), bound.data() + o)(0);
  capstone::prepare_cublas_sgemm(s, alpha, a.data() + o, b.data() + o, beta, ref.data() + o)(0);
  capstone::prepare_sgemm(config, s, alpha, a.data() + o, b.data() + o, beta, c.data() + o)(0);
  COURSE_CHECK(cudaDeviceSynchronize());
  const auto all_bound = course::to_host(bound.cspan());
  const auto all_ref = course::to_host(ref.cspan());
  const auto all_c = course::to_host(c.cspan());
  const std::vector<float> e(all_ref.begin() + o, all_ref.end());
  const std::vector<float> bd(all_bound.begin() + o, all_bound.begin() + o + sc);
  const std::vector<float> got(all_c.begin() + o, all_c.end());
  const auto cmp = capstone::compare_gemm(e, bd, got, s.k);
  const std::string what =
      std::string(capstone::name(config.rung)) +
      (config.rung == Rung::cp_async ? " (" + std::to_string(config.stages) + " stages)"
                                     : std::string()) +
      " " + capstone::to_string(s) + " alpha " + std::to_string(alpha) + " beta " +
      std::to_string(beta) + (nan_c ? " C=NaN" : "") + (offset ? " unaligned" : "");
  if (sc > 0 && !cmp.ok()) {
    return ::testing::AssertionFailure() << what << ": " << cmp.summary() << todos_of(config.rung);
  }
  return ::testing::AssertionSuccess();
}

struct Case {
  GemmShape shape;
  float alpha;
  float beta;
  bool nan_c;
  bool offset;
};

const std::vector<Case> kCases = {
    {{1, 1, 1}, 1.0f, 0.0f, false, false},
    {{33, 17, 129}, 1.0f, 0.0f, false, false},
    {{33, 17, 129}, -1.5f, 0.75f, false, false},
    {{128, 128, 100}, 1.0f, 0.0f, false, false},     // k not a multiple of any tile
    {{256, 384, 512}, 1.0f, 1.0f, false, false},     // whole tiles, the float4 paths
    {{130, 260, 36}, 0.5f, -2.0f, false, false},     // float4 paths with edge tiles
    {{200, 96, 64}, 1.0f, 0.0f, true, false},        // beta = 0: C is never read
    {{64, 64, 64}, 1.0f, 0.5f, false, true},         // unaligned pointers: element paths
    {{70, 50, 0}, 2.0f, 0.25f, false, false},        // k = 0: C = beta C
    {{31, 33, 8}, 0.0f, 3.0f, false, false},         // alpha = 0
    {{4095, 4097, 1023}, 1.0f, 0.0f, false, false},  // large and awkward
};

class GpuCapstoneVsCublas : public course::testing::GpuTestWithParam<std::tuple<Rung, int>> {};

TEST_P(GpuCapstoneVsCublas, EveryElementWithinTheBound) {
  const auto [rung, index] = GetParam();
  const Case& c = kCases[static_cast<std::size_t>(index)];
  EXPECT_TRUE(matches_cublas({rung, capstone::kDefaultStages}, c.shape, c.alpha, c.beta, c.nan_c,
                             c.offset));
}

INSTANTIATE_TEST_SUITE_P(AwkwardShapes, GpuCapstoneVsCublas,
                         ::testing::Combine(::testing::ValuesIn(capstone::kRungs),
                                            ::testing::Range(0, static_cast<int>(kCases.size()))),
                         [](const auto& info) {
                           return "rung" +
                                  std::to_string(static_cast<int>(std::get<0>(info.param))) +
                                  "_case" + std::to_string(std::get<1>(info.param));
                         });

class GpuCapstoneStages : public course::testing::GpuTestWithParam<int> {};

TEST_P(GpuCapstoneStages, EveryStageCountAroundTheTileCount) {
  const int stages = GetParam();
  // k of 1 to 6 tiles of 16, and tails: fewer, as many and more tiles than stages.
  for (int k : {1, 16, 17, 33, 48, 64, 65, 96, 129}) {
    EXPECT_TRUE(matches_cublas({Rung::cp_async, stages}, {131, 257, k}, 1.0f, 0.5f));
    EXPECT_TRUE(matches_cublas({Rung::cp_async, stages}, {64, 128, k}, -1.0f, 0.0f, false, true));
  }
}

INSTANTIATE_TEST_SUITE_P(AllStageCounts, GpuCapstoneStages,
                         ::testing::Range(capstone::kMinStages, capstone::kMaxStages + 1));

}  // namespace
