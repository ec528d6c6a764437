// Lesson 12 driver: host<->device copies from every kind of host memory. Read-only: your
// file is pinned_memory.cu.
//
//   1. host memory kinds: what allocating each costs, and whether CUDA sees it page-locked;
//   2. the bandwidth sweep: H2D and D2H from 4 KB to --size, every kind;
//   3. when cudaMemcpyAsync returns: host clock around the call, on an idle stream;
//   4. what the CPU sees: writing and reading pinned vs write-combined memory;
//   5. small-copy overhead (CUDA Handbook 6.2): per-call costs, the 4-64 KB break-even
//      sweep with its straight-line and step models, and batching;
//   6. the main table: every kind at --size against a large pinned copy (the reference).
// Parts 1-5 are the harness's sweeps, printed before the main table; --csv FILE writes the
// table to FILE and every sweep to FILE_sweep.csv (column `sweep`). Every copy's data is
// verified, every word.
#include <chrono>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "course/buffers.h"
#include "course/check.h"
#include "course/harness.h"
#include "pinned_memory.cuh"
#include "pinned_memory_parts.h"

namespace {

using pinned_memory::Direction;
using pinned_memory::HostBuffer;
using pinned_memory::HostMemory;
using pinned_memory::kDirections;
using pinned_memory::label;

constexpr std::uint64_t kDefaultBytes = 256ull << 20;  // 256 MB: several times any L2
constexpr std::uint64_t kQuickBytes = 1ull << 20;
constexpr std::size_t kSweepSmallest = 4096;
constexpr std::size_t kSmallCopyWords = (1u << 20) / 4;  // part 5 copies up to 1 MB
constexpr std::uint32_t kSeed = 12;

std::string variant_name(Direction d, HostMemory kind) {
  return std::string(label(d)) + " " + pinned_memory::name(kind);
}

std::vector<std::string> variant_names() {
  std::vector<std::string> names;
  for (Direction d : kDirections) {
    for (HostMemory kind : pinned_memory::kAllHostMemory) names.push_back(variant_name(d, kind));
  }
  return names;
}

const std::vector<std::string> kParts = {"table", "sweep", "async", "host-access", "overhead"};

bool one_of(HostMemory kind, std::initializer_list<HostMemory> kinds) {
  for (HostMemory k : kinds) {
    if (k == kind) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  course::CommonOptions options;
  std::string part;
  course::FlagParser flags(
      "12_pinned_memory",
      "Lesson 12: pinned memory and small-copy overhead. Copies between the GPU and host\n"
      "memory of every kind (pageable malloc, cudaMallocHost, cudaHostAlloc with each flag,\n"
      "cudaHostRegister): a bandwidth sweep from 4 KB up, when cudaMemcpyAsync returns,\n"
      "what the CPU sees of write-combined memory, the per-copy overhead and its models,\n"
      "and a table of every kind against a large pinned copy. --variant picks a row of\n"
      "that table; --part runs one part only. --csv FILE also writes every sweep to\n"
      "FILE_sweep.csv (FILE without '.csv'), one row per point, the part in column `sweep`.");
  flags.add_common(options,
                   "bytes per copy in the table and the async part, and the sweep's largest "
                   "(a multiple of 4; default 256M, 1M with --quick; K/M/G suffixes)",
                   variant_names());
  flags.add_choice("part", &part, kParts, "run only this part (default: all of them)");
  // Every range check before the device is opened (exit 2, also without a GPU).
  const auto validate = [&] {
    if (options.size % 4 != 0) {
      throw course::UsageError("--size must be a multiple of 4 bytes, got " +
                               std::to_string(options.size));
    }
  };

  return course::run_driver(
      flags, argc, argv, options,
      [&](const course::DeviceSummary& gpu) {
        const std::size_t bytes =
            options.size ? options.size : (options.quick ? kQuickBytes : kDefaultBytes);
        const auto runs = [&](const char* name) { return part.empty() || part == name; };

        int unified = 0, registrable = 0;
        COURSE_CHECK(cudaDeviceGetAttribute(&unified, cudaDevAttrUnifiedAddressing, gpu.ordinal));
        COURSE_CHECK(
            cudaDeviceGetAttribute(&registrable, cudaDevAttrHostRegisterSupported, gpu.ordinal));
        std::cout << "lesson 12 pinned_memory: copies of up to " << bytes << " bytes ("
                  << pinned_memory::human_bytes(static_cast<double>(bytes))
                  << "; KB = 1024 bytes); GB/s counts each byte once (it crosses the link once)\n"
                  << "  unified addressing: " << (unified ? "yes" : "no")
                  << (unified ? " (so every page-locked buffer is also mapped and portable)" : "")
                  << "; cudaHostRegister supported: " << (registrable ? "yes" : "no") << "\n";

        course::Harness harness("12_pinned_memory", options, gpu);
        const pinned_memory::CopyBench bench(bytes, kSmallCopyWords, kSeed, harness.stream());
        {
          // The yardstick: a large copy from cudaMallocHost memory, made by the course's own
          // PinnedBuffer so that it does not depend on the exercise.
          course::PinnedBuffer<std::uint32_t> pinned(bytes / 4);
          std::memcpy(pinned.data(), bench.expected().data(), pinned.bytes());
          harness.reference("H2D pinned (reference)", static_cast<double>(bytes),
                            [&](cudaStream_t s) {
                              COURSE_CHECK(cudaMemcpyAsync(bench.target(), pinned.data(), bytes,
                                                           cudaMemcpyHostToDevice, s));
                            });
        }
        harness.baseline("H2D pageable");
        harness.headline("H2D pageable");
        // Pinned memory must beat pageable memory clearly, and reach the link's rate in both
        // directions, however it was pinned.
        harness.ratio_target({"H2D pinned", "H2D pageable", 2.0});
        harness.target({"D2H pinned", 0.85});
        harness.target({"H2D registered", 0.85});
        harness.target({"D2H registered", 0.85});

        const std::vector<std::size_t> sizes =
            pinned_memory::sweep_sizes(std::min<std::size_t>(kSweepSmallest, bytes), bytes);
        const int async_reps = options.quick ? 1 : 5;
        const std::size_t access_bytes =
            std::min<std::size_t>(bytes, options.quick ? (64u << 10) : (8u << 20));
        const int access_reps = options.quick ? 1 : 3;

        for (HostMemory kind : pinned_memory::kAllHostMemory) {
          if (kind == HostMemory::registered && !registrable) continue;
          const std::string memory = pinned_memory::name(kind);
          // 1. What the allocation costs: pinning finds and locks every page up front;
          //    malloc only reserves addresses (the pages come on first touch).
          const auto start = std::chrono::steady_clock::now();
          HostBuffer host(kind, bytes);
          const std::chrono::duration<double, std::milli> alloc =
              std::chrono::steady_clock::now() - start;
          const bool locked = host.page_locked();
          harness.record_sweep("allocation",
                               {{"memory", memory},
                                {"api", pinned_memory::api(kind)},
                                {"page_locked", locked ? "yes" : "no"}},
                               memory + " (" + pinned_memory::api(kind) + ")" +
                                   (locked ? ", page-locked" : ", not page-locked"),
                               alloc.count(), static_cast<double>(bytes), "-");
          bench.refill(host);

          // 6. The main table: every kind, both directions, at --size.
          if (runs("table")) {
            for (Direction d : kDirections) {
              harness.run(bench.variant(variant_name(d, kind), d, host, bytes));
            }
          }
          // 2. The bandwidth sweep, checked and timed like the table's variants.
          if (runs("sweep")) {
            for (Direction d : kDirections) {
              if (d == Direction::h2d) bench.refill(host);
              for (std::size_t size : sizes) {
                harness.sweep(
                    "bandwidth",
                    {{"direction", label(d)}, {"memory", memory}, {"bytes", std::to_string(size)}},
                    bench.variant(variant_name(d, kind) + " " +
                                      pinned_memory::human_bytes(static_cast<double>(size)),
                                  d, host, size));
              }
            }
          }
          // 3. When cudaMemcpyAsync returns.
          if (runs("async") &&
              one_of(kind, {HostMemory::pageable, HostMemory::pinned, HostMemory::registered})) {
            for (Direction d : kDirections) {
              pinned_memory::time_async_calls(harness, bench, d, host, async_reps);
            }
          }
          // 4. What the CPU sees.
          if (runs("host-access") && one_of(kind, {HostMemory::pageable, HostMemory::pinned,
                                                   HostMemory::write_combined})) {
            pinned_memory::time_host_access(harness, host, access_bytes, access_reps);
          }
        }
        // 5. What one small copy costs.
        if (runs("overhead")) pinned_memory::time_small_copies(harness, bench, options.quick);
        return harness.finish();
      },
      validate);
}
