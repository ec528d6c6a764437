// Lesson 09 tests: built twice, against the starter (label `lesson`) and against the
// solution (label `solution`). GPU suites are named Gpu...; they skip without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "course/buffers.h"
#include "course/check.h"
#include "course/data.h"
#include "course/inspect.h"
#include "course/workload.h"
#include "gpu_test.h"
#include "ptx_cp_async.cuh"

namespace {

using course::testing::concerns_todo;
using course::testing::concerns_todos;
using ptx_cp_async::Config;
using ptx_cp_async::Form;
using ptx_cp_async::kMaxStages;
using ptx_cp_async::kMinStages;
using ptx_cp_async::LaunchShape;
using ptx_cp_async::ProbeForm;
using ptx_cp_async::Rows;
using ptx_cp_async::TailCopy;

const std::vector<std::size_t> kAwkwardSizes = {1,    31,   32,   33,    255,   256,   257,
                                                4095, 4096, 4097, 16383, 16385, 65537, 1000003};

/// The TODOs a multi-stage form's values depend on.
std::string todos_of(Form form) {
  std::string tags = concerns_todos({1, 2, 6, 7});
  if (ptx_cp_async::uses_mbarrier(form)) tags += concerns_todo(5);
  return tags;
}

/// The multi-stage kernel on hash-filled input of `n` elements into a poisoned output:
/// every element against the CPU reference, and the input unchanged. A failure names the
/// TODOs (partial batches also depend on the zero fill and ignore-src, TODOs 3 and 4).
::testing::AssertionResult matches_reference(const Config& config, LaunchShape shape, std::size_t n,
                                             ptx_cp_async::HoldBack hold = {}) {
  course::DeviceBuffer<std::uint32_t> in(n), out(n);
  const auto seed = static_cast<std::uint32_t>(n * 16 + config.stages);
  course::fill_hash(in.span(), seed);
  course::poison(out.data(), out.bytes());
  ptx_cp_async::prepare_copy_and_compute(in.cspan(), out.span(), config, shape, hold)(0);
  COURSE_CHECK(cudaDeviceSynchronize());
  const unsigned long long gave_up = ptx_cp_async::take_wait_timeouts();  // also resets it
  const auto host_in = course::to_host(in.cspan());
  std::vector<std::uint32_t> expected(n);
  course::workload::reference(host_in, expected);
  const auto c = course::compare_exact<std::uint32_t>(expected, course::to_host(out.cspan()));
  const std::string what =
      std::string(ptx_cp_async::name(config)) + ", " + std::to_string(config.stages) + " stages, " +
      std::to_string(config.vectors_per_thread) + " vectors, " + std::to_string(shape.blocks) +
      "x" + std::to_string(shape.threads_per_block) + ", n=" + std::to_string(n);
  const std::size_t batch =
      ptx_cp_async::batch_elements(shape.threads_per_block, config.vectors_per_thread);
  const std::string todos = todos_of(config.form) + (n % batch ? concerns_todos({3, 4}) : "");
  if (gave_up != 0) {  // a phase that never completed: the values are wrong, and this is why
    return ::testing::AssertionFailure()
           << what << ": " << gave_up << " mbarrier wait(s) gave up after 2 s (a lost arrival, "
           << "a wrong expected count or parity)" << todos;
  }
  if (!c.ok()) return ::testing::AssertionFailure() << what << ": " << c.summary() << todos;
  std::vector<std::uint32_t> original(n);
  course::fill_hash_host(original, seed);
  if (host_in != original) return ::testing::AssertionFailure() << what << ": input changed";
  return ::testing::AssertionSuccess();
}

}  // namespace

namespace ptx_cp_async {
void PrintTo(Form f, std::ostream* os) { *os << name(f); }
}  // namespace ptx_cp_async

