# Installs imgpack into a fresh prefix, builds samples/ against it with
# find_package(imgpack) like a user would, converts a generated dataset and
# runs the nearest-class-mean sample on one fold. Also checks that the
# installed imgpack::reader pulls in no converter dependency and no CUDA, and
# that the package installs exactly the documented API headers, each of which
# compiles on its own with nothing but the installed include directory
# (OpenCV's for the converter's preview.hpp): no <hdf5.h>, no internal header,
# no test hook.
#
# Two kinds of consumer: a host-only one, configured with CUDAToolkit hidden
# from CMake, which must build and link no libcudart; and, when imgpack was
# built with CUDA (-DCUDA=ON), one that uses CUDA itself, which must get
# device batches equal to host ones through the installed CUDA module (on a
# machine without a GPU it checks that the installed module is the one found).
#
# The compiles go through the build's compiler launcher (LAUNCHER, its words
# separated by "|"; ccache) where it has one: a compile that fails is never
# cached, so a header that stops compiling on its own still fails here.
#
# cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DIMGPACK=... -DADD_SPLIT=...
#       -DGENERATOR=... -DCXX=... -DOPENCV_INCLUDE=... [-DCUDA=ON] [-DSANITIZE=thread]
#       [-DLAUNCHER=env|CCACHE_BASEDIR=...|ccache] -P sample_package_test.cmake
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
  foreach(forbidden opencv turbojpeg cli11 tbb cudart cudatoolkit cuda::)
    if(text MATCHES "${forbidden}")
      message(FATAL_ERROR "${file} mentions ${forbidden}: imgpack::reader must not depend on it")
    endif()
  endforeach()
endforeach()
file(GLOB_RECURSE config "${prefix}/*/imgpackConfig.cmake")
file(READ "${config}" text)
string(TOLOWER "${text}" text)
if(text MATCHES "cudatoolkit|cudart")
  message(FATAL_ERROR "${config} asks for CUDA: find_package(imgpack) must not need it")
endif()
file(GLOB_RECURSE cuda_module "${prefix}/*/libimgpack_cuda.so")
if(CUDA AND NOT cuda_module)
  message(FATAL_ERROR "no libimgpack_cuda.so under ${prefix} in a build with CUDA")
elseif(NOT CUDA AND cuda_module)
  message(FATAL_ERROR "${cuda_module} installed by a build without CUDA")
endif()

# The API, and nothing else: the reader's and the core's headers (a training
# program's view), then the converter's.
set(api_headers
  checksum.hpp column.hpp dataset.hpp dataset_index.hpp epoch_order.hpp error.hpp format.hpp loader.hpp
  mask_stats.hpp
  output_format.hpp record_shape.hpp selection.hpp upload_backend.hpp verify.hpp
  verify_options.hpp version.hpp
  convert.hpp convert_options.hpp growth.hpp image_modes.hpp merge.hpp preview.hpp sample_data.hpp split.hpp
  upgrade.hpp)
file(GLOB installed_headers RELATIVE "${prefix}/include/imgpack" "${prefix}/include/imgpack/*")
list(SORT installed_headers)
set(expected_headers ${api_headers})
list(SORT expected_headers)
if(NOT installed_headers STREQUAL expected_headers)
  message(FATAL_ERROR "installed headers differ from the API:\n  installed: ${installed_headers}\n"
                      "  expected:  ${expected_headers}")
