// Lesson 11, the rows of the driver's table (read-only; tma_tensor_copy_parts.h says what they
// are): each variant's launch, what it must leave in the output, the bytes it moves and the
// line that describes it.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "course/check.h"
#include "course/data.h"
#include "lesson10_rows.h"
#include "tma_tensor_copy_parts.h"

namespace tma_tensor_copy::parts {
namespace {

Row copy_row(Matrix& m, const course::DeviceSummary& gpu, int stages) {
  Row row{{}, m.shape.elements(), {}, 2 * m.matrix_bytes, {}};
  const CopyConfig config{kCopyBox, kCopyBox, stages, OobFill::zero};
  const int blocks = gpu.sm_count * copy_blocks_per_sm(config);
  row.run = prepare_tile_copy(m.in.cspan(), m.out.span(), m.shape, config, blocks);
  row.expected = m.host_in;  // out = in; padding as poisoned (see accept_chunk_padding)
  for (std::int64_t r = 0; r < m.shape.rows; ++r) {
    std::fill(row.expected.begin() + r * m.shape.ld + m.shape.cols,
              row.expected.begin() + (r + 1) * m.shape.ld, m.poisoned);
  }
  row.what = std::to_string(kCopyBox) + " x " + std::to_string(kCopyBox) +
             " boxes, one thread per block issues, " + std::to_string(blocks) + " blocks";
  return row;
}

Row transpose_row(const VariantSpec& spec, Matrix& m, const course::DeviceSummary& gpu,
                  int stages) {
  Row row{{}, m.shape_t.elements(), {}, 2 * m.matrix_bytes, {}};
  const TransposeConfig config{spec.swizzle, stages, spec.misaligned};
  const int blocks = gpu.sm_count * transpose_blocks_per_sm(config);
  row.run = prepare_transpose(m.in.cspan(), m.shape, m.out.span(), m.shape_t, config, blocks);
  row.expected = transpose_reference(m.host_in, m.shape, m.shape_t, m.poisoned);
  row.what = std::to_string(kTransposeTileCols / transpose_box_cols(spec.swizzle)) +
             " box(es) of " + std::to_string(kTransposeTileRows) + " x " +
             std::to_string(transpose_box_cols(spec.swizzle)) + " per tile, " +
             std::to_string(blocks) + " blocks" +
             (spec.misaligned ? "; DELIBERATELY BROKEN: tiles 128 bytes off their alignment" : "");
  return row;
}

Row broadcast_row(const VariantSpec& spec, Matrix& m, int stages) {
  Row row;
  const BroadcastConfig config{spec.cluster_size, spec.multicast, stages, spec.stagger};
  const int clusters = broadcast_max_active_clusters(config);
  if (clusters < 1) throw std::runtime_error(spec.name + ": no cluster fits on this GPU");
  row.run = prepare_broadcast(m.in.cspan(), m.shape, m.out.span(), config, clusters);
  row.checked_elements = m.shape.elements() * spec.cluster_size;
  row.expected = broadcast_reference(m.host_in, m.shape, spec.cluster_size, m.poisoned);
  row.bytes = (1.0 + spec.cluster_size) * m.matrix_bytes;  // the input once, C copies written
  row.what = std::to_string(clusters) + " clusters of " + std::to_string(spec.cluster_size) +
             (spec.multicast ? ", each tile multicast in slices"
              : spec.stagger ? ", each block loads the tile, blocks out of step"
                             : ", each block loads the tile, blocks in step");
  return row;
}

}  // namespace

Matrix::Matrix(const Shape& s)
    : shape(s),
      shape_t(transposed(s)),
      matrix_bytes(static_cast<double>(s.rows * s.cols) * sizeof(float)),
      host_in(hash_floats(s.elements(), 11)),
      in(s.elements()),
      out(std::max(kMaxClusterSize * s.elements(), shape_t.elements())) {
  COURSE_CHECK(cudaMemcpy(in.data(), host_in.data(), in.bytes(), cudaMemcpyHostToDevice));
  // What poison() leaves in a float: padding elements nobody may write keep it.
  std::memset(&poisoned, course::kPoisonByte, sizeof(poisoned));
}

Row prepare_row(const VariantSpec& spec, Matrix& m, const course::DeviceSummary& gpu, int stages) {
  if (spec.kind == Kind::copy) return copy_row(m, gpu, stages);
  if (spec.kind == Kind::transpose) return transpose_row(spec, m, gpu, stages);
  if (spec.kind == Kind::lesson10) {
    lesson10_rows::Row row =
        lesson10_rows::prepare(spec.name, m.in.data(), m.out.data(), m.host_in, gpu);
    return {std::move(row.run), m.shape.elements(), std::move(row.expected), row.bytes,
            std::move(row.what)};
  }
  return broadcast_row(spec, m, stages);
}

}  // namespace tma_tensor_copy::parts
