// Lesson 11's launchers: argument checks, the device check, the tensor maps, the
// shared-memory attributes, the cluster launch, the wait-timeout report, and the small
// kernel the out-of-bounds tests use to see a tile as it landed in shared memory. Read-only: the
// build compiles this file in one unit with tma_tensor_copy.cu (yours, and separately the
// solution's), which defines the kernels (tma_tensor_copy_device.cuh declares them); the tile
// copy kernel is in tma_tensor_copy_tile_copy.cuh.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/check.h"
#include "course/device.h"
#include "course/launch.h"
#include "tma_tensor_copy.cuh"
#include "tma_tensor_copy_device.cuh"
#include "tma_tensor_copy_tile_copy.cuh"

namespace tma_tensor_copy {

/// The out-of-bounds tests' window into shared memory: block b loads tiles b, b + gridDim.x,
/// ... with your expect_bytes and load_box and copies each, exactly as it landed (fill
/// included), to tiles_out[t * box elements ...].
__global__ void dump_tiles_kernel(const __grid_constant__ CUtensorMap in_map, int box_rows,
                                  int box_cols, int tiles_x, int tiles, float* tiles_out) {
#if __CUDA_ARCH__ >= 900
  extern __shared__ unsigned char dynamic_smem[];
  __shared__ std::uint64_t full;
  const float* box = reinterpret_cast<const float*>(align_shared(dynamic_smem, 128));
  const int elements = box_rows * box_cols;
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&full, 1);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();
  std::uint32_t parity = 0;
  for (int t = blockIdx.x; t < tiles; t += gridDim.x, parity ^= 1) {
    if (threadIdx.x == 0) {
      expect_bytes(&full, elements * sizeof(float));
      load_box(&in_map, const_cast<float*>(box), &full, t / tiles_x * box_rows,
               t % tiles_x * box_cols);
    }
    wait_phase(&full, parity);
    for (int i = threadIdx.x; i < elements; i += blockDim.x) {
      tiles_out[static_cast<std::size_t>(t) * elements + i] = box[i];
    }
    __syncthreads();  // everyone has read the box before the next load overwrites it
  }
#endif
}

namespace {

void require_shape(Shape shape, const char* where, const std::string& what) {
  course::require(shape.rows >= 1 && shape.cols >= 1, where,
                  what + " must have at least one row and one column, got " +
                      std::to_string(shape.rows) + " x " + std::to_string(shape.cols));
  course::require(shape.rows <= (1ll << 31) - 1 && shape.cols <= (1ll << 31) - 1, where,
                  what + " is too large (tile coordinates are 32-bit)");
  course::require(shape.ld >= shape.cols, where,
                  what + "'s leading dimension " + std::to_string(shape.ld) +
                      " is smaller than its " + std::to_string(shape.cols) + " columns");
}

void require_span(std::size_t have, std::size_t need, const char* where, const std::string& what) {
  course::require(
      have >= need, where,
      what + " holds " + std::to_string(have) + " floats, needs " + std::to_string(need));
}

void require_stages(int stages, const char* where) {
  course::require(stages >= kMinStages && stages <= kMaxStages, where,
                  "stages must be in [" + std::to_string(kMinStages) + ", " +
                      std::to_string(kMaxStages) + "], got " + std::to_string(stages));
}

/// The tensor map rules, checked on the host before anything touches the device.
void require_map(const TensorMapSpec& spec, const char* where, const std::string& what) {
  const std::string problem = tensor_map_problem(spec);
  course::require(problem.empty(), where, what + ": " + problem);
}

int blocks_per_sm(const void* kernel, int threads, std::size_t shared) {
  return course::max_resident_blocks(kernel, threads, shared);
}

using TransposeKernel = void (*)(CUtensorMap, float*, int, int, long long, int, int, int, int);

TransposeKernel transpose_kernel_for(Swizzle swizzle) {
  switch (swizzle) {
    case Swizzle::none:
      return transpose_kernel<Swizzle::none>;
    case Swizzle::b32:
      return transpose_kernel<Swizzle::b32>;
    case Swizzle::b64:
      return transpose_kernel<Swizzle::b64>;
    case Swizzle::b128:
      return transpose_kernel<Swizzle::b128>;
  }
  throw std::invalid_argument("tma_tensor_copy: unknown swizzle");
}

// The 128-byte misalignment of the deliberately broken transpose.
constexpr int kMisalignBytes = 128;

}  // namespace

