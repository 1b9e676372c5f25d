# One ctest test per GoogleTest suite: the test `Suite.*` runs every test of
# Suite in one process, where gtest_discover_tests starts one process per test.
# For the sanitizer trees (IMGPACK_TEST_PER_SUITE, set by scripts/sanitize and
# scripts/asan-tree.sh): there a test process takes about 0.4 s of CPU to
# start (the instrumented loading and static initialisation of OpenCV, HDF5
# and the rest) before its first line runs, over 850 tests. The same tests
# run, with the same assertions, in the same order within a suite; a failure
# prints the suite's output, which names the failed test.
#
#   imgpack_add_test_suites(TARGET FILTER filter LABEL label)
#     registers, after each build of TARGET, one test per suite of the tests
#     that --gtest_filter=FILTER selects (FILTER starts with '-': the tests it
#     names are left out of each suite), labelled LABEL.
#
# Run as a script (cmake -P) by the build, it lists the executable's suites and
# writes the ctest file. Suites come from --gtest_list_tests: a line that does
# not start with a space names a suite ("Suite." or "Prefix/Suite."), the
# indented ones its tests.

if(CMAKE_SCRIPT_MODE_FILE)
  execute_process(COMMAND "${EXECUTABLE}" --gtest_list_tests "--gtest_filter=${FILTER}"
    WORKING_DIRECTORY "${WORKING_DIRECTORY}" TIMEOUT 60
    OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${EXECUTABLE} --gtest_list_tests failed (${status}):\n${listing}${errors}")
  endif()
  # Suite names hold no ';' (CMake's list separator); a comment after one may.
  string(REPLACE ";" "," listing "${listing}")
  string(REPLACE "\n" ";" lines "${listing}")
  set(negative "")
  if(FILTER MATCHES "^-")
    set(negative "${FILTER}")
  endif()
  set(text "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^([A-Za-z_][A-Za-z0-9_/]*)\\.( |$)")
      set(name "${CMAKE_MATCH_1}.*")
      string(APPEND text
        "add_test([=[${name}]=] [==[${EXECUTABLE}]==] [==[--gtest_filter=${name}${negative}]==])\n"
        "set_tests_properties([=[${name}]=] PROPERTIES WORKING_DIRECTORY [==[${WORKING_DIRECTORY}]==]"
        " TIMEOUT 600 LABELS [==[${LABEL}]==])\n")
    endif()
  endforeach()
  if(text STREQUAL "")
    message(FATAL_ERROR "${EXECUTABLE}: no test suite in its --gtest_list_tests:\n${listing}")
  endif()
  file(WRITE "${OUTPUT}" "${text}")
  return()
endif()

set(imgpack_test_suites_script ${CMAKE_CURRENT_LIST_FILE})

function(imgpack_add_test_suites target)
  cmake_parse_arguments(ARG "" "FILTER;LABEL" "" ${ARGN})
  set(base ${CMAKE_CURRENT_BINARY_DIR}/${target}_${ARG_LABEL}_suites)
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND} "-DEXECUTABLE=$<TARGET_FILE:${target}>" "-DFILTER=${ARG_FILTER}"
      "-DLABEL=${ARG_LABEL}" "-DWORKING_DIRECTORY=${CMAKE_CURRENT_BINARY_DIR}"
      "-DOUTPUT=${base}.cmake" -P ${imgpack_test_suites_script}
    BYPRODUCTS ${base}.cmake
    VERBATIM)
  # Before the first build the file is missing: ctest then reports the
  # executable as not built rather than running nothing.
  file(WRITE ${base}_include.cmake
    "if(EXISTS [==[${base}.cmake]==])\n"
    "  include([==[${base}.cmake]==])\n"
    "else()\n"
    "  add_test([==[${target}_NOT_BUILT]==] [==[${target}_NOT_BUILT]==])\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${base}_include.cmake)
endfunction()
