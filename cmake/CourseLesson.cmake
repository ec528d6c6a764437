# course_add_lesson(<number> <slug> [TEST_HOOKS] [USES <NN_slug>...] [SOURCES <file>...])
#
# Turns lessons/<number>_<slug>/ into everything a lesson needs:
#
#   <number>_<slug>                 the driver (given/main.cu) linked with the starter
#   <number>_<slug>_solution        the driver linked with solutions/<number>_<slug>/<slug>.cu
#   <number>_<slug>_test            tests/<number>_<slug>_test.cu against the starter
#   <number>_<slug>_solution_test   the same test source against the solution
#
# USES names earlier lessons whose solution kernels this lesson compares against (lesson
# 02's table includes lesson 01's kernel): their API headers become visible and their
# already-compiled solution objects are linked in, never recompiled.
#
# A tree without solutions/ (a handout made by `./course handout`, or -DCOURSE_WITH_SOLUTIONS=OFF)
# gets the student's targets only: no <number>_<slug>_solution* target and none of the tests
# that need one (integrity, mutation, sanitize: they run the solution). USES then links the
# student's own file of the earlier lesson (its starter objects), never an answer. The lesson's
# own CMakeLists.txt stays as it is: after making the targets, course_add_lesson() runs the rest
# of that file through cmake/course_starter_only.py, which leaves out every statement about a
# solution target, includes what is left and returns from the file (hence a macro).
#
# A lesson folder shows the student's room at a glance: at its top only the exercise file
# <slug>.cu, the API header <slug>.cuh, the READMEs and this CMakeLists.txt; everything the
# student only reads lives in lessons/<number>_<slug>/given/. Both folders are include
# directories of every target of the lesson.
#
# The student's file <slug>.cu holds only the exercise (kernels and the helpers they call).
# The read-only launchers, lessons/<number>_<slug>/given/<slug>_launch.cu (validation,
# attributes, dispatch), are compiled in one unit with the student's file and, separately,
# with the solution's: a kernel template and the launcher that instantiates it must meet in
# one translation unit. The lesson's headers declare what the launchers use from the
# student's file, so each read-only file also compiles alone (tools/compile_alone.py, ctest
# lint.compile_alone). SOURCES are further read-only files of the lesson (a model it
# teaches, say), named relative to given/, compiled once and linked into every executable of
# the lesson.
#
# TEST_HOOKS: the lesson's kernels call the test-only hooks of course/batches.cuh (warps held
# back, poisoned staging). Those exist only in a second compile of the same unit, with
# COURSE_TEST_HOOKS defined, which the test programs link; the program keeps kernels without
# them, since even an untaken branch can cost a loop registers and occupancy.
#
# Every source file is compiled once (TEST_HOOKS units twice, as above): the driver and the test source are object
# libraries shared by the two executables that use them. ctest entries get the labels
# L<number>, lesson|solution and cpu|gpu (test names containing "Gpu" are GPU tests),
# and a timeout, so an unfinished barrier fails a test instead of hanging the suite.
# On machines that have the tools, the GPU-only labels `sanitize` and `integrity` are
# added too.
set(COURSE_CPU_TEST_TIMEOUT 60 CACHE STRING "Timeout (s) of one CPU test")
set(COURSE_GPU_TEST_TIMEOUT 300 CACHE STRING "Timeout (s) of one GPU test suite")
set(COURSE_SANITIZE_TIMEOUT 300 CACHE STRING "Timeout (s) of one compute-sanitizer run")
option(COURSE_MUTATION_TESTS
  "Add the GPU-only mutation label: each exercise region replaced by its starter must be caught" OFF)
# ON when the tree has the solutions (the course's repository), OFF in a handout; a
# -DCOURSE_WITH_SOLUTIONS=OFF builds the course's repository as a handout would.
if(NOT DEFINED COURSE_WITH_SOLUTIONS)
  if(IS_DIRECTORY "${PROJECT_SOURCE_DIR}/solutions")
    set(COURSE_WITH_SOLUTIONS ON)
  else()
    set(COURSE_WITH_SOLUTIONS OFF)
    message(STATUS "No solutions/ folder: the lessons' starter targets and tests only")
  endif()
endif()
if(COURSE_WITH_SOLUTIONS)
  set(COURSE_LESSON_KINDS starter solution)
