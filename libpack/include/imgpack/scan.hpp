// Finding the inputs of a conversion: which files, with which label and group.
//
// scan_directory() walks SRC (following symbolic links, never looping),
// keeps files with an image extension, and derives labels from class folders
// (the first path component below SRC) and groups from an optional regular
// expression over the relative path. The result is sorted by path, so it is
// the same on every machine and run. Nothing is opened or modified except
// directories being listed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace imgpack {

struct SourceSample {
  std::string path;  // relative to the input root, '/'-separated
  int32_t label = -1;
  int32_t group = -1;
  uint64_t file_size = 0;  // bytes, when scanned
};

struct SkippedInput {
  std::string path;    // relative to the input root
  std::string reason;
};

struct SourceList {
  std::vector<SourceSample> samples;  // sorted by path
  std::vector<std::string> class_names;  // id -> name, sorted
  std::vector<std::string> group_names;  // id -> name, sorted
  std::vector<SkippedInput> skipped;     // found but unusable (e.g. outside a class folder)
  uint64_t ignored_files = 0;            // files without an image extension
};

enum class LabelSource { dirs, none };

struct ScanOptions {
  LabelSource labels = LabelSource::dirs;
  // ECMAScript regex searched in the relative path; its first capture group
  // names the sample's group. Empty = no groups.
  std::string group_regex;
  // A sample the regex does not match: error (false) or group -1 (true).
  bool group_missing_ok = false;
};

// True for the file name extensions imgpack converts (case-insensitive).
bool has_image_extension(const std::filesystem::path& path);

// Throws UsageError if SRC is not a readable directory or the group regex is
// invalid or misses samples; unreadable subdirectories become skipped inputs.
SourceList scan_directory(const std::filesystem::path& src, const ScanOptions& options);

// Assigns group ids from the first capture of `regex` over each path
// (sorted group names); throws UsageError listing the first unmatched paths
// unless `missing_ok`.
void assign_groups_by_regex(SourceList& list, const std::string& regex, bool missing_ok);

}  // namespace imgpack
