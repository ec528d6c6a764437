/// \file data.h
/// \brief Hash-filled inputs, poisoned outputs, and comparisons that check every element.
///
/// Constant inputs hide indexing bugs (a kernel that reads the wrong element of a
/// constant array still gets the right value), so every input is a hash of its index.
/// Outputs are poisoned before each run, so an element nobody wrote is caught.
#pragma once

#include <cuda_runtime.h>  // __host__ __device__, also when a host compiler includes this
#include <cuda/std/span>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace course {

/// A well-mixed 32-bit hash of (index, seed): the splitmix64 finaliser. Usable on the
/// host and in kernels, so references can recompute any input element.
__host__ __device__ constexpr std::uint32_t hash32(std::uint64_t index, std::uint32_t seed) {
  std::uint64_t z = index + 0x9E3779B97F4A7C15ull * (static_cast<std::uint64_t>(seed) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<std::uint32_t>((z ^ (z >> 31)) >> 16);
}

/// The byte written by poison(): 0xA5A5A5A5 as a uint32, a NaN pattern as no float.
inline constexpr unsigned char kPoisonByte = 0xA5;

/// Fills device memory with hash32(i, seed) (one kernel launch on `stream`).
void fill_hash(cuda::std::span<std::uint32_t> data, std::uint32_t seed, cudaStream_t stream = 0);

/// Fills host memory with hash32(i, seed): the same values fill_hash() writes.
void fill_hash_host(cuda::std::span<std::uint32_t> data, std::uint32_t seed);

/// Overwrites device memory with kPoisonByte bytes (asynchronously, on `stream`).
void poison(void* device_data, std::size_t bytes, cudaStream_t stream = 0);

/// One element that differs from its expected value.
struct Mismatch {
  std::size_t index = 0;
  std::string expected;
  std::string actual;
};

/// The outcome of comparing every element of two arrays.
struct Comparison {
  std::size_t checked = 0;      ///< elements compared (all of them)
  std::size_t mismatches = 0;   ///< how many differ
  std::vector<Mismatch> first;  ///< the first few, for the report
  bool ok() const { return checked > 0 && mismatches == 0; }
  /// "all 1000003 elements match" or "17 of 1000003 elements differ; first: [5] expected 3 got 9,
  /// ..."
  std::string summary() const;
};

/// How many mismatches a Comparison keeps for its report.
inline constexpr std::size_t kReportedMismatches = 8;

namespace detail {
void check_same_size(std::size_t expected, std::size_t actual);
template <class T>
std::string to_text(const T& value) {
  std::ostringstream out;
  out << +value;  // unary + prints small integer types as numbers
  return out.str();
}
}  // namespace detail

/// Exact comparison, for integers: every element is checked.
template <class T>
Comparison compare_exact(cuda::std::span<const T> expected, cuda::std::span<const T> actual) {
  detail::check_same_size(expected.size(), actual.size());
  Comparison result;
  result.checked = expected.size();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (!(expected[i] == actual[i])) {
      if (result.first.size() < kReportedMismatches) {
        result.first.push_back({i, detail::to_text(expected[i]), detail::to_text(actual[i])});
      }
      ++result.mismatches;
    }
  }
  return result;
}

/// Tolerance comparison, for floating point: |actual - expected| <= abs_tol + rel_tol*|expected|.
/// A NaN or infinity in `actual` never passes, whatever `expected` holds.
template <class T>
Comparison compare_close(cuda::std::span<const T> expected, cuda::std::span<const T> actual,
                         double rel_tol, double abs_tol) {
  detail::check_same_size(expected.size(), actual.size());
  Comparison result;
  result.checked = expected.size();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double e = static_cast<double>(expected[i]);
    const double a = static_cast<double>(actual[i]);
    // Written so that any NaN makes `close` false: comparisons with NaN are false.
    const bool close = std::isfinite(a) && std::fabs(a - e) <= abs_tol + rel_tol * std::fabs(e);
    if (!close) {
      if (result.first.size() < kReportedMismatches) {
        result.first.push_back({i, detail::to_text(expected[i]), detail::to_text(actual[i])});
      }
      ++result.mismatches;
    }
  }
  return result;
}

/// Copies a device array back to a host vector (synchronously).
template <class T>
std::vector<T> to_host(cuda::std::span<const T> device_data);

}  // namespace course