// ---- the tile copy ------------------------------------------------------------------------

std::size_t copy_shared_bytes(const CopyConfig& config) {
  // The stages, plus the slack that lets the kernel start them on a kTmaAlignment boundary.
  return static_cast<std::size_t>(config.stages) *
             copy_stage_bytes(config.box_rows, config.box_cols) +
         kTmaAlignment;
}

course::Launch prepare_tile_copy(cuda::std::span<const float> in, cuda::std::span<float> out,
                                 Shape shape, const CopyConfig& config, int blocks) {
  constexpr const char* kWhere = "tma_tensor_copy::tile_copy";
  require_shape(shape, kWhere, "the matrix");
  require_span(in.size(), shape.elements(), kWhere, "in");
  require_span(out.size(), shape.elements(), kWhere, "out");
  require_stages(config.stages, kWhere);
  course::require(blocks >= 1, kWhere, "blocks must be >= 1, got " + std::to_string(blocks));
  const TensorMapSpec in_spec =
      matrix_spec(in.data(), shape.rows, shape.cols, shape.ld, config.box_rows, config.box_cols,
                  Swizzle::none, config.fill);
  const TensorMapSpec out_spec =
      matrix_spec(out.data(), shape.rows, shape.cols, shape.ld, config.box_rows, config.box_cols,
                  Swizzle::none, config.fill);
  require_map(in_spec, kWhere, "input tensor map");
  require_map(out_spec, kWhere, "output tensor map");
  course::require_current_device({9, 0}, kWhere, "tensor copies (the TMA)");

  const CUtensorMap in_map = encode_tensor_map(in_spec, kWhere);
  const CUtensorMap out_map = encode_tensor_map(out_spec, kWhere);
  const std::size_t shared = copy_shared_bytes(config);
  COURSE_CHECK(cudaFuncSetAttribute(tile_copy_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(shared)));
  const int tiles_x = static_cast<int>((shape.cols + config.box_cols - 1) / config.box_cols);
  const int tiles = static_cast<int>(tile_count(shape, config.box_rows, config.box_cols));
  const int grid = std::min(blocks, tiles);
  const CopyConfig c = config;
  return [=](cudaStream_t stream) {
    tile_copy_kernel<<<grid, 32, shared, stream>>>(in_map, out_map, c.box_rows, c.box_cols, tiles_x,
                                                   tiles, c.stages, c.poison_after_store_wait);
    COURSE_CHECK_LAUNCH();
  };
}

course::Launch prepare_dump_tiles(cuda::std::span<const float> in, Shape shape, int box_rows,
                                  int box_cols, OobFill fill, cuda::std::span<float> tiles_out,
                                  int blocks) {
  constexpr const char* kWhere = "tma_tensor_copy::dump_tiles";
  require_shape(shape, kWhere, "the matrix");
  require_span(in.size(), shape.elements(), kWhere, "in");
  course::require(blocks >= 1, kWhere, "blocks must be >= 1, got " + std::to_string(blocks));
  const TensorMapSpec spec = matrix_spec(in.data(), shape.rows, shape.cols, shape.ld, box_rows,
                                         box_cols, Swizzle::none, fill);
  require_map(spec, kWhere, "input tensor map");
  const std::size_t tiles = tile_count(shape, box_rows, box_cols);
  require_span(tiles_out.size(), tiles * box_rows * box_cols, kWhere, "tiles");
  course::require_current_device({9, 0}, kWhere, "tensor copies (the TMA)");

  const CUtensorMap map = encode_tensor_map(spec, kWhere);
  const std::size_t shared = static_cast<std::size_t>(box_rows) * box_cols * 4 + 128;
  COURSE_CHECK(cudaFuncSetAttribute(dump_tiles_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(shared)));
  const int tiles_x = static_cast<int>((shape.cols + box_cols - 1) / box_cols);
  const int grid = static_cast<int>(std::min<std::size_t>(blocks, tiles));
  float* dst = tiles_out.data();
  return [=](cudaStream_t stream) {
    dump_tiles_kernel<<<grid, 256, shared, stream>>>(map, box_rows, box_cols, tiles_x,
                                                     static_cast<int>(tiles), dst);
    COURSE_CHECK_LAUNCH();
  };
}

