/// \file tma_tensor_copy.cuh
/// \brief Lesson 11: 2-D tiles through the tensor memory accelerator (TMA): tensor maps,
/// out-of-bounds fill, shared-memory swizzles, and multicast to a thread-block cluster.
///
/// The API the driver (main.cu) and the tests call. The kernels live in
/// tma_tensor_copy.cu (the student's file); the launchers in tma_tensor_copy_launch.cu and
/// the host-side tensor maps in tensor_map.cpp (both read-only). Every kernel needs sm_90:
/// built for sm_80 they compile to nothing, and the launchers refuse a device below 9.0.
///
/// The matrices are row-major fp32 with a leading dimension: element (r, c) of a matrix is
/// data[r * ld + c], ld >= cols, and ld * 4 bytes a multiple of 16 (a tensor map's row
/// stride must be). The padding columns c in [cols, ld) are never read. The tensor store
/// writes whole 16-byte chunks of a row (measured on an H100): the padding elements in the
/// last chunk of a row, [cols, padded_ld(cols)), may be written with what the box held
/// there; padding beyond that chunk is never written (accept_chunk_padding()).
#pragma once

#include <cuda_runtime.h>
#include <cuda/std/span>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "course/data.h"
#include "course/launch.h"
#include "tensor_map.h"

