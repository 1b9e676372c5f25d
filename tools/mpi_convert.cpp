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
#include "interrupt.hpp"
#include "summaries.hpp"

#ifdef IMGPACK_HAVE_MPI
#include "loadable_module.hpp"
#include "mpi_module.hpp"
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
    std::fprintf(stderr, "imgpack: rank %d: %s\n", rank, error_text(e.what()).c_str());
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "imgpack: rank %d: %s\n", rank, error_text(e.what()).c_str());
    return kExitFailure;
  }
}

#ifdef IMGPACK_HAVE_MPI
// The MPI module (mpi_module.hpp), loaded on first use; throws if it cannot be.
const mpi_module::ModuleFunctions& mpi() {
  static const loadable_module::Found found = loadable_module::load_first(
      loadable_module::candidates(mpi_module::kPathVariable, mpi_module::kFileName,
                                  IMGPACK_MPI_MODULE_BUILD_PATH, IMGPACK_MPI_MODULE_INSTALL_PATH),
      {mpi_module::kEntryPoint, loadable_module::call_entry_point<mpi_module::ModuleFunctions>,
       mpi_module::kMpiModuleAbi, "imgpack's MPI module"});
  if (found.table == nullptr) {
    throw Error("an MPI launcher started imgpack convert, but " +
                loadable_module::not_loaded("MPI module", mpi_module::kFileName,
                                            mpi_module::kPathVariable, found.problem));
  }
  return *static_cast<const mpi_module::ModuleFunctions*>(found.table);
}
#endif

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
  const mpi_module::ModuleFunctions& module = mpi();
  int rank = 0;
  int size = 1;
  module.init(&rank, &size);
  options.part = ConvertPart{static_cast<uint32_t>(rank), static_cast<uint32_t>(size)};
  // Every rank resumes its part by itself: no --resume to add.
  set_interrupt_note(options.overwrite
                         ? "; what was converted stays in the output folder: the same mpirun "
                           "command without --overwrite continues it"
                         : "; what was converted stays in the output folder: the same mpirun "
                           "command again continues it");
  // Every rank converts its part with --resume, so a rerun of the job continues.
  options.resume = options.resume || !options.overwrite;
  ConvertResult converted;
  const int local = exit_code_of(rank, [&] { converted = convert(options); });
  const int worst = module.max_over_ranks(local);
  if (worst != kExitOk) {
    if (rank == 0) {
      std::fprintf(stderr, "imgpack: a rank failed, so the %d parts in %s were not merged\n", size,
                   options.out.c_str());
    }
    module.finalize();
    return worst;
  }
  MergeResult merged;
  const int code = module.broadcast_from_rank0(
      rank == 0 ? exit_code_of(rank, [&] { merged = merge({options.out}); }) : kExitOk);
  module.finalize();
  if (rank != 0 || code != kExitOk) return code;
  if (json) {
    print_json(merge_json(merged, options.out.string()));
  } else if (!quiet) {
    // Every part found merged already (a rerun of a finished job) or being
    // merged (a rerun after the merge stopped): nothing was converted.
    const bool converted_nothing = converted.already_complete && !converted.resume_notes.empty();
    const std::string what =
        converted_nothing
            ? "nothing to convert (the " + std::to_string(size) + " parts were merged, or are now)"
            : std::to_string(size) + " ranks converted and merged" +
                  (merged.resumed ? " (an interrupted merge, completed)" : "");
    std::fprintf(stderr, "%s: %s: %llu records from %llu images in %llu shards\n",
                 options.out.c_str(), what.c_str(), static_cast<unsigned long long>(merged.records),
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
