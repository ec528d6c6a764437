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
using pinned_memory::SmallCopyCounts;

constexpr std::uint64_t kDefaultBytes = 256ull << 20;  // 256 MB: several times any L2
constexpr std::uint64_t kQuickBytes = 1ull << 20;
constexpr std::size_t kSweepSmallest = 4096;
constexpr int kAsyncReps = 5, kQuickAsyncReps = 1;  // part 3: calls each way (the median)
constexpr std::size_t kHostAccessBytes = 8u << 20, kQuickHostAccessBytes = 64u << 10;  // part 4
constexpr int kHostAccessReps = 3, kQuickHostAccessReps = 1;
// Part 5: calls, copies, loops per figure, and the batching part's bytes (1 MB).
constexpr SmallCopyCounts kSmallCopies{1000, 200, 5, 1u << 20};
constexpr SmallCopyCounts kQuickSmallCopies{4, 3, 1, 64u << 10};
constexpr std::size_t kSmallCopyWords = kSmallCopies.batch_total / 4;  // part 5's data
constexpr std::uint32_t kSeed = 12;
constexpr const char* kLesson = "12_pinned_memory";
constexpr const char* kBaseline = "H2D pageable";

const std::vector<std::string> kParts = {"table", "sweep", "async", "host-access", "overhead"};

/// The command line, as given: the common flags and --part.
struct Settings {
  course::CommonOptions options;
  std::string part;
};

/// Every size and count of the run, resolved from the command line.
struct Plan {
  std::size_t bytes = 0;  ///< per copy of the table and the async part; the sweep's largest
  std::string part;       ///< the one part --part asks for; empty: every part
  int async_reps = 0;
  std::size_t host_access_bytes = 0;  ///< at most: never more than `bytes`
  int host_access_reps = 0;
  SmallCopyCounts small_copies;

  /// Whether --part leaves part `name` in the run.
  bool runs(const char* name) const { return part.empty() || part == name; }
};

Plan make_plan(const Settings& s);
void print_intro(std::size_t bytes, bool unified, bool registrable);
void add_reference_and_targets(course::Harness& harness, const pinned_memory::CopyBench& bench,
                               std::size_t bytes);
void run_kinds(course::Harness& harness, const pinned_memory::CopyBench& bench, const Plan& plan,
               bool registrable);
int device_attribute(cudaDeviceAttr attribute, int device);

/// The output, part by part: the intro lines; parts 1-4 and the table, kind by kind of host
/// memory; part 5.
int run(const Settings& s, const course::DeviceSummary& gpu) {
  const Plan plan = make_plan(s);
  const bool registrable = device_attribute(cudaDevAttrHostRegisterSupported, gpu.ordinal) != 0;
  print_intro(plan.bytes, device_attribute(cudaDevAttrUnifiedAddressing, gpu.ordinal) != 0,
              registrable);
  course::Harness harness(kLesson, s.options, gpu);
  const pinned_memory::CopyBench bench(plan.bytes, kSmallCopyWords, kSeed, harness.stream());
  add_reference_and_targets(harness, bench, plan.bytes);
  run_kinds(harness, bench, plan, registrable);
  // 5. What one small copy costs.
  if (plan.runs("overhead")) pinned_memory::time_small_copies(harness, bench, plan.small_copies);
  return harness.finish();
}

/// The flags resolved: the one place that reads --quick.
Plan make_plan(const Settings& s) {
  const bool quick = s.options.quick;
  Plan plan;
  plan.bytes = s.options.size ? s.options.size : (quick ? kQuickBytes : kDefaultBytes);
  plan.part = s.part;
  plan.async_reps = quick ? kQuickAsyncReps : kAsyncReps;
  plan.host_access_bytes = quick ? kQuickHostAccessBytes : kHostAccessBytes;
  plan.host_access_reps = quick ? kQuickHostAccessReps : kHostAccessReps;
  plan.small_copies = quick ? kQuickSmallCopies : kSmallCopies;
  return plan;
}

