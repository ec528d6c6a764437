#include "course/table.h"

#include <algorithm>
#include <iomanip>
#include <ostream>
#include <sstream>

namespace course {

std::string fixed(double value, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << value;
  return out.str();
}

std::string counted(int count, const std::string& noun) {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

ResultsTable::ResultsTable(std::string reference_name, std::string baseline_name, std::string unit)
    : reference_name_(std::move(reference_name)),
      baseline_name_(std::move(baseline_name)),
      unit_(std::move(unit)) {}

const ResultRow* ResultsTable::find(const std::string& variant) const {
  for (const ResultRow& row : rows_) {
    if (row.variant == variant) return &row;
  }
  return nullptr;
}

void ResultsTable::print(std::ostream& out) const {
  const bool roof = !roof_name_.empty();
  std::vector<std::string> header = {"variant", "median ms", unit_, "x " + reference_name_};
  if (roof) header.push_back("x " + roof_name_);
  header.insert(header.end(), {"x " + baseline_name_, "check"});
  std::vector<std::vector<std::string>> cells = {header};
  for (const ResultRow& r : rows_) {
    std::vector<std::string> line = {r.variant, fixed(r.median_ms, 4), fixed(r.rate, 1),
                                     r.of_reference ? fixed(*r.of_reference, 3) : "-"};
    if (roof) line.push_back(r.of_roof ? fixed(*r.of_roof, 3) : "-");
    line.insert(line.end(), {r.vs_baseline ? fixed(*r.vs_baseline, 2) : "-", r.check});
    cells.push_back(std::move(line));
  }
  std::vector<std::size_t> width(header.size(), 0);
  for (const auto& line : cells) {
    for (std::size_t c = 0; c < line.size(); ++c) width[c] = std::max(width[c], line[c].size());
  }
  for (const auto& line : cells) {
    for (std::size_t c = 0; c < line.size(); ++c) {
      // The variant name is left-aligned, the numbers right-aligned.
      out << (c == 0 ? std::left : std::right) << std::setw(static_cast<int>(width[c])) << line[c]
          << (c + 1 < line.size() ? "  " : "\n");
    }
  }
}

void ResultsTable::write_csv(
    std::ostream& out, const std::vector<std::pair<std::string, std::string>>& context) const {
  for (const auto& [key, value] : context) out << csv_field(key) << ",";
  out << "variant,median_ms,rate,unit,of_reference,reference,vs_baseline,baseline,check,of_roof,"
         "roof\n";
  for (const ResultRow& r : rows_) {
    for (const auto& [key, value] : context) out << csv_field(value) << ",";
    out << csv_field(r.variant) << "," << fixed(r.median_ms, 6) << "," << fixed(r.rate, 3) << ","
        << csv_field(unit_) << "," << (r.of_reference ? fixed(*r.of_reference, 4) : "") << ","
        << csv_field(reference_name_) << "," << (r.vs_baseline ? fixed(*r.vs_baseline, 4) : "")
        << "," << csv_field(baseline_name_) << "," << r.check << ","
        << (r.of_roof ? fixed(*r.of_roof, 4) : "") << "," << csv_field(roof_name_) << "\n";
  }
}

}  // namespace course