else()
  set(COURSE_LESSON_KINDS starter)
endif()
# The README's test run (the default preset) builds and tests the solutions only: the starters'
# programs and test programs are a third of the build, and `./course check` builds a lesson's
# starter when it checks it (in build/student, where this is ON). OFF leaves the starters'
# targets out of `all` and registers no test that runs them.
option(COURSE_BUILD_STARTERS "Build the starters' programs and tests with everything else" ON)
if(NOT COURSE_WITH_SOLUTIONS)
  set(COURSE_BUILD_STARTERS ON)  # a handout is the starters
endif()

# The kinds whose programs this build makes and tests: lessons run their own program checks
# (usage errors, flag ranges) over course_lesson_programs()'s list.
function(course_lesson_programs name out)
  set(programs "")
  if(COURSE_BUILD_STARTERS)
    list(APPEND programs ${name})
  endif()
  if(COURSE_WITH_SOLUTIONS)
    list(APPEND programs ${name}_solution)
  endif()
  set(${out} "${programs}" PARENT_SCOPE)
endfunction()

function(_course_lesson_target target lesson_dir)
  target_include_directories(${target} PUBLIC "${lesson_dir}" "${lesson_dir}/given")
  target_link_libraries(${target} PUBLIC course_common PRIVATE course_warnings)
endfunction()

