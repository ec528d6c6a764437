/// \file workload.h
/// \brief The copy-and-compute workload of lessons 01-08.
///
/// Every lesson from 01 to 08 stages batches of `uint32_t` through shared memory and
/// computes each output from two staged elements: its own and its *partner*, the element
/// at the mirrored position of the same 32-element group (index `i ^ 31`). A partner is
/// always staged by another thread, so the compute step cannot start before the whole
/// batch has landed in shared memory, and shared memory cannot be refilled before every
/// thread has finished reading it. That is exactly why the copy-and-compute pattern
/// needs its synchronisation, and why an asynchronous copy must be waited for.
///
/// The result depends only on the input, never on the batch size or launch shape, so
/// every variant of every lesson is checked against the same reference.
#pragma once

#include <cuda_runtime.h>
#include <cuda/std/span>

#include <cstddef>
#include <cstdint>

namespace course::workload {

/// Elements per group: a batch always holds whole groups (its size is a multiple of 32).
inline constexpr std::size_t kGroup = 32;

/// The partner of element `i` in an array of `n`: the mirror within its aligned group of
/// 32, or `i` itself when the mirror lies past the end (only in the last, partial group).
__host__ __device__ constexpr std::size_t partner_index(std::size_t i, std::size_t n) {
  const std::size_t mirror = i ^ (kGroup - 1);
  return mirror < n ? mirror : i;
}

/// The compute step: cheap integer arithmetic, so the lesson stays memory-bound and the
/// copy is what we measure. Exact, so results are compared bit for bit.
__host__ __device__ constexpr std::uint32_t combine(std::uint32_t self, std::uint32_t partner) {
  return self * 0x9E3779B1u + (partner ^ (partner >> 7));
}

/// The CPU reference: out[i] = combine(in[i], in[partner_index(i, n)]) for every i.
void reference(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out);

/// Bytes a kernel must move for `n` elements: each input read once, each output written once.
constexpr double bytes_moved(std::size_t n) {
  return 2.0 * static_cast<double>(n) * sizeof(std::uint32_t);
}

}  // namespace course::workload
