/// \file tma_tensor_copy_parts.h
/// \brief Lesson 11: what main.cu shares with the part that lives beside it (read-only;
/// parts_rows.cu): the variants' kinds, the matrix every row reads, and each row's launch,
/// expected output, bytes and description.
#pragma once

#include <cstddef>
#include <iterator>
#include <string>
#include <vector>

#include "course/buffers.h"
#include "course/device.h"
#include "course/launch.h"
#include "tma_tensor_copy.cuh"

namespace tma_tensor_copy::parts {

inline constexpr int kCopyBox = 64;             ///< the tile copy's square boxes: floats a side
inline constexpr int kClusterSizes[] = {2, 4};  ///< the broadcast's clusters
/// The largest cluster: the output holds as many copies of the input.
inline constexpr std::size_t kMaxClusterSize = kClusterSizes[std::size(kClusterSizes) - 1];

enum class Kind { copy, transpose, broadcast, lesson10 };

struct VariantSpec {
  std::string name;
  Kind kind;
  Swizzle swizzle = Swizzle::none;
  int cluster_size = 1;
  bool multicast = false;
  bool misaligned = false;
  bool stagger = false;
};

/// The matrix on the host and the device, its transposed shape, and an output large enough for
/// every variant (a transpose, or C copies of the input for a broadcast of the largest clusters).
struct Matrix {
  explicit Matrix(const Shape& s);

  const Shape shape, shape_t;
  const double matrix_bytes;
  const std::vector<float> host_in;
  course::DeviceBuffer<float> in, out;
  float poisoned = 0;
};

/// A variant ready to run: its launch, what it must leave in `out` (compared bit for bit over
/// `checked_elements`), the bytes it moves, and the line that describes it.
struct Row {
  course::Launch run;
  std::size_t checked_elements = 0;
  std::vector<float> expected;
  double bytes = 0;
  std::string what;
};

/// Row `spec` over `m` at `stages` tiles in flight (lesson 10's rows from lesson10_rows.h).
Row prepare_row(const VariantSpec& spec, Matrix& m, const course::DeviceSummary& gpu, int stages);

}  // namespace tma_tensor_copy::parts