int copy_blocks_per_sm(const CopyConfig& config) {
  require_stages(config.stages, "tma_tensor_copy::copy_blocks_per_sm");
  return blocks_per_sm(reinterpret_cast<const void*>(tile_copy_kernel), 32,
                       copy_shared_bytes(config));
}

// ---- the transpose ------------------------------------------------------------------------

std::size_t transpose_shared_bytes(const TransposeConfig& config) {
  // The stages, the slack that lets the kernel start them on a swizzle boundary, and the
  // deliberate misalignment.
  return static_cast<std::size_t>(config.stages) * kTransposeTileBytes + kSwizzleAlignment +
         (config.misaligned ? kMisalignBytes : 0);
}

course::Launch prepare_transpose(cuda::std::span<const float> in, Shape in_shape,
                                 cuda::std::span<float> out, Shape out_shape,
                                 const TransposeConfig& config, int blocks) {
  constexpr const char* kWhere = "tma_tensor_copy::transpose";
  require_shape(in_shape, kWhere, "the input");
  require_shape(out_shape, kWhere, "the output");
  course::require(out_shape.rows == in_shape.cols && out_shape.cols == in_shape.rows, kWhere,
                  "the output must be " + std::to_string(in_shape.cols) + " x " +
                      std::to_string(in_shape.rows) + " (the input's transpose), got " +
                      std::to_string(out_shape.rows) + " x " + std::to_string(out_shape.cols));
  require_span(in.size(), in_shape.elements(), kWhere, "in");
  require_span(out.size(), out_shape.elements(), kWhere, "out");
  require_stages(config.stages, kWhere);
  course::require(blocks >= 1, kWhere, "blocks must be >= 1, got " + std::to_string(blocks));
  const TensorMapSpec spec =
      matrix_spec(in.data(), in_shape.rows, in_shape.cols, in_shape.ld, kTransposeTileRows,
                  transpose_box_cols(config.swizzle), config.swizzle, OobFill::zero);
  require_map(spec, kWhere, "input tensor map");
  course::require_current_device({9, 0}, kWhere, "tensor copies (the TMA)");

  const CUtensorMap map = encode_tensor_map(spec, kWhere);
  const TransposeKernel kernel = transpose_kernel_for(config.swizzle);
  const std::size_t shared = transpose_shared_bytes(config);
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(shared)));
  const int tiles_x =
      static_cast<int>((in_shape.cols + kTransposeTileCols - 1) / kTransposeTileCols);
  const int tiles = static_cast<int>(tile_count(in_shape, kTransposeTileRows, kTransposeTileCols));
  const int grid = std::min(blocks, tiles);
  const int rows = static_cast<int>(in_shape.rows);
  const int cols = static_cast<int>(in_shape.cols);
  const long long out_ld = out_shape.ld;
  const int stages = config.stages;
  const int misalign = config.misaligned ? kMisalignBytes : 0;
  float* dst = out.data();
  return [=](cudaStream_t stream) {
    kernel<<<grid, kTransposeThreads, shared, stream>>>(map, dst, rows, cols, out_ld, tiles_x,
                                                        tiles, stages, misalign);
    COURSE_CHECK_LAUNCH();
  };
}

int transpose_blocks_per_sm(const TransposeConfig& config) {
  require_stages(config.stages, "tma_tensor_copy::transpose_blocks_per_sm");
  return blocks_per_sm(reinterpret_cast<const void*>(transpose_kernel_for(config.swizzle)),
                       kTransposeThreads, transpose_shared_bytes(config));
}

// ---- the broadcast, with and without multicast ----------------------------------------------

std::size_t broadcast_shared_bytes(const BroadcastConfig& config) {
  return static_cast<std::size_t>(config.stages) * kBroadcastTileRows * kBroadcastTileCols *
             sizeof(float) +
         kTmaAlignment;  // the slack that lets the kernel start the stages 128-byte aligned
}

