// Lesson 00 driver: prints what this GPU can do for asynchronous data movement, which
// lessons it can run, and measures the roofs later lessons quote: a device-to-device
// cudaMemcpy (the reference), the SM copy roof (what a plain copy kernel reaches:
// course/roof.h), and host<->device transfers from pinned and pageable memory.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "course/buffers.h"
#include "course/data.h"
#include "course/harness.h"
#include "device_check.cuh"

namespace {

using device_check::Transfer;

constexpr std::uint64_t kDefaultBytes = 256ull << 20;  // 256 MiB: several times any L2
constexpr std::uint64_t kQuickBytes = 4ull << 20;
constexpr std::uint32_t kSeed = 7;
constexpr const char* kLesson = "00_device_check";

const std::vector<std::string> kVariants = {"H2D pinned", "D2H pinned", "H2D pageable",
                                            "D2H pageable"};

/// The command line, as given: the common flags only.
struct Settings {
  course::CommonOptions options;
};

/// The run's one size, resolved from the command line.
struct Plan {
  std::uint64_t copy_bytes = 0;
};

/// The buffers of the copies: two device arrays, pinned and pageable host memory, and the
/// expected data (hash-filled on the host; device_a gets the same by a fill kernel).
struct Copies {
  explicit Copies(std::uint64_t copy_bytes);

  /// Host -> device: the host buffer holds the expected data; check what arrived.
  course::Comparison check_device_b() const;
  void poison_device_b(cudaStream_t s) const;
  /// Device -> host: device_a holds the expected data; the host buffer is poisoned first.
  std::function<void(cudaStream_t)> poison_host(std::uint32_t* host) const;

