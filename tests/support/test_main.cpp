// The main() of every test executable: GoogleTest's, except that a run in which every test
// was skipped exits 77, which ctest reports as skipped. A GPU test skips (GTEST_SKIP) on a
// machine without a usable GPU; ctest runs the GPU tests one suite per process
// (cmake/CourseGpuSuites.cmake), and a suite that passed only because nothing ran must not
// count as passed. A run with a failure still exits 1, whatever else skipped.
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  const ::testing::UnitTest& run = *::testing::UnitTest::GetInstance();
  const bool all_skipped =
      run.test_to_run_count() > 0 && run.skipped_test_count() == run.test_to_run_count();
  return result == 0 && all_skipped ? 77 : result;
}