namespace {

void require_cluster_size(int cluster_size, const char* where) {
  course::require(cluster_size == 1 || cluster_size == 2 || cluster_size == 4, where,
                  "cluster_size must be 1, 2 or 4, got " + std::to_string(cluster_size));
}

cudaLaunchConfig_t cluster_launch_config(const BroadcastConfig& config, int clusters,
                                         cudaLaunchAttribute* attribute, cudaStream_t stream) {
  cudaLaunchConfig_t launch{};
  launch.gridDim = dim3(static_cast<unsigned>(clusters * config.cluster_size));
  launch.blockDim = dim3(kBroadcastThreads);
  launch.dynamicSmemBytes = broadcast_shared_bytes(config);
  launch.stream = stream;
  attribute->id = cudaLaunchAttributeClusterDimension;
  attribute->val.clusterDim.x = static_cast<unsigned>(config.cluster_size);
  attribute->val.clusterDim.y = 1;
  attribute->val.clusterDim.z = 1;
  launch.attrs = attribute;
  launch.numAttrs = 1;
  return launch;
}

}  // namespace

course::Launch prepare_broadcast(cuda::std::span<const float> in, Shape shape,
                                 cuda::std::span<float> out, const BroadcastConfig& config,
                                 int clusters) {
  constexpr const char* kWhere = "tma_tensor_copy::broadcast";
  require_shape(shape, kWhere, "the matrix");
  require_cluster_size(config.cluster_size, kWhere);
  require_stages(config.stages, kWhere);
  require_span(in.size(), shape.elements(), kWhere, "in");
  require_span(out.size(), shape.elements() * config.cluster_size, kWhere, "out");
  course::require(clusters >= 1, kWhere, "clusters must be >= 1, got " + std::to_string(clusters));
  const int slice_rows = kBroadcastTileRows / config.cluster_size;
  const TensorMapSpec tile_spec =
      matrix_spec(in.data(), shape.rows, shape.cols, shape.ld, kBroadcastTileRows,
                  kBroadcastTileCols, Swizzle::none, OobFill::zero);
  const TensorMapSpec slice_spec =
      matrix_spec(in.data(), shape.rows, shape.cols, shape.ld, slice_rows, kBroadcastTileCols,
                  Swizzle::none, OobFill::zero);
  // The output: cluster_size matrices one after the other, a 3-D tensor (cols, rows, copy),
  // so that the store of an edge tile is clipped at the matrix's own last row and column (to
  // the 16-byte chunk: the row's last chunk is written whole).
  TensorMapSpec out_spec =
      matrix_spec(out.data(), shape.rows, shape.cols, shape.ld, kBroadcastTileRows,
                  kBroadcastTileCols, Swizzle::none, OobFill::zero);
  out_spec.rank = 3;
  out_spec.dims[2] = static_cast<std::uint64_t>(config.cluster_size);
  out_spec.strides_bytes[1] = shape.elements() * sizeof(float);
  out_spec.box[2] = 1;
  require_map(tile_spec, kWhere, "tile tensor map");
  require_map(slice_spec, kWhere, "slice tensor map");
  require_map(out_spec, kWhere, "output tensor map");
  course::require_current_device({9, 0}, kWhere, "tensor copies (the TMA)");

  const CUtensorMap tile_map = encode_tensor_map(tile_spec, kWhere);
  const CUtensorMap slice_map = encode_tensor_map(slice_spec, kWhere);
  const CUtensorMap out_map = encode_tensor_map(out_spec, kWhere);
  COURSE_CHECK(cudaFuncSetAttribute(broadcast_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(broadcast_shared_bytes(config))));
  const int tiles_x = static_cast<int>((shape.cols + kBroadcastTileCols - 1) / kBroadcastTileCols);
  const int tiles = static_cast<int>(tile_count(shape, kBroadcastTileRows, kBroadcastTileCols));
  const int grid_clusters = std::min(clusters, tiles);
  const BroadcastConfig c = config;
  return [=](cudaStream_t stream) {
    cudaLaunchAttribute attribute{};
    const cudaLaunchConfig_t launch = cluster_launch_config(c, grid_clusters, &attribute, stream);
    COURSE_CHECK(cudaLaunchKernelEx(&launch, broadcast_kernel, tile_map, slice_map, out_map,
                                    tiles_x, tiles, c.stages, c.multicast, c.stagger,
                                    c.poison_after_store_wait));
    COURSE_CHECK_LAUNCH();
  };
}

