/// \file launch.h
/// \brief What every lesson's launch file shares: a prepared launch, argument checks, and
/// the dispatch from a run-time stage count to a kernel compiled for it.
#pragma once

#include <cuda_runtime_api.h>

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
