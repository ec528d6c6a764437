// Lesson 02 driver: runs the copy-and-compute workload with cooperative_groups::memcpy_async
// (one buffer + wait, and two buffers + wait_prior<1>) beside lesson 01's register-staged
// kernel, at lesson 01's two granularities, at full occupancy and at one block per SM.
// Every variant's output is checked element by element against the CPU reference, and
// every bandwidth is compared with two yardsticks measured in the same run: a
// device-to-device cudaMemcpy and the SM copy roof (course/roof.h).
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "cg_memcpy_async.cuh"
#include "course/buffers.h"
#include "course/data.h"
#include "course/harness.h"
#include "course/workload.h"
#include "register_staged.cuh"

namespace {

using cg_memcpy_async::Buffering;
using cg_memcpy_async::Granularity;

constexpr int kThreads = 256;
constexpr std::uint64_t kDefaultElements = 256ull << 20;  // 1 GiB of input: far beyond L2
constexpr std::uint64_t kQuickElements = 1000003;         // prime: never a whole batch

/// Which kernel runs a variant: lesson 01's, or one of this lesson's two.
enum class Kernel { register_staged, cg_wait, cg_double_buffered };

struct VariantSpec {
  const char* name;
  Kernel kernel;
  Granularity granularity;
  bool one_block_per_sm;
};

// Grouped by granularity, lesson 01's kernel first in each group: compare each async
// variant with the register-staged row just above it.
const std::vector<VariantSpec> kVariants = {
    {"register-fine", Kernel::register_staged, Granularity::fine, false},
    {"wait-fine", Kernel::cg_wait, Granularity::fine, false},
    {"double-fine", Kernel::cg_double_buffered, Granularity::fine, false},
    {"register-coarse", Kernel::register_staged, Granularity::coarse, false},
    {"wait-coarse", Kernel::cg_wait, Granularity::coarse, false},
    {"double-coarse", Kernel::cg_double_buffered, Granularity::coarse, false},
    {"register-coarse-1-per-SM", Kernel::register_staged, Granularity::coarse, true},
    {"wait-coarse-1-per-SM", Kernel::cg_wait, Granularity::coarse, true},
    {"double-coarse-1-per-SM", Kernel::cg_double_buffered, Granularity::coarse, true},
};

std::vector<std::string> variant_names() {
  std::vector<std::string> names;
  for (const auto& v : kVariants) names.emplace_back(v.name);
  return names;
}

Buffering buffering_of(Kernel k) {
  return k == Kernel::cg_double_buffered ? Buffering::double_buffered : Buffering::single;
}

/// The most blocks per SM the variant's kernel allows (its shared memory decides).
int resident_blocks(const VariantSpec& spec) {
  if (spec.kernel == Kernel::register_staged) {
    return register_staged::max_blocks_per_sm(spec.granularity, kThreads);
  }
  return cg_memcpy_async::max_blocks_per_sm(spec.granularity, buffering_of(spec.kernel), kThreads);
}

std::size_t shared_bytes_of(const VariantSpec& spec) {
  if (spec.kernel == Kernel::register_staged) {
    return register_staged::shared_bytes(spec.granularity, kThreads);
  }
  return cg_memcpy_async::shared_bytes(spec.granularity, buffering_of(spec.kernel), kThreads);
}

}  // namespace

int main(int argc, char** argv) {
  course::CommonOptions options;
  int blocks_per_sm = 0;
  course::FlagParser flags(
      "02_cg_memcpy_async",
      "Lesson 02: copy and compute with cooperative_groups::memcpy_async. 'register-*' is\n"
      "lesson 01's kernel (global -> registers -> shared); 'wait-*' copies each batch with\n"
      "one memcpy_async and waits for it at once (cooperative_groups::wait); 'double-*'\n"
      "uses two buffers and starts the next batch's copy before computing this one\n"
      "(cooperative_groups::wait_prior<1>). 'fine' = 4 bytes per thread per batch (1 KB\n"
      "batches), 'coarse' = 64 bytes (16 KB batches). '-1-per-SM' launches one block per SM.");
  flags.add_common(options, "uint32 elements of input (default 256M = 1 GiB; K/M/G suffixes)",
                   variant_names());
  flags.add_int("blocks-per-sm", &blocks_per_sm, 0,
                "blocks per SM for the variants at full occupancy (default 0: as many as fit)");

  return course::run_driver(flags, argc, argv, options, [&](const course::DeviceSummary& gpu) {
    const std::size_t n =
        options.size ? options.size : (options.quick ? kQuickElements : kDefaultElements);
    std::cout << "lesson 02 cg_memcpy_async: " << n << " uint32 elements, " << kThreads
              << " threads per block; GB/s counts bytes read + bytes written\n";

    course::DeviceBuffer<std::uint32_t> in(n), out(n);
    course::fill_hash(in.span(), /*seed=*/2);
    // to_host is a synchronous cudaMemcpy: when it returns, the fill is done too.
    std::vector<std::uint32_t> host_in = course::to_host(in.cspan());
    std::vector<std::uint32_t> expected(n);
    course::workload::reference(host_in, expected);

    course::Harness harness("02_cg_memcpy_async", options, gpu);
    harness.reference_d2d_copy(out.data(), in.data(), in.bytes());
    // The roof kernel moves 16-byte vectors: a whole number of them (at most 12 bytes less).
    harness.roof_sm_copy(out.data(), in.data(), in.bytes() / 16 * 16);
    // Lesson 01's kernel at the headline's granularity; the fine rows compare with
    // register-fine, the rows at one block per SM with register-coarse-1-per-SM.
    harness.baseline("register-coarse");
    harness.headline("double-coarse");
    // Lesson 02 has no performance target: the table reports what this GPU gives.

    for (const VariantSpec& spec : kVariants) {
      const int resident = resident_blocks(spec);
      const int per_sm = spec.one_block_per_sm ? 1 : (blocks_per_sm > 0 ? blocks_per_sm : resident);
      const register_staged::LaunchShape shape{gpu.sm_count * per_sm, kThreads};
      std::cout << "  " << spec.name << ": " << shape.blocks << " blocks (" << per_sm
                << " per SM; at most " << resident << " fit), batch of "
                << register_staged::batch_elements(spec.granularity, kThreads) << " elements, "
                << shared_bytes_of(spec) / 1024 << " KB of shared memory per block\n";
      harness.run({
          spec.name,
          course::workload::bytes_moved(n),
          spec.kernel == Kernel::register_staged
              ? register_staged::prepare_copy_and_compute(in.cspan(), out.span(), spec.granularity,
                                                          shape)
              : cg_memcpy_async::prepare_copy_and_compute(in.cspan(), out.span(), spec.granularity,
                                                          buffering_of(spec.kernel), shape),
          [&](cudaStream_t s) { course::poison(out.data(), out.bytes(), s); },
          [&] {
            const auto actual = course::to_host(out.cspan());
            return course::compare_exact<std::uint32_t>(expected, actual);
          },
      });
    }
    return harness.finish();
  });
}
