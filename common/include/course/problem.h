/// \file problem.h
/// \brief The copy-and-compute problem a lesson's program runs (lessons 01-10): a
/// hash-filled input on the device, the CPU reference's output, and an output buffer that
/// every checked run poisons first.
///
/// Each program runs many variants over one problem. Building it once (input filled on the
/// device, read back once for the CPU reference) keeps the reference out of every row's
/// time, and checked() gives every row the same check: poison the whole output, run once,
/// compare every element bit for bit, so an element nobody wrote is caught.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "course/buffers.h"
#include "course/data.h"
#include "course/flags.h"
#include "course/harness.h"
#include "course/launch.h"

namespace course::workload {

/// The problem's size when --size does not give it: 256M elements (1 GiB of input, far beyond
/// any L2), or with --quick 1000003 (a prime: never a whole batch, so a partial one always runs).
inline constexpr std::uint64_t kDefaultElements = 256ull << 20;
inline constexpr std::uint64_t kQuickElements = 1000003;

/// The problem's size for a run: --size, else kDefaultElements, or kQuickElements with --quick.
inline std::uint64_t elements_for(const CommonOptions& options) {
  return options.size ? options.size : (options.quick ? kQuickElements : kDefaultElements);
}

/// "256M = 1 GiB": kDefaultElements as --size's help writes it.
std::string default_elements_text();

/// --size's help: "uint32 elements of input (default 256M = 1 GiB; K/M/G suffixes)".
std::string size_help();

/// One problem: `n` inputs on the device, their expected outputs on the host, and the output
/// buffer the variants write.
class Problem {
 public:
  /// `elements` inputs filled with hash32(i, seed) and their expected outputs (one seed per
  /// lesson, so that no program checks against data another one left behind).
  Problem(std::size_t elements, std::uint32_t seed);

  /// Before a checked run: every output element holds the poison, in `stream`'s order.
  void poison_output(cudaStream_t stream) const;
  /// After a checked run: every output element compared with the CPU reference.
  Comparison compare_output() const;
  /// A checked variant of this problem: poison the output, run once, compare every element.
  Variant checked(const std::string& name, Launch run) const;

  const std::size_t n;
  DeviceBuffer<std::uint32_t> in, out;
  std::vector<std::uint32_t> expected;  ///< the CPU reference's output
};

}  // namespace course::workload
