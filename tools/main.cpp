// imgpack: pack image directories into HDF5 datasets that train at memory speed.
//
// Built twice (tools/CMakeLists.txt): as the complete CLI, and with
// IMGPACK_CLI_FRONT as `imgpack`, which runs the commands that touch no image
// and hands the others to the complete CLI.
#ifndef IMGPACK_CLI_FRONT
#include <opencv2/core/utils/logger.hpp>
#endif

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <new>
#include <string>

#include "cli_common.hpp"
#include "cli_wording.hpp"
#include "complete_cli.hpp"
#include "files.hpp"
#include "imgpack/error.hpp"
#include "imgpack/version.hpp"
#include "interrupt.hpp"

namespace {

using namespace imgpack::cli;

int run(int argc, char** argv) {
#ifdef IMGPACK_CLI_FRONT
  if (!runs_in_front(argc, argv)) {
    hold_interrupts_for_exec();
    const std::string problem = exec_complete_cli(argv);  // returns only if nothing ran
    release_held_interrupts();
    std::cerr << "imgpack: " << problem << "\n";
    return kExitFailure;
  }
#else
  // OpenCV's own warnings would interleave with our messages; we report failures ourselves.
  cv::utils::logging::setLogLevel(cv::utils::logging::LOG_LEVEL_SILENT);
#endif

  CLI::App app{
      "imgpack: pack image directories into uncompressed HDF5 shards that training "
      "programs read at memory speed"};
  app.set_version_flag("--version", std::string("imgpack ") + imgpack::kVersionString);
  app.require_subcommand(1);
  Action action;
#ifndef IMGPACK_CLI_FRONT
  add_convert_command(app, action);
#endif
  add_inspect_command(app, action);
  add_merge_command(app, action);
  add_remove_command(app, action);
  add_compact_command(app, action);
#ifndef IMGPACK_CLI_FRONT
  add_preview_command(app, action);
  add_sample_data_command(app, action);
#endif
  add_split_command(app, action);
  add_bench_command(app, action);
  add_upgrade_command(app, action);
  add_verify_command(app, action);

  std::string names;
  bool known = false;
  for (const CLI::App* sub : app.get_subcommands({})) {
    names += " " + sub->get_name();
    known = known || (argc > 1 && sub->get_name() == argv[1]);
  }
  if (argc > 1 && argv[1][0] != '-' && !known) {
    std::cerr << "imgpack: unknown command '" << argv[1] << "'; commands:" << names << "\n";
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  } catch (const imgpack::UsageError& e) {
    std::cerr << "imgpack: " << error_text(e.what()) << "\n";
    return kExitUsage;
  }
  set_interrupt_note(app);
  try {
    return action ? action() : kExitUsage;
  } catch (const imgpack::UsageError& e) {
    std::cerr << "imgpack: " << error_text(e.what()) << "\n";
    return kExitUsage;
  } catch (const std::bad_alloc&) {  // where no step named what it was doing
    std::cerr << "imgpack: out of memory (std::bad_alloc)\n";
    return kExitFailure;
  } catch (const imgpack::Error& e) {  // its message says it all
    std::cerr << "imgpack: " << error_text(e.what()) << "\n";
    return kExitFailure;
  } catch (const std::exception& e) {
    std::cerr << "imgpack: " << error_text(e.what()) << imgpack::thread_start_note(e) << "\n";
    return kExitFailure;
  }
}

// `code`, unless what the command printed on standard output did not all
// reach it: `imgpack split --export NAME --out - > FILE` on a full disk must
// not end in exit 0 with FILE cut short.
int with_output_checked(int code) {
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int error = errno;
  if (flushed && std::cout.good() && std::ferror(stdout) == 0) return code;
  std::cerr << "imgpack: standard output: write failed"
            << (error != 0 ? std::string(": ") + std::strerror(error) : std::string())
            << "; what was printed is incomplete\n";
  return code == kExitOk ? kExitFailure : code;
}

// Standard input, output and error held where the caller closed them
// (`imgpack convert ... >&- 2>&-`): else the next files opened take their
// numbers, and what is printed lands in them (a progress line in
// convert.journal). /dev/null read-only: writing there still fails, as to a
// closed descriptor, so output that went nowhere is still reported.
void hold_standard_descriptors() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    const int opened = ::open("/dev/null", O_RDONLY);
    if (opened != fd && opened >= 0) ::close(opened);  // a gap below: nothing to hold
  }
}

}  // namespace

int main(int argc, char** argv) {
  hold_standard_descriptors();
  // A file-size limit (ulimit -f) reached: the write fails with EFBIG, which
  // the command reports naming the file as any write error, rather than the
  // signal ending the process with no word and a temporary file left.
  ::signal(SIGXFSZ, SIG_IGN);
  install_interrupt_handlers();
  try {
    return with_output_checked(run(argc, argv));
  } catch (const std::exception& e) {  // e.g. out of memory while setting up the commands
    std::cerr << "imgpack: " << error_text(e.what()) << "\n";
    return imgpack::cli::kExitFailure;
  }
}
