// Lesson 09's launchers: argument checks, the kernel for a form and a stage count, the
// shared-memory opt-in, the occupancy query, and the CPU references of the tail and cache
// workloads. Read-only: the build compiles this file in one unit with ptx_cp_async.cu (yours,
// and separately the solution's); the kernels it launches are in ptx_cp_async_kernels.cuh.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "course/check.h"
#include "course/launch.h"
#include "course/workload.h"
#include "ptx_cp_async.cuh"
#include "ptx_cp_async_kernels.cuh"

namespace ptx_cp_async {
namespace {

using Kernel = void (*)(const std::uint32_t*, std::uint32_t*, std::size_t, int, unsigned);

constexpr const char* kWhere = "ptx_cp_async::copy_and_compute";

bool known(Form form) {
  for (Form f : kForms) {
    if (f == form) return true;
  }
  return false;
}

/// The kernel for a config: the form and the stage count are template parameters (the
/// instruction text and the wait_group immediate are compile-time).
Kernel kernel_for(const Config& config) {
  return course::with_stage_count<kMinStages, kMaxStages>(config.stages, [&](auto s) -> Kernel {
    constexpr int stages = decltype(s)::value;
    switch (config.form) {
      case Form::ca4:
        return multi_stage_kernel<Form::ca4, stages>;
      case Form::ca8:
        return multi_stage_kernel<Form::ca8, stages>;
      case Form::ca16:
        return multi_stage_kernel<Form::ca16, stages>;
      case Form::cg16:
        return multi_stage_kernel<Form::cg16, stages>;
      case Form::cg16_l2_64:
        return multi_stage_kernel<Form::cg16_l2_64, stages>;
      case Form::cg16_l2_128:
        return multi_stage_kernel<Form::cg16_l2_128, stages>;
      case Form::cg16_l2_256:
        return multi_stage_kernel<Form::cg16_l2_256, stages>;
      case Form::cg16_mbarrier_noinc:
        return multi_stage_kernel<Form::cg16_mbarrier_noinc, stages>;
      case Form::cg16_mbarrier:
        return multi_stage_kernel<Form::cg16_mbarrier, stages>;
    }
    throw std::invalid_argument(std::string(kWhere) + ": unknown form");
  });
}

void require_valid_config(const Config& config, int threads_per_block) {
  course::require(known(config.form), kWhere, "unknown form");
  course::require(config.stages >= kMinStages && config.stages <= kMaxStages, kWhere,
                  "stages must be in [" + std::to_string(kMinStages) + ", " +
                      std::to_string(kMaxStages) + "], got " + std::to_string(config.stages));
  course::require(
      valid_vectors_per_thread(config.vectors_per_thread), kWhere,
      "vectors_per_thread must be 1, 2, 4 or 8, got " + std::to_string(config.vectors_per_thread));
  course::require(
      threads_per_block >= 32 && threads_per_block <= 1024 && threads_per_block % 32 == 0, kWhere,
      "threads_per_block must be a multiple of 32 in [32, 1024], got " +
          std::to_string(threads_per_block));
}

}  // namespace

course::Launch prepare_copy_and_compute(cuda::std::span<const std::uint32_t> in,
                                        cuda::std::span<std::uint32_t> out, const Config& config,
                                        LaunchShape shape, HoldBack hold) {
  course::require_copy_launch(kWhere, in.size(), out.size(), shape.blocks, shape.threads_per_block);
  require_valid_config(config, shape.threads_per_block);
  course::require_16_byte_aligned(kWhere, in.data(), out.data(), "cp.async of 16 bytes");
  if (in.empty()) return [](cudaStream_t) {};

  const Kernel kernel = kernel_for(config);
  const std::size_t shared = shared_bytes(config, shape.threads_per_block);
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(shared)));
  const std::uint32_t* src = in.data();
  std::uint32_t* dst = out.data();
  const std::size_t n = in.size();
  const int vectors = config.vectors_per_thread;
  const unsigned hold_ns = course::batches::hold_back_nanoseconds(hold);
  return [=](cudaStream_t stream) {
    kernel<<<shape.blocks, shape.threads_per_block, shared, stream>>>(src, dst, n, vectors,
                                                                      hold_ns);
    COURSE_CHECK_LAUNCH();
  };
}

