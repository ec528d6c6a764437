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
// Every copy's data is verified, every word. The buffers and part 3 are in parts_copies.cu,
// part 4 in parts_halo.cu.
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "course/buffers.h"
#include "course/check.h"
#include "course/harness.h"
#include "course/multi_gpu.h"
#include "peer_to_peer.cuh"
#include "peer_to_peer_parts.h"

namespace {

namespace parts = peer_to_peer::parts;
using parts::compare_prefix;
using parts::PeerBuffers;
using parts::poison_on;
using peer_to_peer::Width;

constexpr std::uint64_t kDefaultBytes = 512ull << 20;  // 512 MiB: far beyond any L2
constexpr std::uint64_t kQuickBytes = 1ull << 20;
constexpr std::uint64_t kSweepLargest = 1ull << 30;
constexpr std::uint64_t kQuickSweepLargest = 4ull << 20;
constexpr int kDefaultRingRows = 8192, kQuickRingRows = 64;     // the halo ring's rows per GPU
constexpr int kDefaultRingWidth = 8192, kQuickRingWidth = 256;  // and words per row
constexpr int kDefaultRadius = 4;
constexpr const char* kLesson = "16_peer_to_peer";
constexpr const char* kHeadline = "pull 16B";
constexpr const char* kSweepVariant = "sweep";  // --variant names for parts 3 and 4
constexpr const char* kHaloVariant = "halo";

/// The command line, as given: the common flags and the halo ring's shape.
struct Settings {
  course::CommonOptions options;
  int rows = 0, width = 0, radius = kDefaultRadius;
};

/// Every size and count of the run, resolved from the command line.
struct Plan {
  std::uint64_t bytes = 0;    ///< per copy of the table
  std::uint64_t largest = 0;  ///< the size sweep's largest copy
  int ring_rows = 0, ring_width = 0, radius = 0;
  std::string variant;  ///< the one row or part --variant asks for; empty: all

  /// Whether --variant leaves part `name` in the run.
  bool runs(const char* name) const { return variant.empty() || variant == name; }
};

Plan make_plan(const Settings& s);
void print_topology(int a, int b);
void run_table(course::Harness& harness, PeerBuffers& p);

/// The output, part by part: the GPUs and their link, the table, the size sweep, the halo
/// ring, and last the cp.async row.
int run(const Settings& s, const course::DeviceSummary& gpu) {
  const course::CommonOptions& options = s.options;
  const Plan plan = make_plan(s);
  const auto devices = course::open_devices(2, "lesson 16 (copies between GPUs)", gpu.ordinal);
  const int a = devices[0].ordinal, b = devices[1].ordinal;
  course::require_peer_access(a, b, "lesson 16");
  std::cout << "GPUs: " << course::describe_devices(devices) << "\n";
  print_topology(a, b);
  PeerBuffers p(a, b, plan.bytes, plan.largest);
  std::cout << "a buffer of GPU " << b << " as GPU " << a
            << " sees it: " << peer_to_peer::describe_pointer(p.src_b.data()) << "\n";
  course::Harness harness(kLesson, options, gpu);
  run_table(harness, p);
  if (plan.runs(kSweepVariant)) parts::run_size_sweep(harness, p, options.warmup, options.iters);
  if (plan.runs(kHaloVariant)) {
    const halo::RingLayout layout{static_cast<int>(devices.size()), plan.ring_rows, plan.ring_width,
                                  plan.radius};
    parts::run_halo_ring(harness, devices, layout, options.warmup, options.iters);
  }
  // Last: whether cp.async accepts a peer's memory as its global source (a fault here
  // would end the run, so everything else has been measured by now).
  COURSE_CHECK(cudaSetDevice(a));
  harness.run(p.into_a("pull cp.async 16B", peer_to_peer::prepare_cp_async_copy(
                                                p.src_b.data(), p.dst_a.data(), p.bytes, a)));
  return harness.finish();
}

/// The flags resolved: the one place that reads --quick.
Plan make_plan(const Settings& s) {
  const course::CommonOptions& options = s.options;
  const bool quick = options.quick;
  Plan plan;
  plan.bytes = options.size ? options.size : (quick ? kQuickBytes : kDefaultBytes);
  plan.largest = std::max<std::uint64_t>(plan.bytes, quick ? kQuickSweepLargest : kSweepLargest);
  plan.ring_rows = s.rows ? s.rows : (quick ? kQuickRingRows : kDefaultRingRows);
  plan.ring_width = s.width ? s.width : (quick ? kQuickRingWidth : kDefaultRingWidth);
  plan.radius = s.radius;
  plan.variant = options.variant;
  return plan;
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
  harness.headline(kHeadline);
  harness.target({kHeadline, 0.90});
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

std::vector<std::string> variant_names() {
  std::vector<std::string> names = {"copy engine b->a", "copy engine a->b", "pull cp.async 16B",
                                    "both directions",  kSweepVariant,      kHaloVariant};
  for (Width w : peer_to_peer::kWidths) {
    names.push_back(std::string("pull ") + peer_to_peer::name(w));
    names.push_back(std::string("push ") + peer_to_peer::name(w));
  }
  return names;
}

void add_flags(course::FlagParser& flags, Settings& s) {
  const auto defaults = [](int full, int quick) {
    return "(default " + std::to_string(full) + ", " + std::to_string(quick) + " with --quick)";
  };
  flags.add_common(s.options,
                   "bytes per copy in the table (a multiple of 16; default " +
                       course::count_text(kDefaultBytes) + ", " + course::count_text(kQuickBytes) +
                       " with --quick; K/M/G suffixes)",
                   variant_names());
  flags.add_int("rows", &s.rows, 0,
                "halo ring: rows per GPU " + defaults(kDefaultRingRows, kQuickRingRows));
  flags.add_int("width", &s.width, 0,
                "halo ring: words per row " + defaults(kDefaultRingWidth, kQuickRingWidth));
  flags.add_int(
      "radius", &s.radius, 1,
      "halo ring: stencil radius = halo rows (default " + std::to_string(kDefaultRadius) + ")");
}

/// The range checks the flag parser cannot do; run_driver calls it before opening the device.
void validate(const Settings& s) {
  const Plan plan = make_plan(s);
  if (s.options.size % 16 != 0) {
    throw course::UsageError("--size must be a multiple of 16 bytes, got " +
                             std::to_string(s.options.size));
  }
  if (s.options.size > kSweepLargest) {
    throw course::UsageError("--size must be at most " + course::count_text(kSweepLargest));
  }
  if (plan.ring_rows < 2 * plan.radius) {
    throw course::UsageError("--rows must be at least 2 x --radius (" +
                             std::to_string(2 * plan.radius) + "), got " +
                             std::to_string(plan.ring_rows));
  }
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  course::FlagParser flags(
      kLesson,
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