namespace {

// ---- CPU tests: sizes, the schedule's arithmetic, the references ------------------------

TEST(PtxCpAsyncShape, DefaultConfigIsTheBestVariantAndNamesAreStable) {
  const Config best;
  EXPECT_EQ(best.form, Form::cg16);
  EXPECT_EQ(best.stages, 4);
  EXPECT_EQ(best.vectors_per_thread, 4);
  EXPECT_STREQ(ptx_cp_async::name(best), "cg16");
  const std::vector<std::string> expected = {
      "ca4",          "ca8",          "ca16",         "cg16",
      "cg16-L2-64B",  "cg16-L2-128B", "cg16-L2-256B", "cg16-mbarrier-noinc",
      "cg16-mbarrier"};
  std::vector<std::string> names;
  for (Form f : ptx_cp_async::kForms) names.emplace_back(ptx_cp_async::name(f));
  EXPECT_EQ(names, expected);
  EXPECT_EQ(ptx_cp_async::copy_bytes(Form::ca4), 4);
  EXPECT_EQ(ptx_cp_async::copy_bytes(Form::ca8), 8);
  EXPECT_EQ(ptx_cp_async::copy_bytes(Form::ca16), 16);
  EXPECT_EQ(ptx_cp_async::copy_bytes(Form::cg16_mbarrier), 16);
  EXPECT_STREQ(ptx_cp_async::name(TailCopy::src_size), "tail-src-size");
  EXPECT_STREQ(ptx_cp_async::name(ptx_cp_async::CachePolicy::hinted), "cache-hint");
}

TEST(PtxCpAsyncShape, WaitCountsAndParities) {
  using ptx_cp_async::batch_parity;
  using ptx_cp_async::groups_allowed_pending;
  EXPECT_EQ(groups_allowed_pending(1), 0);  // two stages: wait for everything
  EXPECT_EQ(groups_allowed_pending(3), 2);
  EXPECT_EQ(groups_allowed_pending(7), 6);  // below the primitives' clamp of 8
  // Four stages: batches 0-3 use phase 0 of barriers 0-3, batches 4-7 phase 1, then 0 again.
  for (std::size_t k = 0; k < 4; ++k) EXPECT_EQ(batch_parity(k, 4), 0u);
  for (std::size_t k = 4; k < 8; ++k) EXPECT_EQ(batch_parity(k, 4), 1u);
  EXPECT_EQ(batch_parity(8, 4), 0u);
  EXPECT_EQ(batch_parity(5, 2), 0u);
  EXPECT_EQ(batch_parity(3, 2), 1u);
  EXPECT_EQ(ptx_cp_async::shared_bytes({Form::cg16, 4, 4}, 256), 65536u);
  EXPECT_EQ(ptx_cp_async::shared_bytes({Form::ca4, 8, 1}, 32), 4096u);
}

TEST(PtxCpAsyncShape, RowPitchAndSrcSize) {
  using ptx_cp_async::pitch;
  using ptx_cp_async::rows_per_tile;
  using ptx_cp_async::valid_chunk_bytes;
  EXPECT_EQ(pitch(1), 4u);
  EXPECT_EQ(pitch(4), 4u);
  EXPECT_EQ(pitch(13), 16u);
  EXPECT_EQ(pitch(4096), 4096u);
  // Row of 13: chunks at 0, 4, 8 are whole; the one at 12 holds one element: 4 bytes.
  EXPECT_EQ(valid_chunk_bytes(0, 13), 16u);
  EXPECT_EQ(valid_chunk_bytes(8, 13), 16u);
  EXPECT_EQ(valid_chunk_bytes(12, 13), 4u);
  EXPECT_EQ(valid_chunk_bytes(12, 14), 8u);
  EXPECT_EQ(valid_chunk_bytes(12, 15), 12u);
  EXPECT_EQ(valid_chunk_bytes(12, 16), 16u);
  EXPECT_EQ(valid_chunk_bytes(16, 16), 0u);
  EXPECT_EQ(rows_per_tile(13), 256u);  // 4096 elements of tile / pitch 16
  EXPECT_EQ(rows_per_tile(4096), 1u);
  EXPECT_EQ(rows_per_tile(1), 1024u);
}

TEST(PtxCpAsyncShape, ReferencesReadThePaddingAsZero) {
  // Two rows of 5 (pitch 8): padding words hold garbage that must not show.
  const std::vector<std::uint32_t> in = {1, 2, 3, 4, 5, 99, 99, 99, 6, 7, 8, 9, 10, 98, 98, 98};
  std::vector<std::uint32_t> out(in.size());
  ptx_cp_async::tail_reference(in, out, Rows{2, 5});
  using course::workload::combine;
  EXPECT_EQ(out[0], combine(1, 0));  // partner of column 0 is column 7: padding
  EXPECT_EQ(out[3], combine(4, 5));  // partner of column 3 is column 4
  EXPECT_EQ(out[4], combine(5, 4));
  EXPECT_EQ(out[7], combine(0, 1));  // a padding column of out: combine(0, x[0])
  EXPECT_EQ(out[8 + 2], combine(8, 0));
  const std::vector<std::uint32_t> stream = {1, 2, 3, 4, 5};
  const std::vector<std::uint32_t> table = {10, 20};
  std::vector<std::uint32_t> cached(5);
  ptx_cp_async::cache_reference(stream, table, cached);
  EXPECT_EQ(cached[4], combine(5, 10));
  EXPECT_EQ(cached[3], combine(4, 20));
}

TEST(PtxCpAsyncShape, RejectsBadLaunchesBeforeTouchingTheDevice) {
  const auto* in = reinterpret_cast<const std::uint32_t*>(std::uintptr_t{1} << 20);
  auto* out = reinterpret_cast<std::uint32_t*>(std::uintptr_t{2} << 20);
  const cuda::std::span<const std::uint32_t> src(in, 4096);
  const cuda::std::span<std::uint32_t> dst(out, 4096);
  using ptx_cp_async::prepare_copy_and_compute;
  for (Form f : ptx_cp_async::kForms) {
    const Config ok{f, 4, 4};
    EXPECT_THROW((void)prepare_copy_and_compute(src, dst.first(4095), ok, {1, 256}),
                 std::invalid_argument);
    EXPECT_THROW((void)prepare_copy_and_compute(src, dst, ok, {0, 256}), std::invalid_argument);
    EXPECT_THROW((void)prepare_copy_and_compute(src, dst, ok, {1, 100}), std::invalid_argument);
    EXPECT_THROW((void)prepare_copy_and_compute(src, dst, ok, {1, 2048}), std::invalid_argument);
    for (int stages : {-1, 0, 1, 9}) {
      EXPECT_THROW((void)prepare_copy_and_compute(src, dst, {f, stages, 4}, {1, 256}),
                   std::invalid_argument);
      EXPECT_THROW((void)ptx_cp_async::max_blocks_per_sm({f, stages, 4}, 256),
                   std::invalid_argument);
    }
    EXPECT_THROW((void)prepare_copy_and_compute(src, dst, {f, 4, 3}, {1, 256}),
                 std::invalid_argument);
    EXPECT_THROW((void)prepare_copy_and_compute(src.subspan(1), dst.subspan(1), ok, {1, 256}),
                 std::invalid_argument);
  }
  EXPECT_THROW((void)prepare_copy_and_compute(src, dst, {static_cast<Form>(42), 4, 4}, {1, 256}),
               std::invalid_argument);
  EXPECT_NO_THROW(prepare_copy_and_compute({}, {}, Config{}, {1, 256})(0));

  using ptx_cp_async::prepare_tail;
  EXPECT_NO_THROW((void)prepare_tail(src, dst, Rows{256, 16}, TailCopy::if_wrapped));
  EXPECT_NO_THROW((void)prepare_tail(src, dst, Rows{256, 13}, TailCopy::src_size));
  EXPECT_THROW((void)prepare_tail(src, dst, Rows{256, 0}, TailCopy::src_size),
               std::invalid_argument);
  EXPECT_THROW((void)prepare_tail(src, dst, Rows{1, 4097}, TailCopy::if_wrapped),
               std::invalid_argument);
  EXPECT_THROW((void)prepare_tail(src, dst, Rows{255, 13}, TailCopy::if_wrapped),
               std::invalid_argument);
  EXPECT_THROW((void)prepare_tail(src.subspan(4).first(4088), dst.subspan(1).first(4088),
                                  Rows{511, 5}, TailCopy::if_wrapped),
               std::invalid_argument);

  using ptx_cp_async::CachePolicy;
  using ptx_cp_async::prepare_cache;
  EXPECT_NO_THROW((void)prepare_cache(src, src, dst, CachePolicy::hinted));
  EXPECT_THROW((void)prepare_cache(src.first(4095), src, dst.first(4095), CachePolicy::plain),
               std::invalid_argument);
  EXPECT_THROW((void)prepare_cache(src, src.first(100), dst, CachePolicy::plain),
               std::invalid_argument);
  EXPECT_THROW((void)prepare_cache(src, {}, dst, CachePolicy::plain), std::invalid_argument);

  const auto* bytes = reinterpret_cast<const std::uint8_t*>(in);
  auto* out_bytes = reinterpret_cast<std::uint8_t*>(out);
  EXPECT_THROW(ptx_cp_async::probe_copy(bytes, out_bytes, ProbeForm::ca4_src_size, 5, 0),
               std::invalid_argument);
  EXPECT_THROW(ptx_cp_async::probe_copy(bytes, out_bytes, ProbeForm::cg16_src_size, 17, 0),
               std::invalid_argument);
}

// ---- CPU tests: what the compiler emitted ------------------------------------------------

std::vector<course::inspect::Function> kernels_named(const course::inspect::PtxModule& module,
                                                     const std::string& part) {
  std::vector<course::inspect::Function> found;
  for (auto& k : course::inspect::ptx_kernels(module)) {
    if (k.name.find(part) != std::string::npos) found.push_back(k);
  }
  return found;
}

/// "multi_stage_kernelILNS_4FormE3ELi4E": the mangled-name part of a form and stage count.
std::string multi_stage_name(Form f, int stages) {
  return "multi_stage_kernelILNS_4FormE" + std::to_string(static_cast<int>(f)) + "ELi" +
         std::to_string(stages) + "E";
}

bool has(const std::string& body, const std::string& pattern) {
  return std::regex_search(body, std::regex(pattern));
}

// One cp.async: "cp.async.cg.shared.global[.L2::...] [%r1], [%rd2], 16" then ";" or an operand.
const std::string kAddr = R"(\s*\[[^\]]+\],\s*\[[^\]]+\],\s*)";
std::string plain_copy(const std::string& op, int size, const std::string& qualifiers = "") {
  return "cp\\.async\\." + op + "\\.shared\\.global" + qualifiers + kAddr + std::to_string(size) +
         ";";
}
std::string src_size_copy(const std::string& op, int size) {
  return "cp\\.async\\." + op + "\\.shared\\.global" + kAddr + std::to_string(size) +
         ",\\s*%r\\d+;";
}
std::string ignore_src_copy(const std::string& op, int size) {
  return "cp\\.async\\." + op + "\\.shared\\.global" + kAddr + std::to_string(size) +
         ",\\s*%?p\\w*;";
}

std::set<int> wait_group_counts(const std::string& body) {
  std::set<int> counts;
  const std::regex wait(R"(cp\.async\.wait_group\s+(\d+);)");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), wait); it != std::sregex_iterator();
       ++it) {
    counts.insert(std::stoi((*it)[1]));
  }
  return counts;
}

