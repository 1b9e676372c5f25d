#include "masks/mask_scan.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "imgpack/error.hpp"

namespace imgpack {

namespace fs = std::filesystem;

namespace {

// "a/b.jpg" -> "a/b"
std::string without_extension(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  const std::size_t dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) ||
      dot == (slash == std::string::npos ? 0 : slash + 1)) {
    return path;
  }
  return path.substr(0, dot);
}

bool same_directory(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec);
}

bool strictly_inside(const fs::path& child, const fs::path& parent) {
  std::error_code ec;
  const fs::path c = fs::weakly_canonical(child, ec);
  const fs::path p = fs::weakly_canonical(parent, ec);
  if (c == p) return false;
  auto [pi, ci] = std::mismatch(p.begin(), p.end(), c.begin(), c.end());
  return pi == p.end();
}

// Every file with an image extension below `root` (symbolic links followed,
// each directory once, hidden names skipped), keyed by its relative path
// without extension; and those with an image extension that could not be
// stat-ed (a link to nothing), with the reason.
class MaskListing {
 public:
  explicit MaskListing(const fs::path& root) { walk(root, ""); }

  const std::vector<std::pair<std::string, FileStamp>>* find(const std::string& stem) const {
    const auto it = files_.find(stem);
    return it == files_.end() ? nullptr : &it->second;
  }
  // "a/b.png: cannot stat: No such file or directory" for the stem "a/b",
  // or nullptr.
  const std::string* unreadable(const std::string& stem) const {
    const auto it = unreadable_.find(stem);
    return it == unreadable_.end() ? nullptr : &it->second;
  }

 private:
  struct DirId {
    dev_t dev;
    ino_t ino;
    auto operator<=>(const DirId&) const = default;
  };

  void walk(const fs::path& dir, const std::string& rel) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0 || !visited_.insert({st.st_dev, st.st_ino}).second) return;
    std::error_code ec;
    std::vector<std::pair<std::string, fs::path>> entries;
    for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
      std::string name = it->path().filename().string();
      if (!name.empty() && name[0] != '.') entries.emplace_back(std::move(name), it->path());
    }
    std::sort(entries.begin(), entries.end());
    for (const auto& [name, path] : entries) {
      const std::string child = rel.empty() ? name : rel + "/" + name;
      struct stat target {};
      if (::stat(path.c_str(), &target) != 0) {
        if (has_image_extension(path)) {
          unreadable_.emplace(without_extension(child),
                              child + ": cannot stat: " + std::strerror(errno));
        }
        continue;
      }
      if (S_ISDIR(target.st_mode)) {
        walk(path, child);
      } else if (S_ISREG(target.st_mode) && has_image_extension(path)) {
        files_[without_extension(child)].emplace_back(child, file_stamp(target));
      }
    }
  }

  std::set<DirId> visited_;
  std::map<std::string, std::vector<std::pair<std::string, FileStamp>>> files_;
  std::map<std::string, std::string> unreadable_;
};

// Takes the masks out of a listing of SRC that holds them beside the images:
// files whose name ends in `suffix` before the extension.
void remove_masks_from_images(SourceList& list, const std::string& suffix) {
  auto is_mask = [&](const std::string& path) { return without_extension(path).ends_with(suffix); };
  std::erase_if(list.samples, [&](const SourceSample& s) { return is_mask(s.path); });
  std::erase_if(list.skipped, [&](const SkippedInput& s) { return is_mask(s.path); });
}

void attach_from_folder(SourceList& list, const MaskOptions& masks) {
  const MaskListing listing(masks.dir);
  for (SourceSample& sample : list.samples) {
    const std::string stem = without_extension(sample.path) + masks.suffix;
    const auto* found = listing.find(stem);
    if (found == nullptr) {
      const std::string* unreadable = listing.unreadable(stem);
      sample.mask_problem =
          unreadable != nullptr
              ? "no mask: " + (masks.dir / *unreadable).string() + " (a link to nothing?)"
              : "no mask: expected " + (masks.dir / stem).string() +
                    ".<ext> (png, tif, bmp, ...: any image extension)";
    } else if (found->size() > 1) {
      sample.mask_problem = "two masks: " + (masks.dir / (*found)[0].first).string() + " and " +
                            (masks.dir / (*found)[1].first).string() + "; keep one";
    } else {
      sample.mask_path = found->front().first;
      sample.mask_stamp = found->front().second;
    }
  }
}

void attach_from_csv(SourceList& list, const fs::path& root) {
  for (SourceSample& sample : list.samples) {
    if (!sample.mask_problem.empty()) continue;  // an empty cell
    const std::string listed = sample.mask_path;
    sample.mask_path = relative_to_root(listed, root);
    if (sample.mask_path.empty()) {
      sample.mask_problem =
          "mask path '" + listed + "' is outside the mask folder " + root.string() +
          " (CsvInput::mask paths are relative to MaskOptions::dir, or to SRC without it)";
      continue;
    }
    struct stat st {};
    const fs::path path = root / sample.mask_path;
    if (::stat(path.c_str(), &st) != 0) {
      sample.mask_problem = "mask " + path.string() + ": " +
                            (errno == ENOENT ? "missing" : "cannot stat: ") +
                            (errno == ENOENT ? "" : std::strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
      sample.mask_problem = "mask " + path.string() + ": not a regular file";
    } else {
      sample.mask_stamp = file_stamp(st);
    }
  }
}

}  // namespace

fs::path mask_folder_inside_source(const fs::path& src, const MaskOptions& masks) {
  if (masks.dir.empty() || !strictly_inside(masks.dir, src)) return {};
  return masks.dir;
}

fs::path mask_root(const fs::path& src, const MaskOptions& masks) {
  return masks.dir.empty() ? src : masks.dir;
}

void attach_masks(SourceList& list, const fs::path& src, const ScanOptions& scan,
                  const MaskOptions& masks) {
  const bool csv = scan.csv && !scan.csv->mask.empty();
  if (masks.dir.empty() && !csv) return;  // no masks
  if (!masks.dir.empty()) {
    std::error_code ec;
    if (!fs::is_directory(masks.dir, ec)) {
      throw UsageError(masks.dir.string() + ": no such mask directory (MaskOptions::dir)");
    }
    if (!csv && same_directory(masks.dir, src)) {
      if (masks.suffix.empty()) {
        throw UsageError(masks.dir.string() +
                         ": the mask folder is SRC itself; give MaskOptions::suffix (say "
                         "'_mask') so that masks and images can be told apart");
      }
      remove_masks_from_images(list, masks.suffix);
    }
  }
  if (csv) {
    attach_from_csv(list, mask_root(src, masks));
  } else {
    attach_from_folder(list, masks);
  }
}

}  // namespace imgpack
