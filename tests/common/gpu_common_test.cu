// GPU tests of common/: the device fill matches the host fill, poison reaches every
// byte, buffers and timing work. Skipped without a GPU.
#include <gtest/gtest.h>

#include <vector>

#include "course/buffers.h"
#include "course/data.h"
#include "course/timing.h"
#include "gpu_test.h"

namespace {

class GpuCommon : public course::testing::GpuTest {};

TEST_F(GpuCommon, DeviceFillEqualsHostFill) {
  for (std::size_t n : {1u, 257u, 1000003u}) {
    course::DeviceBuffer<std::uint32_t> device(n);
    course::fill_hash(device.span(), 42);
    std::vector<std::uint32_t> host(n);
    course::fill_hash_host(host, 42);
    const auto c = course::compare_exact<std::uint32_t>(host, course::to_host(device.cspan()));
    EXPECT_TRUE(c.ok()) << c.summary();
  }
}

TEST_F(GpuCommon, PoisonReachesEveryByte) {
  course::DeviceBuffer<std::uint32_t> device(1001);
  course::fill_hash(device.span(), 1);
  course::poison(device.data(), device.bytes());
  for (std::uint32_t v : course::to_host(device.cspan())) ASSERT_EQ(v, 0xA5A5A5A5u);
}

TEST_F(GpuCommon, TimingReturnsOneSamplePerIteration) {
  course::DeviceBuffer<std::uint32_t> device(1 << 20);
  course::Stream stream;
  int calls = 0;
  const auto t = course::time_stream_work(
      [&](cudaStream_t s) {
        ++calls;
        course::fill_hash(device.span(), 3, s);
      },
      stream, 2, 5);
  EXPECT_EQ(calls, 7);
  ASSERT_EQ(t.samples_ms.size(), 5u);
  EXPECT_GT(t.median_ms, 0.0);
}

TEST_F(GpuCommon, CudaErrorsThrowWithFileAndLine) {
  try {
    COURSE_CHECK(cudaSetDevice(12345));
    FAIL() << "expected a CudaError";
  } catch (const course::CudaError& e) {
    EXPECT_EQ(e.code(), cudaErrorInvalidDevice);
    EXPECT_NE(std::string(e.what()).find("gpu_common_test.cu"), std::string::npos) << e.what();
  }
}

}  // namespace

// ---- course/batches.cuh: the batch arithmetic every copy-and-compute lesson shares ----
#include "course/batches.cuh"

namespace {

TEST(Batches, ArithmeticOfBatchesAndBlocks) {
  using namespace course::batches;
  EXPECT_EQ(batch_elements(256, 4), 4096u);
  EXPECT_EQ(batch_count(4097, 4096), 2u);
  EXPECT_EQ(batch_count(4096, 4096), 1u);
  EXPECT_EQ(batch_count(0, 4096), 0u);
  // 10 batches over 4 blocks: blocks 0, 1 own 3 (b, b + 4, b + 8), blocks 2, 3 own 2.
  EXPECT_EQ(batches_of_block(10, 0, 4), 3u);
  EXPECT_EQ(batches_of_block(10, 1, 4), 3u);
  EXPECT_EQ(batches_of_block(10, 2, 4), 2u);
  EXPECT_EQ(batches_of_block(10, 3, 4), 2u);
  EXPECT_EQ(batches_of_block(2, 5, 8), 0u);  // more blocks than batches
  std::size_t total = 0;
  for (unsigned b = 0; b < 7; ++b) total += batches_of_block(1000, b, 7);
  EXPECT_EQ(total, 1000u);
}

TEST(Batches, ZeroFillOfEveryChunkOfAPartialBatch) {
  using course::batches::zero_fill_bytes;
  // 10 valid elements: chunks 0 and 1 whole, chunk 2 holds 2 (8 bytes to fill), chunk 3 none.
  EXPECT_EQ(zero_fill_bytes(10, 0), 0u);
  EXPECT_EQ(zero_fill_bytes(10, 1), 0u);
  EXPECT_EQ(zero_fill_bytes(10, 2), 8u);
  EXPECT_EQ(zero_fill_bytes(10, 3), 16u);
  for (std::size_t count = 1; count <= 4; ++count) {
    EXPECT_EQ(zero_fill_bytes(count, 0), count == 4 ? 0u : 16 - 4 * count) << count;
  }
}

}  // namespace