TEST(PtxCpAsyncPtx, EachFormEmitsItsCopyAndItsCompletion) {
  const auto modules = course::inspect::read_ptx_modules(course::testing::kernels_object_path());
  for (const std::string& target : course::testing::ptx_targets()) {
    const auto& module = course::inspect::module_for(modules, target);
    ASSERT_EQ(kernels_named(module, "multi_stage_kernel").size(),
              std::size(ptx_cp_async::kForms) * (kMaxStages - kMinStages + 1))
        << target;
    for (Form f : ptx_cp_async::kForms) {
      for (int stages = kMinStages; stages <= kMaxStages; ++stages) {
        const auto k = course::inspect::kernel(module, multi_stage_name(f, stages));
        const std::string where = std::string(ptx_cp_async::name(f)) + ", " +
                                  std::to_string(stages) + " stages (" + target + ")";
        // The full-batch copy (TODO 1's wrapper, called by TODO 6).
        const std::string full = f == Form::ca4           ? plain_copy("ca", 4)
                                 : f == Form::ca8         ? plain_copy("ca", 8)
                                 : f == Form::ca16        ? plain_copy("ca", 16)
                                 : f == Form::cg16_l2_64  ? plain_copy("cg", 16, "\\.L2::64B")
                                 : f == Form::cg16_l2_128 ? plain_copy("cg", 16, "\\.L2::128B")
                                 : f == Form::cg16_l2_256 ? plain_copy("cg", 16, "\\.L2::256B")
                                                          : plain_copy("cg", 16);
        EXPECT_TRUE(has(k.body, full)) << where << ": no " << full << concerns_todos({1, 6});
        if (ptx_cp_async::copy_bytes(f) < 16) {
          EXPECT_FALSE(course::inspect::uses(k.body, "cp.async.cg")) << where << concerns_todo(6);
        }
        // The partial batch: ignore-src for whole pieces and pieces past the data (TODO 4),
        // the piece the data ends in word by word with src-size (TODO 3).
        const std::string op = f == Form::ca4 || f == Form::ca8 || f == Form::ca16 ? "ca" : "cg";
        EXPECT_TRUE(has(k.body, ignore_src_copy(op, ptx_cp_async::copy_bytes(f))))
            << where << ": no ignore-src copy" << concerns_todos({4, 6});
        EXPECT_TRUE(has(k.body, src_size_copy("ca", 4)))
            << where << ": no src-size copy" << concerns_todos({3, 6});
        EXPECT_FALSE(course::inspect::uses(k.body, "cp.async.bulk")) << where;
        if (ptx_cp_async::uses_mbarrier(f)) {
          const bool noinc = f == Form::cg16_mbarrier_noinc;
          EXPECT_TRUE(course::inspect::uses(k.body, "mbarrier.init")) << where << concerns_todo(5);
          EXPECT_EQ(course::inspect::uses(k.body, "cp.async.mbarrier.arrive.noinc"), noinc)
              << where << concerns_todos({5, 6});
          EXPECT_TRUE(has(k.body, R"(cp\.async\.mbarrier\.arrive(\.noinc)?\.shared)"))
              << where << concerns_todos({5, 6});
          // Without .noinc every thread also arrives the ordinary way.
          EXPECT_EQ(has(k.body, R"((^|[^.])mbarrier\.arrive\.shared)"), !noinc)
              << where << concerns_todos({5, 6});
          const char* wait =
              target == "sm_80" ? "mbarrier.test_wait.parity" : "mbarrier.try_wait.parity";
          EXPECT_TRUE(course::inspect::uses(k.body, wait)) << where << concerns_todos({5, 7});
          EXPECT_FALSE(course::inspect::uses(k.body, "cp.async.wait_group")) << where;
          EXPECT_FALSE(course::inspect::uses(k.body, "cp.async.commit_group"))
              << where << concerns_todo(6);
        } else {
          EXPECT_TRUE(course::inspect::uses(k.body, "cp.async.commit_group"))
              << where << concerns_todos({2, 6});
          // The wait_group immediate is a compile-time constant: Stages - 2. TODO 7's bug
          // hunt: a wait that lets Stages - 1 groups stay pending (the number of batches
          // started ahead) leaves batch k's own group uncovered.
          EXPECT_EQ(wait_group_counts(k.body), std::set<int>{stages - 2})
              << where << ": the wait before batch k may leave pending only the groups of "
              << "the batches started after batch k, never batch k's own"
              << concerns_todos({2, 7});
          EXPECT_FALSE(course::inspect::uses(k.body, "mbarrier")) << where << concerns_todo(7);
        }
        EXPECT_TRUE(course::inspect::uses(k.body, "bar.sync"))
            << where << ": no __syncthreads" << concerns_todo(7);
      }
    }
  }
}

