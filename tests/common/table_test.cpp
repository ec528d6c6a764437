#include <gtest/gtest.h>

#include <sstream>

#include "course/harness.h"
#include "course/launch.h"
#include "course/table.h"

namespace {

course::ResultsTable sample() {
  course::ResultsTable table("D2D cudaMemcpy", "fine");
  table.add({"D2D cudaMemcpy", 0.5, 4000.0, 1.0, std::nullopt, "ref", std::nullopt});
  table.add({"fine", 1.0, 2000.0, 0.5, 1.0, "PASS", std::nullopt});
  table.add({"coarse, tuned", 0.55, 3636.4, 0.909, 1.818, "FAIL", std::nullopt});
  return table;
}

TEST(Table, PrintsHeaderAndAlignedRows) {
  std::ostringstream out;
  sample().print(out);
  const std::string text = out.str();
  EXPECT_NE(text.find("variant"), std::string::npos);
  EXPECT_NE(text.find("x D2D cudaMemcpy"), std::string::npos);
  EXPECT_NE(text.find("x fine"), std::string::npos);
  EXPECT_NE(text.find("0.909"), std::string::npos);
  EXPECT_NE(text.find("1.82"), std::string::npos);
  // Every line has the same length: the columns are padded to a common width.
  std::istringstream lines(text);
  std::string line;
  std::size_t width = std::string::npos;
  int count = 0;
  while (std::getline(lines, line)) {
    if (width == std::string::npos) width = line.size();
    EXPECT_EQ(line.size(), width) << line;
    ++count;
  }
  EXPECT_EQ(count, 4);  // header + 3 rows
}

TEST(Table, CsvHasContextColumnsAndQuotesCommas) {
  std::ostringstream out;
  sample().write_csv(out, {{"lesson", "01_register_staged"}, {"gpu", "NVIDIA H200"}});
  std::istringstream lines(out.str());
  std::string header, first, second, third;
  std::getline(lines, header);
  std::getline(lines, first);
  std::getline(lines, second);
  std::getline(lines, third);
  EXPECT_EQ(
      header,
      "lesson,gpu,variant,median_ms,rate,unit,of_reference,reference,vs_baseline,baseline,check,"
      "of_roof,roof");
  EXPECT_EQ(first.rfind(
                "01_register_staged,NVIDIA H200,D2D cudaMemcpy,0.500000,4000.000,GB/s,1.0000,", 0),
            0u)
      << first;
  EXPECT_NE(third.find("\"coarse, tuned\""), std::string::npos) << third;
  // No roof in this table: its two columns stay empty.
  EXPECT_EQ(third.substr(third.size() - 6), "FAIL,,");
}

TEST(Table, FindByVariantName) {
  const auto table = sample();
  ASSERT_NE(table.find("fine"), nullptr);
  EXPECT_DOUBLE_EQ(table.find("fine")->rate, 2000.0);
  EXPECT_EQ(table.find("medium"), nullptr);
}

TEST(Table, RatioTargetLineComparesTwoRowsOfTheTable) {
  const auto table = sample();  // fine 2000 GB/s, "coarse, tuned" 3636.4 GB/s
  EXPECT_EQ(course::ratio_target_line(table, {"coarse, tuned", "fine", 1.5}),
            "TARGET: coarse, tuned >= 1.50 x fine: met (1.818)");
  EXPECT_EQ(course::ratio_target_line(table, {"coarse, tuned", "fine", 2.0}),
            "TARGET: coarse, tuned >= 2.00 x fine: MISSED (1.818)");
  // Exactly at the target counts as met.
  EXPECT_EQ(course::ratio_target_line(table, {"fine", "fine", 1.0}),
            "TARGET: fine >= 1.00 x fine: met (1.000)");
  // A variant that did not run (--variant) gives no line at all.
  EXPECT_EQ(course::ratio_target_line(table, {"medium", "fine", 1.0}), "");
  EXPECT_EQ(course::ratio_target_line(table, {"fine", "medium", 1.0}), "");
  course::ResultsTable zero("ref", "base");
  zero.add({"a", 1.0, 10.0, std::nullopt, std::nullopt, "PASS", std::nullopt});
  zero.add({"b", 0.0, 0.0, std::nullopt, std::nullopt, "PASS", std::nullopt});
  EXPECT_EQ(course::ratio_target_line(zero, {"a", "b", 1.0}), "");
}

TEST(Table, RoofColumnAppearsOnlyWhenSet) {
  course::ResultsTable table = sample();
  std::ostringstream without;
  table.print(without);
  EXPECT_EQ(without.str().find("x SM copy roof"), std::string::npos);
  table.set_roof("SM copy roof");
  table.add({"roofed", 0.5, 4000.0, 1.0, 1.1, "PASS", 0.975});
  std::ostringstream with;
  table.print(with);
  EXPECT_NE(with.str().find("x SM copy roof"), std::string::npos);
  EXPECT_NE(with.str().find("0.975"), std::string::npos);
  std::ostringstream csv;
  table.write_csv(csv, {});
  EXPECT_NE(csv.str().find(",of_roof,roof\n"), std::string::npos);
  EXPECT_NE(csv.str().find(",0.9750,SM copy roof\n"), std::string::npos);
}

TEST(Table, SweepCsvPathSitsBesideTheMainCsv) {
  EXPECT_EQ(course::sweep_csv_path("out/06_x.csv"), "out/06_x_sweep.csv");
  EXPECT_EQ(course::sweep_csv_path("results"), "results_sweep.csv");
}

TEST(Table, CountedNamesTheNounInThePluralUnlessTheCountIsOne) {
  EXPECT_EQ(course::counted(1, "chunk"), "1 chunk");
  EXPECT_EQ(course::counted(4, "chunk"), "4 chunks");
  EXPECT_EQ(course::counted(0, "chunk"), "0 chunks");
  EXPECT_EQ(course::counted(2, "producer warp"), "2 producer warps");
}

TEST(Launch, StageCountDispatchesToTheCompileTimeCount) {
  const auto value_of = [](auto s) { return decltype(s)::value; };
  const auto dispatch = [&](int stages) { return course::with_stage_count<2, 8>(stages, value_of); };
  for (int stages = 2; stages <= 8; ++stages) EXPECT_EQ(dispatch(stages), stages);
  EXPECT_THROW(dispatch(1), std::invalid_argument);
  EXPECT_THROW(dispatch(9), std::invalid_argument);
  EXPECT_THROW(course::require(false, "lesson", "why"), std::invalid_argument);
  EXPECT_NO_THROW(course::require(true, "lesson", "why"));
}

TEST(Table, GigabytesPerSecond) {
  EXPECT_DOUBLE_EQ(course::gigabytes_per_second(2e9, 1000.0), 2.0);
  EXPECT_DOUBLE_EQ(course::gigabytes_per_second(1e6, 0.001), 1000.0);
  EXPECT_DOUBLE_EQ(course::gigabytes_per_second(1e6, 0.0), 0.0);
}

}  // namespace
