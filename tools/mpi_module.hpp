// The MPI calls of `mpirun imgpack convert` live in a module of their own,
// libimgpack_mpi.so, which links Open MPI (or another MPI); the CLI loads it
// with dlopen only when an MPI launcher started it, so that every other run
// of imgpack loads no MPI library (a dozen of them with Open MPI's runtime).
//
// This header is the whole interface between the two: the module exports one
// C function, kEntryPoint, returning its ModuleFunctions, and is accepted
// only when its `abi` equals kMpiModuleAbi (a hash of the module's sources
// and of this header, made at build time by cmake/module_abi.cmake).
#pragma once

#include <type_traits>

#include "mpi_module_abi.hpp"  // generated: IMGPACK_MPI_MODULE_ABI

namespace imgpack::cli::mpi_module {

inline constexpr const char* kMpiModuleAbi = IMGPACK_MPI_MODULE_ABI;
inline constexpr const char* kEntryPoint = "imgpack_mpi_module_functions";
inline constexpr const char* kFileName = "libimgpack_mpi.so";
// The environment variable naming the module to load instead of searching.
inline constexpr const char* kPathVariable = "IMGPACK_MPI_MODULE";

// MPI_COMM_WORLD's collectives, as the conversion uses them. Called from the
// main thread only, between init() and finalize().
struct ModuleFunctions {
  const char* abi;
  // MPI_Init, then this process's rank and the world's size.
  void (*init)(int* rank, int* size);
  // MPI_Allreduce with MPI_MAX over every rank's `value`.
  int (*max_over_ranks)(int value);
  // MPI_Bcast of rank 0's `value`.
  int (*broadcast_from_rank0)(int value);
  void (*finalize)();
};
// loadable_module reads `abi` through a pointer to the table.
static_assert(std::is_standard_layout_v<ModuleFunctions>);

}  // namespace imgpack::cli::mpi_module
