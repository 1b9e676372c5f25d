// The libraries' messages name their own options (ConvertOptions::size,
// SplitSpec::folds); the CLI shows the flags that set them (--size, --folds).
#pragma once

#include <string>
#include <string_view>

namespace imgpack::cli {

// `message` with every library option it names replaced by the CLI flag that
// sets it: "SplitSpec::folds 9 is more than the 4 groups" becomes
// "--folds 9 is more than the 4 groups". Text naming nothing is returned as is.
std::string cli_wording(std::string_view message);

// An error's message as the CLI prints it: cli_wording(), and a message over
// 4 KiB shortened around notes of how much was left out: first each word over
// 1 KiB (a path near PATH_MAX) to its first and last 384 bytes, so that the
// words between (the reason) stay whole; then, if still over 4 KiB (a 50 MB
// line of a list echoed), the message to its first and last 2 KiB.
std::string error_text(std::string_view message);

}  // namespace imgpack::cli
