/// \file halo_model.h
/// \brief Lesson 16: the ring's geometry, the stencil, its CPU reference and the copy-size
/// fit (read-only; halo_model.cpp). Host code only, except stencil_point(), which the GPU
/// kernels call too.
///
/// The grid is periodic, total_rows x width 32-bit words, row-major. GPU g of a ring of N
/// owns rows [g rows, (g + 1) rows) and keeps them in a buffer of rows + 2 radius rows:
///
///     buffer row 0 .. radius-1                  top halo    = left(g)'s last `radius` rows
///     buffer row radius .. radius+rows-1        its own rows (the interior)
///     buffer row radius+rows .. rows+2 radius-1 bottom halo = right(g)'s first `radius` rows
///
/// left(g) = g - 1 and right(g) = g + 1, modulo N: with N = 2 both neighbours are the other
/// GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#ifdef __CUDACC__
#define HALO_HD __host__ __device__
#else
#define HALO_HD
#endif

namespace halo {

/// The partition of the grid over a ring of GPUs.
struct RingLayout {
  int gpus = 2;    ///< GPUs in the ring
  int rows = 0;    ///< rows per GPU (its interior)
  int width = 0;   ///< words per row
  int radius = 1;  ///< stencil radius in rows = halo rows on each side

  int left(int g) const { return (g + gpus - 1) % gpus; }
  int right(int g) const { return (g + 1) % gpus; }
  int total_rows() const { return gpus * rows; }
  /// Words of one GPU's buffer: (rows + 2 radius) x width.
  std::size_t buffer_words() const {
    return static_cast<std::size_t>(rows + 2 * radius) * static_cast<std::size_t>(width);
  }
  /// Words of one halo: radius x width.
  std::size_t halo_words() const {
    return static_cast<std::size_t>(radius) * static_cast<std::size_t>(width);
  }
};

/// Throws std::invalid_argument unless gpus >= 1, width >= 1, radius >= 1 and
/// rows >= 2 radius (a GPU's interior must hold both of its boundaries).
void validate(const RingLayout& layout);

/// One point of the stencil. `in` points at a buffer with at least `radius` rows above and
/// below `row`; columns wrap around. The result depends on the order of the rows (a halo
/// copied to the wrong side changes it), and `rounds` adds arithmetic per point.
HALO_HD inline std::uint32_t stencil_point(const std::uint32_t* in, int width, int radius,
                                           long long row, int col, int rounds) {
  const long long w = width;
  const int west = col == 0 ? width - 1 : col - 1;
  const int east = col == width - 1 ? 0 : col + 1;
  std::uint32_t acc = in[row * w + west] * 3u + in[row * w + east] * 5u;
  for (int k = -radius; k <= radius; ++k) acc = acc * 31u + in[(row + k) * w + col];
  for (int r = 0; r < rounds; ++r) acc = (acc ^ (acc >> 13)) * 0x5bd1e995u + 0x9e3779b9u;
  return acc;
}

/// GPU g's buffer as the exchange makes it: its rows of `grid` with both halos filled from
/// the neighbours' rows (periodic).
std::vector<std::uint32_t> slab_with_halos(const std::vector<std::uint32_t>& grid,
                                           const RingLayout& layout, int g);

/// `steps` steps of the stencil on the whole periodic grid (total_rows x width), on the CPU:
/// the reference the ring's result is checked against.
std::vector<std::uint32_t> reference_steps(std::vector<std::uint32_t> grid, int total_rows,
                                           int width, int radius, int rounds, int steps);

/// The copy-cost line t(bytes) = overhead + bytes / bandwidth fitted to the sweep points
/// no larger than `max_bytes` (lesson 12's fit, pinned_memory::fit_overhead).
struct CopyFit {
  double overhead_us = 0;
  double bandwidth_gbps = 0;
  double r_squared = 0;
  double break_even_bytes = 0;  ///< overhead x bandwidth: half the bandwidth is reached here
  int points = 0;
};
/// Throws std::invalid_argument when fewer than two points are small enough, or the sizes
/// and times differ in length.
CopyFit fit_copy_sizes(const std::vector<double>& bytes, const std::vector<double>& us,
                       double max_bytes);

}  // namespace halo