TEST(PtxCpAsyncPtx, TailKernelsCopyWithAnIfOrWithSrcSize) {
  const auto modules = course::inspect::read_ptx_modules(course::testing::kernels_object_path());
  for (const std::string& target : course::testing::ptx_targets()) {
    const auto& module = course::inspect::module_for(modules, target);
    const auto with_if = course::inspect::kernel(module, "tail_kernelILNS_8TailCopyE0E");
    const auto branch_free = course::inspect::kernel(module, "tail_kernelILNS_8TailCopyE1E");
    EXPECT_TRUE(has(with_if.body, plain_copy("cg", 16))) << target << concerns_todo(1);
    EXPECT_TRUE(has(with_if.body, plain_copy("ca", 4))) << target << concerns_todo(1);
    EXPECT_TRUE(course::inspect::uses(with_if.body, "st.shared")) << target;
    // Branch-free: one 16-byte copy with a src-size register, no 4-byte copy, no zero store.
    EXPECT_TRUE(has(branch_free.body, src_size_copy("cg", 16))) << target << concerns_todos({3, 8});
    EXPECT_FALSE(course::inspect::uses(branch_free.body, "cp.async.ca"))
        << target << concerns_todo(8);
    EXPECT_FALSE(course::inspect::uses(branch_free.body, "st.shared"))
        << target << concerns_todo(8);
    for (const auto* k : {&with_if, &branch_free}) {
      EXPECT_TRUE(course::inspect::uses(k->body, "cp.async.wait_all"))
          << target << concerns_todo(2);
    }
  }
}

