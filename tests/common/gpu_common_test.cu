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
