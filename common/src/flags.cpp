#include "course/flags.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <sstream>

namespace course {

namespace {

int parse_int(const std::string& flag, const std::string& text, int min_value) {
  std::size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || value < min_value ||
      value > std::numeric_limits<int>::max()) {
    throw UsageError("--" + flag + " expects an integer >= " + std::to_string(min_value) +
                     ", got '" + text + "'");
  }
  return static_cast<int>(value);
}

/// A power of 1024 as a shift and the letter parse_count reads for it.
struct BinaryUnit {
  int shift;
  const char* letter;
};

/// The largest of G, M, K that divides `n`; none ({0, ""}) for 0 or a number K does not divide.
BinaryUnit binary_unit(std::uint64_t n) {
  for (const BinaryUnit unit : {BinaryUnit{30, "G"}, BinaryUnit{20, "M"}, BinaryUnit{10, "K"}}) {
    if (n != 0 && n % (1ull << unit.shift) == 0) return unit;
  }
  return {0, ""};
}

}  // namespace

std::uint64_t parse_count(const std::string& flag, const std::string& text) {
  const std::string error =
      "--" + flag + " expects a count such as 1000003, 64K or 1G, got '" + text + "'";
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) throw UsageError(error);
  std::size_t used = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &used);
  } catch (const std::exception&) {
    throw UsageError(error);
  }
  std::uint64_t scale = 1;
  const std::string suffix = text.substr(used);
  if (suffix == "K" || suffix == "k")
    scale = 1ull << 10;
  else if (suffix == "M" || suffix == "m")
    scale = 1ull << 20;
  else if (suffix == "G" || suffix == "g")
    scale = 1ull << 30;
  else if (!suffix.empty())
    throw UsageError(error);
  if (value > std::numeric_limits<std::uint64_t>::max() / scale)
    throw UsageError(error + " (too large)");
  return value * scale;
}

std::string count_text(std::uint64_t n) {
  const BinaryUnit unit = binary_unit(n);
  return std::to_string(n >> unit.shift) + unit.letter;
}

std::string bytes_text(std::uint64_t bytes) {
  const BinaryUnit unit = binary_unit(bytes);
  if (unit.shift == 0) return std::to_string(bytes) + " bytes";
  return std::to_string(bytes >> unit.shift) + " " + unit.letter + "iB";
}

void require_in_range(const std::string& flag, long long value, long long min, long long max) {
  if (value < min || value > max) {
    throw UsageError("--" + flag + " must be in [" + std::to_string(min) + ", " +
                     std::to_string(max) + "], got " + std::to_string(value));
  }
}

std::vector<int> parse_int_list(const std::string& flag, const std::string& text, int min,
                                int max) {
  const std::string error = "--" + flag + " expects integers in [" + std::to_string(min) + ", " +
                            std::to_string(max) + "] separated by commas, got '" + text + "'";
  // getline yields no item after a trailing comma: reject it here, as an empty item.
  if (text.empty() || text.back() == ',') throw UsageError(error);
  std::vector<int> values;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    errno = 0;
    const long value = std::strtol(item.c_str(), &end, 10);
    const bool spaced = !item.empty() && std::isspace(static_cast<unsigned char>(item[0]));
    if (item.empty() || spaced || *end != '\0' || errno == ERANGE || value < min || value > max) {
      throw UsageError(error);
    }
    values.push_back(static_cast<int>(value));
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

FlagParser::FlagParser(std::string program, std::string description)
    : program_(std::move(program)), description_(std::move(description)) {}

void FlagParser::add_common(CommonOptions& o, const std::string& size_help,
                            const std::vector<std::string>& variants) {
  add_bool("help", &o.help, "print this help and exit");
  add_int("device", &o.device, 0, "CUDA device to run on (default 0)");
  add_count("size", &o.size, size_help);
  add_int("iters", &o.iters, 1, "timed repetitions; the median is reported (default 20)");
  add_int("warmup", &o.warmup, 0, "untimed repetitions before timing (default 3)");
  add_bool("quick", &o.quick, "small sizes and few repetitions (for tests and sanitizers)");
  add_choice("variant", &o.variant, variants, "run only this variant (the reference always runs)");
  add_string("csv", &o.csv, "also write the table to this CSV file");
}

void FlagParser::add_int(const std::string& name, int* target, int min_value,
                         const std::string& help) {
  flags_.push_back(
      {name, "N", help, [=](const std::string& v) { *target = parse_int(name, v, min_value); }});
}

void FlagParser::add_count(const std::string& name, std::uint64_t* target,
                           const std::string& help) {
  flags_.push_back(
      {name, "N", help, [=](const std::string& v) { *target = parse_count(name, v); }});
}

void FlagParser::add_bool(const std::string& name, bool* target, const std::string& help) {
  flags_.push_back({name, "", help, [=](const std::string&) { *target = true; }});
}

void FlagParser::add_string(const std::string& name, std::string* target, const std::string& help) {
  flags_.push_back({name, "TEXT", help, [=](const std::string& v) {
                      if (v.empty()) throw UsageError("--" + name + " expects a value");
                      *target = v;
                    }});
}

void FlagParser::add_choice(const std::string& name, std::string* target,
                            std::vector<std::string> choices, const std::string& help) {
  std::string joined;
  for (const auto& c : choices) joined += (joined.empty() ? "" : "|") + c;
  flags_.push_back({name, joined, help, [=](const std::string& v) {
                      if (std::find(choices.begin(), choices.end(), v) == choices.end()) {
                        throw UsageError("--" + name + " must be one of " + joined + ", got '" + v +
                                         "'");
                      }
                      *target = v;
                    }});
}

const FlagParser::Flag* FlagParser::find(const std::string& name) const {
  for (const Flag& f : flags_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

void FlagParser::parse(int argc, const char* const* argv) const {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0 || arg.size() == 2) {
      throw UsageError("unexpected argument '" + arg + "' (flags start with --)");
    }
    const std::size_t equals = arg.find('=');
    const std::string name =
        arg.substr(2, equals == std::string::npos ? std::string::npos : equals - 2);
    const Flag* flag = find(name);
    if (flag == nullptr) throw UsageError("unknown flag --" + name);
    if (flag->value_name.empty()) {
      if (equals != std::string::npos) throw UsageError("--" + name + " takes no value");
      flag->set("");
      continue;
    }
    std::string value;
    if (equals != std::string::npos) {
      value = arg.substr(equals + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      throw UsageError("--" + name + " needs a value");
    }
    flag->set(value);
  }
}

std::string FlagParser::usage() const {
  std::ostringstream out;
  out << "usage: " << program_ << " [flags]\n\n" << description_ << "\n\nflags:\n";
  for (const Flag& f : flags_) {
    std::string left = "  --" + f.name + (f.value_name.empty() ? "" : " " + f.value_name);
    if (left.size() < 26)
      left.resize(26, ' ');
    else
      left += "  ";
    out << left << f.help << "\n";
  }
  out << "\nexit codes: 0 pass, 1 verification failed, 2 usage error, 77 cannot run here\n";
  return out.str();
}

}  // namespace course
