// Lesson 16 driver: copies between two GPUs, and a halo exchange around a ring of GPUs.
// Read-only: your file is peer_to_peer.cu.
//
//   1. the topology as CUDA reports it, peer access, what a peer pointer is;
//   2. the main table at --size: the copy engine (cudaMemcpyPeerAsync, the reference) each
//      way, SM-driven pull and push at 4/8/16-byte widths, a cp.async pull through shared
//      memory, and both directions at once;
//   3. a size sweep of cudaMemcpyPeerAsync, 4 KiB - 1 GiB, and the overhead + bandwidth fit;
//   4. a halo exchange around every visible GPU, overlapped with the stencil's interior,
//      checked against the CPU, and timed against the exchange alone and the compute alone.
// Every copy's data is verified, every word.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "course/buffers.h"
#include "course/check.h"
#include "course/harness.h"
#include "course/multi_gpu.h"
#include "course/stats.h"
#include "course/timing.h"
#include "peer_to_peer.cuh"

namespace {

using peer_to_peer::Width;

constexpr std::uint64_t kDefaultBytes = 512ull << 20;  // 512 MiB: far beyond any L2
constexpr std::uint64_t kQuickBytes = 1ull << 20;
constexpr std::uint64_t kSweepLargest = 1ull << 30;
constexpr std::uint64_t kQuickSweepLargest = 4ull << 20;
constexpr std::uint64_t kSweepSmallest = 4096;
constexpr double kFitLargest = 16.0 * (1 << 20);  // the fit uses the sizes up to 16 MiB
constexpr int kHaloTimedSteps = 10;
constexpr std::uint32_t kSeedA = 16, kSeedB = 61, kSeedGrid = 1616;

std::vector<std::string> variant_names() {
  std::vector<std::string> names = {"copy engine b->a",
                                    "copy engine a->b",
                                    "pull cp.async 16B",
                                    "both directions",
                                    "sweep",
                                    "halo"};
  for (Width w : peer_to_peer::kWidths) {
    names.push_back(std::string("pull ") + peer_to_peer::name(w));
    names.push_back(std::string("push ") + peer_to_peer::name(w));
  }
  return names;
}

std::string human(std::uint64_t bytes) {
  if (bytes >= (1ull << 30)) return std::to_string(bytes >> 30) + " GiB";
  if (bytes >= (1ull << 20)) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes >> 10) + " KiB";
}

/// A device buffer of `words` words in the memory of `device`.
course::DeviceBuffer<std::uint32_t> buffer_on(int device, std::size_t words) {
  COURSE_CHECK(cudaSetDevice(device));
  return course::DeviceBuffer<std::uint32_t>(words);
}

/// Poisons `bytes` bytes of `device`'s memory by that device itself, before a checked run.
void poison_on(int device, void* data, std::size_t bytes) {
  const peer_to_peer::CurrentDeviceGuard keep_device;
  COURSE_CHECK(cudaSetDevice(device));
  course::poison(data, bytes, 0);
  COURSE_CHECK(cudaDeviceSynchronize());
}

course::Comparison compare_prefix(const std::vector<std::uint32_t>& expected,
                                  const std::uint32_t* device_data, std::size_t bytes) {
  const std::size_t words = bytes / 4;
  const auto got = course::to_host(cuda::std::span<const std::uint32_t>(device_data, words));
  return course::compare_exact(cuda::std::span<const std::uint32_t>(expected.data(), words),
                               cuda::std::span<const std::uint32_t>(got.data(), words));
}

/// Host time of one step, median of `iters` samples of kHaloTimedSteps steps each.
template <class Step>
double time_halo(peer_to_peer::HaloRing& ring, Step step, int warmup, int iters) {
  for (int i = 0; i < warmup; ++i) step(ring);
  ring.synchronize();
  std::vector<double> samples;
  for (int i = 0; i < std::max(iters, 1); ++i) {
    const auto start = std::chrono::steady_clock::now();
    for (int s = 0; s < kHaloTimedSteps; ++s) step(ring);
    ring.synchronize();
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
    samples.push_back(took.count() / kHaloTimedSteps);
  }
  return course::median(samples);
}

/// The command line: the common flags and the halo ring's shape.
struct Settings {
  course::CommonOptions options;
  int rows = 0, width = 0, radius = 4;
};