namespace tma_tensor_copy {

/// A row-major matrix's shape: rows x cols elements, rows ld elements apart.
struct Shape {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t ld = 0;
  /// Elements of the allocation that holds it: rows * ld.
  std::size_t elements() const { return static_cast<std::size_t>(rows * ld); }
};

/// The smallest leading dimension a tensor map accepts for `cols` floats: a multiple of 4.
constexpr std::int64_t padded_ld(std::int64_t cols) { return (cols + 3) / 4 * 4; }
/// rows x cols with the smallest valid leading dimension.
constexpr Shape matrix(std::int64_t rows, std::int64_t cols) {
  return {rows, cols, padded_ld(cols)};
}
/// The shape of the transpose of `in` (cols x rows, smallest valid leading dimension).
constexpr Shape transposed(Shape in) { return matrix(in.cols, in.rows); }

/// How many box_rows x box_cols tiles cover `shape` (edge tiles partly outside count too).
constexpr std::size_t tile_count(Shape shape, int box_rows, int box_cols) {
  return static_cast<std::size_t>((shape.rows + box_rows - 1) / box_rows) *
         static_cast<std::size_t>((shape.cols + box_cols - 1) / box_cols);
}

/// Stage counts (shared-memory tile buffers, one mbarrier each) the kernels accept.
inline constexpr int kMinStages = 1;
inline constexpr int kMaxStages = 8;

// ---- 1. the tile copy: tensor load, tensor store --------------------------------------

/// The tile copy: out = in, tile by tile, each tile loaded by a tensor copy into shared
/// memory (completed on an mbarrier) and written back by the tensor store.
struct CopyConfig {
  int box_rows = 64;  ///< 1 to 256
  int box_cols = 64;  ///< 4 to 256, a multiple of 4 (16 bytes)
  int stages = 4;     ///< kMinStages to kMaxStages tiles in flight per block
  OobFill fill = OobFill::zero;
  /// Tests only: right after each wait for the tensor stores (wait_group.read 0), the
  /// thread overwrites the stages they read with poison, the last 16-byte chunk first
  /// (poison_after_store_wait in tma_tensor_copy_device.cuh). A store the wait did not cover
  /// (one store_box, TODO 3, left out of a bulk group) still reads its stage then, and the
  /// output shows the poison. false, the default, costs nothing.
  bool poison_after_store_wait = false;
};

/// Shared memory of one tile-copy block: `stages` boxes plus the alignment slack.
std::size_t copy_shared_bytes(const CopyConfig& config);

/// Checks the arguments and the device (compute capability 9.0, std::runtime_error below),
/// builds the two tensor maps, sets the shared-memory attribute and returns the launch:
/// `blocks` blocks of one warp each, block b copying tiles b, b + blocks, ...
/// std::invalid_argument for: in/out smaller than shape.elements(), a bad shape or box (the
/// tensor-map rules, tensor_map_problem()), stages outside [kMinStages, kMaxStages],
/// blocks < 1. An empty matrix is refused too (a tensor map has no empty dimension).
course::Launch prepare_tile_copy(cuda::std::span<const float> in, cuda::std::span<float> out,
                                 Shape shape, const CopyConfig& config, int blocks);

/// For the out-of-bounds tests: every tile of `in` as the tensor load leaves it in shared
/// memory, fill included. Tile t (row-major over the tile grid) goes to
/// tiles[t * box_rows * box_cols ...], box_rows x box_cols, row-major. `tiles` must hold
/// tile_count(shape, box_rows, box_cols) * box_rows * box_cols floats. No swizzle.
course::Launch prepare_dump_tiles(cuda::std::span<const float> in, Shape shape, int box_rows,
                                  int box_cols, OobFill fill, cuda::std::span<float> tiles,
                                  int blocks);

// ---- 2. the transpose: one tile read column-wise from shared memory --------------------

/// Tile of the transpose: 64 rows x 32 columns of the input (8 KB). A block loads it with the
/// tensor copy (one box of 32 columns, or 2 boxes of 16 for the 64-byte swizzle, 4 boxes of 8
/// for the 32-byte one: a box row may not exceed the swizzle span) and reads it transposed.
inline constexpr int kTransposeTileRows = 64;
inline constexpr int kTransposeTileCols = 32;
inline constexpr int kTransposeThreads = 256;

/// Columns of one box of the transpose tile for a swizzle: 32 floats (128 bytes), or the
/// swizzle span for the 32 and 64-byte swizzles.
__host__ __device__ constexpr int transpose_box_cols(Swizzle swizzle) {
  return swizzle == Swizzle::b32 ? 8 : swizzle == Swizzle::b64 ? 16 : kTransposeTileCols;
}

/// A box of a tensor load is at most 256 elements per dimension, and its inner dimension is
/// whole 16-byte chunks; a swizzled box row may not be wider than the swizzle span.
static_assert(kTransposeTileRows <= 256 && kTransposeTileCols <= 256,
              "a transpose box over 256 elements per dimension: the tensor map is rejected");
static_assert(transpose_box_cols(Swizzle::b32) * sizeof(float) % 16 == 0,
              "a box row that is not whole 16-byte chunks: the tensor map is rejected");
static_assert(transpose_box_cols(Swizzle::b32) * sizeof(float) <= 32 &&
                  transpose_box_cols(Swizzle::b64) * sizeof(float) <= 64 &&
                  transpose_box_cols(Swizzle::b128) * sizeof(float) <= 128,
              "a box row wider than its swizzle span: the tensor map is rejected");
static_assert(kTransposeTileCols % transpose_box_cols(Swizzle::b32) == 0 &&
                  kTransposeTileCols % transpose_box_cols(Swizzle::b64) == 0,
              "the boxes of a swizzle must cover the tile's columns exactly");
static_assert(kTransposeThreads / 32 * 4 == kTransposeTileCols && kTransposeTileRows % 8 == 0,
              "TODO 5's reads: warp w owns tile columns 4w .. 4w + 3, lanes 8 rows at a time");

/// Where a swizzled box may start: the swizzle is a function of shared-memory address bits
/// 4-9, so the TMA writes (and the kernel's formula reads) a box correctly only from a
/// 1024-byte boundary. Dynamic shared memory is only 16-byte aligned: a block asks for this
/// much more and moves its tiles up to the next boundary (align_shared).
inline constexpr std::size_t kSwizzleAlignment = 1024;
/// One transpose tile in shared memory, 64 x 32 floats (8 KB), whatever the swizzle.
inline constexpr std::size_t kTransposeTileBytes =
    kTransposeTileRows * kTransposeTileCols * sizeof(float);
static_assert(kTransposeTileBytes % kSwizzleAlignment == 0,
              "stage s starts at s x the tile's bytes: each must stay on a swizzle boundary");
static_assert(kMaxStages * kTransposeTileBytes + kSwizzleAlignment + 128 <= 227 * 1024,
              "kMaxStages transpose tiles, the slack and a misalignment must fit in the 227 KB "
              "of shared memory a block may have, or the launch fails");

struct TransposeConfig {
  Swizzle swizzle = Swizzle::b128;
  int stages = 4;
  /// DELIBERATELY BROKEN when true: the tiles start 128 bytes past a swizzle-aligned
  /// address. The hardware's swizzle follows address bits, the kernel's formula follows the
  /// tile's start, and the two disagree: silently wrong data for every swizzle mode (no
  /// error, no fault). Never used by default.
  bool misaligned = false;
};

/// Shared memory of one transpose block.
std::size_t transpose_shared_bytes(const TransposeConfig& config);

/// Checks the arguments and the device, builds the input's tensor map for the swizzle and
/// returns the launch: out (in_shape.cols x in_shape.rows, leading dimension out_shape.ld)
/// = in^T, with `blocks` blocks of kTransposeThreads threads, each taking tiles b,
/// b + blocks, ... out_shape must be transposed(in_shape) up to its leading dimension.
course::Launch prepare_transpose(cuda::std::span<const float> in, Shape in_shape,
                                 cuda::std::span<float> out, Shape out_shape,
                                 const TransposeConfig& config, int blocks);

// ---- 3. multicast: one tile, every block of a cluster ----------------------------------

/// The broadcast workload: every block of a cluster needs the same input tile (64 x 32) and
/// writes its own output, as the blocks along a row of a GEMM all need the same A tile.
/// out holds cluster_size copies of the matrix: out[j] = in + j (copy j written by the block
/// of rank j), out[j] at out.data() + j * shape.elements().
struct BroadcastConfig {
  int cluster_size = 2;  ///< 1, 2 or 4 blocks per cluster
  /// true: block j loads rows [j * 64 / C, (j + 1) * 64 / C) of the tile and multicasts them
  /// into every block of the cluster (each tile requested from L2 once); false: every block
  /// loads the whole tile itself (requested C times).
  bool multicast = true;
  int stages = 4;
  /// Without multicast only: block j walks the cluster's tiles starting 1/C of the way in,
  /// so the C requests for one tile reach the memory system at different times (the blocks
  /// of a cluster otherwise run in step and ask for each tile together).
  bool stagger = false;
  /// Tests only: as CopyConfig::poison_after_store_wait, after thread 0's wait for the
  /// tensor store of each tile.
  bool poison_after_store_wait = false;
};

inline constexpr int kBroadcastTileRows = 64;
inline constexpr int kBroadcastTileCols = 32;
inline constexpr int kBroadcastThreads = 256;
static_assert(kBroadcastTileRows <= 256 && kBroadcastTileCols <= 256 &&
                  kBroadcastTileCols * sizeof(float) % 16 == 0,
              "the broadcast box: at most 256 elements a dimension, rows of whole 16-byte chunks");
/// Where an unswizzled tensor load's destination may start: a 128-byte boundary (the
/// broadcast and tile-copy kernels ask for this much slack and move their tiles up to it).
inline constexpr std::size_t kTmaAlignment = 128;
static_assert(kBroadcastTileRows * kBroadcastTileCols * sizeof(float) % kTmaAlignment == 0,
              "stage s starts at s x the tile's bytes: each must stay 128-byte aligned");

/// One stage of the tile copy in shared memory: a box_rows x box_cols box of floats, rounded
/// up to kTmaAlignment so that every stage starts aligned. The kernel places stage s at
/// s x this; the launcher asks for stages x this + kTmaAlignment.
__host__ __device__ constexpr std::uint32_t copy_stage_bytes(int box_rows, int box_cols) {
  const std::uint32_t box_bytes = box_rows * box_cols * sizeof(float);
  return (box_bytes + kTmaAlignment - 1) / kTmaAlignment * kTmaAlignment;
}

std::size_t broadcast_shared_bytes(const BroadcastConfig& config);

/// Checks the arguments and the device, builds the tensor maps (the whole tile, the slice a
/// block multicasts, and the 3-D output: cols x rows x cluster_size) and returns a cluster
/// launch (cudaLaunchKernelEx with a cluster dimension) of `clusters` clusters; cluster k
/// takes tiles k, k + clusters, ... `out` must hold cluster_size * shape.elements() floats.
course::Launch prepare_broadcast(cuda::std::span<const float> in, Shape shape,
                                 cuda::std::span<float> out, const BroadcastConfig& config,
                                 int clusters);

/// The most clusters of this config that can be resident at once on the device (the
/// occupancy calculator's cudaOccupancyMaxActiveClusters); 0 when none fits.
int broadcast_max_active_clusters(const BroadcastConfig& config);

/// The most blocks of each kernel one SM holds at once (occupancy, with its shared memory).
int copy_blocks_per_sm(const CopyConfig& config);
int transpose_blocks_per_sm(const TransposeConfig& config);

// ---- waits that cannot hang -------------------------------------------------------------

/// The number of mbarrier waits that gave up (after 2 s each: course/mbarrier.cuh; a tile
/// arrives in microseconds, only a missing copy, a wrong byte count or a wrong parity waits
/// longer) since the last call, and resets it to 0
/// (synchronises the device first). A kernel whose wait gave up finishes anyway, with wrong
/// data, instead of hanging; later waits in any kernel give up at once until this reset.
unsigned long long take_wait_timeouts();

/// Throws std::runtime_error naming `what` when take_wait_timeouts() is not 0.
void require_no_wait_timeouts(const std::string& what);

// ---- data and references ----------------------------------------------------------------

/// The tensor store's 16-byte granularity, for comparisons: in each of `copies` matrices of
/// `shape` laid out one after the other in `got`, a padding element of a row's last 16-byte
/// chunk ([cols, min(padded_ld(cols), ld))) that holds either the poison or what the box held
/// there (NaN when `nan_fill`, else the copy index j as a float: the fill 0 plus j) is copied
/// into `expected`, so that an exact comparison accepts it and still catches anything else.
/// Returns how many such elements the store had written.
std::size_t accept_chunk_padding(std::vector<float>& expected, const std::vector<float>& got,
                                 Shape shape, int copies, bool nan_fill);

/// A float made from hash32(index, seed): a multiple of 2^-23 in [-1, 1), exact, never NaN.
inline float hash_float(std::uint64_t index, std::uint32_t seed) {
  return static_cast<float>(course::hash32(index, seed) >> 9) * (1.0f / 4194304.0f) - 1.0f;
}

/// `count` hash floats (padding included: nothing may ever copy them).
std::vector<float> hash_floats(std::size_t count, std::uint32_t seed);

/// in^T into a vector of out_shape.elements() floats; padding elements get `pad`.
std::vector<float> transpose_reference(const std::vector<float>& in, Shape in_shape,
                                       Shape out_shape, float pad);

/// What the broadcast writes: cluster_size copies, copy j = in + j; padding gets `pad`.
std::vector<float> broadcast_reference(const std::vector<float>& in, Shape shape, int cluster_size,
                                       float pad);

}  // namespace tma_tensor_copy
