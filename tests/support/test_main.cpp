// The main() of every test executable: GoogleTest's, with two additions.
//  - A run in which every test was skipped exits 77, which ctest reports as skipped. A GPU
//    test skips (GTEST_SKIP) on a machine without a usable GPU; ctest runs the GPU tests one
//    suite per process (cmake/CourseGpuSuites.cmake), and a suite that passed only because
//    nothing ran must not count as passed. A run with a failure still exits 1.
//  - A watchdog: a GPU test (its suite's name holds "Gpu", as cmake/CourseGpuSuites.cmake
//    reads it) still running after COURSE_TEST_WATCHDOG_S seconds (30 by default) ends the
//    whole program with a failure that names it. A kernel whose wait never completes (a wrong
//    parity, arrival count or byte count) cannot be stopped from the host, and every later
//    test of the program would wait behind it until ctest's timeout: the student would wait
//    minutes for what the watchdog says in seconds. A CPU test (a PTX or SASS check, a
//    schedule checked against recorded calls) gets four times as long: it runs no kernel,
//    and reading SASS on a busy two-core machine can take longer than 30 s.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

namespace {

/// How long one test may run: COURSE_TEST_WATCHDOG_S seconds, or 30 (0 turns it off).
std::chrono::seconds watchdog_limit() {
  const char* text = std::getenv("COURSE_TEST_WATCHDOG_S");
  if (text == nullptr || *text == 0) return std::chrono::seconds(30);
  char* end = nullptr;
  const long seconds = std::strtol(text, &end, 10);
  return std::chrono::seconds(*end == 0 && seconds >= 0 ? seconds : 30);
}

class Watchdog : public ::testing::EmptyTestEventListener {
 public:
  explicit Watchdog(std::chrono::seconds limit) : limit_(limit), thread_([this] { watch(); }) {}

  ~Watchdog() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }

  void OnTestStart(const ::testing::TestInfo& test) override {
    const std::string suite = test.test_suite_name();
    std::lock_guard<std::mutex> lock(mutex_);
    name_ = suite + "." + test.name();
    gpu_ = suite.find("Gpu") != std::string::npos;
    test_limit_ = gpu_ ? limit_ : kCpuTestFactor * limit_;
    deadline_ = std::chrono::steady_clock::now() + test_limit_;
    running_ = true;
    changed_.notify_all();
  }

  void OnTestEnd(const ::testing::TestInfo&) override {
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = false;
    changed_.notify_all();
  }

 private:
  void watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!done_) {
      if (!running_) {
        changed_.wait(lock);
        continue;
      }
      const auto deadline = deadline_;
      if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && running_ &&
          deadline_ == deadline) {
        const char* likely =
            gpu_ ? "a kernel waits for something that never comes (a wait for the wrong phase "
                   "or parity, an arrival or byte count that is never reached)"
                 : "a loop of the code it runs never ends";
        std::fprintf(stderr,
                     "\n[  FAILED  ] %s (watchdog): still running after %lld s. Most likely %s: "
                     "it cannot be stopped, so the program ends here and its remaining tests do "
                     "not run.\n",
                     name_.c_str(), static_cast<long long>(test_limit_.count()), likely);
        std::fflush(stderr);
        std::_Exit(1);
      }
    }
  }

  static constexpr int kCpuTestFactor = 4;  // a test that runs no kernel: 4 x the limit
  const std::chrono::seconds limit_;
  std::chrono::seconds test_limit_{0};  // the running test's: limit_ or 4 x limit_
  bool gpu_ = false;                    // the running test is a GPU test
  std::mutex mutex_;
  std::condition_variable changed_;
  std::string name_;
  std::chrono::steady_clock::time_point deadline_{};
  bool running_ = false;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const std::chrono::seconds limit = watchdog_limit();
  if (limit.count() > 0) {
    // GoogleTest owns the listeners it is given and deletes them when the program ends.
    ::testing::UnitTest::GetInstance()->listeners().Append(new Watchdog(limit));
  }
  const int result = RUN_ALL_TESTS();
  const ::testing::UnitTest& run = *::testing::UnitTest::GetInstance();
  const bool all_skipped =
      run.test_to_run_count() > 0 && run.skipped_test_count() == run.test_to_run_count();
  return result == 0 && all_skipped ? 77 : result;
}
