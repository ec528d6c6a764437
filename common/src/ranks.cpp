#include "course/ranks.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <thread>
#include <utility>

extern char** environ;

namespace course::ranks {
namespace {

int hex_digit(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

/// A process's exit code as a shell reports it: its own, or 128 + the signal that ended it.
int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/// Starts `exe` with `args` (argv[1..]), stdout to /dev/null, this process's environment.
/// Returns posix_spawn's status (0: started) and the process id in `pid`.
int spawn(const std::string& exe, std::vector<std::string> args, pid_t& pid) {
  args.insert(args.begin(), exe);
  std::vector<char*> argv;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  // `environ` as it is now: whatever this process set before (NCCL_NVLS_ENABLE=0, for one),
  // the rank inherits.
  const int status = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return status;
}

}  // namespace

std::string to_hex(const void* bytes, std::size_t count) {
  static const char* const kDigits = "0123456789abcdef";
  const auto* in = static_cast<const unsigned char*>(bytes);
  std::string hex;
  hex.reserve(2 * count);
  for (std::size_t i = 0; i < count; ++i) {
    hex += kDigits[in[i] >> 4];
    hex += kDigits[in[i] & 15];
  }
  return hex;
}

void from_hex(const std::string& hex, void* bytes, std::size_t count, const std::string& what) {
  if (hex.size() != 2 * count) {
    throw std::invalid_argument(what + " is " + std::to_string(2 * count) + " hex digits, got " +
                                std::to_string(hex.size()));
  }
  auto* out = static_cast<unsigned char*>(bytes);
  for (std::size_t i = 0; i < count; ++i) {
    const int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      throw std::invalid_argument(what + " has hex digits only, got '" + hex.substr(2 * i, 2) +
                                  "' at " + std::to_string(2 * i));
    }
    out[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
}

std::string own_executable(const char* argv0) {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return argv0;
  path[n] = '\0';
  return path;
}

void end_with_parent() {
#ifdef __linux__
  prctl(PR_SET_PDEATHSIG, SIGTERM);
#endif
}

Started::Started(std::string program, const std::string& exe,
                 const std::vector<std::vector<std::string>>& command_lines)
    : program_(std::move(program)) {
  for (std::size_t i = 0; i < command_lines.size(); ++i) {
    pid_t pid = 0;
    const int status = spawn(exe, command_lines[i], pid);
    if (status != 0) {
      for (int p : pids_) kill(p, SIGTERM);
      pids_.clear();
      throw std::runtime_error("could not start rank " + std::to_string(i + 1) + " (" + exe +
                               "): " + std::strerror(status));
    }
    pids_.push_back(pid);
  }
}

Started::Started(Started&& other) noexcept
    : program_(std::move(other.program_)),
      pids_(std::exchange(other.pids_, {})),
      done_(std::move(other.done_)) {}

Started& Started::operator=(Started&& other) noexcept {
  if (this != &other) {
    stop();
    program_ = std::move(other.program_);
    pids_ = std::exchange(other.pids_, {});
    done_ = std::move(other.done_);
  }
  return *this;
}

Started::~Started() {
  if (!pids_.empty()) stop();
}

void Started::watch() const {
  if (pids_.empty() || !done_) return;
  std::thread([pids = pids_, done = done_, program = program_] {
    while (!done->load()) {
      for (std::size_t i = 0; i < pids.size(); ++i) {
        // WNOWAIT: leave the exit status for wait().
        siginfo_t info{};
        if (waitid(P_PID, static_cast<id_t>(pids[i]), &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
            info.si_pid == 0) {
          continue;
        }
        const int code = info.si_code == CLD_EXITED ? info.si_status : 128 + info.si_status;
        if (code != 0 && !done->load()) {
          std::fprintf(stderr,
                       "%s: rank %zu exited with code %d before the run ended; stopping the "
                       "other ranks\n",
                       program.c_str(), i + 1, code);
          for (int p : pids) kill(p, SIGTERM);
          std::_Exit(code == 77 ? 77 : 1);
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }).detach();
}

int Started::wait() {
  if (done_) done_->store(true);
  int first = 0;
  for (std::size_t i = 0; i < pids_.size(); ++i) {
    int status = 0;
    if (waitpid(pids_[i], &status, 0) < 0) continue;
    const int code = exit_code_of(status);
    if (code != 0) {
      std::cerr << program_ << ": rank " << i + 1 << " exited with code " << code << "\n";
      if (first == 0) first = code;
    }
  }
  pids_.clear();
  return first;
}

void Started::stop() {
  if (done_) done_->store(true);
  for (int p : pids_) kill(p, SIGTERM);
  for (int p : pids_) {
    int status = 0;
    waitpid(p, &status, 0);
  }
  pids_.clear();
}

}  // namespace course::ranks