void add_flags(course::FlagParser& flags, Settings& s) {
  flags.add_common(s.options,
                   "bytes per copy in the table (a multiple of 16; default 512M, 1M with --quick; "
                   "K/M/G suffixes)",
                   variant_names());
  flags.add_int("rows", &s.rows, 0, "halo ring: rows per GPU (default 8192, 64 with --quick)");
  flags.add_int("width", &s.width, 0, "halo ring: words per row (default 8192, 256 with --quick)");
  flags.add_int("radius", &s.radius, 1, "halo ring: stencil radius = halo rows (default 4)");
}

/// The range checks the flag parser cannot do; run_driver calls it before opening the device.
void validate(const Settings& s) {
  const course::CommonOptions& options = s.options;
  if (options.size % 16 != 0) {
    throw course::UsageError("--size must be a multiple of 16 bytes, got " +
                             std::to_string(options.size));
  }
  if (options.size > kSweepLargest) throw course::UsageError("--size must be at most 1G");
  const int ring_rows = s.rows ? s.rows : (options.quick ? 64 : 8192);
  if (ring_rows < 2 * s.radius) {
    throw course::UsageError("--rows must be at least 2 x --radius (" +
                             std::to_string(2 * s.radius) + "), got " + std::to_string(ring_rows));
  }
}

/// 1. Topology, peer access (connect() twice: the second call finds it enabled), pointers.
void print_topology(int a, int b) {
  const peer_to_peer::PeerLink link = peer_to_peer::connect(a, b);
  std::cout << peer_to_peer::describe(link) << "\n";
  const peer_to_peer::PeerLink again = peer_to_peer::connect(a, b);
  std::cout << "connect() again: peer access already enabled both ways: "
            << (again.ab.was_enabled && again.ba.was_enabled ? "yes" : "no")
            << "; last error afterwards: " << cudaGetErrorName(cudaGetLastError()) << "\n";
}

/// The two GPUs' buffers: a source and a destination on each, as large as the sweep's largest
/// copy, the sources hash-filled from the host copies the checks compare with.
struct PeerBuffers {
  PeerBuffers(int gpu_a, int gpu_b, const course::CommonOptions& options)
      : a(gpu_a),
        b(gpu_b),
        bytes(options.size ? options.size : (options.quick ? kQuickBytes : kDefaultBytes)),
        largest(std::max<std::uint64_t>(bytes, options.quick ? kQuickSweepLargest : kSweepLargest)),
        words(largest / 4),
        src_a(buffer_on(a, words)),
        dst_a(buffer_on(a, words)),
        src_b(buffer_on(b, words)),
        dst_b(buffer_on(b, words)),
        expected_a(words),
        expected_b(words) {
    COURSE_CHECK(cudaSetDevice(a));
    course::fill_hash_host({expected_a.data(), words}, kSeedA);
    course::fill_hash_host({expected_b.data(), words}, kSeedB);
    COURSE_CHECK(cudaMemcpy(src_a.data(), expected_a.data(), largest, cudaMemcpyHostToDevice));
    COURSE_CHECK(cudaMemcpy(src_b.data(), expected_b.data(), largest, cudaMemcpyHostToDevice));
  }

  /// The copy engine's copy of `n` bytes, b's source to a's destination: the reference.
  void engine_b_to_a(cudaStream_t st, std::uint64_t n) const {
    COURSE_CHECK(cudaMemcpyPeerAsync(dst_a.data(), a, src_b.data(), b, n, st));
  }
  /// A row of the table that copies b -> a: a's destination poisoned, then checked.
  course::Variant into_a(const std::string& name, course::Launch run) {
    return {name, static_cast<double>(bytes), std::move(run),
            [this](cudaStream_t st) { course::poison(dst_a.data(), bytes, st); },
            [this] { return compare_prefix(expected_b, dst_a.data(), bytes); }};
  }
  /// A row of the table that copies a -> b: b's destination poisoned by b, then checked.
  course::Variant into_b(const std::string& name, course::Launch run) {
    return {name, static_cast<double>(bytes), std::move(run),
            [this](cudaStream_t) { poison_on(b, dst_b.data(), bytes); },
            [this] { return compare_prefix(expected_a, dst_b.data(), bytes); }};
  }

  const int a, b;
  const std::uint64_t bytes;    ///< bytes per copy of the table
  const std::uint64_t largest;  ///< the sweep's largest copy
  const std::size_t words;
  course::DeviceBuffer<std::uint32_t> src_a, dst_a, src_b, dst_b;
  std::vector<std::uint32_t> expected_a, expected_b;
};