void copy_and_compute(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out,
                      const Config& config, LaunchShape shape, cudaStream_t stream) {
  prepare_copy_and_compute(in, out, config, shape)(stream);
}

int max_blocks_per_sm(const Config& config, int threads_per_block) {
  require_valid_config(config, threads_per_block);
  const Kernel kernel = kernel_for(config);
  const std::size_t shared = shared_bytes(config, threads_per_block);
  return course::max_resident_blocks(reinterpret_cast<const void*>(kernel), threads_per_block,
                                     shared);
}

// ---- the tail workload --------------------------------------------------------------------

void tail_reference(cuda::std::span<const std::uint32_t> in, cuda::std::span<std::uint32_t> out,
                    Rows shape) {
  const std::size_t p = pitch(shape.length);
  course::require(in.size() == shape.rows * p && out.size() == in.size(),
                  "ptx_cp_async::tail_reference", "in and out must hold rows x pitch elements");
  for (std::size_t r = 0; r < shape.rows; ++r) {
    auto x = [&](std::size_t i) { return i < shape.length ? in[r * p + i] : 0u; };
    for (std::size_t i = 0; i < p; ++i) {
      out[r * p + i] = course::workload::combine(x(i), x(p - 1 - i));
    }
  }
}

course::Launch prepare_tail(cuda::std::span<const std::uint32_t> in,
                            cuda::std::span<std::uint32_t> out, Rows shape, TailCopy copy) {
  constexpr const char* where = "ptx_cp_async::prepare_tail";
  constexpr std::size_t kTileElements =
      static_cast<std::size_t>(kTailThreads) * kTailChunksPerThread * 4;
  course::require(shape.length >= 1 && shape.length <= kTileElements, where,
                  "length must be in [1, " + std::to_string(kTileElements) + "], got " +
                      std::to_string(shape.length));
  course::require(in.size() == shape.rows * pitch(shape.length) && out.size() == in.size(), where,
                  "in and out must hold rows x pitch(length) = " +
                      std::to_string(shape.rows * pitch(shape.length)) + " elements, got " +
                      std::to_string(in.size()) + " and " + std::to_string(out.size()));
  course::require(copy == TailCopy::if_wrapped || copy == TailCopy::src_size, where,
                  "unknown tail copy");
  course::require_16_byte_aligned(where, in.data(), out.data(), "16-byte copies");
  if (shape.rows == 0) return [](cudaStream_t) {};
  const std::size_t tiles =
      (shape.rows + rows_per_tile(shape.length) - 1) / rows_per_tile(shape.length);
  course::require(tiles <= 0x7fffffffu, where, "too many rows for one grid");
  auto kernel = copy == TailCopy::if_wrapped ? tail_kernel<TailCopy::if_wrapped>
                                             : tail_kernel<TailCopy::src_size>;
  const std::uint32_t* src = in.data();
  std::uint32_t* dst = out.data();
  return [=](cudaStream_t stream) {
    kernel<<<static_cast<unsigned>(tiles), kTailThreads, 0, stream>>>(src, dst, shape);
    COURSE_CHECK_LAUNCH();
  };
}

// ---- the cache workload -------------------------------------------------------------------

void cache_reference(cuda::std::span<const std::uint32_t> stream,
                     cuda::std::span<const std::uint32_t> table,
                     cuda::std::span<std::uint32_t> out) {
  course::require(!table.empty() && out.size() == stream.size(), "ptx_cp_async::cache_reference",
                  "out must have stream's size and the table must not be empty");
  for (std::size_t i = 0; i < stream.size(); ++i) {
    out[i] = course::workload::combine(stream[i], table[i % table.size()]);
  }
}

