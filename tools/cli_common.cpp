#include "cli_common.hpp"

#include <charconv>
#include <cstdio>
#include <iostream>
#include <system_error>

#include "cli_wording.hpp"
#include "files.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"

namespace imgpack::cli {

const CLI::Validator& not_empty() {
  static const CLI::Validator validator(
      [](const std::string& text) { return text.empty() ? "an empty value" : ""; }, "");
  return validator;
}

const CLI::Validator& dataset_directory() {
  static const CLI::Validator validator(
      [](const std::string& text) -> std::string {
        if (text.empty()) return "an empty value";
        try {
          require_dataset_directory(text);
          return "";
        } catch (const Error& e) {
          return e.what();
        }
      },
      "");
  return validator;
}

void refuse_dataset_file_as_output(const std::filesystem::path& out,
                                   const std::filesystem::path& dataset, const char* option) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path folder = fs::canonical(dataset, ec);
  if (ec) return;                                         // no dataset: its own check says so
  const fs::path target = fs::weakly_canonical(out, ec);  // links followed
  if (ec || target.parent_path() != folder) return;
  const std::string name = target.filename().string();
  if (name.ends_with(".h5") || name.ends_with(".journal") || name == format::kReportFile ||
      name.ends_with(format::kTmpSuffix)) {
    throw UsageError(std::string(option) + " " + out.string() + ": is " + name +
                     " of the dataset " + dataset.string() + "; writing there would replace it");
  }
}

const CLI::Validator& whole_number() {
  static const CLI::Validator validator(
      [](const std::string& text) {
        uint64_t value = 0;
        const char* end = text.data() + text.size();
        const auto [stop, error] = std::from_chars(text.data(), end, value);
        if (text.empty() || error != std::errc() || stop != end) {
          return "'" + text + "' is not a whole number from 0 to 18446744073709551615";
        }
        return std::string();
      },
      "");
  return validator;
}

void print_json(const nlohmann::ordered_json& value) {
  // Paths need not be valid UTF-8; replace bad bytes rather than fail.
  std::cout << value.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
            << std::endl;
}

void print_messages(const char* kind, const std::vector<std::string>& lines) {
  for (const std::string& line : lines) {
    std::fprintf(stderr, "imgpack: %s: %s\n", kind, cli_wording(line).c_str());
  }
}

std::string fixed(double value, int digits) {
  char text[48];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

std::string counted(uint64_t count, const std::string& noun) {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return text;
}

}  // namespace imgpack::cli