  const std::uint64_t bytes;
  const std::size_t n;
  course::DeviceBuffer<std::uint32_t> device_a, device_b;
  course::PinnedBuffer<std::uint32_t> pinned;
  std::vector<std::uint32_t> pageable;
  std::vector<std::uint32_t> expected;
};

Plan make_plan(const Settings& s);
void print_capabilities(const device_check::Capabilities& caps);
void print_lessons(course::ComputeCapability cc);
void print_intro(const Plan& plan);
void add_yardsticks(course::Harness& harness, Copies& c);
void run_transfers(course::Harness& harness, Copies& c);

/// The output, part by part: what the GPU can do, which lessons it runs, then the table.
int run(const Settings& s, const course::DeviceSummary& gpu) {
  const Plan plan = make_plan(s);
  print_capabilities(device_check::query_capabilities(gpu.ordinal));
  print_lessons(gpu.cc);
  print_intro(plan);
  Copies c(plan.copy_bytes);
  course::Harness harness(kLesson, s.options, gpu);
  add_yardsticks(harness, c);
  run_transfers(harness, c);
  return harness.finish();
}

/// --size, or the default of a full or a --quick run: the one place that reads --quick.
Plan make_plan(const Settings& s) {
  const course::CommonOptions& options = s.options;
  return {options.size ? options.size : (options.quick ? kQuickBytes : kDefaultBytes)};
}

void print_capabilities(const device_check::Capabilities& caps) {
  const auto mib = [](std::size_t bytes) { return std::to_string(bytes >> 20) + " MiB"; };
  const auto kib = [](std::size_t bytes) { return std::to_string(bytes >> 10) + " KiB"; };
  const device_check::OverlapSupport overlap = device_check::overlap_support(caps);
  std::cout << "  compute capability      " << caps.cc_major << "." << caps.cc_minor << "\n"
            << "  multiprocessors         " << caps.sm_count << "\n"
            << "  copy engines            " << caps.async_engine_count
            << " (copy overlaps kernels: " << (overlap.copy_with_kernel ? "yes" : "no")
            << "; both directions at once: " << (overlap.copy_both_directions ? "yes" : "no")
            << ")\n"
            << "  concurrent kernels      " << (overlap.concurrent_kernels ? "yes" : "no") << "\n"
            << "  shared memory           " << kib(caps.shared_per_block_optin)
            << " per block (opt-in), " << kib(caps.shared_per_sm) << " per SM\n"
            << "  L2 cache                " << mib(caps.l2_bytes) << "\n"
            << "  device memory           " << mib(caps.global_bytes) << ", "
            << caps.memory_bus_bits << "-bit bus at " << caps.memory_clock_khz / 1000
            << " MHz: peak " << std::fixed << std::setprecision(0)
            << device_check::theoretical_memory_gbps(caps) << " GB/s\n"
            << "  SM clock                " << caps.clock_khz / 1000 << " MHz\n"
            << "  threads per SM          " << caps.max_threads_per_sm << "\n";
}

void print_lessons(course::ComputeCapability cc) {
  std::cout << "\nLessons this GPU can run:\n";
  std::size_t width = 0;
  for (const course::LessonEntry& lesson : course::lesson_catalog()) {
    width = std::max(width, std::string(lesson.title).size());
  }
  for (const course::LessonEntry& lesson : course::lesson_catalog()) {
    std::cout << "  " << lesson.number << " " << std::left << std::setw(static_cast<int>(width + 2))
              << lesson.title
              << (course::can_run(lesson, cc) ? "yes" : "no (needs " + lesson.min_cc().str() + ")")
              << (lesson.min_gpus > 1 ? "  (needs " + std::to_string(lesson.min_gpus) + " GPUs)"
                                      : "")
              << (lesson.ready ? "" : "  [planned]") << "\n";
  }
}

void print_intro(const Plan& plan) {
  std::cout << "\nlesson 00 device_check: copies of " << plan.copy_bytes << " bytes; GB/s counts "
            << "2 x bytes for the device-to-device copies (read + write), 1 x for transfers\n";
}

Copies::Copies(std::uint64_t copy_bytes)
    : bytes(copy_bytes),
      n(copy_bytes / 4),
      device_a(n),
      device_b(n),
      pinned(n),
      pageable(n),
      expected(n) {
  course::fill_hash_host(expected, kSeed);
  // Fill and wait before timing: the harness times on its own non-blocking stream, which
  // does not wait for work on the legacy default stream (lesson 13 shows why).
  course::fill_hash(device_a.span(), kSeed);
  COURSE_CHECK(cudaDeviceSynchronize());
}

course::Comparison Copies::check_device_b() const {
  return course::compare_exact<std::uint32_t>(expected, course::to_host(device_b.cspan()));
}

void Copies::poison_device_b(cudaStream_t s) const { course::poison(device_b.data(), bytes, s); }

std::function<void(cudaStream_t)> Copies::poison_host(std::uint32_t* host) const {
  return [this, host](cudaStream_t s) {
    COURSE_CHECK(cudaStreamSynchronize(s));
    std::memset(host, course::kPoisonByte, bytes);
  };
}

/// The two yardsticks: the D2D cudaMemcpy (the reference) and the SM copy roof.
void add_yardsticks(course::Harness& harness, Copies& c) {
  harness.reference("D2D cudaMemcpy",
                    device_check::bytes_moved(Transfer::device_to_device, c.bytes),
                    [&](cudaStream_t s) {
                      COURSE_CHECK(cudaMemcpyAsync(c.device_b.data(), c.device_a.data(), c.bytes,
                                                   cudaMemcpyDeviceToDevice, s));
                    });
  // The same copy by the SMs: a plain 16-byte vector copy kernel, best of a few launch
  // shapes (a whole number of vectors: at most 12 bytes less). On some GPUs the driver
  // runs the D2D cudaMemcpy above on a copy engine instead, and no kernel reaches it.
  harness.roof_sm_copy(c.device_b.data(), c.device_a.data(), c.bytes / 16 * 16);
  harness.baseline("H2D pageable");
  harness.headline("D2D cudaMemcpy");
}

/// One transfer each way from pinned memory, then from pageable memory, each checked.
void run_transfers(course::Harness& harness, Copies& c) {
  const std::uint64_t bytes = c.bytes;
  const auto poison_device_b = [&c](cudaStream_t s) { c.poison_device_b(s); };
  const auto check_device_b = [&c] { return c.check_device_b(); };
  std::copy(c.expected.begin(), c.expected.end(), c.pinned.data());
  harness.run({"H2D pinned", device_check::bytes_moved(Transfer::host_to_device, bytes),
               [&](cudaStream_t s) {
                 COURSE_CHECK(cudaMemcpyAsync(c.device_b.data(), c.pinned.data(), bytes,
                                              cudaMemcpyHostToDevice, s));
               },
               poison_device_b, check_device_b});
  harness.run({"D2H pinned", device_check::bytes_moved(Transfer::device_to_host, bytes),
               [&](cudaStream_t s) {
                 COURSE_CHECK(cudaMemcpyAsync(c.pinned.data(), c.device_a.data(), bytes,
                                              cudaMemcpyDeviceToHost, s));
               },
               c.poison_host(c.pinned.data()),
               [&] { return course::compare_exact<std::uint32_t>(c.expected, c.pinned.span()); }});
  c.pageable = c.expected;
  harness.run({"H2D pageable", device_check::bytes_moved(Transfer::host_to_device, bytes),
               [&](cudaStream_t s) {
                 COURSE_CHECK(cudaMemcpyAsync(c.device_b.data(), c.pageable.data(), bytes,
                                              cudaMemcpyHostToDevice, s));
               },
               poison_device_b, check_device_b});
  harness.run({"D2H pageable", device_check::bytes_moved(Transfer::device_to_host, bytes),
               [&](cudaStream_t s) {
                 COURSE_CHECK(cudaMemcpyAsync(c.pageable.data(), c.device_a.data(), bytes,
                                              cudaMemcpyDeviceToHost, s));
               },
               c.poison_host(c.pageable.data()),
               [&] { return course::compare_exact<std::uint32_t>(c.expected, c.pageable); }});
}

void add_flags(course::FlagParser& flags, Settings& s) {
  flags.add_common(s.options,
                   "bytes per copy, a multiple of 4 (default " + course::count_text(kDefaultBytes) +
                       "; K/M/G suffixes)",
                   kVariants);
}

/// The range check the flag parser cannot do; run_driver calls it before opening the device.
void validate(const Settings& s) {
  if (make_plan(s).copy_bytes % 4 != 0) {
    throw course::UsageError("--size must be a multiple of 4 bytes");
  }
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  course::FlagParser flags(
      kLesson,
      "Lesson 00: what this GPU can do. Prints the capabilities later lessons depend on,\n"
      "which lessons it can run, and measures a device-to-device cudaMemcpy (the reference),\n"
      "the SM copy roof (the fastest plain copy kernel) and host<->device transfers from\n"
      "pinned and from pageable memory.");
  add_flags(flags, settings);
  return course::run_driver(
      flags, argc, argv, settings.options,
      [&](const course::DeviceSummary& gpu) { return run(settings, gpu); },
      [&] { validate(settings); });
}