endif()
# The launcher's `env NAME=VALUE...` words set this script's environment,
# which the compiles below inherit; the rest is the launcher proper.
string(REPLACE "|" ";" launcher_words "${LAUNCHER}")
set(launcher "")
foreach(word IN LISTS launcher_words)
  if(word MATCHES "^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
    set(ENV{${CMAKE_MATCH_1}} "${CMAKE_MATCH_2}")
  elseif(NOT word STREQUAL "env" OR launcher)
    list(APPEND launcher "${word}")
  endif()
endforeach()
foreach(header IN LISTS installed_headers)
  file(WRITE "${WORK_DIR}/header_check.cpp" "#include <imgpack/${header}>\n")
  # Compiled to an object (which the cache can keep; -fsyntax-only it cannot).
  run(${launcher} ${CXX} -std=c++20 -c -Wall -Werror "-I${prefix}/include" -isystem
      "${OPENCV_INCLUDE}" "${WORK_DIR}/header_check.cpp" -o "${WORK_DIR}/header_check.o")
endforeach()

# The samples are built with the compiler the libraries were built with (a
# sanitizer build's flags are that compiler's). A sanitizer build installs
# instrumented libraries: the sample must link the runtime too.
set(compiler_flags "-DCMAKE_CXX_COMPILER=${CXX}")
list(LENGTH launcher launcher_words)
if(launcher_words EQUAL 1)  # a list would not survive the trip through run()
  list(APPEND compiler_flags "-DCMAKE_CXX_COMPILER_LAUNCHER=${launcher}"
                              "-DCMAKE_CUDA_COMPILER_LAUNCHER=${launcher}")
endif()
if(SANITIZE)
  list(APPEND compiler_flags "-DCMAKE_CXX_FLAGS=-fsanitize=${SANITIZE}"
                              "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=${SANITIZE}")
endif()
# The host-only consumer: CUDAToolkit hidden, as on a machine without CUDA.
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}/samples" -B "${WORK_DIR}/build-host" -G "${GENERATOR}"
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}"
    -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON ${compiler_flags})
run(${CMAKE_COMMAND} --build "${WORK_DIR}/build-host")
set(host_program "${WORK_DIR}/build-host/nearest_class_mean")
if(EXISTS "${WORK_DIR}/build-host/cuda_batches")
  message(FATAL_ERROR "the CUDA sample was built with CUDAToolkit hidden")
endif()
run(ldd "${host_program}")
if(last_output MATCHES "libcudart|libcuda\\.")
  message(FATAL_ERROR "the host-only consumer links CUDA:\n${last_output}")
endif()

run("${IMGPACK}" sample-data "${WORK_DIR}/src" --classes 4 --groups 3 --per-class 60
    --size 64x48 --seed 3 --quiet)
run("${IMGPACK}" convert "${WORK_DIR}/src" "${WORK_DIR}/data" --size 32 --shard-size 256K --quiet)
run("${ADD_SPLIT}" "${WORK_DIR}/data" cv5 5)

run("${host_program}" "${WORK_DIR}/data" --split cv5 --fold 2 --threads 3 --min-accuracy 0.5)
message(STATUS "${last_output}")

if(CUDA)
  # The consumer that uses CUDA itself, through the installed CUDA module.
  run(${CMAKE_COMMAND} -S "${SOURCE_DIR}/samples" -B "${WORK_DIR}/build-cuda" -G "${GENERATOR}"
      -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}" ${compiler_flags})
  run(${CMAKE_COMMAND} --build "${WORK_DIR}/build-cuda")
  # The program finds the module through its RUNPATH (prefix/lib). Under a
  # sanitizer, the runtime's dlopen interceptor makes itself the caller, whose
  # RUNPATH has no prefix/lib: the library path stands in for it there.
  set(consumer_env "")
  if(SANITIZE)
    set(consumer_env ${CMAKE_COMMAND} -E env "LD_LIBRARY_PATH=${prefix}/lib")
  endif()
  run(${consumer_env} "${WORK_DIR}/build-cuda/cuda_batches" "${WORK_DIR}/data" --split cv5
      --fold 2)
  message(STATUS "${last_output}")
  string(FIND "${last_output}" "CUDA module: ${cuda_module}\n" found)
  if(found EQUAL -1)
    message(FATAL_ERROR "the CUDA consumer did not load the installed ${cuda_module}:\n"
                        "${last_output}")
  endif()
  if(last_output MATCHES "no CUDA device")
    # No GPU here: the host-only program asking for one gets a clear error.
    execute_process(COMMAND "${host_program}" "${WORK_DIR}/data" --split cv5 --device cuda:0
                    RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(status EQUAL 0 OR NOT err MATCHES "cuda:0 requested, but no CUDA device")
      message(FATAL_ERROR "cuda:0 without a device: status ${status}\n${out}\n${err}")
    endif()
  else()
    # A GPU: the program that links no CUDA delivers to it through the module.
    run("${host_program}" "${WORK_DIR}/data" --split cv5 --fold 2 --device cuda:0
        --min-accuracy 0.5)
    message(STATUS "${last_output}")
  endif()
endif()
file(REMOVE_RECURSE "${WORK_DIR}")
