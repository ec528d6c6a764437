/// \file gpu_test.h
/// \brief What the lesson tests share: GPU skipping and where the kernels' object is.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "course/device.h"

namespace course::testing {

/// The object file holding this test executable's kernels (starter or solution); the
/// lesson helper generates the definition for each test executable.
const char* kernels_object_path();
/// cuobjdump's path when CMake found one, else "".
const char* cuobjdump_path();
/// CMAKE_CUDA_ARCHITECTURES of the build, e.g. "80;90".
const char* cuda_architectures();

/// The PTX targets the build compiled, e.g. {"sm_80", "sm_90"} (from cuda_architectures()).
inline std::vector<std::string> ptx_targets() {
  std::vector<std::string> targets;
  const std::string list = cuda_architectures();
  for (std::size_t begin = 0; begin < list.size();) {
    std::size_t end = list.find(';', begin);
    if (end == std::string::npos) end = list.size();
    const std::string arch = list.substr(begin, end - begin);
    // "90", "90-real", "90a": the PTX .target is sm_ + the number and any letter suffix.
    targets.push_back("sm_" + arch.substr(0, arch.find('-')));
    begin = end + 1;
  }
  return targets;
}

/// The tag a failure message carries to name the TODO it most likely concerns:
///   EXPECT_TRUE(c.ok()) << c.summary() << course::testing::concerns_todo(3);
/// `./course check` collects the tags of the failed tests and tells the student which TODOs
/// to look at first.
inline std::string concerns_todo(int todo) {
  return " [concerns TODO " + std::to_string(todo) + "]";
}

/// The same for a failure that can come from any of several TODOs: concerns_todos({2, 3}).
inline std::string concerns_todos(std::initializer_list<int> todos) {
  std::string tags;
  for (int todo : todos) tags += concerns_todo(todo);
  return tags;
}

/// Held-back warps (course::batches::hold_back): how long every warp of a block but its
/// runner waits at each point a kernel marks. A warp reads or stages a batch in well under
/// 5 us, so a barrier that waits only for its own warp lets the runner read (or refill)
/// tens of microseconds before the others have staged (or read); a correct kernel only takes
/// 50 us longer per marked point and batch.
inline constexpr unsigned kHoldBackNs = 50000;

/// Sizes for a held-back run of `blocks` blocks of batches of `batch` elements: three batches
/// per block, the input's last one partial (1 to 3 elements past a 16-byte chunk: every tail
/// path); one batch per block; and two batches per block, the last one short by one group.
/// The runner differs from block to block (warp blockIdx.x % warps), so `blocks` should be at
/// least the warps of a block.
inline std::vector<std::size_t> held_back_sizes(std::size_t blocks, std::size_t batch) {
  return {blocks * 3 * batch - batch / 2 + 5, blocks * batch, blocks * 2 * batch - 31};
}

/// Why GPU tests cannot run here (no device, or one older than `required`), or nothing.
std::optional<std::string> gpu_unavailable(ComputeCapability required = {8, 0});

/// Base of every GPU test suite. Name GPU suites `Gpu...`: the lesson helper labels them
/// `gpu`, and they are reported as skipped, never as passed, on a machine without a GPU.
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto reason = gpu_unavailable()) GTEST_SKIP() << *reason;
  }
};

/// The same, for value-parameterised GPU suites.
template <class Param>
class GpuTestWithParam : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    if (const auto reason = gpu_unavailable()) GTEST_SKIP() << *reason;
  }
};

}  // namespace course::testing