# Registers the tests of one test executable under `prefix`, with `labels` (a list) plus
# `gpu` for the tests of suites whose names contain "Gpu" and `cpu` for the others (the
# suite decides: a CPU test may well have "Gpu" in its own name).
#  - CPU tests: one ctest test per GoogleTest test (gtest_discover_tests; a GTEST_SKIP is
#    reported as skipped through SKIP_REGULAR_EXPRESSION).
#  - GPU tests: one ctest test per GoogleTest suite (cmake/CourseGpuSuites.cmake explains
#    why), skipped when every test in it skipped (exit 77, tests/support/test_main.cpp).
function(course_discover_tests exe prefix labels)
  set(list_var "${exe}_cpu_tests")
  gtest_discover_tests(${exe} TEST_PREFIX "${prefix}" TEST_FILTER "-*Gpu*.*"
    TEST_LIST ${list_var} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
    PROPERTIES TIMEOUT ${COURSE_CPU_TEST_TIMEOUT})
  # gtest_discover_tests cannot pass a list of labels through PROPERTIES intact, so a
  # second ctest include file, read after the discovery, labels the tests it listed.
  set(label_file "${CMAKE_CURRENT_BINARY_DIR}/${exe}_cpu_labels.cmake")
  file(WRITE "${label_file}"
    "foreach(test IN LISTS ${list_var})\n"
    "  set_tests_properties(\"\${test}\" PROPERTIES LABELS \"${labels};cpu\")\n"
    "endforeach()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${label_file}")

  set(suite_file "${CMAKE_CURRENT_BINARY_DIR}/${exe}_gpu_suites.cmake")
  file(GENERATE OUTPUT "${suite_file}" CONTENT
"set(COURSE_SUITE_EXE \"$<TARGET_FILE:${exe}>\")
set(COURSE_SUITE_PREFIX \"${prefix}\")
set(COURSE_SUITE_LABELS \"${labels};gpu\")
set(COURSE_SUITE_TIMEOUT ${COURSE_GPU_TEST_TIMEOUT})
include(\"${PROJECT_SOURCE_DIR}/cmake/CourseGpuSuites.cmake\")
")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${suite_file}")
endfunction()

# Lesson `number`'s entry in lessons/catalog.json (the lesson map `./course` reads too), as a
# JSON object; a change to the catalog re-runs the configure step.
function(_course_catalog_entry number out)
  set(catalog_file "${PROJECT_SOURCE_DIR}/lessons/catalog.json")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${catalog_file}")
  file(READ "${catalog_file}" catalog)
  string(JSON count LENGTH "${catalog}" lessons)
  math(EXPR last "${count} - 1")
  set(${out} "{}" PARENT_SCOPE)
  foreach(i RANGE ${last})
    string(JSON entry_number GET "${catalog}" lessons ${i} number)
    if(entry_number STREQUAL "${number}")
      string(JSON entry GET "${catalog}" lessons ${i})
      set(${out} "${entry}" PARENT_SCOPE)
    endif()
  endforeach()
endfunction()

# From a lesson's catalog entry: the GPUs of one host it needs ("min_gpus", 1 when it has
# none), and tools/sanitize.py's arguments for the CUDA errors its correct program meets on
# purpose ("expected_api_errors", which `./course check` and the mutation tools read too).
function(_course_min_gpus entry out)
  string(JSON value ERROR_VARIABLE missing GET "${entry}" min_gpus)
  if(missing)
    set(value 1)
  endif()
  set(${out} ${value} PARENT_SCOPE)
endfunction()

function(_course_sanitize_args entry out)
  set(args "")
  string(JSON count ERROR_VARIABLE missing LENGTH "${entry}" expected_api_errors)
  if(NOT missing AND count GREATER 0)
    math(EXPR last "${count} - 1")
    foreach(i RANGE ${last})
      string(JSON name GET "${entry}" expected_api_errors ${i})
      list(APPEND args --expected-api-error "${name}")
    endforeach()
  endif()
  set(${out} "${args}" PARENT_SCOPE)
endfunction()

macro(course_add_lesson)
  _course_add_lesson(${ARGV})
  if(NOT COURSE_WITH_SOLUTIONS)
    _course_starter_only_rest(_course_rest)
    include("${_course_rest}")
    return()  # from the lesson's CMakeLists.txt: its rest ran, filtered, just above
  endif()
endmacro()

# The rest of the calling lesson's CMakeLists.txt, after its course_add_lesson(), without the
# statements about solution targets (cmake/course_starter_only.py), as a file to include.
function(_course_starter_only_rest out)
  get_filename_component(lesson "${CMAKE_CURRENT_LIST_DIR}" NAME)
  set(rest "${CMAKE_CURRENT_BINARY_DIR}/${lesson}_starter_only.cmake")
  execute_process(
    COMMAND "${Python3_EXECUTABLE}" "${PROJECT_SOURCE_DIR}/cmake/course_starter_only.py"
            "${CMAKE_CURRENT_LIST_FILE}" "${rest}"
    RESULT_VARIABLE status ERROR_VARIABLE error)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "cmake/course_starter_only.py: ${error}")
  endif()
  set(${out} "${rest}" PARENT_SCOPE)
endfunction()

function(_course_add_lesson number slug)
  cmake_parse_arguments(PARSE_ARGV 2 ARG "TEST_HOOKS" "" "USES;SOURCES")
  _course_catalog_entry(${number} catalog_entry)
  _course_min_gpus("${catalog_entry}" min_gpus)
  _course_sanitize_args("${catalog_entry}" sanitize_args)
  set(name "${number}_${slug}")
  set(lesson_dir "${PROJECT_SOURCE_DIR}/lessons/${name}")
  set(solution_dir "${PROJECT_SOURCE_DIR}/solutions/${name}")
  set(test_source "${PROJECT_SOURCE_DIR}/tests/${name}_test.cu")
  set(given_dir "${lesson_dir}/given")
  set(required "${given_dir}/main.cu" "${lesson_dir}/${slug}.cu" "${lesson_dir}/${slug}.cuh"
               "${solution_dir}/${slug}.cu" "${test_source}")
  if(NOT COURSE_WITH_SOLUTIONS)
    list(REMOVE_ITEM required "${solution_dir}/${slug}.cu")
  endif()
  foreach(path IN LISTS required)
    if(NOT EXISTS "${path}")
      message(FATAL_ERROR "course_add_lesson(${number} ${slug}): missing ${path}")
    endif()
  endforeach()

  # Compiled once each. The kernels' objects keep their PTX uncompressed so the PTX
  # checks can read which instructions the compiler really emitted.
  set(extra_sources "")
  foreach(source IN LISTS ARG_SOURCES)
    list(APPEND extra_sources "${given_dir}/${source}")
  endforeach()
  add_library(${name}_driver OBJECT "${given_dir}/main.cu")
  set(extra_objects "")
  if(extra_sources)
    add_library(${name}_extra OBJECT ${extra_sources})
    _course_lesson_target(${name}_extra "${lesson_dir}")
    set(extra_objects ${name}_extra)
  endif()
  set(launch_source "${given_dir}/${slug}_launch.cu")
  # A launch file that appears later (or goes) must re-run the configure step: the glob
  # with CONFIGURE_DEPENDS makes the build check for it.
  file(GLOB launch_files CONFIGURE_DEPENDS "${given_dir}/*_launch.cu")
  foreach(kind IN LISTS COURSE_LESSON_KINDS)
    if(kind STREQUAL "starter")
      set(kernels_source "${lesson_dir}/${slug}.cu")
    else()
      set(kernels_source "${solution_dir}/${slug}.cu")
    endif()
    if(EXISTS "${launch_source}")
      # Relative includes: the unit's text is the same in every checkout, so ccache (with
      # CCACHE_BASEDIR at the checkout, as .ci/run sets it) finds it again from another folder.
      file(RELATIVE_PATH kernels_include "${CMAKE_CURRENT_BINARY_DIR}" "${kernels_source}")
      file(RELATIVE_PATH launch_include "${CMAKE_CURRENT_BINARY_DIR}" "${launch_source}")
      set(unit "${CMAKE_CURRENT_BINARY_DIR}/${name}_${kind}_unit.cu")
      file(CONFIGURE OUTPUT "${unit}" CONTENT
"// Generated by course_add_lesson(): the ${kind}'s kernels and the lesson's read-only
// launchers, compiled as one unit (a kernel template meets the launcher that instantiates it).
#include \"${kernels_include}\"
#include \"${launch_include}\"
")
      add_library(${name}_${kind}_kernels OBJECT "${unit}")
      set_property(TARGET ${name}_${kind}_kernels APPEND PROPERTY OBJECT_DEPENDS
                   "${kernels_source}" "${launch_source}")
      if(ARG_TEST_HOOKS)
        # The same kernels with the test-only hooks of course/batches.cuh compiled in, for
        # the test programs alone: the lesson's program (and the PTX and SASS the tests
        # read) keeps the kernels exactly as the student wrote them.
        set(test_unit "${CMAKE_CURRENT_BINARY_DIR}/${name}_${kind}_test_unit.cu")
        file(CONFIGURE OUTPUT "${test_unit}" CONTENT
"// Generated by course_add_lesson(): ${name}_${kind}_unit.cu with the test-only hooks of
// course/batches.cuh compiled in. The lesson's test programs link this copy.
#define COURSE_TEST_HOOKS 1
#include \"${kernels_include}\"
#include \"${launch_include}\"
")
        add_library(${name}_${kind}_test_kernels OBJECT "${test_unit}")
        set_property(TARGET ${name}_${kind}_test_kernels APPEND PROPERTY OBJECT_DEPENDS
                     "${kernels_source}" "${launch_source}")
      endif()
    else()
      add_library(${name}_${kind}_kernels OBJECT "${kernels_source}")
    endif()
  endforeach()
  # The kind whose kernels stand for the lesson elsewhere (course_kernels, other lessons' USES):
  # the solution's, or in a tree without solutions the student's own.
  list(GET COURSE_LESSON_KINDS -1 reference_kind)
  add_dependencies(course_kernels ${name}_${reference_kind}_kernels)
  add_library(${name}_tests OBJECT "${test_source}")
  set(kernel_targets "")
  foreach(kind IN LISTS COURSE_LESSON_KINDS)
    list(APPEND kernel_targets ${name}_${kind}_kernels)
  endforeach()
  if(TARGET ${name}_${reference_kind}_test_kernels)
    foreach(kind IN LISTS COURSE_LESSON_KINDS)
      list(APPEND kernel_targets ${name}_${kind}_test_kernels)
    endforeach()
  elseif(ARG_TEST_HOOKS)
    message(FATAL_ERROR "course_add_lesson(${number} ${slug}): TEST_HOOKS needs a launch file")
  endif()
  foreach(target ${name}_driver ${kernel_targets} ${name}_tests)
    _course_lesson_target(${target} "${lesson_dir}")
  endforeach()
  foreach(kind IN LISTS COURSE_LESSON_KINDS)
    target_compile_options(${name}_${kind}_kernels PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--no-compress>)
  endforeach()
  target_link_libraries(${name}_tests PUBLIC course_test_support)
  set(used_kernels "")
  foreach(used IN LISTS ARG_USES)
    if(NOT TARGET ${used}_${reference_kind}_kernels)
      message(FATAL_ERROR "course_add_lesson(${number} ${slug}): USES ${used}, which is not a lesson "
                          "added before this one")
    endif()
    foreach(target ${name}_driver ${kernel_targets} ${name}_tests ${extra_objects})
      target_include_directories(${target} PUBLIC "${PROJECT_SOURCE_DIR}/lessons/${used}"
                                                   "${PROJECT_SOURCE_DIR}/lessons/${used}/given")
    endforeach()
    list(APPEND used_kernels ${used}_${reference_kind}_kernels)
    # A used lesson's own read-only sources (its SOURCES, e.g. lesson 14's engine model).
    if(TARGET ${used}_extra)
      list(APPEND used_kernels ${used}_extra)
    endif()
  endforeach()

  foreach(kind IN LISTS COURSE_LESSON_KINDS)
    if(kind STREQUAL "starter")
      set(exe "${name}")
      set(test_exe "${name}_test")
      set(label "lesson")
    else()
      set(exe "${name}_solution")
      set(test_exe "${name}_solution_test")
      set(label "solution")
    endif()
    add_executable(${exe})
    # Objects do not propagate through object libraries: link every one directly.
    target_link_libraries(${exe} PRIVATE ${name}_driver ${name}_${kind}_kernels ${used_kernels}
                                         ${extra_objects})

    # The tests need to know which object holds the kernels they check (PTX/SASS
    # checks); a one-line generated source per test executable tells them.
    set(paths_source "${CMAKE_CURRENT_BINARY_DIR}/${test_exe}_paths.cpp")
    set(cuobjdump "")
    if(COURSE_CUOBJDUMP)
      set(cuobjdump "${COURSE_CUOBJDUMP}")
    endif()
    file(GENERATE OUTPUT "${paths_source}" CONTENT
"// Generated by course_add_lesson(): where this test executable's kernels are.
// COURSE_KERNELS_OBJECT overrides it: tools/mutation.py points the PTX and SASS tests at a
// mutant's object.
#include <cstdlib>
namespace course::testing {
const char* kernels_object_path() {
  const char* other = std::getenv(\"COURSE_KERNELS_OBJECT\");
  return other != nullptr && *other != 0 ? other : \"$<TARGET_OBJECTS:${name}_${kind}_kernels>\";
}
const char* cuobjdump_path() { return \"${cuobjdump}\"; }
const char* cuda_architectures() { return \"${CMAKE_CUDA_ARCHITECTURES}\"; }
}
")
    # The test program links the kernels with the test-only hooks where the lesson has them;
    # its PTX and SASS checks read the program's own kernels (kernels_object_path()).
    set(test_kernels ${name}_${kind}_kernels)
    if(TARGET ${name}_${kind}_test_kernels)
      set(test_kernels ${name}_${kind}_test_kernels)
    endif()
    add_executable(${test_exe} "${paths_source}")
    target_link_libraries(${test_exe} PRIVATE ${name}_tests ${test_kernels} ${used_kernels}
                                              course_test_main)
    add_dependencies(${test_exe} ${name}_${kind}_kernels)
    target_link_libraries(${test_exe} PRIVATE ${extra_objects})
    if(kind STREQUAL "starter" AND NOT COURSE_BUILD_STARTERS)
      # Made on demand only (./course check names them): out of `all`, and no test runs them.
      set_target_properties(${exe} ${test_exe} ${name}_${kind}_kernels PROPERTIES
                            EXCLUDE_FROM_ALL ON)
      if(TARGET ${name}_${kind}_test_kernels)
        set_target_properties(${name}_${kind}_test_kernels PROPERTIES EXCLUDE_FROM_ALL ON)
      endif()
      continue()
    endif()
    course_discover_tests(${test_exe} "L${number}.${label}." "L${number};${label}")

    # Bad flags: usage on stderr and exit 2, before any CUDA call (any machine).
    add_test(NAME L${number}.cli.${exe}.usage_errors
      COMMAND Python3::Interpreter "${PROJECT_SOURCE_DIR}/tests/tools/check_usage_errors.py"
              $<TARGET_FILE:${exe}>)
    set_tests_properties(L${number}.cli.${exe}.usage_errors PROPERTIES
      LABELS "L${number};cli;cpu" TIMEOUT 60)
  endforeach()

  # Everything below runs the solution: a tree without one stops here.
  if(NOT COURSE_WITH_SOLUTIONS)
    return()
  endif()

  # integrity (GPU only): the starter's tests must fail, the solution's must pass.
  set(expectations solution_passes)
  if(COURSE_BUILD_STARTERS)
    list(PREPEND expectations starter_fails)
  endif()
  foreach(expectation IN LISTS expectations)
    if(expectation STREQUAL "starter_fails")
      set(args --expect fail $<TARGET_FILE:${name}_test>)
    else()
      set(args --expect pass $<TARGET_FILE:${name}_solution_test>)
    endif()
    add_test(NAME L${number}.integrity.${expectation}
      COMMAND Python3::Interpreter "${PROJECT_SOURCE_DIR}/tools/integrity.py"
              --probe $<TARGET_FILE:course_gpu_probe> --min-gpus ${min_gpus} ${args})
    set_tests_properties(L${number}.integrity.${expectation} PROPERTIES
      LABELS "L${number};integrity;gpu" TIMEOUT 600 SKIP_RETURN_CODE 77)
  endforeach()

  # mutation (GPU only, when COURSE_MUTATION_TESTS is on): for every exercise region, the
  # solution with that region alone replaced by its starter text must fail to compile,
  # fail a test, or be reported by racecheck, synccheck or memcheck (tools/mutation.py).
  # A region nothing catches is a failing test that names it.
  if(COURSE_MUTATION_TESTS)
    if(EXISTS "${launch_source}")
      set(mutation_kernels "${CMAKE_CURRENT_BINARY_DIR}/${name}_solution_unit.cu")
    else()
      set(mutation_kernels "${solution_dir}/${slug}.cu")
    endif()
    execute_process(
      COMMAND "${Python3_EXECUTABLE}" "${PROJECT_SOURCE_DIR}/tools/mutation.py" list
              "${solution_dir}/${slug}.cu"
      OUTPUT_VARIABLE mutation_regions RESULT_VARIABLE mutation_status)
    if(NOT mutation_status EQUAL 0)
      message(FATAL_ERROR "tools/mutation.py list ${solution_dir}/${slug}.cu failed")
    endif()
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${solution_dir}/${slug}.cu")
    string(REPLACE "\n" ";" mutation_regions "${mutation_regions}")
    foreach(line IN LISTS mutation_regions)
      if(line STREQUAL "")
        continue()
      endif()
      string(REPLACE ":" ";" fields "${line}")
      list(GET fields 0 region)
      list(GET fields 1 todo)
      add_test(NAME L${number}.mutation.todo${todo}.region${region}
        COMMAND Python3::Interpreter "${PROJECT_SOURCE_DIR}/tools/mutation.py" run
                --build-dir "${CMAKE_BINARY_DIR}" --solution "${solution_dir}/${slug}.cu"
                --region ${region} --kernels-source "${mutation_kernels}"
                --test-target ${name}_solution_test --exe-target ${name}_solution
                --sanitizer "${COURSE_COMPUTE_SANITIZER}" --cuobjdump "${COURSE_CUOBJDUMP}"
                --work-dir "${CMAKE_BINARY_DIR}/mutants/L${number}/region${region}")
      set_tests_properties(L${number}.mutation.todo${todo}.region${region} PROPERTIES
        LABELS "L${number};mutation;gpu" TIMEOUT 1200 SKIP_RETURN_CODE 77)
    endforeach()
  endif()

  # sanitize (GPU only): the solution under every compute-sanitizer tool, zero errors,
  # as judged by tools/sanitize.py (which says which kernels the CUDA 13.0 synccheck
  # cannot check, and why).
  if(COURSE_COMPUTE_SANITIZER)
    foreach(tool memcheck racecheck synccheck initcheck)
      add_test(NAME L${number}.sanitize.${tool}
        COMMAND Python3::Interpreter "${PROJECT_SOURCE_DIR}/tools/sanitize.py"
                --sanitizer "${COURSE_COMPUTE_SANITIZER}" --tool ${tool} ${COURSE_SANITIZE_PTX}
                ${sanitize_args}
                -- $<TARGET_FILE:${name}_solution> --quick --warmup 0 --iters 1)
      set_tests_properties(L${number}.sanitize.${tool} PROPERTIES
        LABELS "L${number};sanitize;gpu" TIMEOUT ${COURSE_SANITIZE_TIMEOUT} SKIP_RETURN_CODE 77)
    endforeach()
  endif()
endfunction()
