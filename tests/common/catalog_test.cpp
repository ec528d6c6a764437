#include <gtest/gtest.h>

#include <set>
#include <string>

#include "course/device.h"

namespace {

using course::can_run;
using course::ComputeCapability;
using course::lesson_catalog;

const course::LessonEntry& lesson(const std::string& number) {
  for (const auto& l : lesson_catalog()) {
    if (l.number == number) return l;
  }
  throw std::runtime_error("no lesson " + number);
}

TEST(Catalog, HasEveryLessonOfTheMapInOrder) {
  const auto& catalog = lesson_catalog();
  ASSERT_GE(catalog.size(), 17u);  // 00 .. 16 at least, numbered without gaps
  for (std::size_t i = 0; i < catalog.size(); ++i) {
    const std::string expected = (i < 10 ? "0" : "") + std::to_string(i);
    EXPECT_EQ(catalog[i].number, expected);
  }
  EXPECT_EQ(std::string(lesson("01").slug), "register_staged");
  EXPECT_TRUE(lesson("00").ready);
  EXPECT_TRUE(lesson("01").ready);
  EXPECT_EQ(lesson("01").min_gpus, 1);
  EXPECT_EQ(lesson("16").min_gpus, 2);  // peer-to-peer copies need a second GPU
}

TEST(Catalog, AmpereRunsEverythingButTheHopperLessons) {
  const ComputeCapability a100{8, 0};
  std::set<std::string> not_runnable;
  for (const auto& l : lesson_catalog()) {
    if (!can_run(l, a100)) not_runnable.insert(l.number);
  }
  EXPECT_EQ(not_runnable, (std::set<std::string>{"10", "11"}));
}

TEST(Catalog, HopperAndNewerRunEverything) {
  for (ComputeCapability cc :
       {ComputeCapability{9, 0}, ComputeCapability{10, 0}, ComputeCapability{12, 0}}) {
    for (const auto& l : lesson_catalog())
      EXPECT_TRUE(can_run(l, cc)) << l.number << " on " << cc.str();
  }
}

TEST(Catalog, OlderThanAmpereRunsNothing) {
  // The course builds sm_80 and sm_90 code only: a Turing GPU (7.5) can load none of it.
  for (const auto& l : lesson_catalog())
    EXPECT_FALSE(can_run(l, ComputeCapability{7, 5})) << l.number;
  EXPECT_TRUE(can_run(lesson("01"), ComputeCapability{8, 6}));
  EXPECT_FALSE(can_run(lesson("10"), ComputeCapability{8, 9}));
}

TEST(Catalog, ComputeCapabilityOrder) {
  EXPECT_TRUE((ComputeCapability{8, 6} >= ComputeCapability{8, 0}));
  EXPECT_FALSE((ComputeCapability{8, 9} >= ComputeCapability{9, 0}));
  EXPECT_TRUE((ComputeCapability{9, 0} == ComputeCapability{9, 0}));
  EXPECT_EQ((ComputeCapability{9, 0}.str()), "9.0");
}

}  // namespace