TEST(PtxCpAsyncPtx, CacheKernelsCarryPoliciesOnlyWhenHinted) {
  const auto modules = course::inspect::read_ptx_modules(course::testing::kernels_object_path());
  for (const std::string& target : course::testing::ptx_targets()) {
    const auto& module = course::inspect::module_for(modules, target);
    const auto plain = course::inspect::kernel(module, "cache_kernelILNS_11CachePolicyE0E");
    const auto hinted = course::inspect::kernel(module, "cache_kernelILNS_11CachePolicyE1E");
    EXPECT_TRUE(has(plain.body, plain_copy("cg", 16))) << target << concerns_todo(1);
    EXPECT_FALSE(course::inspect::uses(plain.body, "createpolicy")) << target;
    EXPECT_FALSE(course::inspect::uses(plain.body, "cp.async.cg.shared.global.L2::cache_hint"))
        << target;
    EXPECT_TRUE(course::inspect::uses(hinted.body, "createpolicy.fractional.L2::evict_last"))
        << target << concerns_todo(9);
    EXPECT_TRUE(course::inspect::uses(hinted.body, "createpolicy.fractional.L2::evict_first"))
        << target << concerns_todo(9);
    EXPECT_TRUE(has(hinted.body, R"(cp\.async\.cg\.shared\.global\.L2::cache_hint)" + kAddr +
                                     R"(16,\s*%rd\d+;)"))
        << target << concerns_todo(9);
  }
}

// The point of the hints is WHICH data carries WHICH priority: the table that later blocks
// read again stays in L2 (evict_last), the stream read once leaves first (evict_first).
// Swapped priorities compute the same values, so only the compiled code can tell: each
// hinted copy's source address and its policy operand are traced back through the PTX
// (course::inspect::value_origins) to a kernel parameter and to the createpolicy that
// made the policy. cache_kernel(stream, table, out, table_size) is read-only: its parameter
// 0 is the stream, parameter 1 the table.
TEST(PtxCpAsyncPtx, TheTableCarriesEvictLastAndTheStreamEvictFirst) {
  const auto modules = course::inspect::read_ptx_modules(course::testing::kernels_object_path());
  for (const std::string& target : course::testing::ptx_targets()) {
    const auto& module = course::inspect::module_for(modules, target);
    const auto hinted = course::inspect::kernel(module, "cache_kernelILNS_11CachePolicyE1E");
    const auto code = course::inspect::ptx_instructions(hinted.body);
    const auto origins = course::inspect::value_origins(code);
    int table_copies = 0, stream_copies = 0;
    for (const auto& instruction : code) {
      if (instruction.opcode.rfind("cp.async", 0) != 0 ||
          instruction.opcode.find("L2::cache_hint") == std::string::npos) {
        continue;
      }
      ASSERT_EQ(instruction.operands.size(), 4u)
          << target << ": " << instruction.opcode << " with a policy operand" << concerns_todo(9);
      const auto source = course::inspect::operand_origins(instruction.operands[1], origins);
      const bool from_stream = source.count("param_0") == 1;
      const bool from_table = source.count("param_1") == 1;
      ASSERT_NE(from_stream, from_table)
          << target << ": a hinted copy whose source is not exactly one of the stream and the "
          << "table (" << instruction.operands[1] << ")" << concerns_todo(9);
      const auto policy = course::inspect::operand_origins(instruction.operands[3], origins);
      const std::string wanted = from_table ? "L2::evict_last" : "L2::evict_first";
      const std::string what = from_table ? "the reused table" : "the streamed input";
      ASSERT_EQ(policy.size(), 1u)
          << target << ": the policy of " << what << "'s copy comes from " << policy.size()
          << " places; it must be the one createpolicy made for it" << concerns_todo(9);
      const std::string& made_by = *policy.begin();
      EXPECT_EQ(made_by.rfind("createpolicy.fractional", 0), 0u)
          << target << ": " << what << "'s copy carries a policy made by " << made_by
          << concerns_todo(9);
      EXPECT_NE(made_by.find(wanted), std::string::npos)
          << target << ": " << what << "'s copy carries " << made_by << ", not " << wanted
          << " (are evict_last and evict_first swapped in make_policy?)" << concerns_todo(9);
      ++(from_table ? table_copies : stream_copies);
    }
    EXPECT_GE(table_copies, 1) << target << ": no hinted copy of the table" << concerns_todo(9);
    EXPECT_GE(stream_copies, 1) << target << ": no hinted copy of the stream" << concerns_todo(9);
  }
}

TEST(PtxCpAsyncPtx, ProbeKernelsShowEveryInstructionForm) {
  const auto modules = course::inspect::read_ptx_modules(course::testing::kernels_object_path());
  for (const std::string& target : course::testing::ptx_targets()) {
    const auto& module = course::inspect::module_for(modules, target);
    for (int f = 0; f < 12; ++f) {
      const auto k =
          course::inspect::kernel(module, "probe_kernelILNS_9ProbeFormE" + std::to_string(f) + "E");
      const int size = f % 4 == 0 ? 4 : f % 4 == 1 ? 8 : 16;
      const std::string op = f % 4 == 3 ? "cg" : "ca";
      const std::string form = f < 4   ? plain_copy(op, size)
                               : f < 8 ? src_size_copy(op, size)
                                       : ignore_src_copy(op, size);
      const int todo = f < 4 ? 1 : f < 8 ? 3 : 4;
      EXPECT_TRUE(has(k.body, form))
          << "probe form " << f << " (" << target << "): no " << form << concerns_todo(todo);
      EXPECT_TRUE(course::inspect::uses(k.body, "cp.async.wait_all"))
          << "probe form " << f << concerns_todo(2);
    }
  }
}

// ---- CPU tests: the machine code (cuobjdump) ---------------------------------------------

