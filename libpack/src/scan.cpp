#include "imgpack/scan.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <regex>
#include <set>

#include "imgpack/error.hpp"

namespace imgpack {

namespace fs = std::filesystem;

namespace {

constexpr const char* kImageExtensions[] = {".jpg", ".jpeg", ".jpe", ".jfif", ".png", ".bmp",
                                            ".dib", ".tif", ".tiff", ".webp", ".pbm", ".pgm",
                                            ".ppm", ".pnm", ".pxm"};

struct DirId {
  dev_t dev;
  ino_t ino;
  auto operator<=>(const DirId&) const = default;
};

class Walker {
 public:
  Walker(const fs::path& root, SourceList& out) : root_(root), out_(out) {}

  void walk(const fs::path& dir, const std::string& rel) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) {
      skip(rel, std::string("cannot stat directory: ") + std::strerror(errno));
      return;
    }
    if (!visited_.insert({st.st_dev, st.st_ino}).second) {
      skip(rel, "directory already visited (symbolic link loop or duplicate link)");
      return;
    }
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec) {
      skip(rel, "cannot list directory: " + ec.message());
      return;
    }
    std::vector<std::pair<std::string, fs::path>> entries;
    for (; it != fs::directory_iterator(); it.increment(ec)) {
      if (ec) {
        skip(rel, "cannot list directory: " + ec.message());
        break;
      }
      std::string name = it->path().filename().string();
      if (name.empty() || name[0] == '.') continue;  // hidden files and folders
      entries.emplace_back(std::move(name), it->path());
    }
    std::sort(entries.begin(), entries.end());
    for (const auto& [name, path] : entries) {
      std::string child = rel.empty() ? name : rel + "/" + name;
      struct stat target {};
      if (::stat(path.c_str(), &target) != 0) {
        if (has_image_extension(path)) {
          skip(child, std::string("cannot stat: ") + std::strerror(errno));
        }
        continue;
      }
      if (S_ISDIR(target.st_mode)) {
        walk(path, child);
      } else if (S_ISREG(target.st_mode)) {
        if (has_image_extension(path)) {
          files_.push_back({child, static_cast<uint64_t>(target.st_size)});
        } else {
          ++out_.ignored_files;
        }
      }
    }
  }

  std::vector<std::pair<std::string, uint64_t>>& files() { return files_; }

 private:
  void skip(const std::string& rel, std::string reason) {
    out_.skipped.push_back({rel.empty() ? "." : rel, std::move(reason)});
  }

  fs::path root_;
  SourceList& out_;
  std::set<DirId> visited_;
  std::vector<std::pair<std::string, uint64_t>> files_;  // path, size
};

}  // namespace

bool has_image_extension(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::find(std::begin(kImageExtensions), std::end(kImageExtensions), ext) !=
         std::end(kImageExtensions);
}

void assign_groups_by_regex(SourceList& list, const std::string& pattern, bool missing_ok) {
  std::regex regex;
  try {
    regex = std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw UsageError("--group-regex '" + pattern + "' is not a valid regular expression: " +
                     e.what());
  }
  if (regex.mark_count() < 1) {
    throw UsageError("--group-regex '" + pattern + "' has no capture group; put the group name "
                     "in parentheses, e.g. '^([^_]+)_'");
  }
  std::vector<std::string> names(list.samples.size());
  std::vector<std::string> unmatched;
  std::size_t unmatched_count = 0;
  for (std::size_t i = 0; i < list.samples.size(); ++i) {
    std::smatch match;
    const std::string& path = list.samples[i].path;
    if (std::regex_search(path, match, regex) && match[1].matched && match[1].length() > 0) {
      names[i] = match[1].str();
    } else {
      ++unmatched_count;
      if (unmatched.size() < 5) unmatched.push_back(path);
    }
  }
  if (unmatched_count > 0 && !missing_ok) {
    std::string message = "--group-regex '" + pattern + "' does not match " +
                          std::to_string(unmatched_count) + " of " +
                          std::to_string(list.samples.size()) + " paths, e.g.";
    for (const std::string& path : unmatched) message += " " + path;
    message += " (use --group-missing ok to give them no group)";
    throw UsageError(message);
  }
  std::map<std::string, int32_t> ids;
  for (const std::string& name : names) {
    if (!name.empty()) ids.emplace(name, 0);
  }
  list.group_names.clear();
  for (auto& [name, id] : ids) {
    id = static_cast<int32_t>(list.group_names.size());
    list.group_names.push_back(name);
  }
  for (std::size_t i = 0; i < list.samples.size(); ++i) {
    list.samples[i].group = names[i].empty() ? -1 : ids.at(names[i]);
  }
}

SourceList scan_directory(const fs::path& src, const ScanOptions& options) {
  std::error_code ec;
  if (!fs::exists(src, ec)) throw UsageError(src.string() + ": no such directory");
  if (!fs::is_directory(src, ec)) throw UsageError(src.string() + ": not a directory");

  SourceList list;
  Walker walker(src, list);
  walker.walk(src, "");
  std::vector<std::pair<std::string, uint64_t>>& files = walker.files();
  std::sort(files.begin(), files.end());

  std::map<std::string, int32_t> class_ids;
  if (options.labels == LabelSource::dirs) {
    for (const auto& [file, size] : files) {
      auto slash = file.find('/');
      if (slash != std::string::npos) class_ids.emplace(file.substr(0, slash), 0);
    }
    for (auto& [name, id] : class_ids) {
      id = static_cast<int32_t>(list.class_names.size());
      list.class_names.push_back(name);
    }
  }
  for (auto& [file, size] : files) {
    SourceSample sample;
    sample.file_size = size;
    if (options.labels == LabelSource::dirs) {
      auto slash = file.find('/');
      if (slash == std::string::npos) {
        list.skipped.push_back({file, "not inside a class folder (--labels dirs)"});
        continue;
      }
      sample.label = class_ids.at(file.substr(0, slash));
    }
    sample.path = std::move(file);
    list.samples.push_back(std::move(sample));
  }
  if (!options.group_regex.empty()) {
    assign_groups_by_regex(list, options.group_regex, options.group_missing_ok);
  }
  return list;
}

}  // namespace imgpack
