// libimgpack_mpi.so: the MPI calls of mpi_convert.cpp behind the C entry
// point mpi_module.hpp describes. It links MPI and nothing of imgpack and
// exports only its entry point.
#include <mpi.h>

#include "mpi_module.hpp"

namespace imgpack::cli::mpi_module {
namespace {

void init(int* rank, int* size) {
  MPI_Init(nullptr, nullptr);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
}

int max_over_ranks(int value) {
  int max = value;
  MPI_Allreduce(&value, &max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return max;
}

int broadcast_from_rank0(int value) {
  MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return value;
}

void finalize() { MPI_Finalize(); }

constexpr ModuleFunctions kFunctions = {kMpiModuleAbi, init, max_over_ranks, broadcast_from_rank0,
                                        finalize};

}  // namespace
}  // namespace imgpack::cli::mpi_module

extern "C" __attribute__((visibility("default"))) const imgpack::cli::mpi_module::ModuleFunctions*
imgpack_mpi_module_functions() {
  return &imgpack::cli::mpi_module::kFunctions;
}
