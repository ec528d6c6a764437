#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "course/data.h"
#include "course/workload.h"

namespace {

using course::compare_close;
using course::compare_exact;

TEST(Data, HashFillIsNotConstantAndDependsOnSeed) {
  std::vector<std::uint32_t> a(4096), b(4096);
  course::fill_hash_host(a, 1);
  course::fill_hash_host(b, 2);
  EXPECT_GT(std::set<std::uint32_t>(a.begin(), a.end()).size(), 4000u);  // nearly all distinct
  EXPECT_NE(a, b);
  EXPECT_EQ(a[17], course::hash32(17, 1));
}

TEST(Data, ExactComparisonChecksEveryElement) {
  std::vector<std::uint32_t> expected(1000003), actual;
  course::fill_hash_host(expected, 3);
  actual = expected;
  auto c = compare_exact<std::uint32_t>(expected, actual);
  EXPECT_TRUE(c.ok());
  EXPECT_EQ(c.checked, expected.size());
  actual.back() ^= 1;  // only the very last element differs
  c = compare_exact<std::uint32_t>(expected, actual);
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.mismatches, 1u);
  ASSERT_EQ(c.first.size(), 1u);
  EXPECT_EQ(c.first[0].index, expected.size() - 1);
}

TEST(Data, FirstMismatchesAreReportedInOrderAndCapped) {
  std::vector<std::uint32_t> expected(100, 7), actual(100, 7);
  for (std::size_t i = 10; i < 40; ++i) actual[i] = 9;
  const auto c = compare_exact<std::uint32_t>(expected, actual);
  EXPECT_EQ(c.mismatches, 30u);
  ASSERT_EQ(c.first.size(), course::kReportedMismatches);
  EXPECT_EQ(c.first[0].index, 10u);
  EXPECT_EQ(c.first[0].expected, "7");
  EXPECT_EQ(c.first[0].actual, "9");
  EXPECT_NE(c.summary().find("30 of 100"), std::string::npos) << c.summary();
}

TEST(Data, ComparingNothingIsNotASuccess) {
  std::vector<std::uint32_t> none;
  EXPECT_FALSE((compare_exact<std::uint32_t>(none, none).ok()));
}

TEST(Data, SizeMismatchThrows) {
  std::vector<std::uint32_t> a(3), b(4);
  EXPECT_THROW((compare_exact<std::uint32_t>(a, b)), std::invalid_argument);
}

TEST(Data, NaNNeverPasses) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> expected = {1.0f, nan, 3.0f};
  EXPECT_FALSE(
      (compare_close<float>(expected, expected, 1e-3, 1e-3).ok()));  // NaN == NaN is no pass
  std::vector<float> good = {1.0f, 2.0f, 3.0f};
  std::vector<float> bad = {1.0f, nan, 3.0f};
  const auto c = compare_close<float>(good, bad, 1.0, 1.0);  // huge tolerance, still a NaN
  EXPECT_EQ(c.mismatches, 1u);
  std::vector<float> infinite = {1.0f, inf, 3.0f};
  EXPECT_FALSE((compare_close<float>(good, infinite, 1.0, 1.0).ok()));
}

TEST(Data, ToleranceIsRelativePlusAbsolute) {
  std::vector<float> expected = {100.0f, 0.0f};
  std::vector<float> within = {100.09f, 0.0009f};
  std::vector<float> outside = {100.2f, 0.0f};
  EXPECT_TRUE((compare_close<float>(expected, within, 1e-3, 1e-3).ok()));
  EXPECT_FALSE((compare_close<float>(expected, outside, 1e-3, 1e-3).ok()));
}

TEST(Workload, PartnerIsTheMirrorInAGroupOf32) {
  using course::workload::partner_index;
  EXPECT_EQ(partner_index(0, 64), 31u);
  EXPECT_EQ(partner_index(31, 64), 0u);
  EXPECT_EQ(partner_index(33, 64), 62u);
  // In a last, partial group the mirror may lie past the end: then it is the element itself.
  EXPECT_EQ(partner_index(32, 40), 32u);  // mirror 63 >= 40
  EXPECT_EQ(partner_index(39, 40), 39u);  // mirror 56 >= 40
  EXPECT_EQ(partner_index(0, 1), 0u);
  for (std::size_t n : {1u, 31u, 33u, 100u}) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t p = partner_index(i, n);
      ASSERT_LT(p, n);
      ASSERT_EQ(p / 32, i / 32);  // never leaves its group, so never leaves a batch
    }
  }
}

TEST(Workload, ReferenceCombinesEachElementWithItsPartner) {
  std::vector<std::uint32_t> in(45), out(45, 0);
  course::fill_hash_host(in, 9);
  course::workload::reference(in, out);
  EXPECT_EQ(out[0], course::workload::combine(in[0], in[31]));
  EXPECT_EQ(out[40], course::workload::combine(in[40], in[40]));
  EXPECT_EQ(out[33], course::workload::combine(in[33], in[62 < 45 ? 62 : 33]));
  EXPECT_EQ(course::workload::bytes_moved(10), 80.0);
}

TEST(Workload, VectorComputeEqualsTheReference) {
  // A full batch of 256 elements read as 64 uint4 vectors: every vector's outputs come from
  // itself and its mirror vector, and must equal the element-wise reference.
  constexpr std::size_t n = 256;
  std::vector<std::uint32_t> in(n), expected(n), actual(n, 0);
  course::fill_hash_host(in, 11);
  course::workload::reference(in, expected);
  for (std::size_t v = 0; v < n / 4; ++v) {
    const std::size_t m = course::workload::mirror_vector(v);
    ASSERT_LT(m, n / 4);
    const uint4 self = make_uint4(in[4 * v], in[4 * v + 1], in[4 * v + 2], in[4 * v + 3]);
    const uint4 mirror = make_uint4(in[4 * m], in[4 * m + 1], in[4 * m + 2], in[4 * m + 3]);
    const uint4 out = course::workload::combine_vectors(self, mirror);
    actual[4 * v] = out.x;
    actual[4 * v + 1] = out.y;
    actual[4 * v + 2] = out.z;
    actual[4 * v + 3] = out.w;
  }
  EXPECT_EQ(actual, expected);
}

TEST(Workload, ElementComputeOfAPartialBatchEqualsTheReference) {
  // The last batch of an input of 100 elements in batches of 64 starts at 64 and holds 36;
  // three "threads" share it. Nothing outside the batch may be written.
  constexpr std::size_t n = 100, first = 64, count = n - first;
  std::vector<std::uint32_t> in(n), expected(n);
  course::fill_hash_host(in, 12);
  course::workload::reference(in, expected);
  std::vector<std::uint32_t> out(n, 7u);
  for (std::size_t rank = 0; rank < 3; ++rank) {
    course::workload::combine_elements(in.data() + first, out.data() + first, first, count, n,
                                       rank, 3);
  }
  for (std::size_t i = 0; i < first; ++i) ASSERT_EQ(out[i], 7u) << i;
  for (std::size_t i = first; i < n; ++i) ASSERT_EQ(out[i], expected[i]) << i;
}

}  // namespace
