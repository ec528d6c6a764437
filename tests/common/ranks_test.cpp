// course/ranks.h on the CPU: bytes to hex and back, and ranks started as small shell commands
// (/bin/true, /bin/false, `sh -c`), waited for, stopped, and watched: one that fails stops the
// others. Every test takes well under a second; none waits for a sleeping rank to end by itself.
#include <gtest/gtest.h>
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "course/ranks.h"

namespace {

namespace ranks = course::ranks;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// A rank that would sleep for half a minute unless it is stopped (exec: the pid is sleep's).
const std::vector<std::string> kSleeper = {"-c", "exec sleep 30"};

TEST(RanksHex, RoundTripsEveryByteValue) {
  std::vector<std::uint8_t> bytes(256);
  for (int i = 0; i < 256; ++i) bytes[i] = static_cast<std::uint8_t>(i);
  const std::string hex = ranks::to_hex(bytes.data(), bytes.size());
  ASSERT_EQ(hex.size(), 512u);
  EXPECT_EQ(hex.substr(0, 6), "000102");
  EXPECT_EQ(hex.substr(2 * 0xa9, 2), "a9");
  EXPECT_EQ(hex.substr(508), "feff");
  std::vector<std::uint8_t> back(256, 0);
  ranks::from_hex(hex, back.data(), back.size(), "a token");
  EXPECT_EQ(back, bytes);
  std::uint8_t upper[2] = {0, 0};
  ranks::from_hex("A9fF", upper, 2, "a token");
  EXPECT_EQ(upper[0], 0xa9);
  EXPECT_EQ(upper[1], 0xff);
  EXPECT_EQ(ranks::to_hex(upper, 0), "");
}

/// What from_hex throws for `hex` into 2 bytes ("" when it does not throw).
std::string hex_error(const std::string& hex) {
  std::uint8_t out[2] = {0, 0};
  try {
    ranks::from_hex(hex, out, 2, "a token");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(RanksHex, RejectsAWrongLengthOrANonHexDigit) {
  EXPECT_EQ(hex_error(""), "a token is 4 hex digits, got 0");
  EXPECT_EQ(hex_error("abc"), "a token is 4 hex digits, got 3");
  EXPECT_EQ(hex_error("abcde"), "a token is 4 hex digits, got 5");
  EXPECT_EQ(hex_error("ab0g"), "a token has hex digits only, got '0g' at 2");
  EXPECT_EQ(hex_error("x0ab"), "a token has hex digits only, got 'x0' at 0");
  EXPECT_EQ(hex_error(" 0ab"), "a token has hex digits only, got ' 0' at 0");
  EXPECT_EQ(hex_error("0a0b"), "");
}

TEST(RanksStarted, WaitReturnsTheFirstFailingExitCode) {
  EXPECT_EQ(ranks::Started("test", "/bin/true", {{}, {}, {}}).wait(), 0);
  EXPECT_EQ(ranks::Started("test", "/bin/false", {{}}).wait(), 1);
  // Each rank gets its own arguments: `sh -c SCRIPT NAME ARG` runs SCRIPT with $0 = NAME.
  EXPECT_EQ(ranks::Started("test", "/bin/sh",
                           {{"-c", "exit 0"}, {"-c", "exit $1", "x", "3"}, {"-c", "exit 4"}})
                .wait(),
            3);
  ranks::Started none;
  EXPECT_EQ(none.wait(), 0);
}

TEST(RanksStarted, AProgramThatCannotStartThrows) {
  EXPECT_THROW(ranks::Started("test", "/nonexistent/rank", {{}, {}}), std::runtime_error);
}

TEST(RanksStarted, StopEndsSleepingRanksAtOnce) {
  const Clock::time_point start = Clock::now();
  ranks::Started started("test", "/bin/sh", {kSleeper, kSleeper});
  const std::vector<int> pids = started.pids();
  ASSERT_EQ(pids.size(), 2u);
  started.stop();
  EXPECT_TRUE(started.pids().empty());
  for (int pid : pids) {  // reaped: no such process any more
    errno = 0;
    EXPECT_EQ(kill(pid, 0), -1);
    EXPECT_EQ(errno, ESRCH);
  }
  EXPECT_LT(seconds_since(start), 5.0);
}

TEST(RanksStarted, LeavingTheScopeStopsRanksStillRunning) {
  const Clock::time_point start = Clock::now();
  std::vector<int> pids;
  {
    ranks::Started started("test", "/bin/sh", {kSleeper});
    pids = started.pids();
    ranks::Started moved = std::move(started);  // the ranks go with the move
    EXPECT_TRUE(started.pids().empty());
    EXPECT_EQ(moved.pids(), pids);
  }
  ASSERT_EQ(pids.size(), 1u);
  errno = 0;
  EXPECT_EQ(kill(pids[0], 0), -1);
  EXPECT_EQ(errno, ESRCH);
  EXPECT_LT(seconds_since(start), 5.0);
}

TEST(RanksStartedDeathTest, WatchStopsTheOthersWhenOneFails) {
  // The sleeping rank 1 shares the death test's stderr: the test ends only once it has
  // ended too, so finishing within seconds means the watch stopped it. "threadsafe": the
  // death test runs in a fresh copy of this program, not a fork of a process with threads.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const Clock::time_point start = Clock::now();
  EXPECT_EXIT(
      {
        ranks::Started started("prog", "/bin/sh", {kSleeper, {"-c", "sleep 0.2; exit 3"}});
        started.watch();
        std::this_thread::sleep_for(std::chrono::seconds(20));
        std::exit(0);
      },
      testing::ExitedWithCode(1),
      "prog: rank 2 exited with code 3 before the run ended; stopping the other ranks");
  EXPECT_LT(seconds_since(start), 5.0);
  // A rank that cannot run here (77) ends the run with 77.
  EXPECT_EXIT(
      {
        ranks::Started started("prog", "/bin/sh", {{"-c", "exit 77"}});
        started.watch();
        std::this_thread::sleep_for(std::chrono::seconds(20));
        std::exit(0);
      },
      testing::ExitedWithCode(77), "prog: rank 1 exited with code 77");
}

TEST(RanksStarted, NoWatchAfterWait) {
  // wait() ends the watch: a rank's failure is reported by wait(), and this process goes on.
  ranks::Started started("test", "/bin/sh", {{"-c", "sleep 0.3; exit 5"}});
  started.watch();
  EXPECT_EQ(started.wait(), 5);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the watch would have acted
  SUCCEED();
}

}  // namespace
