# Read by ctest (a TEST_INCLUDE_FILES script): registers the GPU tests of one GoogleTest
# executable as one ctest test per test suite, not one per test.
#
# Every test process pays for creating a CUDA context and loading the lesson's kernels,
# which costs more than most GPU tests themselves; several processes on one GPU mostly
# wait for each other's contexts. One process per suite (a suite's tests share a fixture
# and usually a TEST_P instantiation) keeps the whole run short while each failure still
# names its test and the TODO it concerns in the output.
#
# The executable's main (tests/support/test_main.cpp) exits 77 when every test it ran was
# skipped (no usable GPU, or a compute capability below the test's), which ctest reports
# as skipped; a suite in which any test failed fails, whatever else skipped.
#
# Inputs (set by the generated include file): COURSE_SUITE_EXE, COURSE_SUITE_PREFIX,
# COURSE_SUITE_LABELS, COURSE_SUITE_TIMEOUT.

if(NOT EXISTS "${COURSE_SUITE_EXE}")
  # Not built (yet): the same message ctest gives for a missing executable.
  add_test("${COURSE_SUITE_PREFIX}NOT_BUILT" "${COURSE_SUITE_EXE}")
  return()
endif()

execute_process(COMMAND "${COURSE_SUITE_EXE}" --gtest_list_tests "--gtest_filter=*Gpu*.*"
  OUTPUT_VARIABLE listing RESULT_VARIABLE listed TIMEOUT 60)
if(NOT listed EQUAL 0)
  message(FATAL_ERROR "${COURSE_SUITE_EXE} --gtest_list_tests failed (${listed}):\n${listing}")
endif()

string(REPLACE "\n" ";" lines "${listing}")
foreach(line IN LISTS lines)
  # A suite line starts in column 0 and ends in '.' (perhaps followed by "  # TypeParam...").
  if(line MATCHES "^([^ #][^ ]*)\\.( .*)?$")
    set(suite "${CMAKE_MATCH_1}")
    set(test "${COURSE_SUITE_PREFIX}${suite}")
    add_test("${test}" "${COURSE_SUITE_EXE}" "--gtest_filter=${suite}.*")
    set_tests_properties("${test}" PROPERTIES
      LABELS "${COURSE_SUITE_LABELS}" TIMEOUT "${COURSE_SUITE_TIMEOUT}" SKIP_RETURN_CODE 77)
  endif()
endforeach()
