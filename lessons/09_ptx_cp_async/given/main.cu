// Lesson 09 driver: the multi-stage copy-and-compute kernel built on hand-written cp.async
// PTX, in every copy form (.ca/.cg, 4/8/16 bytes, L2 prefetch sizes, groups or mbarrier
// completion), next to lesson 06's primitives kernel; then the tail workload (rows of an
// awkward length: an `if` around each copy against src-size zero fill) and the cache
// workload (a reused table beside a stream larger than L2: plain copies against L2 cache
// policies). Every output element is checked against a CPU reference; every figure is a
// ratio to yardsticks measured in the same run (the D2D cudaMemcpy and the SM copy roof).
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "course/buffers.h"
#include "course/check.h"
#include "course/data.h"
#include "course/harness.h"
#include "course/launch.h"
#include "course/workload.h"
#include "pipeline_multi_stage.cuh"
#include "ptx_cp_async.cuh"

namespace {

using ptx_cp_async::Form;

constexpr int kThreads = 256;
constexpr int kVectorsPerThread = 4;                      // 16 KB batches, as in lesson 06
constexpr std::uint64_t kDefaultElements = 256ull << 20;  // 1 GiB of input: far beyond L2
constexpr std::uint64_t kQuickElements = 1000003;         // prime: never a whole batch
constexpr std::size_t kTailElements = 64ull << 20;        // tail input: about 256 MB
constexpr std::size_t kQuickTailRows = 1009;
constexpr const char* kLesson = "09_ptx_cp_async";
constexpr const char* kLesson06 = "06-primitives";

std::vector<std::string> variant_names() {
  std::vector<std::string> names{kLesson06};
  for (Form f : ptx_cp_async::kForms) names.emplace_back(ptx_cp_async::name(f));
  for (auto c : {ptx_cp_async::TailCopy::if_wrapped, ptx_cp_async::TailCopy::src_size}) {
    names.emplace_back(ptx_cp_async::name(c));
  }
  for (auto p : {ptx_cp_async::CachePolicy::plain, ptx_cp_async::CachePolicy::hinted}) {
    names.emplace_back(ptx_cp_async::name(p));
  }
  return names;
}

std::string megabytes(double bytes) {
  return std::to_string(static_cast<long long>(bytes / 1e6)) + " MB";
}

/// The command line: the common flags and lesson 09's own.
struct Settings {
  course::CommonOptions options;
  int stages = 4;
  int tail_length = 13;
  int table_percent = 25;

  /// Whether --variant leaves `name` (or every variant starting with `prefix`) in the run.
  bool wants(const std::string& name) const {
    return options.variant.empty() || options.variant == name;
  }
  bool wants_prefix(const std::string& prefix) const {
    return options.variant.empty() || options.variant.rfind(prefix, 0) == 0;
  }
};

void add_flags(course::FlagParser& flags, Settings& s) {
  flags.add_common(s.options, "uint32 elements of the multi-stage input (default 256M = 1 GiB)",
                   variant_names());
  flags.add_int("stages", &s.stages, 0, "stages of the multi-stage kernels, 2 to 8 (default 4)");
  flags.add_int("tail-length", &s.tail_length, 0,
                "elements per row of the tail workload, 1 to 4096 (default 13)");
  flags.add_int("table-percent", &s.table_percent, 0,
                "the cache workload's table as a percentage of L2, 1 to 400 (default 25)");
}

/// The range checks the flag parser cannot do; run_driver calls it before opening the device.
void validate(const Settings& s) {
  course::require_in_range("stages", s.stages, ptx_cp_async::kMinStages, ptx_cp_async::kMaxStages);
  course::require_in_range("tail-length", s.tail_length, 1, 4096);
  course::require_in_range("table-percent", s.table_percent, 1, 400);
}

/// The multi-stage workload: its input on the device, its output, and the CPU's answer.
struct MultiStage {
  explicit MultiStage(std::size_t elements) : n(elements), in(n), out(n), expected(n) {
    course::fill_hash(in.span(), /*seed=*/9);
    const std::vector<std::uint32_t> host_in = course::to_host(in.cspan());
    course::workload::reference(host_in, expected);
  }
  /// A checked variant on this workload: output poisoned, one run, every element compared.
  course::Variant checked(const std::string& name, course::Launch run) {
    return course::Variant{name, course::workload::bytes_moved(n), std::move(run),
                           [this](cudaStream_t s) { course::poison(out.data(), out.bytes(), s); },
                           [this] {
                             return course::compare_exact<std::uint32_t>(
                                 expected, course::to_host(out.cspan()));
                           }};
  }

