#include <gtest/gtest.h>

#include <vector>

#include "course/flags.h"

namespace {

using course::CommonOptions;
using course::FlagParser;
using course::parse_int_list;
using course::require_in_range;
using course::UsageError;

struct Parsed {
  CommonOptions options;
  int extra = 5;
};

// Parses `args` (without the program name) with the common flags plus one lesson flag.
Parsed parse(std::vector<const char*> args) {
  Parsed p;
  FlagParser flags("prog", "A test program.");
  flags.add_common(p.options, "elements", {"fast", "slow"});
  flags.add_int("extra", &p.extra, 0, "a lesson's own flag");
  args.insert(args.begin(), "prog");
  flags.parse(static_cast<int>(args.size()), args.data());
  return p;
}

TEST(Flags, DefaultsWhenNothingIsGiven) {
  const Parsed p = parse({});
  EXPECT_EQ(p.options.device, 0);
  EXPECT_EQ(p.options.size, 0u);
  EXPECT_EQ(p.options.iters, 20);
  EXPECT_EQ(p.options.warmup, 3);
  EXPECT_FALSE(p.options.quick);
  EXPECT_FALSE(p.options.help);
  EXPECT_TRUE(p.options.variant.empty());
  EXPECT_EQ(p.extra, 5);
}

TEST(Flags, EveryCommonFlagInBothSpellings) {
  const Parsed p = parse({"--device", "1", "--size=64K", "--iters", "7", "--warmup=0", "--quick",
                          "--variant", "slow", "--csv=out.csv", "--extra", "9", "--help"});
  EXPECT_EQ(p.options.device, 1);
  EXPECT_EQ(p.options.size, 64u * 1024u);
  EXPECT_EQ(p.options.iters, 7);
  EXPECT_EQ(p.options.warmup, 0);
  EXPECT_TRUE(p.options.quick);
  EXPECT_EQ(p.options.variant, "slow");
  EXPECT_EQ(p.options.csv, "out.csv");
  EXPECT_EQ(p.extra, 9);
  EXPECT_TRUE(p.options.help);
}

TEST(Flags, CountSuffixes) {
  EXPECT_EQ(course::parse_count("size", "1000003"), 1000003u);
  EXPECT_EQ(course::parse_count("size", "3M"), 3u << 20);
  EXPECT_EQ(course::parse_count("size", "1G"), 1ull << 30);
  EXPECT_EQ(course::parse_count("size", "2k"), 2048u);
}

TEST(Flags, CountTextIsWhatParseCountReadsBack) {
  EXPECT_EQ(course::count_text(256ull << 20), "256M");
  EXPECT_EQ(course::count_text(1ull << 30), "1G");
  EXPECT_EQ(course::count_text(3ull << 30), "3G");
  EXPECT_EQ(course::count_text(1536ull << 20), "1536M");  // not a whole number of G
  EXPECT_EQ(course::count_text(4096), "4K");
  EXPECT_EQ(course::count_text(1000003), "1000003");
  EXPECT_EQ(course::count_text(0), "0");
  for (std::uint64_t n : {0ull, 1ull, 1000003ull, 4096ull, 1536ull << 20, 5ull << 30}) {
    EXPECT_EQ(course::parse_count("size", course::count_text(n)), n) << n;
  }
}

TEST(Flags, BytesTextUsesTheLargestWholeBinaryUnit) {
  EXPECT_EQ(course::bytes_text(1ull << 30), "1 GiB");
  EXPECT_EQ(course::bytes_text(512ull << 20), "512 MiB");
  EXPECT_EQ(course::bytes_text(4096), "4 KiB");
  EXPECT_EQ(course::bytes_text(100), "100 bytes");
}

TEST(Flags, NamesOfATableAreItsNamesInOrder) {
  struct Spec {
    const char* name;
    int value;
  };
  const Spec specs[] = {{"fine", 1}, {"coarse", 2}};
  EXPECT_EQ(course::names_of(specs), (std::vector<std::string>{"fine", "coarse"}));
}

TEST(Flags, UnknownFlagIsAUsageError) {
  EXPECT_THROW(parse({"--bogus"}), UsageError);
  EXPECT_THROW(parse({"bogus"}), UsageError);
  EXPECT_THROW(parse({"--"}), UsageError);
}

TEST(Flags, MalformedNumbersAreUsageErrors) {
  for (const char* bad : {"abc", "", "1.5", "12x", "-3", "99999999999"}) {
    EXPECT_THROW(parse({"--iters", bad}), UsageError) << "--iters " << bad;
  }
  EXPECT_THROW(parse({"--iters", "0"}), UsageError);  // at least one timed run
  EXPECT_THROW(parse({"--warmup", "-1"}), UsageError);
  for (const char* bad : {"", "K", "-1", "1T", "1.5M", "0x10", "99999999999999999999"}) {
    EXPECT_THROW(parse({"--size", bad}), UsageError) << "--size " << bad;
  }
  EXPECT_THROW(parse({"--size", "20000000000G"}), UsageError);  // overflows 64 bits
}

TEST(Flags, RequireInRangeNamesTheFlagTheRangeAndTheValue) {
  EXPECT_NO_THROW(require_in_range("stages", 2, 2, 8));
  EXPECT_NO_THROW(require_in_range("stages", 8, 2, 8));
  EXPECT_THROW(require_in_range("stages", 9, 2, 8), UsageError);
  try {
    require_in_range("stages", 1, 2, 8);
    ADD_FAILURE() << "1 is outside [2, 8]";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "--stages must be in [2, 8], got 1");
  }
}

TEST(Flags, IntListIsSortedUniqueAndInRange) {
  EXPECT_EQ(parse_int_list("chunks", "4,1,2,4", 1, 8), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(parse_int_list("ctas", "0", 0, 64), (std::vector<int>{0}));
  for (const char* bad :
       {"", ",", "1,", ",1", "1,,2", "0", "9", "x", "1.5", " 1", "1 ", "99999999999999999999"}) {
    EXPECT_THROW(parse_int_list("chunks", bad, 1, 8), UsageError) << "'" << bad << "'";
  }
  try {
    parse_int_list("chunks", "1,", 1, 8);
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--chunks expects integers in [1, 8] separated by commas, got '1,'");
  }
}

TEST(Flags, MissingValueAndUnexpectedValue) {
  EXPECT_THROW(parse({"--iters"}), UsageError);
  EXPECT_THROW(parse({"--quick=1"}), UsageError);
  EXPECT_THROW(parse({"--variant="}), UsageError);
}

TEST(Flags, VariantMustBeOneOfTheLessons) {
  EXPECT_THROW(parse({"--variant", "medium"}), UsageError);
  try {
    parse({"--variant", "medium"});
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("fast|slow"), std::string::npos) << e.what();
  }
}

TEST(Flags, UsageListsEveryFlagAndTheExitCodes) {
  CommonOptions options;
  FlagParser flags("prog", "A test program.");
  flags.add_common(options, "elements", {"a"});
  const std::string usage = flags.usage();
  for (const char* flag : {"--help", "--device", "--size", "--iters", "--warmup", "--quick",
                           "--variant", "--csv", "77"}) {
    EXPECT_NE(usage.find(flag), std::string::npos) << flag;
  }
}

}  // namespace
