# Installs imgpack into a fresh prefix, builds samples/ against it with
# find_package(imgpack) like a user would, converts a generated dataset and
# runs the nearest-class-mean sample on one fold. Also checks that the
# installed imgpack::reader pulls in no converter dependency.
#
# cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DIMGPACK=... -DADD_SPLIT=...
#       -DGENERATOR=... [-DSANITIZE=thread] -P sample_package_test.cmake
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR IMGPACK ADD_SPLIT GENERATOR)
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
