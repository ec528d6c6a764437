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

/// The vector that holds the partners of vector `v` of a batch read as 16-byte vectors
/// (vector v holds elements 4v..4v+3): elements 4v+j mirror onto 4(v ^ 7) + 3 - j, because
/// (4v + j) ^ 31 == ((4v) ^ 28) + 3 - j. So the partners are one vector, in reverse order.
__host__ __device__ constexpr std::size_t mirror_vector(std::size_t v) { return v ^ 7; }

/// The outputs of the four elements of `self`, given `mirror`, the vector that holds their
/// partners (mirror_vector): the compute step of a full batch, 16 bytes at a time.
__host__ __device__ inline uint4 combine_vectors(uint4 self, uint4 mirror) {
  return make_uint4(combine(self.x, mirror.w), combine(self.y, mirror.z), combine(self.z, mirror.y),
                    combine(self.w, mirror.x));
}

/// The compute step element by element, for a partial batch that starts at global index
/// `first`: thread `rank` of `threads` writes batch_out[i] for i = rank, rank + threads, ...
/// below `count`, reading only the `count` staged elements (a batch holds whole groups of
/// 32, so partners never leave it).
__host__ __device__ inline void combine_elements(const std::uint32_t* staged,
                                                 std::uint32_t* batch_out, std::size_t first,
                                                 std::size_t count, std::size_t n, std::size_t rank,
                                                 std::size_t threads) {
  for (std::size_t i = rank; i < count; i += threads) {
    batch_out[i] = combine(staged[i], staged[partner_index(first + i, n) - first]);
  }
}

/// The CPU reference: out[i] = combine(in[i], in[partner_index(i, n)]) for every i.
void reference(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out);

/// Bytes a kernel must move for `n` elements: each input read once, each output written once.
constexpr double bytes_moved(std::size_t n) {
  return 2.0 * static_cast<double>(n) * sizeof(std::uint32_t);
}

}  // namespace course::workload
