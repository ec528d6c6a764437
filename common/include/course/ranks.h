/// \file ranks.h
/// \brief The ranks of a program that runs one process per GPU on one host (lesson 17): rank 0
/// starts ranks 1 .. n-1 as processes of its own program, watches them, waits for them, and
/// stops them when the run fails; and bytes as hex, the way a token (an NCCL unique id)
/// travels on their command lines.
///
/// POSIX processes (posix_spawn, waitid, kill); end_with_parent() is Linux-only. Nothing here
/// knows NCCL: the lesson hands its id's bytes to to_hex() and from_hex().
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace course::ranks {

/// `count` bytes as 2 x count lower-case hex digits: {0x00, 0xff} -> "00ff".
std::string to_hex(const void* bytes, std::size_t count);

/// The inverse of to_hex: fills `count` bytes from 2 x count hex digits (either case). Throws
/// std::invalid_argument "WHAT is N hex digits, got M" for a wrong length and "WHAT has hex
/// digits only, got 'XY' at I" for a pair with a non-hex digit; `what` names the value ("an
/// NCCL unique id").
void from_hex(const std::string& hex, void* bytes, std::size_t count, const std::string& what);

/// This program's own executable (/proc/self/exe), or `argv0` where that cannot be read: what
/// rank 0 starts again for the other ranks.
std::string own_executable(const char* argv0);

/// In a started rank: asks the kernel to end this process (SIGTERM) when its parent (rank 0 or
/// a launcher) dies, so that no rank outlives a crashed run. Linux only; a no-op elsewhere.
void end_with_parent();

/// The processes that rank 0 started for ranks 1, 2, ... of one run (none in a rank that was
/// started itself). Move-only. Destroying one whose ranks still run stops them (stop()): a rank
/// waiting inside a collective for a rank that is gone would wait forever.
class Started {
 public:
  Started() = default;
  /// Starts `exe` once per entry of `command_lines` (its arguments; entry i is rank i + 1),
  /// each with this process's environment and its stdout sent to /dev/null (rank 0 prints the
  /// report; their stderr stays). `program` begins every message about them. Throws
  /// std::runtime_error naming the rank and `exe` when one cannot start, after sending
  /// SIGTERM to the ones already started.
  Started(std::string program, const std::string& exe,
          const std::vector<std::vector<std::string>>& command_lines);
  Started(Started&& other) noexcept;
  Started& operator=(Started&& other) noexcept;
  Started(const Started&) = delete;
  Started& operator=(const Started&) = delete;
  ~Started();

  /// The started processes' ids, rank 1's first; empty after wait() or stop().
  const std::vector<int>& pids() const { return pids_; }

  /// Watches the ranks from a thread until wait() or stop(): when one exits with a failure
  /// before then, it prints "PROGRAM: rank R exited with code C before the run ended; stopping
  /// the other ranks", sends SIGTERM to every rank and ends this process, with exit code 77
  /// when the rank's was 77 (cannot run here), otherwise 1. A rank that never arrives would
  /// otherwise leave the others waiting forever.
  void watch() const;

  /// Ends the watch and waits for every rank. Prints "PROGRAM: rank R exited with code C" for
  /// each that failed (a signal counts as 128 + its number) and returns the first such code;
  /// 0 when every rank passed.
  int wait();

  /// Ends the watch, sends SIGTERM to every rank still running and reaps them.
  void stop();

 private:
  std::string program_;
  std::vector<int> pids_;
  /// Set by wait() and stop(); the watching thread shares it and ends when it is set.
  std::shared_ptr<std::atomic<bool>> done_ = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace course::ranks
