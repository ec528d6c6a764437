/// \file flags.h
/// \brief Command-line flags: the options every lesson executable shares, plus its own.
///
/// Parsing touches no CUDA API, so a usage error exits with code 2 before any device work.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace course {

/// A bad command line. Drivers print what() and the usage on stderr and exit 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The flags every lesson executable takes (COURSE_DESIGN.md section 8).
struct CommonOptions {
  int device = 0;          ///< --device N
  std::uint64_t size = 0;  ///< --size N (0: the lesson's default); unit given by the lesson
  int iters = 20;          ///< --iters N timed repetitions (the median is reported)
  int warmup = 3;          ///< --warmup N untimed repetitions first
  bool quick = false;      ///< --quick: small sizes, for tests and sanitizers
  std::string variant;     ///< --variant NAME: run only this variant (and the reference)
  std::string csv;         ///< --csv FILE: also write the table as CSV
  bool help = false;       ///< --help was given
};

/// A small flag parser: `--name value`, `--name=value` and boolean `--name`.
class FlagParser {
 public:
  FlagParser(std::string program, std::string description);

  /// Registers the CommonOptions flags. `size_help` says what --size counts; `variants`
  /// are the names --variant accepts.
  void add_common(CommonOptions& options, const std::string& size_help,
                  const std::vector<std::string>& variants);
  void add_int(const std::string& name, int* target, int min_value, const std::string& help);
  /// An unsigned count; accepts the suffixes K, M, G (powers of 1024), e.g. `--size 64M`.
  void add_count(const std::string& name, std::uint64_t* target, const std::string& help);
  void add_bool(const std::string& name, bool* target, const std::string& help);
  void add_string(const std::string& name, std::string* target, const std::string& help);
  /// A string restricted to `choices` (an empty value is allowed and means "all").
  void add_choice(const std::string& name, std::string* target, std::vector<std::string> choices,
                  const std::string& help);

  /// Parses argv[1..argc). Throws UsageError naming the offending flag.
  void parse(int argc, const char* const* argv) const;
  /// The usage text: synopsis, description and one line per flag.
  std::string usage() const;

 private:
  struct Flag {
    std::string name;
    std::string value_name;  // empty for booleans
    std::string help;
    std::function<void(const std::string&)> set;
  };
  const Flag* find(const std::string& name) const;
  std::string program_;
  std::string description_;
  std::vector<Flag> flags_;
};

/// The names of `specs` (anything whose elements have a `name`: a lesson's table of variants),
/// in order: what --variant accepts.
template <class Specs>
std::vector<std::string> names_of(const Specs& specs) {
  std::vector<std::string> names;
  for (const auto& spec : specs) names.emplace_back(spec.name);
  return names;
}

/// Parses "123", "64K", "3M", "1G" into a count; throws UsageError on anything else.
std::uint64_t parse_count(const std::string& flag, const std::string& text);

/// `n` as a usage text writes a count, the inverse of parse_count: with the largest suffix
/// (G, M, K) that divides it ("256M", "1G", "4K"), else its digits ("1000003"). Usage texts
/// build the defaults and limits they name from the constants with it.
std::string count_text(std::uint64_t n);

/// `bytes` in the largest binary unit that divides it: "1 GiB", "512 MiB", "4 KiB", else
/// "100 bytes".
std::string bytes_text(std::uint64_t bytes);

/// The range check a flag's own parser cannot do: throws UsageError "--FLAG must be in
/// [min, max], got VALUE" unless min <= value <= max. Give the constants that define the
/// range, never literals that repeat them.
void require_in_range(const std::string& flag, long long value, long long min, long long max);

/// "4,1,2,4" -> {1, 2, 4}: a flag's comma-separated integers, sorted and without repeats,
/// each in [min, max]. Throws UsageError naming --FLAG for an empty list or item, a trailing
/// comma, anything that is not an integer, or a value out of range.
std::vector<int> parse_int_list(const std::string& flag, const std::string& text, int min, int max);

}  // namespace course