TEST(PtxCpAsyncSass, CgCopiesBypassL1AndCaCopiesDoNot) {
  const std::string cuobjdump = course::testing::cuobjdump_path();
  if (cuobjdump.empty()) GTEST_SKIP() << "cuobjdump not found: SASS checks need it";
  const std::string listing = course::inspect::run_command(
      "'" + cuobjdump + "' -sass -arch sm_90 '" + course::testing::kernels_object_path() + "'");
  // Each kernel (a part of its mangled name), the SASS it must contain, what it must not, and
  // the TODOs a miss concerns. LDGSTS is cp.async; .BYPASS means L1 is bypassed (.cg);
  // .LTC64B/128B/256B is the L2 prefetch size; .ZFILL a src-size copy; LDGDEPBAR the
  // commit_group; ARRIVES.LDGSTSBAR the cp.async.mbarrier.arrive (.ARVCNT with .noinc: it
  // counts as an arrival; .TRANSCNT without: it only holds the phase until the copies land).
  struct Expect {
    std::string kernel;
    std::vector<std::string> present;
    std::vector<std::string> absent;
    std::string todos;
  };
  const std::vector<Expect> expects = {
      {multi_stage_name(Form::ca4, 4),
       {R"(LDGSTS\.E\s)", "LDGDEPBAR"},
       {"LDGSTS.E.BYPASS", "LDGSTS.E.128", "ARRIVES"},
       concerns_todos({1, 2, 6})},
      {multi_stage_name(Form::ca8, 4),
       {R"(LDGSTS\.E\.64\s)"},
       {"LDGSTS.E.BYPASS"},
       concerns_todos({1, 6})},
      {multi_stage_name(Form::ca16, 4),
       {R"(LDGSTS\.E\.128\s)"},
       {"LDGSTS.E.BYPASS"},
       concerns_todos({1, 6})},
      {multi_stage_name(Form::cg16, 4),
       {R"(LDGSTS\.E\.BYPASS\.128\s)", "LDGDEPBAR"},
       {"LDGSTS.E.128", "ARRIVES"},
       concerns_todos({1, 2, 6})},
      {multi_stage_name(Form::cg16_l2_64, 4),
       {R"(LDGSTS\.E\.BYPASS\.LTC64B\.128)"},
       {},
       concerns_todos({1, 6})},
      {multi_stage_name(Form::cg16_l2_128, 4),
       {R"(LDGSTS\.E\.BYPASS\.LTC128B\.128)"},
       {},
       concerns_todos({1, 6})},
      {multi_stage_name(Form::cg16_l2_256, 4),
       {R"(LDGSTS\.E\.BYPASS\.LTC256B\.128)"},
       {},
       concerns_todos({1, 6})},
      {multi_stage_name(Form::cg16_mbarrier_noinc, 4),
       {R"(LDGSTS\.E\.BYPASS\.128\s)", R"(ARRIVES\.LDGSTSBAR\.64\.ARVCNT)"},
       {"LDGDEPBAR", "TRANSCNT"},
       concerns_todos({5, 6})},
      {multi_stage_name(Form::cg16_mbarrier, 4),
       {R"(LDGSTS\.E\.BYPASS\.128\s)", R"(ARRIVES\.LDGSTSBAR\.64\.TRANSCNT)"},
       {"LDGDEPBAR", "ARVCNT"},
       concerns_todos({5, 6})},
      {"tail_kernelILNS_8TailCopyE1E",
       {R"(LDGSTS\.E\.BYPASS\.128\.ZFILL)"},
       {"LDGSTS.E "},
       concerns_todos({3, 8})},
      {"tail_kernelILNS_8TailCopyE0E",
       {R"(LDGSTS\.E\.BYPASS\.128\s)", R"(LDGSTS\.E\s)"},
       {"ZFILL"},
       concerns_todo(1)},
  };
  const auto functions = course::inspect::sass_functions(listing);
  for (const Expect& e : expects) {
    int found = 0;
    for (const auto& fn : functions) {
      if (fn.name.find(e.kernel) == std::string::npos) continue;
      ++found;
      for (const auto& pattern : e.present) {
        EXPECT_TRUE(has(fn.body, pattern)) << e.kernel << ": no " << pattern << e.todos;
      }
      for (const auto& text : e.absent) {
        EXPECT_EQ(fn.body.find(text), std::string::npos) << e.kernel << ": " << text << e.todos;
      }
    }
    EXPECT_EQ(found, 1) << e.kernel << " in " << listing.substr(0, 1000);
  }
}

// ---- GPU tests: one copy, every src-size -------------------------------------------------

class GpuPtxCpAsyncProbe : public course::testing::GpuTest {
 protected:
  /// The 16 bytes shared memory holds after one copy of `form` with `operand`.
  std::vector<std::uint8_t> probe(ProbeForm form, unsigned operand) {
    course::DeviceBuffer<std::uint32_t> src(4), dst(4);  // 16 bytes each, 16-byte aligned
    std::vector<std::uint8_t> pattern(16);
    for (int i = 0; i < 16; ++i) pattern[i] = static_cast<std::uint8_t>(0x10 + i);
    COURSE_CHECK(cudaMemcpy(src.data(), pattern.data(), 16, cudaMemcpyHostToDevice));
    course::poison(dst.data(), dst.bytes());
    ptx_cp_async::probe_copy(reinterpret_cast<const std::uint8_t*>(src.data()),
                             reinterpret_cast<std::uint8_t*>(dst.data()), form, operand, 0);
    COURSE_CHECK(cudaDeviceSynchronize());
    const std::vector<std::uint32_t> words = course::to_host(dst.cspan());
    std::vector<std::uint8_t> bytes(16);
    std::memcpy(bytes.data(), words.data(), 16);
    return bytes;
  }
  /// What it should hold: `copied` source bytes, zeros up to `size`, then the 0xA5 fill.
  static std::vector<std::uint8_t> expected(int size, int copied) {
    std::vector<std::uint8_t> bytes(16, 0xA5);
    for (int i = 0; i < size; ++i) bytes[i] = i < copied ? static_cast<std::uint8_t>(0x10 + i) : 0;
    return bytes;
  }
};

