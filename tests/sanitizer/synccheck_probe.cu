// synccheck_probe: three tiny kernels that pin down what compute-sanitizer's synccheck
// reports for asynchronous copies completed through an mbarrier (tools/sanitize.py uses
// the answer). Each copies 1000 words into shared memory, waits, and writes them back
// doubled; the host checks every element and prints "RESULT: PASS" only when all match.
//
//   synccheck_probe cccl    cuda::memcpy_async(block, ..., cuda::barrier): on sm_80/sm_90
//                           with 4-byte alignment, CCCL issues cp.async + the
//                           cp.async.mbarrier.arrive WITHOUT .noinc. Correct code.
//   synccheck_probe noinc   the same copies written in PTX, completed by
//                           cp.async.mbarrier.arrive.noinc on a barrier that expects two
//                           arrivals per thread. Correct code.
//   synccheck_probe divergent
//                           a __syncthreads() reached by only half of the block: a real
//                           synchronisation error, which synccheck must report.
//
// Exit status: 0 values right, 1 values wrong or a CUDA error, 2 bad usage, 77 no GPU.
#include <cooperative_groups.h>
#include <cuda/barrier>

#include <cstdint>
#include <cstring>
#include <exception>
#include <iostream>
#include <vector>

#include "course/buffers.h"
#include "course/check.h"
#include "course/data.h"
#include "course/device.h"

namespace {

constexpr int kThreads = 128;
constexpr int kElements = 1000;  // not a multiple of 4 words: CCCL cannot use 16-byte copies

using BlockBarrier = cuda::barrier<cuda::thread_scope_block>;

// A __shared__ barrier is never constructed; thread 0 init()s it (see lesson 03).
#pragma nv_diag_suppress static_var_with_dynamic_init

__device__ void write_doubled(const std::uint32_t* staged, std::uint32_t* out) {
  for (int i = threadIdx.x; i < kElements; i += blockDim.x) out[i] = 2 * staged[i];
}

__global__ void cccl_kernel(const std::uint32_t* in, std::uint32_t* out) {
  __shared__ std::uint32_t staged[kElements];
  __shared__ BlockBarrier barrier;
  auto block = cooperative_groups::this_thread_block();
  if (block.thread_rank() == 0) init(&barrier, block.size());
  block.sync();
  cuda::memcpy_async(block, staged, in, sizeof(std::uint32_t) * kElements, barrier);
  barrier.arrive_and_wait();
  write_doubled(staged, out);
}

__global__ void noinc_kernel(const std::uint32_t* in, std::uint32_t* out) {
  __shared__ std::uint32_t staged[kElements];
  __shared__ std::uint64_t barrier;  // a raw mbarrier
  const auto bar = static_cast<std::uint32_t>(__cvta_generic_to_shared(&barrier));
  if (threadIdx.x == 0) {
    // Two arrivals per thread: one from its copies (.noinc does not add to the count),
    // one from the thread itself.
    asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(bar), "r"(2 * kThreads));
  }
  __syncthreads();
  for (int i = threadIdx.x; i < kElements; i += blockDim.x) {
    const auto dst = static_cast<std::uint32_t>(__cvta_generic_to_shared(&staged[i]));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(dst), "l"(in + i) : "memory");
  }
  asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];" ::"r"(bar) : "memory");
  std::uint64_t state = 0;
  asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(state) : "r"(bar) : "memory");
  std::uint32_t done = 0;
  while (!done) {
    asm volatile(
        "{ .reg .pred p; mbarrier.test_wait.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(bar), "l"(state)
        : "memory");
  }
  write_doubled(staged, out);
}

__global__ void divergent_kernel(const std::uint32_t* in, std::uint32_t* out) {
  __shared__ std::uint32_t staged[kElements];
  for (int i = threadIdx.x; i < kElements; i += blockDim.x) staged[i] = in[i];
  if (threadIdx.x < kThreads / 2) __syncthreads();  // WRONG on purpose: half the block
  __syncthreads();
  write_doubled(staged, out);
}

int run(const char* mode) {
  course::open_device(0);  // throws NoDevice (exit 77) without a usable GPU
  course::DeviceBuffer<std::uint32_t> in(kElements), out(kElements);
  course::fill_hash(in.span(), /*seed=*/99);
  course::poison(out.data(), out.bytes());
  if (std::strcmp(mode, "cccl") == 0) {
    cccl_kernel<<<1, kThreads>>>(in.data(), out.data());
  } else if (std::strcmp(mode, "noinc") == 0) {
    noinc_kernel<<<1, kThreads>>>(in.data(), out.data());
  } else {
    divergent_kernel<<<1, kThreads>>>(in.data(), out.data());
  }
  COURSE_CHECK_LAUNCH();
  COURSE_CHECK(cudaDeviceSynchronize());
  std::vector<std::uint32_t> expected = course::to_host(in.cspan());
  for (std::uint32_t& v : expected) v *= 2;
  const course::Comparison c =
      course::compare_exact<std::uint32_t>(expected, course::to_host(out.cspan()));
  std::cout << "synccheck_probe " << mode << ": " << c.summary()
            << "\nRESULT: " << (c.ok() ? "PASS" : "FAIL") << "\n";
  return c.ok() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || (std::strcmp(argv[1], "cccl") != 0 && std::strcmp(argv[1], "noinc") != 0 &&
                    std::strcmp(argv[1], "divergent") != 0)) {
    std::cerr << "usage: synccheck_probe cccl|noinc|divergent\n";
    return 2;
  }
  try {
    return run(argv[1]);
  } catch (const course::NoDevice& e) {
    std::cout << e.what() << "\n";
    return 77;
  } catch (const std::exception& e) {
    std::cerr << "synccheck_probe: " << e.what() << "\n";
    return 1;
  }
}