/// Both directions at once: a pulls from b while b pulls from a, on streams of their own.
void run_both_directions(course::Harness& harness, PeerBuffers& p) {
  const peer_to_peer::BothWaysResources both(p.a, p.b);
  const peer_to_peer::BothWays w =
      both.make(p.src_a.data(), p.dst_b.data(), p.src_b.data(), p.dst_a.data(), p.bytes);
  harness.run({"both directions", 2.0 * static_cast<double>(p.bytes),
               [&](cudaStream_t st) { peer_to_peer::issue_both_directions(w, st); },
               [&](cudaStream_t st) {
                 course::poison(p.dst_a.data(), p.bytes, st);
                 COURSE_CHECK(cudaStreamSynchronize(st));
                 poison_on(p.b, p.dst_b.data(), p.bytes);
               },
               [&] {
                 course::Comparison c = compare_prefix(p.expected_b, p.dst_a.data(), p.bytes);
                 const course::Comparison d = compare_prefix(p.expected_a, p.dst_b.data(), p.bytes);
                 c.checked += d.checked;
                 c.mismatches += d.mismatches;
                 return c;
               }});
}

/// 2. The table: the copy engine each way, SM-driven pulls and pushes at every width, and
/// both directions at once.
void run_table(course::Harness& harness, PeerBuffers& p) {
  const auto engine_b_to_a = [&](cudaStream_t st) { p.engine_b_to_a(st, p.bytes); };
  harness.reference("copy engine b->a (reference)", static_cast<double>(p.bytes), engine_b_to_a);
  harness.baseline("copy engine b->a");
  harness.headline("pull 16B");
  harness.target({"pull 16B", 0.90});
  harness.target({"both directions", 1.8});
  harness.run(p.into_a("copy engine b->a", engine_b_to_a));
  harness.run(p.into_b("copy engine a->b", [&](cudaStream_t st) {
    COURSE_CHECK(cudaMemcpyPeerAsync(p.dst_b.data(), p.b, p.src_a.data(), p.a, p.bytes, st));
  }));
  for (Width w : peer_to_peer::kWidths) {
    harness.run(
        p.into_a(std::string("pull ") + peer_to_peer::name(w),
                 peer_to_peer::prepare_copy(w, p.src_b.data(), p.dst_a.data(), p.bytes, p.a)));
  }
  for (Width w : peer_to_peer::kWidths) {
    harness.run(
        p.into_b(std::string("push ") + peer_to_peer::name(w),
                 peer_to_peer::prepare_copy(w, p.src_a.data(), p.dst_b.data(), p.bytes, p.a)));
  }
  run_both_directions(harness, p);
}

/// 3. The size sweep of the copy engine (4 KiB up to the largest copy, each size checked),
/// and the overhead + bandwidth fit over the sizes up to 16 MiB.
void run_size_sweep(course::Harness& harness, PeerBuffers& p,
                    const course::CommonOptions& options) {
  const cudaStream_t s = harness.stream();
  std::vector<double> sizes, us;
  for (std::uint64_t n = kSweepSmallest; n <= p.largest; n *= 2) {
    const auto copy = [&, n](cudaStream_t st) { p.engine_b_to_a(st, n); };
    course::poison(p.dst_a.data(), n, s);
    copy(s);
    COURSE_CHECK(cudaStreamSynchronize(s));
    const bool ok = compare_prefix(p.expected_b, p.dst_a.data(), n).ok();
    const double ms = course::time_stream_work(copy, s, options.warmup, options.iters).median_ms;
    harness.record_sweep("size", {{"bytes", std::to_string(n)}}, "copy engine b->a " + human(n), ms,
                         static_cast<double>(n), ok ? "PASS" : "FAIL");
    sizes.push_back(static_cast<double>(n));
    us.push_back(ms * 1e3);
  }
  try {
    const halo::CopyFit fit = halo::fit_copy_sizes(sizes, us, kFitLargest);
    std::cout << "fit over " << fit.points << " sizes up to 16 MiB: t = " << fit.overhead_us
              << " us + bytes / " << fit.bandwidth_gbps << " GB/s (r^2 " << fit.r_squared
              << "); half the bandwidth from " << fit.break_even_bytes / 1024 << " KiB on\n";
  } catch (const std::exception& e) {
    std::cout << "fit: none (" << e.what() << ")\n";
  }
}

