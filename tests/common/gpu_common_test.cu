// GPU tests of common/: the device fill matches the host fill, poison reaches every
// byte, buffers and timing work. Skipped without a GPU.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <vector>

#include "course/buffers.h"
#include "course/data.h"
#include "course/device.h"
#include "course/problem.h"
#include "course/roof.h"
#include "course/timing.h"
#include "course/workload.h"
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

TEST_F(GpuCommon, ProblemChecksEveryOutputElement) {
  const std::size_t n = 1000003;  // prime: the last group of 32 is partial
  const course::workload::Problem problem(n, 11);
  std::vector<std::uint32_t> host_in(n), expected(n);
  course::fill_hash_host(host_in, 11);
  course::workload::reference(host_in, expected);
  ASSERT_EQ(problem.expected, expected);

  course::Variant right = problem.checked("right", [&](cudaStream_t s) {
    COURSE_CHECK(cudaMemcpyAsync(problem.out.data(), expected.data(), n * sizeof(std::uint32_t),
                                 cudaMemcpyHostToDevice, s));
  });
  course::Variant last_missing = problem.checked("last missing", [&](cudaStream_t s) {
    COURSE_CHECK(cudaMemcpyAsync(problem.out.data(), expected.data(),
                                 (n - 1) * sizeof(std::uint32_t), cudaMemcpyHostToDevice, s));
  });
  EXPECT_EQ(right.bytes, course::workload::bytes_moved(n));
  right.prepare(nullptr);
  right.run(nullptr);
  COURSE_CHECK(cudaDeviceSynchronize());
  const course::Comparison all_written = right.check();
  EXPECT_TRUE(all_written.ok()) << all_written.summary();
  // prepare() poisons the whole output again: the element this run does not write is wrong,
  // although the run before wrote it.
  last_missing.prepare(nullptr);
  last_missing.run(nullptr);
  COURSE_CHECK(cudaDeviceSynchronize());
  const course::Comparison one_missing = last_missing.check();
  EXPECT_EQ(one_missing.checked, n);
  EXPECT_EQ(one_missing.mismatches, 1u) << one_missing.summary();
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

TEST_F(GpuCommon, SmCopyRoofCopiesEveryByteAtEveryShape) {
  const course::DeviceSummary device = course::open_device(0);
  course::Stream stream;
  for (std::size_t n : {4u, 1000004u}) {  // uint32 elements: a multiple of 4 (16 bytes)
    course::DeviceBuffer<std::uint32_t> in(n), out(n);
    course::fill_hash(in.span(), 7, stream.get());
    for (course::CopyShape shape : {course::CopyShape{1, 256, 4}, course::CopyShape{2, 1024, 8}}) {
      // Everything on the one stream: the fill, the poison and the copy stay in this order
      // (a copy on a non-blocking stream is not ordered after work on the default stream).
      course::poison(out.data(), out.bytes(), stream.get());
      course::sm_copy(out.data(), in.data(), in.bytes(), device, shape, stream.get());
      COURSE_CHECK(cudaStreamSynchronize(stream.get()));
      const auto c = course::compare_exact<std::uint32_t>(course::to_host(in.cspan()),
                                                          course::to_host(out.cspan()));
      EXPECT_TRUE(c.ok()) << n << " elements: " << c.summary();
    }
  }
  course::DeviceBuffer<std::uint32_t> a(5), b(5);  // 20 bytes: not a multiple of 16
  EXPECT_THROW(course::sm_copy(b.data(), a.data(), a.bytes(), device, {}, stream.get()),
               std::invalid_argument);
}

TEST_F(GpuCommon, SmCopyRoofAndD2DAreMeasuredSideBySide) {
  const course::DeviceSummary device = course::open_device(0);
  course::Stream stream;
  const std::size_t n = 64u << 20;  // 256 MiB: beyond any L2
  course::DeviceBuffer<std::uint32_t> in(n), out(n);
  course::fill_hash(in.span(), 3, stream.get());
  const course::SmCopyRoof roof =
      course::measure_sm_copy_roof(out.data(), in.data(), in.bytes(), device, stream.get(), 2, 5);
  const double d2d_ms =
      course::time_stream_work(
          [&](cudaStream_t s) {
            COURSE_CHECK(cudaMemcpyAsync(out.data(), in.data(), in.bytes(),
                                         cudaMemcpyDeviceToDevice, s));
          },
          stream.get(), 2, 5)
          .median_ms;
  const double roof_rate = 2.0 * in.bytes() / (roof.median_ms * 1e6);
  const double d2d_rate = 2.0 * in.bytes() / (d2d_ms * 1e6);
  std::cout << device.name << ": SM copy roof " << roof_rate << " GB/s (" << roof.describe()
            << "), D2D cudaMemcpy " << d2d_rate << " GB/s, ratio " << roof_rate / d2d_rate << "\n";
  EXPECT_GT(roof_rate, 0.5 * d2d_rate);  // a copy kernel is never far off the memory roof
}

__global__ void empty_kernel() {}

TEST_F(GpuCommon, TimedSamplesExcludeTheHostsLaunchWork) {
  // 30 us of host work before each launch of an empty kernel (a few us of device time):
  // the stream is held for 50 us before the start event, so the host's work is over before
  // the clock starts, and the sample is the kernel alone.
  course::Stream stream;
  const auto t = course::time_stream_work(
      [](cudaStream_t s) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(30);
        while (std::chrono::steady_clock::now() < until) {
        }
        empty_kernel<<<1, 32, 0, s>>>();
        COURSE_CHECK_LAUNCH();
      },
      stream.get(), 1, 9);
  EXPECT_LT(t.median_ms, 0.020) << "the host's 30 us before the launch were timed";
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
