/// \file launch.h
/// \brief What every lesson's launch file shares: a prepared launch, argument checks, and
/// the dispatch from a run-time stage count to a kernel compiled for it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace course {

/// A launch that has been validated and whose kernel attributes are set: calling it only
/// enqueues device work on the stream. The harness times exactly this, so host work
/// (argument checks, cudaFuncSetAttribute, occupancy queries) never counts in a figure.
using Launch = std::function<void(cudaStream_t)>;

/// Throws std::invalid_argument("<where>: <message>") unless `condition` holds. Launchers
/// check every precondition with it before any CUDA call.
inline void require(bool condition, const std::string& where, const std::string& message) {
  if (!condition) throw std::invalid_argument(where + ": " + message);
}

/// The checks every copy-and-compute launcher makes before any CUDA call: `in` and `out`
/// hold the same number of elements, a block is 32 to 1024 threads in whole warps, and
/// there is at least one block (std::invalid_argument naming `where` otherwise).
inline void require_copy_launch(const std::string& where, std::size_t in_size, std::size_t out_size,
                                int blocks, int threads_per_block,
                                const std::string& unit = "elements") {
  require(in_size == out_size, where,
          "in has " + std::to_string(in_size) + " " + unit + ", out " + std::to_string(out_size));
  require(threads_per_block >= 32 && threads_per_block <= 1024 && threads_per_block % 32 == 0,
          where,
          "threads_per_block must be a multiple of 32 in [32, 1024], got " +
              std::to_string(threads_per_block));
  require(blocks >= 1, where, "blocks must be >= 1, got " + std::to_string(blocks));
}

/// Both arrays 16-byte aligned, as 16-byte copies and vector accesses need; `why` says
/// which copies promise it.
inline void require_16_byte_aligned(const std::string& where, const void* a, const void* b,
                                    const std::string& why) {
  require(reinterpret_cast<std::uintptr_t>(a) % 16 == 0 &&
              reinterpret_cast<std::uintptr_t>(b) % 16 == 0,
          where, why + ": both arrays must be 16-byte aligned");
}

/// The most blocks of `threads_per_block` threads that one SM holds at once for `kernel`
/// with `dynamic_shared` bytes of dynamic shared memory (cudaOccupancyMaxActiveBlocks...),
/// its static shared memory (a pipeline's shared state, say) counted too; 0 when one block
/// does not fit the device. Opts the kernel in to that much dynamic shared memory first:
/// beyond 48 KB a kernel must, and the occupancy calculator counts only what it may use.
int max_resident_blocks(const void* kernel, int threads_per_block, std::size_t dynamic_shared);

/// Calls `f(std::integral_constant<int, S>{})` for the run-time `stages` in [Min, Max] and
/// returns its result: the one place where a run-time stage count becomes the compile-time
/// one a kernel template needs (a pipeline's shared state and its wait depth are template
/// arguments). Throws std::invalid_argument for a count outside the range.
///
///     auto kernel = course::with_stage_count<2, 8>(config.stages, [&](auto stages) {
///       return &pipeline_kernel<decltype(stages)::value>;
///     });
namespace detail {
template <int Min, int Max, class F>
decltype(auto) dispatch_stage_count(int stages, F&& f) {
  if constexpr (Min == Max) {
    return std::forward<F>(f)(std::integral_constant<int, Min>{});
  } else {
    if (stages == Min) return std::forward<F>(f)(std::integral_constant<int, Min>{});
    return dispatch_stage_count<Min + 1, Max>(stages, std::forward<F>(f));
  }
}
}  // namespace detail

template <int Min, int Max, class F>
decltype(auto) with_stage_count(int stages, F&& f) {
  static_assert(Min <= Max, "an empty range of stage counts");
  if (stages < Min || stages > Max) {
    throw std::invalid_argument("stages must be in [" + std::to_string(Min) + ", " +
                                std::to_string(Max) + "], got " + std::to_string(stages));
  }
  return detail::dispatch_stage_count<Min, Max>(stages, std::forward<F>(f));
}

}  // namespace course
