# Installs imgpack into a fresh prefix, builds samples/ against it with
# find_package(imgpack) like a user would, converts a generated dataset and
# runs the nearest-class-mean sample on one fold. Also checks that the
# installed imgpack::reader pulls in no converter dependency, and that the
# package installs exactly the documented API headers, each of which compiles
# on its own with nothing but the installed include directory (OpenCV's for
# the converter's preview.hpp): no <hdf5.h>, no internal header, no test hook.
#
# cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DIMGPACK=... -DADD_SPLIT=...
#       -DGENERATOR=... -DCXX=... -DOPENCV_INCLUDE=... [-DSANITIZE=thread]
#       -P sample_package_test.cmake
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR IMGPACK ADD_SPLIT GENERATOR CXX OPENCV_INCLUDE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "sample_package_test.cmake: ${var} is not set")
  endif()
endforeach()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "failed (${status}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")

run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")

file(GLOB_RECURSE reader_targets "${prefix}/*/imgpackReaderTargets*.cmake")
if(NOT reader_targets)
  message(FATAL_ERROR "no imgpackReaderTargets.cmake under ${prefix}")
endif()
foreach(file IN LISTS reader_targets)
  file(READ "${file}" text)
  string(TOLOWER "${text}" text)
  foreach(forbidden opencv turbojpeg cli11 tbb)
    if(text MATCHES "${forbidden}")
      message(FATAL_ERROR "${file} mentions ${forbidden}: imgpack::reader must not depend on it")
    endif()
  endforeach()
endforeach()

# The API, and nothing else: the reader's and the core's headers (a training
# program's view), then the converter's.
set(api_headers
  checksum.hpp dataset.hpp dataset_index.hpp epoch_order.hpp error.hpp format.hpp loader.hpp
  output_format.hpp record_shape.hpp selection.hpp upload_backend.hpp verify.hpp
  verify_options.hpp version.hpp
  convert.hpp convert_options.hpp preview.hpp sample_data.hpp split.hpp)
file(GLOB installed_headers RELATIVE "${prefix}/include/imgpack" "${prefix}/include/imgpack/*")
list(SORT installed_headers)
set(expected_headers ${api_headers})
list(SORT expected_headers)
if(NOT installed_headers STREQUAL expected_headers)
  message(FATAL_ERROR "installed headers differ from the API:\n  installed: ${installed_headers}\n"
                      "  expected:  ${expected_headers}")
endif()
foreach(header IN LISTS installed_headers)
  file(WRITE "${WORK_DIR}/header_check.cpp" "#include <imgpack/${header}>\n")
  run(${CXX} -std=c++20 -fsyntax-only -Wall -Werror "-I${prefix}/include" -isystem
      "${OPENCV_INCLUDE}" "${WORK_DIR}/header_check.cpp")
endforeach()

# A sanitizer build installs instrumented libraries: the sample must link the runtime too.
set(sanitize_flags "")
if(SANITIZE)
  set(sanitize_flags "-DCMAKE_CXX_FLAGS=-fsanitize=${SANITIZE}"
                     "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=${SANITIZE}")
endif()
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}/samples" -B "${WORK_DIR}/build" -G "${GENERATOR}"
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}" ${sanitize_flags})
run(${CMAKE_COMMAND} --build "${WORK_DIR}/build")

run("${IMGPACK}" sample-data "${WORK_DIR}/src" --classes 4 --groups 3 --per-class 60
    --size 64x48 --seed 3 --quiet)
run("${IMGPACK}" convert "${WORK_DIR}/src" "${WORK_DIR}/data" --size 32 --shard-size 256K --quiet)
run("${ADD_SPLIT}" "${WORK_DIR}/data" cv5 5)

run("${WORK_DIR}/build/nearest_class_mean" "${WORK_DIR}/data" --split cv5 --fold 2
    --threads 3 --min-accuracy 0.5)
message(STATUS "${last_output}")
file(REMOVE_RECURSE "${WORK_DIR}")
