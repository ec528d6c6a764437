// Lesson 13, read-only: the CUDA_LAUNCH_BLOCKING=1 row of the breaker matrix.
//
// The runtime reads CUDA_LAUNCH_BLOCKING once, when the program starts using CUDA, so the
// row cannot be measured in this process: the driver runs its own executable again with
// the variable set and --child-launch-blocking. The child measures two spins in two
// non-blocking streams with nothing between them (the control row) and prints one
// CHILD-REPORT line, which the parent parses back.
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "course/buffers.h"
#include "measure.h"

namespace streams_and_sync {
namespace {

constexpr const char* kChildTag = "CHILD-REPORT";

/// The path of this executable, to run it again as a child process (Linux).
std::optional<std::string> own_executable() {
  char path[PATH_MAX];
  const ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
  if (length <= 0) return std::nullopt;
  return std::string(path, static_cast<std::size_t>(length));
}

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

/// Runs `command` through the shell; returns its exit code and standard output.
std::pair<int, std::string> run_command(const std::string& command) {
  std::cout << std::flush;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, ""};
  std::string output;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

}  // namespace

std::string format_child_report(const ChildReport& r) {
  char line[256];
  std::snprintf(line, sizeof line,
                "%s launch_blocking=%d t1_ms=%.6f t2_ms=%.6f pair_ms=%.6f overlap=%.6f values=%s",
                kChildTag, r.launch_blocking ? 1 : 0, r.timing.t1_ms, r.timing.t2_ms,
                r.timing.pair_ms, r.timing.overlap, r.values_ok ? "ok" : "FAIL");
  return line;
}

std::optional<ChildReport> parse_child_report(const std::string& output) {
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string tag;
    if (!(fields >> tag) || tag != kChildTag) continue;
    ChildReport r;
    int found = 0;  // one bit per key, so a line missing a key is rejected
    std::string field;
    try {
      while (fields >> field) {
        const std::size_t eq = field.find('=');
        if (eq == std::string::npos) return std::nullopt;
        const std::string key = field.substr(0, eq);
        const std::string value = field.substr(eq + 1);
        std::size_t used = 0;
        const auto number = [&] {
          const double v = std::stod(value, &used);
          if (used != value.size()) throw std::invalid_argument(value);
          return v;
        };
        if (key == "launch_blocking" && (value == "0" || value == "1")) {
          r.launch_blocking = value == "1";
          found |= 1;
        } else if (key == "t1_ms") {
          r.timing.t1_ms = number();
          found |= 2;
        } else if (key == "t2_ms") {
          r.timing.t2_ms = number();
          found |= 4;
        } else if (key == "pair_ms") {
          r.timing.pair_ms = number();
          found |= 8;
        } else if (key == "overlap") {
          r.timing.overlap = number();
          found |= 16;
        } else if (key == "values" && (value == "ok" || value == "FAIL")) {
          r.values_ok = value == "ok";
          found |= 32;
        } else {
          return std::nullopt;
        }
      }
    } catch (const std::exception&) {  // std::stod: not a number, or out of range
      return std::nullopt;
    }
    if (found == 63) return r;
    return std::nullopt;
  }
  return std::nullopt;
}

Measured measure_launch_blocking_child(const ChildArgs& args) {
  Measured m;
  const std::optional<std::string> exe = own_executable();
  if (!exe) {
    m.problem = "cannot find this executable (/proc/self/exe) to run it as a child";
    return m;
  }
  const std::string command =
      "CUDA_LAUNCH_BLOCKING=1 " + shell_quote(*exe) + " --child-launch-blocking --device " +
      std::to_string(args.device) + " --spin-ms " + std::to_string(args.spin_ms) + " --warmup " +
      std::to_string(args.warmup) + " --iters " + std::to_string(args.iters);
  const auto [exit_code, output] = run_command(command);
  // A sanitizer's lines about the child belong in this output too.
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("=========", 0) == 0) std::cout << line << "\n";
  }
  const auto report = parse_child_report(output);
  if (exit_code != 0 || !report) {
    m.problem = "the child process exited " + std::to_string(exit_code) +
                (report ? "" : " without a report line") + "; its output:\n" + output;
  } else if (!report->launch_blocking) {
    m.problem = "the child did not see CUDA_LAUNCH_BLOCKING=1";
  } else if (!report->values_ok) {
    m.problem = "the child's spin records did not verify";
  } else {
    m.timing = report->timing;
  }
  return m;
}

int run_child(std::uint64_t spin_ns, int warmup, int iters) {
  PairBench bench(spin_ns, 0);
  course::Stream first, second;  // non-blocking
  const Measured m = measure(warmup, iters, [&](bool) { return bench.kernel_pair(first, second); });
  ChildReport report;
  const char* blocking = std::getenv("CUDA_LAUNCH_BLOCKING");
  report.launch_blocking = blocking != nullptr && std::string(blocking) == "1";
  report.values_ok = m.problem.empty();
  report.timing = m.timing;
  if (!m.problem.empty()) std::cerr << "child: " << m.problem << "\n";
  std::cout << format_child_report(report) << std::endl;
  return report.values_ok ? 0 : 1;
}

}  // namespace streams_and_sync