int broadcast_max_active_clusters(const BroadcastConfig& config) {
  constexpr const char* kWhere = "tma_tensor_copy::broadcast_max_active_clusters";
  require_cluster_size(config.cluster_size, kWhere);
  require_stages(config.stages, kWhere);
  COURSE_CHECK(cudaFuncSetAttribute(broadcast_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(broadcast_shared_bytes(config))));
  cudaLaunchAttribute attribute{};
  const cudaLaunchConfig_t launch = cluster_launch_config(config, 1, &attribute, nullptr);
  int clusters = 0;
  COURSE_CHECK(cudaOccupancyMaxActiveClusters(&clusters, broadcast_kernel, &launch));
  return clusters;
}

// ---- waits that gave up -----------------------------------------------------------------------

unsigned long long take_wait_timeouts() { return course::mbarrier::take_wait_timeouts(); }

void require_no_wait_timeouts(const std::string& what) {
  const unsigned long long count = take_wait_timeouts();
  if (count != 0) {
    throw std::runtime_error(
        what + ": " + std::to_string(count) +
        " mbarrier wait(s) gave up after 2 s: a tile never completed its phase (no copy "
        "issued, no arrival, an expect_tx byte count that does not match the box, or a wrong "
        "parity). The kernel finished with wrong data instead of hanging.");
  }
}

// ---- data and references ----------------------------------------------------------------------

std::vector<float> hash_floats(std::size_t count, std::uint32_t seed) {
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = hash_float(i, seed);
  return values;
}

std::size_t accept_chunk_padding(std::vector<float>& expected, const std::vector<float>& got,
                                 Shape shape, int copies, bool nan_fill) {
  float poison = 0;
  std::memset(&poison, course::kPoisonByte, sizeof(poison));
  const auto bits = [](float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof(u));
    return u;
  };
  const std::int64_t chunk_end = std::min(padded_ld(shape.cols), shape.ld);
  std::size_t written = 0;
  for (int j = 0; j < copies; ++j) {
    const std::size_t base = static_cast<std::size_t>(j) * shape.elements();
    for (std::int64_t r = 0; r < shape.rows; ++r) {
      for (std::int64_t c = shape.cols; c < chunk_end; ++c) {
        const std::size_t i = base + r * shape.ld + c;
        if (i >= got.size() || i >= expected.size()) continue;
        const float v = got[i];
        const bool box_value = nan_fill ? std::isnan(v) : bits(v) == bits(static_cast<float>(j));
        if (bits(v) == bits(poison)) {
          expected[i] = v;
        } else if (box_value) {
          expected[i] = v;
          ++written;
        }
      }
    }
  }
  return written;
}

std::vector<float> transpose_reference(const std::vector<float>& in, Shape in_shape,
                                       Shape out_shape, float pad) {
  std::vector<float> out(out_shape.elements(), pad);
  for (std::int64_t r = 0; r < in_shape.rows; ++r) {
    for (std::int64_t c = 0; c < in_shape.cols; ++c) {
      out[c * out_shape.ld + r] = in[r * in_shape.ld + c];
    }
  }
  return out;
}

std::vector<float> broadcast_reference(const std::vector<float>& in, Shape shape, int cluster_size,
                                       float pad) {
  std::vector<float> out(shape.elements() * cluster_size, pad);
  for (int j = 0; j < cluster_size; ++j) {
    float* copy = out.data() + j * shape.elements();
    for (std::int64_t r = 0; r < shape.rows; ++r) {
      for (std::int64_t c = 0; c < shape.cols; ++c) {
        copy[r * shape.ld + c] = in[r * shape.ld + c] + static_cast<float>(j);
      }
    }
  }
  return out;
}

}  // namespace tma_tensor_copy