course::Launch prepare_cache(cuda::std::span<const std::uint32_t> stream,
                             cuda::std::span<const std::uint32_t> table,
                             cuda::std::span<std::uint32_t> out, CachePolicy policy) {
  constexpr const char* where = "ptx_cp_async::prepare_cache";
  course::require(out.size() == stream.size() && stream.size() % kCacheBatch == 0, where,
                  "out must have stream's size, a multiple of " + std::to_string(kCacheBatch) +
                      " elements; got " + std::to_string(stream.size()) + " and " +
                      std::to_string(out.size()));
  course::require(!table.empty() && table.size() % kCacheBatch == 0, where,
                  "the table's size must be a non-zero multiple of " + std::to_string(kCacheBatch) +
                      ", got " + std::to_string(table.size()));
  course::require(policy == CachePolicy::plain || policy == CachePolicy::hinted, where,
                  "unknown cache policy");
  course::require_16_byte_aligned(where, stream.data(), out.data(), "16-byte copies");
  course::require(reinterpret_cast<std::uintptr_t>(table.data()) % 16 == 0, where,
                  "16-byte copies: the table must be 16-byte aligned");
  const std::size_t blocks = stream.size() / kCacheBatch;
  course::require(blocks <= 0x7fffffffu, where, "too many batches for one grid");
  if (blocks == 0) return [](cudaStream_t) {};
  auto kernel = policy == CachePolicy::plain ? cache_kernel<CachePolicy::plain>
                                             : cache_kernel<CachePolicy::hinted>;
  const std::uint32_t* s = stream.data();
  const std::uint32_t* t = table.data();
  std::uint32_t* o = out.data();
  const std::size_t table_size = table.size();
  return [=](cudaStream_t st) {
    kernel<<<static_cast<unsigned>(blocks), kCacheThreads, 0, st>>>(s, t, o, table_size);
    COURSE_CHECK_LAUNCH();
  };
}

// ---- tests only ---------------------------------------------------------------------------

void probe_copy(const std::uint8_t* src, std::uint8_t* dst, ProbeForm form, unsigned operand,
                cudaStream_t stream) {
  constexpr const char* where = "ptx_cp_async::probe_copy";
  const int f = static_cast<int>(form);
  course::require(f >= 0 && f < 12, where, "unknown probe form");
  const unsigned size = f % 4 == 0 ? 4u : f % 4 == 1 ? 8u : 16u;
  course::require(
      f < 4 || f >= 8 || operand <= size, where,
      "src-size " + std::to_string(operand) + " is above the cp-size " + std::to_string(size));
  course::require_16_byte_aligned(where, src, dst, "the probe's copies");
  using Probe = void (*)(const std::uint8_t*, std::uint8_t*, unsigned);
  constexpr Probe kProbes[] = {
      probe_kernel<ProbeForm::ca4>,           probe_kernel<ProbeForm::ca8>,
      probe_kernel<ProbeForm::ca16>,          probe_kernel<ProbeForm::cg16>,
      probe_kernel<ProbeForm::ca4_src_size>,  probe_kernel<ProbeForm::ca8_src_size>,
      probe_kernel<ProbeForm::ca16_src_size>, probe_kernel<ProbeForm::cg16_src_size>,
      probe_kernel<ProbeForm::ca4_ignore>,    probe_kernel<ProbeForm::ca8_ignore>,
      probe_kernel<ProbeForm::ca16_ignore>,   probe_kernel<ProbeForm::cg16_ignore>,
  };
  kProbes[f]<<<1, 32, 0, stream>>>(src, dst, operand);
  COURSE_CHECK_LAUNCH();
}

unsigned long long take_wait_timeouts() { return course::mbarrier::take_wait_timeouts(); }

}  // namespace ptx_cp_async
