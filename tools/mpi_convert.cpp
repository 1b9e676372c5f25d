#include "mpi_convert.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "cli_common.hpp"
#include "cli_wording.hpp"
#include "imgpack/convert.hpp"
#include "imgpack/error.hpp"
#include "imgpack/merge.hpp"
#include "summaries.hpp"

#ifdef IMGPACK_HAVE_MPI
#include <mpi.h>
#endif

namespace imgpack::cli {

namespace {

// Runs `work`, turning what it throws into a message on stderr and an exit code.
template <class Work>
int exit_code_of(int rank, Work&& work) {
  try {
    work();
    return kExitOk;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "imgpack: rank %d: %s\n", rank, cli_wording(e.what()).c_str());
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "imgpack: rank %d: %s\n", rank, cli_wording(e.what()).c_str());
    return kExitFailure;
  }
}

}  // namespace

bool started_by_mpi_launcher() {
#ifdef IMGPACK_HAVE_MPI
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr ||
         std::getenv("PMIX_RANK") != nullptr;
#else
  return false;
#endif
}

#ifdef IMGPACK_HAVE_MPI

int run_convert_with_mpi(ConvertOptions options, bool quiet, bool json) {
  MPI_Init(nullptr, nullptr);
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  options.part = ConvertPart{static_cast<uint32_t>(rank), static_cast<uint32_t>(size)};
  // Every rank converts its part with --resume, so a rerun of the job continues.
  options.resume = options.resume || !options.overwrite;
  ConvertResult converted;
  const int local = exit_code_of(rank, [&] { converted = convert(options); });
  int worst = local;
  MPI_Allreduce(&local, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (worst != kExitOk) {
    if (rank == 0) {
      std::fprintf(stderr, "imgpack: a rank failed, so the %d parts in %s were not merged\n", size,
                   options.out.c_str());
    }
    MPI_Finalize();
    return worst;
  }
  MergeResult merged;
  int code = rank == 0 ? exit_code_of(rank, [&] { merged = merge({options.out}); }) : kExitOk;
  MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  if (rank != 0 || code != kExitOk) return code;
  if (json) {
    print_json(merge_json(merged, options.out.string()));
  } else if (!quiet) {
    std::fprintf(
        stderr, "%s: %d ranks converted and merged: %llu records from %llu images in %llu shards\n",
        options.out.c_str(), size, static_cast<unsigned long long>(merged.records),
        static_cast<unsigned long long>(merged.samples),
        static_cast<unsigned long long>(merged.shards));
  }
  return kExitOk;
}

#else

int run_convert_with_mpi(ConvertOptions /*options*/, bool /*quiet*/, bool /*json*/) {
  throw UsageError("this imgpack was built without MPI (IMGPACK_WITH_MPI)");
}

#endif

}  // namespace imgpack::cli