  const std::size_t n;
  course::DeviceBuffer<std::uint32_t> in, out;
  std::vector<std::uint32_t> expected;
};

/// The multi-stage workload, lesson 06's primitives kernel and then every cp.async form, each
/// with as many blocks per SM as fit.
void run_multi_stage(course::Harness& harness, MultiStage& w, const Settings& s,
                     const course::DeviceSummary& gpu) {
  if (s.wants(kLesson06)) {
    const pipeline_multi_stage::Config config{pipeline_multi_stage::Interface::primitives, s.stages,
                                              kVectorsPerThread};
    const int per_sm = pipeline_multi_stage::max_blocks_per_sm(config, kThreads);
    if (per_sm < 1) throw std::runtime_error("06-primitives: one block does not fit on an SM");
    std::cout << "  " << kLesson06 << ": lesson 06's primitives kernel, " << per_sm
              << " blocks per SM\n";
    harness.run(w.checked(
        kLesson06, pipeline_multi_stage::prepare_copy_and_compute(
                       w.in.cspan(), w.out.span(), config, {gpu.sm_count * per_sm, kThreads})));
  }
  for (Form form : ptx_cp_async::kForms) {
    const std::string name = ptx_cp_async::name(form);
    if (!s.wants(name)) continue;
    const ptx_cp_async::Config config{form, s.stages, kVectorsPerThread};
    const int per_sm = ptx_cp_async::max_blocks_per_sm(config, kThreads);
    if (per_sm < 1) throw std::runtime_error(name + ": one block does not fit on an SM");
    std::cout << "  " << name << ": " << ptx_cp_async::copy_bytes(form) << "-byte copies, "
              << per_sm << " blocks per SM\n";
    harness.run(
        w.checked(name, ptx_cp_async::prepare_copy_and_compute(w.in.cspan(), w.out.span(), config,
                                                               {gpu.sm_count * per_sm, kThreads})));
  }
}

/// --quick only: every cp.async form at every stage count but the main table's, on a small
/// input: 8 blocks of 4 KB batches, 3 batches each, the last one partial. Each stage count
/// compiles its own copy of the copies and waits you wrote, and the race checks run the
/// program --quick: a copy that never runs there is never checked.
void run_every_stage_count(course::Harness& harness, const Settings& s) {
  constexpr int kBlocks = 8;
  MultiStage small(kBlocks * 3 * ptx_cp_async::batch_elements(kThreads, 1) - 37);
  for (Form form : ptx_cp_async::kForms) {
    for (int stages = ptx_cp_async::kMinStages; stages <= ptx_cp_async::kMaxStages; ++stages) {
      if (stages == s.stages) continue;  // the main table ran it
      const std::string name = ptx_cp_async::name(form);
      harness.sweep("stages (--quick)", {{"form", name}, {"stages", std::to_string(stages)}},
                    small.checked(name + ", " + std::to_string(stages) + " stages",
                                  ptx_cp_async::prepare_copy_and_compute(
                                      small.in.cspan(), small.out.span(), {form, stages, 1},
                                      {kBlocks, kThreads})));
    }
  }
}

/// The tail workload: rows of an awkward length, the padding full of garbage that must not
/// leak into the output; each row copied with an `if` around its last chunk or by zero fill.
void run_tail(course::Harness& harness, const Settings& s) {
  const ptx_cp_async::Rows rows{
      s.options.quick ? kQuickTailRows : kTailElements / ptx_cp_async::pitch(s.tail_length),
      static_cast<std::size_t>(s.tail_length)};
  const std::size_t elements = rows.rows * ptx_cp_async::pitch(rows.length);
  course::DeviceBuffer<std::uint32_t> tail_in(elements), tail_out(elements);
  course::fill_hash(tail_in.span(), /*seed=*/91);  // the padding too: it must not leak
  std::vector<std::uint32_t> tail_expected(elements);
  ptx_cp_async::tail_reference(course::to_host(tail_in.cspan()), tail_expected, rows);
  std::cout << "  tail: " << rows.rows << " rows of " << rows.length << " elements (pitch "
            << ptx_cp_async::pitch(rows.length) << "): " << megabytes(tail_in.bytes()) << " in\n";
  for (auto copy : {ptx_cp_async::TailCopy::if_wrapped, ptx_cp_async::TailCopy::src_size}) {
    harness.run(course::Variant{
        ptx_cp_async::name(copy), 2.0 * static_cast<double>(tail_in.bytes()),
        ptx_cp_async::prepare_tail(tail_in.cspan(), tail_out.span(), rows, copy),
        [&](cudaStream_t st) { course::poison(tail_out.data(), tail_out.bytes(), st); },
        [&] {
          return course::compare_exact<std::uint32_t>(tail_expected,
                                                      course::to_host(tail_out.cspan()));
        }});
  }
}

/// The cache workload: a stream of 8 x L2 beside a table of --table-percent of L2 that every
/// block reads again, with plain copies and with L2 cache policies.
void run_cache(course::Harness& harness, const Settings& s, int l2_bytes) {
  const bool quick = s.options.quick;
  const std::size_t batch = ptx_cp_async::kCacheBatch;
  const std::size_t l2_elements = static_cast<std::size_t>(l2_bytes) / 4;
  const std::size_t table_size =
      quick ? 8 * batch
            : std::max<std::size_t>(batch, l2_elements * static_cast<std::size_t>(s.table_percent) /
                                               100 / batch * batch);
  const std::size_t stream_size =
      quick ? 64 * batch : std::max<std::size_t>(64 * batch, 8 * l2_elements / batch * batch);
  course::DeviceBuffer<std::uint32_t> stream(stream_size), table(table_size),
      cache_out(stream_size);
  course::fill_hash(stream.span(), /*seed=*/92);
  course::fill_hash(table.span(), /*seed=*/93);
  std::vector<std::uint32_t> cache_expected(stream_size);
  ptx_cp_async::cache_reference(course::to_host(stream.cspan()), course::to_host(table.cspan()),
                                cache_expected);
  std::cout << "  cache: a stream of " << megabytes(stream.bytes()) << " beside a table of "
            << megabytes(table.bytes()) << " (L2: " << megabytes(l2_bytes) << ")\n";
  for (auto policy : {ptx_cp_async::CachePolicy::plain, ptx_cp_async::CachePolicy::hinted}) {
    harness.run(course::Variant{
        ptx_cp_async::name(policy), 3.0 * static_cast<double>(stream.bytes()),
        ptx_cp_async::prepare_cache(stream.cspan(), table.cspan(), cache_out.span(), policy),
        [&](cudaStream_t st) { course::poison(cache_out.data(), cache_out.bytes(), st); },
        [&] {
          return course::compare_exact<std::uint32_t>(cache_expected,
                                                      course::to_host(cache_out.cspan()));
        }});
  }
}

/// The targets: ratios of this run. The best cp.async form against the SM copy roof and
/// lesson 06, zero fill against the `if`, the cache hint against plain copies.
void add_targets(course::Harness& harness) {
  std::string best;
  for (Form form : ptx_cp_async::kForms) {
    const std::string name = ptx_cp_async::name(form);
    if (harness.rate_of(name) > 0 &&
        (best.empty() || harness.rate_of(name) > harness.rate_of(best))) {
      best = name;
    }
  }
  if (!best.empty()) {
    const double of_roof = harness.rate_of(best) / harness.rate_of("SM copy roof");
    harness.judged_target("best multi-stage variant (" + best + ") >= 0.95 x SM copy roof",
                          of_roof >= 0.95, of_roof);
    if (harness.rate_of(kLesson06) > 0) {
      const double of_06 = harness.rate_of(best) / harness.rate_of(kLesson06);
      harness.judged_target("best multi-stage variant (" + best + ") >= 0.98 x " + kLesson06,
                            of_06 >= 0.98, of_06);
    }
  }
  harness.ratio_target({"tail-src-size", "tail-if", 1.00});
  harness.ratio_target({"cache-hint", "cache-plain", 1.10});
}

int run(const Settings& s, const course::DeviceSummary& gpu) {
  const course::CommonOptions& options = s.options;
  const std::size_t n =
      options.size ? options.size : (options.quick ? kQuickElements : kDefaultElements);
  int l2_bytes = 0;
  COURSE_CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, gpu.ordinal));
  std::cout << "lesson 09 ptx_cp_async: " << n << " uint32 elements, " << kThreads
            << " threads per block, " << s.stages
            << " stages of 16 KB batches; L2: " << megabytes(l2_bytes)
            << "; GB/s counts bytes read + bytes written\n";

  MultiStage w(n);
  course::Harness harness(kLesson, options, gpu);
  harness.reference_d2d_copy(w.out.data(), w.in.data(), w.in.bytes());
  harness.roof_sm_copy(w.out.data(), w.in.data(), w.in.bytes());
  harness.headline("cg16");
  run_multi_stage(harness, w, s, gpu);
  if (options.quick && options.variant.empty()) run_every_stage_count(harness, s);
  if (const unsigned long long gave_up = ptx_cp_async::take_wait_timeouts(); gave_up != 0) {
    std::cout << "  " << gave_up << " mbarrier wait(s) gave up after 2 s: a batch's phase never "
              << "completed (a lost arrival, a wrong count or parity), so its values are wrong\n";
  }
  if (s.wants_prefix("tail-")) run_tail(harness, s);
  if (s.wants_prefix("cache-")) run_cache(harness, s, l2_bytes);
  add_targets(harness);
  return harness.finish();
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  course::FlagParser flags(
      kLesson,
      "Lesson 09: cp.async in inline PTX. The multi-stage copy-and-compute kernel of lesson 06\n"
      "in every copy form: ca4, ca8, ca16 (through L1), cg16 (L1 bypassed), cg16 with the\n"
      ".L2::64B/128B/256B prefetch sizes, cg16 completed through an mbarrier (with and\n"
      "without .noinc), next to lesson 06's primitives kernel ('06-primitives'), all at full\n"
      "occupancy. Then 'tail-if' vs 'tail-src-size' on rows of --tail-length elements (each\n"
      "ending in a partial 16-byte chunk), and 'cache-plain' vs 'cache-hint' on a stream of\n"
      "8 x L2 beside a table (--table-percent of L2) that every block reads again.");
  add_flags(flags, settings);
  return course::run_driver(
      flags, argc, argv, settings.options,
      [&](const course::DeviceSummary& gpu) { return run(settings, gpu); },
      [&] { validate(settings); });
}