void print_intro(std::size_t bytes, bool unified, bool registrable) {
  std::cout << "lesson 12 pinned_memory: copies of up to " << bytes << " bytes ("
            << pinned_memory::human_bytes(static_cast<double>(bytes))
            << "; KB = 1024 bytes); GB/s counts each byte once (it crosses the link once)\n"
            << "  unified addressing: " << (unified ? "yes" : "no")
            << (unified ? " (so every page-locked buffer is also mapped and portable)" : "")
            << "; page-locking memory you already have (registered): "
            << (registrable ? "supported" : "not supported") << "\n";
}

/// The yardstick and the targets. The yardstick is a large copy from pinned memory that the
/// course's own PinnedBuffer makes, so that it does not depend on the exercise.
void add_reference_and_targets(course::Harness& harness, const pinned_memory::CopyBench& bench,
                               std::size_t bytes) {
  {
    course::PinnedBuffer<std::uint32_t> pinned(bytes / 4);
    std::memcpy(pinned.data(), bench.expected().data(), pinned.bytes());
    harness.reference("H2D pinned (reference)", static_cast<double>(bytes), [&](cudaStream_t s) {
      COURSE_CHECK(
          cudaMemcpyAsync(bench.target(), pinned.data(), bytes, cudaMemcpyHostToDevice, s));
    });
  }
  harness.baseline(kBaseline);
  harness.headline(kBaseline);
  // Pinned memory must beat pageable memory clearly, and reach the link's rate in both
  // directions, however it was pinned.
  harness.ratio_target({"H2D pinned", kBaseline, 2.0});
  harness.target({"D2H pinned", 0.85});
  harness.target({"H2D registered", 0.85});
  harness.target({"D2H registered", 0.85});
}

std::string variant_name(Direction d, HostMemory kind) {
  return std::string(label(d)) + " " + pinned_memory::name(kind);
}

bool one_of(HostMemory kind, std::initializer_list<HostMemory> kinds) {
  for (HostMemory k : kinds) {
    if (k == kind) return true;
  }
  return false;
}

int device_attribute(cudaDeviceAttr attribute, int device) {
  int value = 0;
  COURSE_CHECK(cudaDeviceGetAttribute(&value, attribute, device));
  return value;
}

/// 1. What the allocation costs: pinning finds and locks every page up front; malloc only
///    reserves addresses (the pages come on first touch). Returns the buffer, filled.
HostBuffer allocate_and_record(course::Harness& harness, const pinned_memory::CopyBench& bench,
                               HostMemory kind, std::size_t bytes) {
  const std::string memory = pinned_memory::name(kind);
  const auto start = std::chrono::steady_clock::now();
  HostBuffer host(kind, bytes);
  const std::chrono::duration<double, std::milli> alloc = std::chrono::steady_clock::now() - start;
  const bool locked = host.page_locked();
  harness.record_sweep("allocation", {{"memory", memory}, {"page_locked", locked ? "yes" : "no"}},
                       memory + (locked ? ", page-locked" : ", not page-locked"), alloc.count(),
                       static_cast<double>(bytes), "-");
  bench.refill(host);
  return host;
}

/// 2. The bandwidth sweep of one kind of memory, checked and timed like the table's variants.
void run_bandwidth_sweep(course::Harness& harness, const pinned_memory::CopyBench& bench,
                         HostMemory kind, const HostBuffer& host,
                         const std::vector<std::size_t>& sizes) {
  const std::string memory = pinned_memory::name(kind);
  for (Direction d : kDirections) {
    if (d == Direction::h2d) bench.refill(host);
    for (std::size_t size : sizes) {
      harness.sweep("bandwidth",
                    {{"direction", label(d)}, {"memory", memory}, {"bytes", std::to_string(size)}},
                    bench.variant(variant_name(d, kind) + " " +
                                      pinned_memory::human_bytes(static_cast<double>(size)),
                                  d, host, size));
    }
  }
}

