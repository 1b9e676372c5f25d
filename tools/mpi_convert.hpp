// `mpirun -n N imgpack convert SRC OUT ...`: every rank converts part
// rank/N, and rank 0 merges once every rank has succeeded.
#pragma once

#include "imgpack/convert_options.hpp"

namespace imgpack::cli {

// True when imgpack was built with MPI (IMGPACK_WITH_MPI) and this process
// was started by an MPI launcher (mpirun, srun with PMI).
bool started_by_mpi_launcher();

// Converts part rank/size of `options` on this rank; then all ranks agree
// (MPI_Allreduce) whether every part succeeded, and only then rank 0 merges.
// A rank that fails prints its message; no rank merges, so OUT gets no
// index.h5. Returns the exit code, the same on every rank: 0, or the worst
// of the ranks' codes. Only rank 0 prints the summary (or JSON).
int run_convert_with_mpi(ConvertOptions options, bool quiet, bool json);

}  // namespace imgpack::cli
