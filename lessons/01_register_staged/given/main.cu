// Lesson 01 driver: runs the register-staged copy-and-compute kernel at two
// granularities and two occupancies, checks every output element against the CPU
// reference, and compares each variant's bandwidth with two yardsticks measured in the
// same run: a device-to-device cudaMemcpy and the SM copy roof (course/roof.h).
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "course/buffers.h"
#include "course/data.h"
#include "course/harness.h"
#include "course/workload.h"
#include "register_staged.cuh"

namespace {

using register_staged::Granularity;

constexpr int kThreads = 256;
constexpr std::uint64_t kDefaultElements = 256ull << 20;  // 1 GiB of input: far beyond L2
constexpr std::uint64_t kQuickElements = 1000003;         // prime: never a whole batch

struct VariantSpec {
  const char* name;
  Granularity granularity;
  bool one_block_per_sm;
};

// The Programming Guide's granularity (one element per thread) first: the baseline the
// others are compared with.
const std::vector<VariantSpec> kVariants = {
    {"fine", Granularity::fine, false},
    {"coarse", Granularity::coarse, false},
    {"fine-1-per-SM", Granularity::fine, true},
    {"coarse-1-per-SM", Granularity::coarse, true},
};

std::vector<std::string> variant_names() {
  std::vector<std::string> names;
  for (const auto& v : kVariants) names.emplace_back(v.name);
  return names;
}

}  // namespace

int main(int argc, char** argv) {
  course::CommonOptions options;
  int blocks_per_sm = 0;
  course::FlagParser flags(
      "01_register_staged",
      "Lesson 01: copy and compute through registers. Every variant stages batches\n"
      "global -> registers -> shared memory with two block barriers per batch; 'fine'\n"
      "copies one uint32 per thread per batch (the Programming Guide's snippet), 'coarse'\n"
      "four 16-byte vectors per thread. '-1-per-SM' variants launch one block per SM.");
  flags.add_common(options, "uint32 elements of input (default 256M = 1 GiB; K/M/G suffixes)",
                   variant_names());
  flags.add_int("blocks-per-sm", &blocks_per_sm, 0,
                "blocks per SM for 'fine' and 'coarse' (default 0: as many as fit)");

  return course::run_driver(flags, argc, argv, options, [&](const course::DeviceSummary& gpu) {
    const std::size_t n =
        options.size ? options.size : (options.quick ? kQuickElements : kDefaultElements);
    std::cout << "lesson 01 register_staged: " << n << " uint32 elements, " << kThreads
              << " threads per block; GB/s counts bytes read + bytes written\n";

    course::DeviceBuffer<std::uint32_t> in(n), out(n);
    course::fill_hash(in.span(), /*seed=*/1);
    // to_host is a synchronous cudaMemcpy: when it returns, the fill is done too.
    std::vector<std::uint32_t> host_in = course::to_host(in.cspan());
    std::vector<std::uint32_t> expected(n);
    course::workload::reference(host_in, expected);

    course::Harness harness("01_register_staged", options, gpu);
    harness.reference_d2d_copy(out.data(), in.data(), in.bytes());
    // The roof kernel moves 16-byte vectors: a whole number of them (at most 12 bytes less).
    harness.roof_sm_copy(out.data(), in.data(), in.bytes() / 16 * 16);
    harness.baseline("fine");
    harness.headline("coarse");
    harness.target({"coarse", 0.85});

    for (const VariantSpec& spec : kVariants) {
      const int resident = register_staged::max_blocks_per_sm(spec.granularity, kThreads);
      const int per_sm = spec.one_block_per_sm ? 1 : (blocks_per_sm > 0 ? blocks_per_sm : resident);
      const register_staged::LaunchShape shape{gpu.sm_count * per_sm, kThreads};
      std::cout << "  " << spec.name << ": " << shape.blocks << " blocks (" << per_sm
                << " per SM; at most " << resident << " fit), batch of "
                << register_staged::batch_elements(spec.granularity, kThreads) << " elements\n";
      harness.run({
          spec.name,
          course::workload::bytes_moved(n),
          register_staged::prepare_copy_and_compute(in.cspan(), out.span(), spec.granularity,
                                                    shape),
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
