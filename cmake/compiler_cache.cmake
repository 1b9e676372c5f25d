# Compiles through ccache when it is installed (Debian's ccache; scripts/setup
# --tests installs it), for every language of every build tree: Release, the
# sanitizer trees, the fuzzer tree and the CUDA module.
#
# base_dir is the source tree, so that a fresh clone in another folder (CI's)
# finds what the earlier builds of the same sources filled; hash_dir is off so
# that -g builds hit too (their debug info then names the first clone's folder,
# which only the file names in sanitizer reports show). Precompiled headers
# need the pch_defines and time_macros sloppiness. Without ccache, or with
# IMGPACK_CCACHE=OFF, the compilers run directly: nothing else changes.
option(IMGPACK_CCACHE "Compile through ccache when it is installed" ON)
if(IMGPACK_CCACHE)
  find_program(IMGPACK_CCACHE_PROGRAM ccache)
endif()
if(IMGPACK_CCACHE AND IMGPACK_CCACHE_PROGRAM)
  get_filename_component(imgpack_source_root "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
  set(imgpack_launcher
      env "CCACHE_BASEDIR=${imgpack_source_root}" CCACHE_NOHASHDIR=1
      "CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime"
      ${IMGPACK_CCACHE_PROGRAM})
  foreach(lang C CXX CUDA)
    if(NOT DEFINED CMAKE_${lang}_COMPILER_LAUNCHER)
      set(CMAKE_${lang}_COMPILER_LAUNCHER ${imgpack_launcher})
    endif()
  endforeach()
endif()
