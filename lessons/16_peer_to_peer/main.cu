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
  int current = 0;
  COURSE_CHECK(cudaGetDevice(&current));
  COURSE_CHECK(cudaSetDevice(device));
  course::poison(data, bytes, 0);
  COURSE_CHECK(cudaDeviceSynchronize());
  COURSE_CHECK(cudaSetDevice(current));
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

}  // namespace

int main(int argc, char** argv) {
  course::CommonOptions options;
  int rows = 0, width = 0, radius = 4;
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
  flags.add_common(options,
                   "bytes per copy in the table (a multiple of 16; default 512M, 1M with --quick; "
                   "K/M/G suffixes)",
                   variant_names());
  flags.add_int("rows", &rows, 0, "halo ring: rows per GPU (default 8192, 64 with --quick)");
  flags.add_int("width", &width, 0, "halo ring: words per row (default 8192, 256 with --quick)");
  flags.add_int("radius", &radius, 1, "halo ring: stencil radius = halo rows (default 4)");
  const auto validate = [&] {
    if (options.size % 16 != 0) {
      throw course::UsageError("--size must be a multiple of 16 bytes, got " +
                               std::to_string(options.size));
    }
    if (options.size > kSweepLargest) throw course::UsageError("--size must be at most 1G");
    const int ring_rows = rows ? rows : (options.quick ? 64 : 8192);
    if (ring_rows < 2 * radius) {
      throw course::UsageError("--rows must be at least 2 x --radius (" +
                               std::to_string(2 * radius) + "), got " + std::to_string(ring_rows));
    }
  };

  return course::run_driver(
      flags, argc, argv, options,
      [&](const course::DeviceSummary& gpu) {
        const auto devices =
            course::open_devices(2, "lesson 16 (copies between GPUs)", gpu.ordinal);
        const int a = devices[0].ordinal, b = devices[1].ordinal;
        course::require_peer_access(a, b, "lesson 16");
        std::cout << "GPUs: " << course::describe_devices(devices) << "\n";

        // 1. Topology, peer access, pointers.
        const peer_to_peer::PeerLink link = peer_to_peer::connect(a, b);
        std::cout << peer_to_peer::describe(link) << "\n";
        const peer_to_peer::PeerLink again = peer_to_peer::connect(a, b);
        std::cout << "connect() again: peer access already enabled both ways: "
                  << (again.ab.was_enabled && again.ba.was_enabled ? "yes" : "no")
                  << "; last error afterwards: " << cudaGetErrorName(cudaGetLastError()) << "\n";

        const std::uint64_t bytes =
            options.size ? options.size : (options.quick ? kQuickBytes : kDefaultBytes);
        const std::uint64_t largest =
            std::max<std::uint64_t>(bytes, options.quick ? kQuickSweepLargest : kSweepLargest);
        const std::size_t words = largest / 4;
        auto src_a = buffer_on(a, words), dst_a = buffer_on(a, words);
        auto src_b = buffer_on(b, words), dst_b = buffer_on(b, words);
        COURSE_CHECK(cudaSetDevice(a));
        std::vector<std::uint32_t> expected_a(words), expected_b(words);
        course::fill_hash_host({expected_a.data(), words}, kSeedA);
        course::fill_hash_host({expected_b.data(), words}, kSeedB);
        COURSE_CHECK(cudaMemcpy(src_a.data(), expected_a.data(), largest, cudaMemcpyHostToDevice));
        COURSE_CHECK(cudaMemcpy(src_b.data(), expected_b.data(), largest, cudaMemcpyHostToDevice));
        std::cout << "a buffer of GPU " << b << " as GPU " << a
                  << " sees it: " << peer_to_peer::describe_pointer(src_b.data()) << "\n";

        // 2. The table.
        course::Harness harness("16_peer_to_peer", options, gpu);
        const cudaStream_t s = harness.stream();
        const auto engine_b_to_a = [&](cudaStream_t st) {
          COURSE_CHECK(cudaMemcpyPeerAsync(dst_a.data(), a, src_b.data(), b, bytes, st));
        };
        harness.reference("copy engine b->a (reference)", static_cast<double>(bytes),
                          engine_b_to_a);
        harness.baseline("copy engine b->a");
        harness.headline("pull 16B");
        harness.target({"pull 16B", 0.90});
        harness.target({"both directions", 1.8});
        const auto into_a = [&](const std::string& name, course::Launch run) {
          harness.run({name, static_cast<double>(bytes), std::move(run),
                       [&](cudaStream_t st) { course::poison(dst_a.data(), bytes, st); },
                       [&] { return compare_prefix(expected_b, dst_a.data(), bytes); }});
        };
        const auto into_b = [&](const std::string& name, course::Launch run) {
          harness.run({name, static_cast<double>(bytes), std::move(run),
                       [&](cudaStream_t) { poison_on(b, dst_b.data(), bytes); },
                       [&] { return compare_prefix(expected_a, dst_b.data(), bytes); }});
        };
        into_a("copy engine b->a", engine_b_to_a);
        into_b("copy engine a->b", [&](cudaStream_t st) {
          COURSE_CHECK(cudaMemcpyPeerAsync(dst_b.data(), b, src_a.data(), a, bytes, st));
        });
        for (Width w : peer_to_peer::kWidths) {
          into_a(std::string("pull ") + peer_to_peer::name(w),
                 peer_to_peer::prepare_copy(w, src_b.data(), dst_a.data(), bytes, a));
        }
        for (Width w : peer_to_peer::kWidths) {
          into_b(std::string("push ") + peer_to_peer::name(w),
                 peer_to_peer::prepare_copy(w, src_a.data(), dst_b.data(), bytes, a));
        }
        {
          const peer_to_peer::BothWaysResources both(a, b);
          const peer_to_peer::BothWays w =
              both.make(src_a.data(), dst_b.data(), src_b.data(), dst_a.data(), bytes);
          harness.run({"both directions", 2.0 * static_cast<double>(bytes),
                       [&](cudaStream_t st) { peer_to_peer::issue_both_directions(w, st); },
                       [&](cudaStream_t st) {
                         course::poison(dst_a.data(), bytes, st);
                         COURSE_CHECK(cudaStreamSynchronize(st));
                         poison_on(b, dst_b.data(), bytes);
                       },
                       [&] {
                         course::Comparison c = compare_prefix(expected_b, dst_a.data(), bytes);
                         const course::Comparison d =
                             compare_prefix(expected_a, dst_b.data(), bytes);
                         c.checked += d.checked;
                         c.mismatches += d.mismatches;
                         return c;
                       }});
        }
        // 3. The size sweep of the copy engine, and the fit.
        if (options.variant.empty() || options.variant == "sweep") {
          std::vector<double> sizes, us;
          for (std::uint64_t n = kSweepSmallest; n <= largest; n *= 2) {
            const auto copy = [&, n](cudaStream_t st) {
              COURSE_CHECK(cudaMemcpyPeerAsync(dst_a.data(), a, src_b.data(), b, n, st));
            };
            course::poison(dst_a.data(), n, s);
            copy(s);
            COURSE_CHECK(cudaStreamSynchronize(s));
            const bool ok = compare_prefix(expected_b, dst_a.data(), n).ok();
            const double ms =
                course::time_stream_work(copy, s, options.warmup, options.iters).median_ms;
            harness.record_sweep("size", {{"bytes", std::to_string(n)}},
                                 "copy engine b->a " + human(n), ms, static_cast<double>(n),
                                 ok ? "PASS" : "FAIL");
            sizes.push_back(static_cast<double>(n));
            us.push_back(ms * 1e3);
          }
          try {
            const halo::CopyFit fit = halo::fit_copy_sizes(sizes, us, kFitLargest);
            std::cout << "fit over " << fit.points << " sizes up to 16 MiB: t = " << fit.overhead_us
                      << " us + bytes / " << fit.bandwidth_gbps << " GB/s (r^2 " << fit.r_squared
                      << "); half the bandwidth from " << fit.break_even_bytes / 1024
                      << " KiB on\n";
          } catch (const std::exception& e) {
            std::cout << "fit: none (" << e.what() << ")\n";
          }
        }

        // 4. The halo ring over every GPU from a on.
        if (options.variant.empty() || options.variant == "halo") {
          const halo::RingLayout layout{static_cast<int>(devices.size()),
                                        rows ? rows : (options.quick ? 64 : 8192),
                                        width ? width : (options.quick ? 256 : 8192), radius};
          course::enable_all_peer_access(devices);
          std::vector<int> ordinals;
          for (const auto& d : devices) ordinals.push_back(d.ordinal);
          peer_to_peer::HaloRing ring(ordinals, layout, 0);
          std::vector<std::uint32_t> grid(static_cast<std::size_t>(layout.total_rows()) *
                                          layout.width);
          course::fill_hash_host({grid.data(), grid.size()}, kSeedGrid);
          constexpr int kCheckedSteps = 2;
          ring.load(grid);
          for (int step = 0; step < kCheckedSteps; ++step) peer_to_peer::halo_step(ring);
          const auto got = ring.gather();
          const auto want = halo::reference_steps(grid, layout.total_rows(), layout.width,
                                                  layout.radius, 0, kCheckedSteps);
          const course::Comparison c =
              course::compare_exact(cuda::std::span<const std::uint32_t>(want.data(), want.size()),
                                    cuda::std::span<const std::uint32_t>(got.data(), got.size()));
          std::cout << "halo ring: " << layout.gpus << " GPUs, " << layout.rows << " x "
                    << layout.width << " words each, radius " << layout.radius << ", "
                    << kCheckedSteps << " steps against the CPU: " << c.summary() << "\n";
          const double amount = static_cast<double>(grid.size()) * 4;
          const double overlapped =
              time_halo(ring, peer_to_peer::halo_step, options.warmup, options.iters);
          const double exchange =
              time_halo(ring, peer_to_peer::exchange_only, options.warmup, options.iters);
          const double compute =
              time_halo(ring, peer_to_peer::compute_only, options.warmup, options.iters);
          harness.record("halo step overlapped", overlapped, amount, c.ok() ? "PASS" : "FAIL");
          harness.record("halo exchange alone", exchange, amount, "-");
          harness.record("halo compute alone", compute, amount, "-");
          const double bound = std::max(exchange, compute);
          harness.judged_target("halo step overlapped <= 1.10 x max(exchange alone, compute alone)",
                                overlapped <= 1.10 * bound, bound > 0 ? overlapped / bound : 0);
        }
        // Last: whether cp.async accepts a peer's memory as its global source (a fault here
        // would end the run, so everything else has been measured by now).
        COURSE_CHECK(cudaSetDevice(a));
        into_a("pull cp.async 16B",
               peer_to_peer::prepare_cp_async_copy(src_b.data(), dst_a.data(), bytes, a));
        return harness.finish();
      },
      validate);
}
