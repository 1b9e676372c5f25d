// The complete CLI, which the `imgpack` program hands the commands that touch
// images to (tools/CMakeLists.txt says why there are two programs).
#pragma once

#include <string>
#include <vector>

namespace imgpack::cli {

// The environment variable that names the complete CLI's path, overriding the
// places it is looked for.
inline constexpr const char* kCompleteCliVariable = "IMGPACK_COMPLETE_CLI";

// True for the first arguments the front program runs itself: --version and
// the commands that read or change a dataset without decoding or encoding an
// image.
bool runs_in_front(int argc, char** argv);

// Where the complete CLI is looked for, in order: $IMGPACK_COMPLETE_CLI alone
// when set; else imgpack-complete beside this program (a build tree), the
// installed layout's place relative to this program, then the installation's
// absolute path; each place once. Never another build tree's: a moved or
// partly installed front end says what it lacks.
std::vector<std::string> complete_cli_candidates();

// Replaces this process with the first executable candidate, given `argv`
// unchanged (the process id, its environment and its open files stay). Returns
// only when none could be run, with a message naming every place tried and
// why each failed.
std::string exec_complete_cli(char** argv);

}  // namespace imgpack::cli
