// Lesson 04 driver (read-only): the same staged byte copy (global -> shared -> global)
// issued with every element type and alignment promise, with cuda::memcpy_async and with
// cooperative_groups::memcpy_async, from 128-byte aligned, merely 16-byte aligned and
// misaligned addresses. Every variant is checked byte by byte (guard bytes around the output
// included) and timed against a device-to-device cudaMemcpy and the SM copy roof measured in
// the same run. One line per variant then says what the compiler emitted for its copy (read
// from the PTX embedded in this very executable: parts_emitted_ptx.cu) and what memcpy_async
// returned.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "alignment.cuh"
#include "alignment_parts.h"
#include "course/buffers.h"
#include "course/check.h"
#include "course/data.h"
#include "course/harness.h"

namespace {

using alignment::kMatchSource;
using alignment::Method;
using alignment::parts::Emitted;

constexpr int kThreads = 256;
constexpr std::uint64_t kDefaultBytes = 1ull << 30;  // 1 GiB: far beyond L2
constexpr std::uint64_t kQuickBytes = 1000003;       // prime: odd, and never a whole batch
// Room around each array: offsets up to 16 bytes, and guard bytes that must stay poisoned.
constexpr std::size_t kSlack = 256;
// At most 32 resident blocks per SM on sm_80 and sm_90.
constexpr int kMaxBlocksPerSm = 32;
constexpr std::uint32_t kSeed = 4;
constexpr const char* kLesson = "04_alignment";
constexpr const char* kHeadline = "cuda/char/aligned16";

struct VariantSpec {
  std::string name;
  Method method;
  std::size_t offset;        // bytes past the allocation (256-byte aligned) of in and out
  std::size_t stage_offset;  // bytes past a 128-byte boundary of shared memory, or kMatchSource
};

/// The command line, as given: the common flags and --blocks-per-sm.
struct Settings {
  course::CommonOptions options;
  int blocks_per_sm = 0;
};

/// Every size and count of the run, resolved from the command line.
struct Plan {
  std::size_t bytes = 0;
  int blocks_per_sm = 0;     ///< 0: as many as fit, asked per kernel
  bool peeled_at_8 = false;  ///< --quick's extra row (run_peeled_at_8)
};

/// The byte arrays: word buffers (hash-filled 4 bytes at a time), used as bytes at an offset,
/// with kSlack bytes of room for the offsets and the guard bytes; the input's bytes on the
/// host; the slot where a kernel reports what memcpy_async returned.
struct ByteArrays {
  explicit ByteArrays(std::size_t n);

