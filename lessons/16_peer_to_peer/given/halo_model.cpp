#include "halo_model.h"

#include <stdexcept>
#include <string>

#include "overhead_model.h"
#include "pinned_memory.cuh"

namespace halo {

void validate(const RingLayout& layout) {
  const auto fail = [](const std::string& what) { throw std::invalid_argument("ring: " + what); };
  if (layout.gpus < 1) fail("needs at least one GPU, got " + std::to_string(layout.gpus));
  if (layout.width < 1) fail("width must be >= 1, got " + std::to_string(layout.width));
  if (layout.radius < 1) fail("radius must be >= 1, got " + std::to_string(layout.radius));
  if (layout.rows < 2 * layout.radius) {
    fail("rows per GPU (" + std::to_string(layout.rows) + ") must be at least 2 x radius (" +
         std::to_string(2 * layout.radius) + ")");
  }
}

std::vector<std::uint32_t> slab_with_halos(const std::vector<std::uint32_t>& grid,
                                           const RingLayout& layout, int g) {
  validate(layout);
  const std::size_t w = static_cast<std::size_t>(layout.width);
  const long long total = layout.total_rows();
  if (grid.size() != static_cast<std::size_t>(total) * w) {
    throw std::invalid_argument("slab_with_halos: the grid is not total_rows x width");
  }
  std::vector<std::uint32_t> slab(layout.buffer_words());
  for (int r = 0; r < layout.rows + 2 * layout.radius; ++r) {
    // buffer row r holds global row g rows - radius + r, wrapped around the grid
    const long long global =
        ((static_cast<long long>(g) * layout.rows - layout.radius + r) % total + total) % total;
    for (std::size_t c = 0; c < w; ++c) slab[r * w + c] = grid[global * w + c];
  }
  return slab;
}

std::vector<std::uint32_t> reference_steps(std::vector<std::uint32_t> grid, int total_rows,
                                           int width, int radius, int rounds, int steps) {
  const RingLayout whole{1, total_rows, width, radius};
  validate(whole);
  std::vector<std::uint32_t> next(grid.size());
  for (int s = 0; s < steps; ++s) {
    // The whole grid as one slab with periodic halos: the same stencil_point the GPUs run.
    const std::vector<std::uint32_t> padded = slab_with_halos(grid, whole, 0);
    for (int r = 0; r < total_rows; ++r) {
      for (int c = 0; c < width; ++c) {
        next[static_cast<std::size_t>(r) * width + c] =
            stencil_point(padded.data(), width, radius, r + radius, c, rounds);
      }
    }
    grid.swap(next);
  }
  return grid;
}

CopyFit fit_copy_sizes(const std::vector<double>& bytes, const std::vector<double>& us,
                       double max_bytes) {
  if (bytes.size() != us.size())
    throw std::invalid_argument("fit: sizes and times differ in length");
  std::vector<double> b, t;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] <= max_bytes) {
      b.push_back(bytes[i]);
      t.push_back(us[i]);
    }
  }
  if (b.size() < 2) throw std::invalid_argument("fit: fewer than two sweep points to fit");
  const pinned_memory::OverheadModel model = pinned_memory::fit_overhead(b, t);
  CopyFit fit;
  fit.overhead_us = model.overhead_us;
  fit.bandwidth_gbps = model.bandwidth_gbps;
  fit.r_squared = model.r_squared;
  fit.break_even_bytes = pinned_memory::break_even_bytes(model);
  fit.points = static_cast<int>(b.size());
  return fit;
}

}  // namespace halo