TEST_F(GpuPtxCpAsyncProbe, PlainCopiesWriteExactlyTheirCpSize) {
  const ProbeForm forms[] = {ProbeForm::ca4, ProbeForm::ca8, ProbeForm::ca16, ProbeForm::cg16};
  const int sizes[] = {4, 8, 16, 16};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(probe(forms[i], 0), expected(sizes[i], sizes[i]))
        << "form " << i << concerns_todos({1, 2});
  }
}

TEST_F(GpuPtxCpAsyncProbe, SrcSizeCopiesThatManyBytesAndZeroFillsTheRest) {
  const ProbeForm forms[] = {ProbeForm::ca4_src_size, ProbeForm::ca8_src_size,
                             ProbeForm::ca16_src_size, ProbeForm::cg16_src_size};
  const int sizes[] = {4, 8, 16, 16};
  for (int i = 0; i < 4; ++i) {
    for (int src_size = 0; src_size <= sizes[i]; ++src_size) {
      EXPECT_EQ(probe(forms[i], static_cast<unsigned>(src_size)), expected(sizes[i], src_size))
          << "cp-size " << sizes[i] << (i == 3 ? " (.cg)" : " (.ca)") << ", src-size " << src_size
          << concerns_todo(3);
    }
  }
}

TEST_F(GpuPtxCpAsyncProbe, IgnoreSrcWritesZerosOnlyWhenTrue) {
  const ProbeForm forms[] = {ProbeForm::ca4_ignore, ProbeForm::ca8_ignore, ProbeForm::ca16_ignore,
                             ProbeForm::cg16_ignore};
  const int sizes[] = {4, 8, 16, 16};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(probe(forms[i], 0), expected(sizes[i], sizes[i])) << "form " << i << concerns_todo(4);
    EXPECT_EQ(probe(forms[i], 1), expected(sizes[i], 0)) << "form " << i << concerns_todo(4);
  }
}

// ---- GPU tests: the multi-stage kernel, every form ---------------------------------------

struct ShapeCase {
  int vectors_per_thread;
  LaunchShape shape;
};

using Case = std::tuple<Form, int, ShapeCase>;

class GpuPtxCpAsyncMultiStage : public course::testing::GpuTestWithParam<Case> {};

TEST_P(GpuPtxCpAsyncMultiStage, EveryElementMatchesTheReference) {
  const auto [form, stages, s] = GetParam();
  const Config config{form, stages, s.vectors_per_thread};
  for (std::size_t n : kAwkwardSizes) ASSERT_TRUE(matches_reference(config, s.shape, n));
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const auto [form, stages, s] = info.param;
  std::string name = ptx_cp_async::name(form);
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name + "_" + std::to_string(stages) + "stages_" + std::to_string(s.vectors_per_thread) +
         "vec_" + std::to_string(s.shape.blocks) + "x" + std::to_string(s.shape.threads_per_block);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GpuPtxCpAsyncMultiStage,
    ::testing::Combine(::testing::ValuesIn(ptx_cp_async::kForms), ::testing::Values(2, 3, 4, 8),
                       ::testing::Values(ShapeCase{1, {1, 32}}, ShapeCase{4, {3, 96}},
                                         ShapeCase{2, {264, 256}}, ShapeCase{8, {2, 64}})),
    case_name);

using StageCase = std::tuple<Form, int>;
class GpuPtxCpAsyncBatchCounts : public course::testing::GpuTestWithParam<StageCase> {};

TEST_P(GpuPtxCpAsyncBatchCounts, AroundTheStageCount) {
  const auto [form, stages] = GetParam();
  const Config config{form, stages, 1};
  constexpr LaunchShape kOneBlock{1, 64};
  constexpr std::size_t kBatch = 256;
  const auto s = static_cast<std::size_t>(stages);
  for (std::size_t n : {std::size_t{1}, std::size_t{100}, kBatch, (s - 1) * kBatch, s * kBatch,
                        (s + 1) * kBatch - 1, (2 * s + 1) * kBatch + 7}) {
    if (n > 0) EXPECT_TRUE(matches_reference(config, kOneBlock, n));
  }
  // Blocks with uneven batch counts and blocks with none.
  EXPECT_TRUE(matches_reference(config, {3, 64}, 5 * kBatch - 9));
  EXPECT_TRUE(matches_reference(config, {8, 64}, 1));
}

// The compute step reads 16-byte vectors and each element's partner: the 4- and 8-byte forms
// copy pieces that threads of other warps read (piece p of thread t is piece p * threads + t),
// and so does every form in the last, partial batch (element by element). So the wait for a
// batch (TODO 7) must end with a barrier of the whole block, which also keeps a refill off a
// buffer that slower warps still read. One that covers only its own warp mostly passes on
// values alone. With a HoldBack every warp but one (a different one per block) copies late
// and reads late: the warp that runs ahead reads what the buffer held before (poison, or an
// earlier batch), or refills a buffer the others have yet to read.
TEST_P(GpuPtxCpAsyncBatchCounts, TheWaitCoversEveryWarp) {
  const auto [form, stages] = GetParam();
  for (const auto& [shape, vectors] :
       {std::pair{LaunchShape{16, 256}, 1}, std::pair{LaunchShape{6, 96}, 2}}) {
    const Config config{form, stages, vectors};
    const std::size_t batch = ptx_cp_async::batch_elements(shape.threads_per_block, vectors);
    for (std::size_t n : course::testing::held_back_sizes(shape.blocks, batch)) {
      EXPECT_TRUE(
          matches_reference(config, shape, n, ptx_cp_async::HoldBack{course::testing::kHoldBackNs}))
          << " (warps held back: does the wait end with a barrier of the whole block?)";
    }
  }
}