/// 4. The halo ring over every GPU from a on: two steps checked against the CPU, then the
/// step timed overlapped, the exchange alone and the compute alone.
void run_halo_ring(course::Harness& harness, const std::vector<course::DeviceSummary>& devices,
                   const Settings& settings) {
  const course::CommonOptions& options = settings.options;
  const halo::RingLayout layout{
      static_cast<int>(devices.size()), settings.rows ? settings.rows : (options.quick ? 64 : 8192),
      settings.width ? settings.width : (options.quick ? 256 : 8192), settings.radius};
  course::enable_all_peer_access(devices);
  std::vector<int> ordinals;
  for (const auto& d : devices) ordinals.push_back(d.ordinal);
  peer_to_peer::HaloRing ring(ordinals, layout, 0);
  std::vector<std::uint32_t> grid(static_cast<std::size_t>(layout.total_rows()) * layout.width);
  course::fill_hash_host({grid.data(), grid.size()}, kSeedGrid);
  constexpr int kCheckedSteps = 2;
  ring.load(grid);
  for (int step = 0; step < kCheckedSteps; ++step) peer_to_peer::halo_step(ring);
  const auto got = ring.gather();
  const auto want = halo::reference_steps(grid, layout.total_rows(), layout.width, layout.radius, 0,
                                          kCheckedSteps);
  const course::Comparison c =
      course::compare_exact(cuda::std::span<const std::uint32_t>(want.data(), want.size()),
                            cuda::std::span<const std::uint32_t>(got.data(), got.size()));
  std::cout << "halo ring: " << layout.gpus << " GPUs, " << layout.rows << " x " << layout.width
            << " words each, radius " << layout.radius << ", " << kCheckedSteps
            << " steps against the CPU: " << c.summary() << "\n";
  const double amount = static_cast<double>(grid.size()) * 4;
  const double overlapped = time_halo(ring, peer_to_peer::halo_step, options.warmup, options.iters);
  const double exchange =
      time_halo(ring, peer_to_peer::exchange_only, options.warmup, options.iters);
  const double compute = time_halo(ring, peer_to_peer::compute_only, options.warmup, options.iters);
  harness.record("halo step overlapped", overlapped, amount, c.ok() ? "PASS" : "FAIL");
  harness.record("halo exchange alone", exchange, amount, "-");
  harness.record("halo compute alone", compute, amount, "-");
  const double bound = std::max(exchange, compute);
  harness.judged_target("halo step overlapped <= 1.10 x max(exchange alone, compute alone)",
                        overlapped <= 1.10 * bound, bound > 0 ? overlapped / bound : 0);
}

int run(const Settings& settings, const course::DeviceSummary& gpu) {
  const course::CommonOptions& options = settings.options;
  const auto devices = course::open_devices(2, "lesson 16 (copies between GPUs)", gpu.ordinal);
  const int a = devices[0].ordinal, b = devices[1].ordinal;
  course::require_peer_access(a, b, "lesson 16");
  std::cout << "GPUs: " << course::describe_devices(devices) << "\n";
  print_topology(a, b);

  PeerBuffers p(a, b, options);
  std::cout << "a buffer of GPU " << b << " as GPU " << a
            << " sees it: " << peer_to_peer::describe_pointer(p.src_b.data()) << "\n";
  course::Harness harness("16_peer_to_peer", options, gpu);
  run_table(harness, p);
  if (options.variant.empty() || options.variant == "sweep") run_size_sweep(harness, p, options);
  if (options.variant.empty() || options.variant == "halo") {
    run_halo_ring(harness, devices, settings);
  }
  // Last: whether cp.async accepts a peer's memory as its global source (a fault here
  // would end the run, so everything else has been measured by now).
  COURSE_CHECK(cudaSetDevice(a));
  harness.run(p.into_a("pull cp.async 16B", peer_to_peer::prepare_cp_async_copy(
                                                p.src_b.data(), p.dst_a.data(), p.bytes, a)));
  return harness.finish();
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  course::FlagParser flags(
      "16_peer_to_peer",
      "Lesson 16: copies between GPUs. Needs two GPUs with peer access (exits 77 otherwise).\n"
      "--device D picks the first GPU (a); the next one (D + 1) is its peer (b), and the halo\n"
      "ring uses every GPU from D on. The table copies --size bytes each way by the copy\n"
      "engine (cudaMemcpyPeerAsync, the reference: b -> a), by kernels on GPU a that pull\n"
      "(load from b) or push (store to b) at 4, 8 and 16 bytes per access, by cp.async\n"
      "through shared memory, and both ways at once. Then a size sweep of the copy engine\n"
      "with its overhead + bandwidth fit, and a halo exchange around the ring overlapped\n"
      "with a stencil. --variant sweep or --variant halo runs that part alone.");
  add_flags(flags, settings);
  return course::run_driver(
      flags, argc, argv, settings.options,
      [&](const course::DeviceSummary& gpu) { return run(settings, gpu); },
      [&] { validate(settings); });
}