  const std::size_t words;
  course::DeviceBuffer<std::uint32_t> in_words, out_words;
  const std::uint8_t* const in_base;
  std::uint8_t* const out_base;
  const std::size_t total;  ///< bytes of each array, slack included
  std::vector<std::uint8_t> host_in;
  course::DeviceBuffer<unsigned> returned{1};
};

Plan make_plan(const Settings& s);
void print_intro(const Plan& plan);
void add_yardsticks_and_targets(course::Harness& harness, const ByteArrays& a, std::size_t n);
void run_variants(course::Harness& harness, ByteArrays& a, const Plan& plan,
                  const std::vector<VariantSpec>& variants, const Emitted& emitted,
                  const course::DeviceSummary& gpu);
void run_peeled_at_8(course::Harness& harness, ByteArrays& a, std::size_t n,
                     const course::DeviceSummary& gpu);

/// The output, part by part: the intro line, the table with a line per variant, --quick's
/// extra row.
int run(const Settings& s, const std::vector<VariantSpec>& variants,
        const course::DeviceSummary& gpu) {
  const Plan plan = make_plan(s);
  print_intro(plan);
  const Emitted emitted = alignment::parts::read_emitted(gpu);
  ByteArrays a(plan.bytes);
  course::Harness harness(kLesson, s.options, gpu);
  add_yardsticks_and_targets(harness, a, plan.bytes);
  run_variants(harness, a, plan, variants, emitted, gpu);
  if (plan.peeled_at_8) run_peeled_at_8(harness, a, plan.bytes, gpu);
  return harness.finish();
}

/// --size, --blocks-per-sm and --quick resolved: the one place that reads --quick.
Plan make_plan(const Settings& s) {
  const course::CommonOptions& options = s.options;
  return {options.size ? options.size : (options.quick ? kQuickBytes : kDefaultBytes),
          s.blocks_per_sm, options.quick && options.variant.empty()};
}

void print_intro(const Plan& plan) {
  std::cout << "lesson 04 alignment: " << plan.bytes << " bytes, " << kThreads
            << " threads per block, batches of " << alignment::kBatchBytes
            << " bytes; GB/s counts bytes read + bytes written\n";
}

std::vector<std::uint8_t> bytes_to_host(const void* device_data, std::size_t bytes) {
  std::vector<std::uint8_t> host(bytes);
  COURSE_CHECK(cudaMemcpy(host.data(), device_data, bytes, cudaMemcpyDeviceToHost));
  return host;
}

std::string mod16(std::size_t offset) { return std::to_string(offset % 16); }

ByteArrays::ByteArrays(std::size_t n)
    : words((n + kSlack + 3) / 4),
      in_words(words),
      out_words(words),
      in_base(reinterpret_cast<const std::uint8_t*>(in_words.data())),
      out_base(reinterpret_cast<std::uint8_t*>(out_words.data())),
      total(out_words.bytes()) {
  course::fill_hash(in_words.span(), kSeed);
  // A synchronous copy: when it returns, the fill is done too.
  host_in = bytes_to_host(in_base, total);
}

void add_yardsticks_and_targets(course::Harness& harness, const ByteArrays& a, std::size_t n) {
  harness.reference_d2d_copy(a.out_base, a.in_base, n);
  // The roof kernel copies 16-byte vectors: the input's whole vectors (the rate is per byte).
  harness.roof_sm_copy(a.out_base, a.in_base, n - n % 16);
  harness.baseline("cuda/char/size_t");
  harness.headline(kHeadline);
  harness.target({kHeadline, 0.80});
}

/// One variant: the copied window checked (it equals the input, every byte around it is
/// poison), then, when it ran, the line with its launch, its alignments, what its copy
/// compiled to and what memcpy_async returned.
void run_spec(course::Harness& harness, ByteArrays& a, const Plan& plan, const VariantSpec& spec,
              const Emitted& emitted, const course::DeviceSummary& gpu) {
  const std::size_t n = plan.bytes;
  // A type or a promise of N bytes needs a size that is a multiple of N.
  const std::size_t bytes = n - n % alignment::required_alignment(spec.method);
  const int resident = alignment::max_blocks_per_sm(spec.method, kThreads);
  const int per_sm = plan.blocks_per_sm > 0 ? plan.blocks_per_sm : resident;
  // No more blocks than batches: a block without a batch would only start and stop.
  const std::size_t batches = (bytes + alignment::kBatchBytes - 1) / alignment::kBatchBytes;
  const int blocks = static_cast<int>(
      std::max<std::size_t>(1, std::min<std::size_t>(gpu.sm_count * per_sm, batches)));
  const alignment::LaunchShape shape{blocks, kThreads};
  const cuda::std::span<const std::uint8_t> in(a.in_base + spec.offset, bytes);
  const cuda::std::span<std::uint8_t> out(a.out_base + spec.offset, bytes);
  std::optional<unsigned> returned;  // set by the check: the variant ran
  harness.run({
      spec.name,
      2.0 * static_cast<double>(bytes),
      alignment::prepare_staged_copy(spec.method, in, out, spec.stage_offset, shape,
                                     a.returned.data()),
      [&](cudaStream_t s) {
        course::poison(a.out_base, a.total, s);
        COURSE_CHECK(cudaMemsetAsync(a.returned.data(), 0, sizeof(unsigned), s));
      },
      [&] {
        unsigned flags_seen = 0;
        COURSE_CHECK(
            cudaMemcpy(&flags_seen, a.returned.data(), sizeof(unsigned), cudaMemcpyDeviceToHost));
        returned = flags_seen;
        // Expected: the copied window equals the input, every byte around it is poison.
        std::vector<std::uint8_t> expected(a.total, course::kPoisonByte);
        std::memcpy(expected.data() + spec.offset, a.host_in.data() + spec.offset, bytes);
        const auto actual = bytes_to_host(a.out_base, a.total);
        return course::compare_exact<std::uint8_t>(expected, actual);
      },
  });
  if (!returned) return;  // not run (--variant)
  const std::size_t stage = spec.stage_offset == kMatchSource ? spec.offset : spec.stage_offset;
  const auto e = emitted.by_method.find(spec.method);
  std::cout << "  " << spec.name << ": " << shape.blocks << " blocks (" << per_sm
            << " per SM, at most " << resident << " fit; never more than the " << batches
            << " batches), " << bytes << " bytes\n      src,stage mod 16 = " << mod16(spec.offset)
            << "," << mod16(stage) << "; needs " << alignment::required_alignment(spec.method)
            << " B; emitted: " << (e == emitted.by_method.end() ? "?" : e->second)
            << "; returned: " << alignment::describe_returned(*returned) << "\n";
}

/// The line that says what each variant's line holds, then every variant.
void run_variants(course::Harness& harness, ByteArrays& a, const Plan& plan,
                  const std::vector<VariantSpec>& variants, const Emitted& emitted,
                  const course::DeviceSummary& gpu) {
  std::cout << "each variant: its launch, where source and stage start modulo 16, the "
               "alignment its type or promise needs, what its copy compiled to ("
            << (emitted.target.empty() ? "?" : emitted.target)
            << " PTX of this executable) and what memcpy_async returned:\n";
  for (const VariantSpec& spec : variants) run_spec(harness, a, plan, spec, emitted, gpu);
}

/// --quick only: the peeled copy with source and stage 8 bytes apart modulo 16, so that its
/// body goes through copy_peeled_at<8>, which no table row takes. The race checks run the
/// program --quick: each copy_peeled_at<A> you wrote must run there to be checked.
void run_peeled_at_8(course::Harness& harness, ByteArrays& a, std::size_t n,
                     const course::DeviceSummary& gpu) {
  const cuda::std::span<const std::uint8_t> in(a.in_base + 8, n);
  const cuda::std::span<std::uint8_t> out(a.out_base + 8, n);
  harness.sweep(
      "peeled (--quick)", {{"source", "+8"}, {"stage", "+0"}},
      {"peeled/src+8/stage+0", 2.0 * static_cast<double>(n),
       alignment::prepare_staged_copy(Method::peeled, in, out, 0, {gpu.sm_count, kThreads}),
       [&a](cudaStream_t st) { course::poison(a.out_base, a.total, st); },
       [&a, n] {
         std::vector<std::uint8_t> expected(a.total, course::kPoisonByte);
         std::memcpy(expected.data() + 8, a.host_in.data() + 8, n);
         return course::compare_exact<std::uint8_t>(expected, bytes_to_host(a.out_base, a.total));
       }});
}

std::vector<VariantSpec> make_variants() {
  std::vector<VariantSpec> variants;
  // 1. What the type or the promise tells the compiler: every method except the peeled
  //    one, on 128-byte aligned arrays and a 128-byte aligned stage.
  for (const alignment::MethodInfo& m : alignment::kMethods) {
    if (m.method != Method::peeled) variants.push_back({m.name, m.method, 0, 0});
  }
  // 2. 16-byte aligned but not 128-byte aligned arrays and stage.
  variants.push_back({"cuda/char/aligned16@16B", Method::cuda_char_aligned16, 16, 16});
  variants.push_back({"cg/int4/size_t@16B", Method::cg_int4_size_t, 16, 16});
  // 3. Misaligned data, any byte count: the peeled copy, and cooperative groups' run-time
  //    dispatch, with the stage placed like the source or at a fixed offset.
  variants.push_back({"peeled/src+0/matched", Method::peeled, 0, kMatchSource});
  variants.push_back({"peeled/src+3/matched", Method::peeled, 3, kMatchSource});
  variants.push_back({"peeled/src+4/stage+0", Method::peeled, 4, 0});
  variants.push_back({"peeled/src+3/stage+0", Method::peeled, 3, 0});
  variants.push_back({"cg/char/size_t/src+3/matched", Method::cg_char_size_t, 3, kMatchSource});
  variants.push_back({"cg/char/size_t/src+3/stage+0", Method::cg_char_size_t, 3, 0});
  return variants;
}

void add_flags(course::FlagParser& flags, Settings& s, const std::vector<VariantSpec>& variants) {
  flags.add_common(s.options,
                   "bytes to copy (default " + course::count_text(kDefaultBytes) + " = " +
                       course::bytes_text(kDefaultBytes) + "; K/M/G suffixes)",
                   course::names_of(variants));
  flags.add_int("blocks-per-sm", &s.blocks_per_sm, 0,
                "blocks per SM (default 0: as many as fit, asked per kernel; at most " +
                    std::to_string(kMaxBlocksPerSm) + ")");
}

/// The range check the flag parser cannot do; run_driver calls it before opening the device.
void validate(const Settings& s) {
  course::require_in_range("blocks-per-sm", s.blocks_per_sm, 0, kMaxBlocksPerSm);
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  const std::vector<VariantSpec> variants = make_variants();
  course::FlagParser flags(
      kLesson,
      "Lesson 04: alignment and trivially copyable types. Every variant copies a byte array\n"
      "global -> shared -> global in 16 KB batches; only the memcpy_async call that stages a\n"
      "batch differs: cuda::memcpy_async (with a block-scope cuda::barrier) or\n"
      "cooperative_groups::memcpy_async (cg), through char/short/int/int2/int4 pointers with a\n"
      "size_t count or with cuda::aligned_size_t<N> (alignedN); '@16B' variants use 16-byte\n"
      "but not 128-byte aligned addresses; 'peeled' copies any address and size with a byte\n"
      "head and tail around an aligned body. 'matched' places the shared buffer like the source.");
  add_flags(flags, settings, variants);
  return course::run_driver(
      flags, argc, argv, settings.options,
      [&](const course::DeviceSummary& gpu) { return run(settings, variants, gpu); },
      [&] { validate(settings); });
}
