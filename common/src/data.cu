#include "course/data.h"

#include <stdexcept>

#include "course/check.h"

namespace course {
namespace {

__global__ void fill_hash_kernel(std::uint32_t* data, std::size_t count, std::uint32_t seed) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += stride) {
    data[i] = hash32(i, seed);
  }
}

}  // namespace

void fill_hash(cuda::std::span<std::uint32_t> data, std::uint32_t seed, cudaStream_t stream) {
  if (data.empty()) return;
  constexpr int kThreads = 256;
  const std::size_t wanted = (data.size() + kThreads - 1) / kThreads;
  const unsigned blocks = static_cast<unsigned>(wanted < 65536 ? wanted : 65536);
  fill_hash_kernel<<<blocks, kThreads, 0, stream>>>(data.data(), data.size(), seed);
  COURSE_CHECK_LAUNCH();
}

void fill_hash_host(cuda::std::span<std::uint32_t> data, std::uint32_t seed) {
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = hash32(i, seed);
}

void poison(void* device_data, std::size_t bytes, cudaStream_t stream) {
  COURSE_CHECK(cudaMemsetAsync(device_data, kPoisonByte, bytes, stream));
}

std::string Comparison::summary() const {
  std::ostringstream out;
  if (checked == 0) return "nothing was compared";
  if (mismatches == 0) {
    out << "all " << checked << " elements match";
    return out.str();
  }
  out << mismatches << " of " << checked << " elements differ; first:";
  for (const Mismatch& m : first) {
    out << " [" << m.index << "] expected " << m.expected << " got " << m.actual << ";";
  }
  return out.str();
}

namespace detail {
void check_same_size(std::size_t expected, std::size_t actual) {
  if (expected != actual) {
    throw std::invalid_argument("compare: expected " + std::to_string(expected) +
                                " elements but got " + std::to_string(actual));
  }
}
}  // namespace detail

template <class T>
std::vector<T> to_host(cuda::std::span<const T> device_data) {
  std::vector<T> host(device_data.size());
  if (!host.empty()) {
    COURSE_CHECK(cudaMemcpy(host.data(), device_data.data(), device_data.size_bytes(),
                            cudaMemcpyDeviceToHost));
  }
  return host;
}

template std::vector<std::uint32_t> to_host(cuda::std::span<const std::uint32_t>);
template std::vector<float> to_host(cuda::std::span<const float>);

}  // namespace course