/// Every part that runs on one kind of host memory, in the order the lesson reads them.
void run_kind(course::Harness& harness, const pinned_memory::CopyBench& bench, const Plan& plan,
              HostMemory kind, const std::vector<std::size_t>& sizes) {
  const std::size_t bytes = plan.bytes;
  HostBuffer host = allocate_and_record(harness, bench, kind, bytes);
  // 6. The main table: every kind, both directions, at --size.
  if (plan.runs("table")) {
    for (Direction d : kDirections) {
      harness.run(bench.variant(variant_name(d, kind), d, host, bytes));
    }
  }
  if (plan.runs("sweep")) run_bandwidth_sweep(harness, bench, kind, host, sizes);
  // 3. When cudaMemcpyAsync returns.
  if (plan.runs("async") &&
      one_of(kind, {HostMemory::pageable, HostMemory::pinned, HostMemory::registered})) {
    for (Direction d : kDirections) {
      pinned_memory::time_async_calls(harness, bench, d, host, plan.async_reps);
    }
  }
  // 4. What the CPU sees.
  if (plan.runs("host-access") &&
      one_of(kind, {HostMemory::pageable, HostMemory::pinned, HostMemory::write_combined})) {
    pinned_memory::time_host_access(harness, host, std::min(bytes, plan.host_access_bytes),
                                    plan.host_access_reps);
  }
}

/// Every kind of host memory the GPU can use, each through the parts that run on it.
void run_kinds(course::Harness& harness, const pinned_memory::CopyBench& bench, const Plan& plan,
               bool registrable) {
  const std::vector<std::size_t> sizes =
      pinned_memory::sweep_sizes(std::min<std::size_t>(kSweepSmallest, plan.bytes), plan.bytes);
  for (HostMemory kind : pinned_memory::kAllHostMemory) {
    if (kind == HostMemory::registered && !registrable) continue;
    run_kind(harness, bench, plan, kind, sizes);
  }
}

std::vector<std::string> variant_names() {
  std::vector<std::string> names;
  for (Direction d : kDirections) {
    for (HostMemory kind : pinned_memory::kAllHostMemory) names.push_back(variant_name(d, kind));
  }
  return names;
}

void add_flags(course::FlagParser& flags, Settings& s) {
  flags.add_common(s.options,
                   "bytes per copy in the table and the async part, and the sweep's largest "
                   "(a multiple of 4; default " +
                       course::count_text(kDefaultBytes) + ", " + course::count_text(kQuickBytes) +
                       " with --quick; K/M/G suffixes)",
                   variant_names());
  flags.add_choice("part", &s.part, kParts, "run only this part (default: all of them)");
}

/// Every range check before the device is opened (exit 2, also without a GPU).
void validate(const Settings& s) {
  if (s.options.size % 4 != 0) {
    throw course::UsageError("--size must be a multiple of 4 bytes, got " +
                             std::to_string(s.options.size));
  }
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  course::FlagParser flags(
      kLesson,
      "Lesson 12: pinned memory and small-copy overhead. Copies between the GPU and host\n"
      "memory of every kind (pageable; pinned by the runtime's allocators, with each flag;\n"
      "your own memory registered): a bandwidth sweep from " +
          std::to_string(kSweepSmallest / 1024) +
          " KB up, when an async copy returns,\n"
          "what the CPU sees of write-combined memory, the per-copy overhead and its models,\n"
          "and a table of every kind against a large pinned copy. --variant picks a row of\n"
          "that table; --part runs one part only. --csv FILE also writes every sweep to\n"
          "FILE_sweep.csv (FILE without '.csv'), one row per point, the part in column `sweep`.");
  add_flags(flags, settings);
  return course::run_driver(
      flags, argc, argv, settings.options,
      [&](const course::DeviceSummary& gpu) { return run(settings, gpu); },
      [&] { validate(settings); });
}
