/// \file table.h
/// \brief The results table every lesson prints, and its CSV form.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace course {

/// One measured variant.
struct ResultRow {
  std::string variant;
  double median_ms = 0;                ///< median time of one run
  double rate = 0;                     ///< GB/s (or the table's unit)
  std::optional<double> of_reference;  ///< rate / reference rate; empty for none
  std::optional<double> vs_baseline;   ///< baseline time / this time; empty for none
  std::string check;                   ///< "PASS", "FAIL", "ref" or "-"
  std::optional<double> of_roof;       ///< rate / the SM copy roof's rate; empty for none
};

/// A results table: a header naming the reference and baseline, then one row per variant.
class ResultsTable {
 public:
  ResultsTable(std::string reference_name, std::string baseline_name, std::string unit = "GB/s");
  /// Adds the column of a second yardstick (the SM copy roof) after the reference's.
  void set_roof(std::string roof_name) { roof_name_ = std::move(roof_name); }
  void add(ResultRow row) { rows_.push_back(std::move(row)); }
  const std::vector<ResultRow>& rows() const { return rows_; }
  const ResultRow* find(const std::string& variant) const;

  /// Aligned text table.
  void print(std::ostream& out) const;
  /// CSV with a header line; `context` columns (lesson, gpu, ...) are prepended to each row.
  void write_csv(std::ostream& out,
                 const std::vector<std::pair<std::string, std::string>>& context) const;

 private:
  std::string reference_name_;
  std::string baseline_name_;
  std::string unit_;
  std::string roof_name_;  ///< empty: no roof column
  std::vector<ResultRow> rows_;
};

/// Quotes a CSV field when it holds a comma, quote or newline.
std::string csv_field(const std::string& text);

/// Formats `value` with `digits` digits after the point.
std::string fixed(double value, int digits);

/// A count and its noun, the noun plural unless the count is 1: counted(1, "chunk") is
/// "1 chunk", counted(4, "chunk") is "4 chunks" (the noun gets an "s").
std::string counted(int count, const std::string& noun);

}  // namespace course