std::string stage_case_name(const ::testing::TestParamInfo<StageCase>& info) {
  std::string name = ptx_cp_async::name(std::get<0>(info.param));
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name + "_" + std::to_string(std::get<1>(info.param)) + "stages";
}

INSTANTIATE_TEST_SUITE_P(AllStageCounts, GpuPtxCpAsyncBatchCounts,
                         ::testing::Combine(::testing::ValuesIn(ptx_cp_async::kForms),
                                            ::testing::Range(kMinStages, kMaxStages + 1)),
                         stage_case_name);

TEST(GpuPtxCpAsyncOccupancy, EveryFormFitsAtFourStages) {
  if (const auto reason = course::testing::gpu_unavailable()) GTEST_SKIP() << *reason;
  for (Form f : ptx_cp_async::kForms) {
    EXPECT_GE(ptx_cp_async::max_blocks_per_sm({f, 4, 4}, 256), 1) << ptx_cp_async::name(f);
  }
}

// ---- GPU tests: the tail workload --------------------------------------------------------

class GpuPtxCpAsyncTail : public course::testing::GpuTestWithParam<TailCopy> {};

TEST_P(GpuPtxCpAsyncTail, EveryRowLengthAndRowCount) {
  const TailCopy copy = GetParam();
  const std::string todos =
      copy == TailCopy::src_size ? concerns_todos({3, 8}) : concerns_todos({1, 2});
  for (std::size_t length : {1u, 2u, 3u, 4u, 5u, 7u, 13u, 37u, 100u, 1023u, 4093u, 4096u}) {
    const std::size_t tile = ptx_cp_async::rows_per_tile(length);
    for (std::size_t rows :
         {std::size_t{1}, std::size_t{7}, tile - 1 + (tile == 1), tile + 1, std::size_t{1009}}) {
      const Rows shape{rows, length};
      const std::size_t n = rows * ptx_cp_async::pitch(length);
      course::DeviceBuffer<std::uint32_t> in(n), out(n);
      course::fill_hash(in.span(), static_cast<std::uint32_t>(length * 131 + rows));
      course::poison(out.data(), out.bytes());
      ptx_cp_async::prepare_tail(in.cspan(), out.span(), shape, copy)(0);
      COURSE_CHECK(cudaDeviceSynchronize());
      std::vector<std::uint32_t> expected(n);
      ptx_cp_async::tail_reference(course::to_host(in.cspan()), expected, shape);
      const auto c = course::compare_exact<std::uint32_t>(expected, course::to_host(out.cspan()));
      ASSERT_TRUE(c.ok()) << ptx_cp_async::name(copy) << ", " << rows << " rows of " << length
                          << ": " << c.summary() << todos;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(BothCopies, GpuPtxCpAsyncTail,
                         ::testing::Values(TailCopy::if_wrapped, TailCopy::src_size),
                         [](const auto& info) {
                           return std::string(info.param == TailCopy::if_wrapped ? "if_wrapped"
                                                                                 : "src_size");
                         });

// ---- GPU tests: the cache workload -------------------------------------------------------

class GpuPtxCpAsyncCache : public course::testing::GpuTestWithParam<ptx_cp_async::CachePolicy> {};

TEST_P(GpuPtxCpAsyncCache, EveryElementWithTablesOfSeveralSizes) {
  const auto policy = GetParam();
  const std::size_t batch = ptx_cp_async::kCacheBatch;
  for (auto [stream_batches, table_batches] :
       {std::pair{1, 1}, std::pair{7, 1}, std::pair{7, 3}, std::pair{64, 5}, std::pair{3, 8}}) {
    const std::size_t n = stream_batches * batch;
    course::DeviceBuffer<std::uint32_t> stream(n), table(table_batches * batch), out(n);
    course::fill_hash(stream.span(), static_cast<std::uint32_t>(n));
    course::fill_hash(table.span(), static_cast<std::uint32_t>(table_batches * 7 + 1));
    course::poison(out.data(), out.bytes());
    ptx_cp_async::prepare_cache(stream.cspan(), table.cspan(), out.span(), policy)(0);
    COURSE_CHECK(cudaDeviceSynchronize());
    std::vector<std::uint32_t> expected(n);
    ptx_cp_async::cache_reference(course::to_host(stream.cspan()), course::to_host(table.cspan()),
                                  expected);
    const auto c = course::compare_exact<std::uint32_t>(expected, course::to_host(out.cspan()));
    ASSERT_TRUE(c.ok()) << ptx_cp_async::name(policy) << ", " << stream_batches
                        << " stream batches, " << table_batches << " table batches: " << c.summary()
                        << (policy == ptx_cp_async::CachePolicy::hinted ? concerns_todo(9)
                                                                        : concerns_todos({1, 2}));
  }
}

INSTANTIATE_TEST_SUITE_P(BothPolicies, GpuPtxCpAsyncCache,
                         ::testing::Values(ptx_cp_async::CachePolicy::plain,
                                           ptx_cp_async::CachePolicy::hinted),
                         [](const auto& info) {
                           return std::string(
                               info.param == ptx_cp_async::CachePolicy::plain ? "plain" : "hinted");
                         });

}  // namespace
