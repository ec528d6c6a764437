// Lesson 03 driver: runs the cuda::barrier + cuda::memcpy_async kernels beside lesson 01's
// register-staged kernel, checks every output element against the CPU reference, prints
// what each kernel's memcpy_async calls returned (cuda::async_contract_fulfillment), and
// compares every variant's bandwidth with a device-to-device cudaMemcpy measured in the
// same run.
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "course/buffers.h"
#include "course/check.h"
#include "course/data.h"
#include "course/harness.h"
#include "course/workload.h"
#include "cuda_barrier.cuh"
#include "register_staged.cuh"

namespace {

using cuda_barrier::Kernel;

constexpr int kThreads = 256;
constexpr std::uint64_t kDefaultElements = 256ull << 20;  // 1 GiB of input: far beyond L2
constexpr std::uint64_t kQuickElements = 1000003;         // prime: a partial last batch

enum class Occupancy { full, one_per_sm };

struct VariantSpec {
  const char* name;
  bool lesson01;  // lesson 01's coarse register-staged kernel instead of one of this lesson
  Kernel kernel;  // (ignored for lesson 01)
  Occupancy occupancy;
  const char* what;
};

// Lesson 01 first: its coarse kernel is the baseline every async variant must beat.
const std::vector<VariantSpec> kVariants = {
    {"01-coarse", true, Kernel::one_stage, Occupancy::full,
     "lesson 01: global -> registers -> shared, two block syncs per batch"},
    {"01-coarse-1-per-SM", true, Kernel::one_stage, Occupancy::one_per_sm,
     "lesson 01 at one block per SM"},
    {"1-stage-4B", false, Kernel::one_stage_words, Occupancy::full,
     "memcpy_async(block, dst, src, bytes, barrier): 4-byte cp.async"},
    {"1-stage", false, Kernel::one_stage, Occupancy::full,
     "memcpy_async(block, dst, src, aligned_size_t<16>(bytes), barrier)"},
    {"1-stage-1-per-SM", false, Kernel::one_stage, Occupancy::one_per_sm,
     "1-stage at one block per SM"},
    {"custom-group", false, Kernel::custom_group, Occupancy::full,
     "1-stage with a hand-written 1-D group instead of this_thread_block()"},
    {"two-buffers", false, Kernel::two_buffers, Occupancy::full,
     "a uint4 buffer and a uint32 buffer per batch, one barrier"},
    {"system-scope", false, Kernel::system_scope, Occupancy::full,
     "barrier<thread_scope_system>, batch staged in global memory: a synchronous copy"},
    {"multi-stage", false, Kernel::multi_stage, Occupancy::full,
     "one barrier per stage; stages - 1 batches in flight while one is computed"},
    {"multi-stage-1-per-SM", false, Kernel::multi_stage, Occupancy::one_per_sm,
     "multi-stage at one block per SM"},
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
  std::string stages_text = "4";
  course::FlagParser flags(
      "03_cuda_barrier",
      "Lesson 03: cuda::barrier and cuda::memcpy_async. Every variant computes the same\n"
      "copy-and-compute workload in 16 KB batches (256 threads x 64 bytes). '01-' variants are\n"
      "lesson 01's register-staged kernel; the others copy with cuda::memcpy_async bound to a\n"
      "cuda::barrier. On sm_90 an aligned copy (aligned_size_t<16>) with a block-scope barrier\n"
      "becomes one bulk (TMA) copy per batch. '-1-per-SM' variants launch one block per SM.");
  flags.add_common(options, "uint32 elements of input (default 256M = 1 GiB; K/M/G suffixes)",
                   variant_names());
  flags.add_int("blocks-per-sm", &blocks_per_sm, 0,
                "blocks per SM for the full-occupancy variants (default 0: as many as fit)");
  flags.add_choice("stages", &stages_text, {"2", "3", "4"},
                   "stages of the multi-stage variants (default 4)");

  return course::run_driver(flags, argc, argv, options, [&](const course::DeviceSummary& gpu) {
    const std::size_t n =
        options.size ? options.size : (options.quick ? kQuickElements : kDefaultElements);
    const int stages = std::stoi(stages_text);
    const bool hopper = gpu.cc >= course::ComputeCapability{9, 0};
    std::cout << "lesson 03 cuda_barrier: " << n << " uint32 elements, " << kThreads
              << " threads per block, batches of " << cuda_barrier::batch_elements(kThreads)
              << " elements; GB/s counts bytes read + bytes written\n"
              << "aligned copies on this GPU: "
              << (hopper ? "one cp.async.bulk (TMA) per batch, issued by thread 0"
                         : "16-byte cp.async by every thread")
              << "\n";

    course::DeviceBuffer<std::uint32_t> in(n), out(n);
    course::DeviceBuffer<std::uint32_t> report(cuda_barrier::kReportSlots);
    course::fill_hash(in.span(), /*seed=*/1);
    // to_host is a synchronous cudaMemcpy: when it returns, the fill is done too.
    std::vector<std::uint32_t> host_in = course::to_host(in.cspan());
    std::vector<std::uint32_t> expected(n);
    course::workload::reference(host_in, expected);

    course::Harness harness("03_cuda_barrier", options, gpu);
    harness.reference_d2d_copy(out.data(), in.data(), in.bytes());
    harness.baseline("01-coarse");
    harness.headline("multi-stage");
    harness.target({"multi-stage", 0.90});

    for (const VariantSpec& spec : kVariants) {
      const int variant_stages = !spec.lesson01 && spec.kernel == Kernel::multi_stage ? stages : 1;
      const int resident =
          spec.lesson01
              ? register_staged::max_blocks_per_sm(register_staged::Granularity::coarse, kThreads)
              : cuda_barrier::max_blocks_per_sm(spec.kernel, kThreads, variant_stages);
      const int per_sm = spec.occupancy == Occupancy::one_per_sm
                             ? 1
                             : (blocks_per_sm > 0 ? blocks_per_sm : resident);
      const cuda_barrier::LaunchShape shape{gpu.sm_count * per_sm, kThreads, variant_stages};
      std::cout << "  " << spec.name << ": " << shape.blocks << " blocks (" << per_sm
                << " per SM; at most " << resident << " fit)";
      if (variant_stages > 1) std::cout << ", " << variant_stages << " stages";
      std::cout << "; " << spec.what << "\n";

      harness.run({
          spec.name,
          course::workload::bytes_moved(n),
          [&, spec, shape](cudaStream_t s) {
            if (spec.lesson01) {
              register_staged::copy_and_compute(in.cspan(), out.span(),
                                                register_staged::Granularity::coarse,
                                                {shape.blocks, shape.threads_per_block}, s);
            } else {
              cuda_barrier::copy_and_compute(in.cspan(), out.span(), spec.kernel, shape, s,
                                             report.span());
            }
          },
          [&](cudaStream_t s) {
            course::poison(out.data(), out.bytes(), s);
            // 0xFF bytes: every slot reads kNotCalled until its call writes it.
            COURSE_CHECK(cudaMemsetAsync(report.data(), 0xFF, report.bytes(), s));
          },
          [&, spec] {
            const auto actual = course::to_host(out.cspan());
            if (!spec.lesson01) {
              const auto r = course::to_host(report.cspan());
              std::cout << "    " << spec.name << ": memcpy_async returned "
                        << cuda_barrier::contract_name(r[cuda_barrier::kBatchCopy])
                        << " (full batch), "
                        << cuda_barrier::contract_name(r[cuda_barrier::kSecondCopy])
                        << " (second buffer), "
                        << cuda_barrier::contract_name(r[cuda_barrier::kTailCopy])
                        << " (tail past the last 16-byte chunk)\n";
            }
            return course::compare_exact<std::uint32_t>(expected, actual);
          },
      });
    }
    return harness.finish();
  });
}
