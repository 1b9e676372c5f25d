#include "inputs/scan.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <system_error>
#include <thread>

// GCC 12 under -fsanitize=address reports a false -Wmaybe-uninitialized inside
// libstdc++'s regex compiler (the moved-from _State in _NFA::_M_insert_*; GCC
// bug 105616), which -Werror turns into a failed build. Silence it for <regex>
// alone: the pragma covers the code inlined from that header, not ours.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <regex>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include "files.hpp"
#include "imgpack/error.hpp"
#include "inputs/csv.hpp"
#include "inputs/memory_budget.hpp"
#include "inputs/text_lines.hpp"

namespace imgpack {

namespace fs = std::filesystem;

namespace {

constexpr const char* kImageExtensions[] = {".jpg", ".jpeg", ".jpe",  ".jfif", ".png", ".bmp",
                                            ".dib", ".tif",  ".tiff", ".webp", ".pbm", ".pgm",
                                            ".ppm", ".pnm",  ".pxm",  ".pam"};

// Why a file with an image extension that is not a regular file is skipped.
std::string not_a_regular_file(mode_t mode) {
  const char* kind = S_ISFIFO(mode)   ? "a FIFO"
                     : S_ISSOCK(mode) ? "a socket"
                     : S_ISCHR(mode)  ? "a character device"
                     : S_ISBLK(mode)  ? "a block device"
                                      : "of an unknown kind";
  return std::string("not a regular file (") + kind + ")";
}

struct DirId {
  dev_t dev;
  ino_t ino;
  auto operator<=>(const DirId&) const = default;
};

// Walks SRC depth first in name order. Each directory's entries are stat-ed
// relative to the open directory (no path to resolve), and a listed regular
// file without an image name is not stat-ed at all: on a tree of 100,000
// small files the stat calls are most of a scan, and a directory of many
// entries has them stat-ed on several threads. Those are std::threads joined
// before the directory's results are read, not the conversion's TBB workers:
// TBB workers started here would reach the conversion pipeline's first filters
// already running, without the thread start that orders them after the
// pipeline was built for ThreadSanitizer.
//
// Each image file found is given to the selector as the walk reaches it, and
// only the kept ones are copied out: an append's scan of 100,000 files of
// which it holds 99,000 keeps 1,000 paths, not 100,000 to sort and drop. With
// class folders, the classes are every top folder holding an image, kept or
// not, and an image directly in SRC is set aside for the caller to skip.
class Walker {
 public:
  Walker(const fs::path& root, SourceList& out, unsigned threads, bool class_folders,
         const InputSelector& keep)
      : root_(root),
        out_(out),
        threads_(std::max(1U, threads)),
        class_folders_(class_folders),
        keep_(keep) {}

  // Directories never walked, silently.
  void exclude(const fs::path& dir) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) == 0) excluded_.insert({st.st_dev, st.st_ino});
  }

  void walk(const fs::path& dir, const std::string& rel) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) {
      skip(rel, std::string("cannot stat directory: ") + std::strerror(errno));
      return;
    }
    if (excluded_.contains({st.st_dev, st.st_ino})) return;
    if (!visited_.insert({st.st_dev, st.st_ino}).second) {
      skip(rel, "directory already visited (symbolic link loop or duplicate link)");
      return;
    }
    std::vector<Entry> entries;
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      const int error = errno;
      if (is_resource_shortage(error)) throw_resource_shortage(dir, "cannot list directory", error);
      skip(rel, std::string("cannot list directory: ") + std::strerror(error));
      return;
    }
    if (const int error = list_directory(fd, entries); error != 0) {
      if (is_resource_shortage(error)) {
        ::close(fd);
        throw_resource_shortage(dir, "cannot list directory", error);
      }
      skip(rel, std::string("cannot list directory: ") + std::strerror(error));
    }
    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return a.name < b.name; });
    // What a listing says is a regular file without an image name needs no
    // stat; every other entry does (the kind of a link or of an entry the
    // file system gives no kind for, and every image's size and times).
    std::vector<Entry*> to_stat;
    for (Entry& entry : entries) {
      entry.image = is_image_file_name(entry.name);
      if (entry.type == DT_REG && !entry.image) {
        ++out_.ignored_files;
      } else {
        to_stat.push_back(&entry);
      }
    }
    stat_entries(fd, to_stat);
    ::close(fd);

    for (const Entry* entry : to_stat) {
      std::string child = rel.empty() ? entry->name : rel + "/" + entry->name;
      if (entry->error != 0) {
        if (is_resource_shortage(entry->error)) {
          throw_resource_shortage(dir / entry->name, "cannot stat", entry->error);
        }
        if (entry->image) skip(child, std::string("cannot stat: ") + std::strerror(entry->error));
      } else if (S_ISDIR(entry->mode)) {
        walk(dir / entry->name, child);
      } else if (!entry->image) {
        ++out_.ignored_files;
      } else if (S_ISREG(entry->mode)) {
        found(rel, std::move(child), entry->stamp);
      } else {
        skip(child, not_a_regular_file(entry->mode));
      }
    }
  }

  // The kept image files (path, stamp), in the walk's order.
  std::vector<std::pair<std::string, FileStamp>>& files() { return files_; }
  // With class folders: every top folder holding an image, and the images
  // directly in SRC (never given to the selector).
  const std::set<std::string>& classes() const { return classes_; }
  std::vector<std::string>& outside_class_folders() { return loose_; }

 private:
  // What the walk keeps of a stat: 72 bytes an entry rather than struct
  // stat's 144 on top, since a folder of 100,000 files would otherwise cost
  // thousands of page faults, which take as long as the stat calls.
  struct Entry {
    std::string name;
    unsigned char type =
        DT_UNKNOWN;  // dirent's d_type; DT_UNKNOWN where the file system gives none
    bool image = false;
    int error = 0;  // of the stat, when there was one
    mode_t mode = 0;
    FileStamp stamp;
  };

  // Stats `entries` relative to the directory open as `fd`: on this thread,
  // or split into contiguous runs over up to threads_ threads (this one
  // included) when each gets enough entries to pay for starting a thread.
  // Each entry is written by one thread only and read after the join.
  void stat_entries(int fd, const std::vector<Entry*>& entries) const {
    auto stat_run = [fd, &entries](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) {
        Entry& entry = *entries[i];
        struct stat st {};
        if (::fstatat(fd, entry.name.c_str(), &st, 0) != 0) {
          entry.error = errno;
        } else {
          entry.mode = st.st_mode;
          entry.stamp = file_stamp(st);
        }
      }
    };
    constexpr std::size_t kEntriesPerThread = 1024;
    const std::size_t runs =
        std::clamp<std::size_t>(entries.size() / kEntriesPerThread, 1, threads_);
    const std::size_t run = (entries.size() + runs - 1) / runs;
    std::size_t done = run;  // this thread's run is the first
    {
      std::vector<std::jthread> helpers;
      try {
        for (; done < entries.size(); done += run) {
          helpers.emplace_back(stat_run, done, std::min(entries.size(), done + run));
        }
      } catch (const std::system_error&) {
        // No more threads: this one stats what was not handed out.
      }
      stat_run(0, std::min(entries.size(), run));
      stat_run(done, entries.size());
    }  // joins the helpers
  }

  // The names in the directory open as `fd` but hidden ones; 0 or the errno
  // of why listing it failed (with the entries read until then). Leaves `fd`
  // open.
  static int list_directory(int fd, std::vector<Entry>& entries) {
    const int listing = ::dup(fd);
    DIR* stream = listing < 0 ? nullptr : ::fdopendir(listing);
    if (stream == nullptr) {
      const int error = errno;
      if (listing >= 0) ::close(listing);
      return error;
    }
    int problem = 0;
    for (;;) {
      errno = 0;
      const dirent* entry = ::readdir(stream);
      if (entry == nullptr) {
        problem = errno;
        break;
      }
      if (entry->d_name[0] == '.') continue;  // hidden files and folders, "." and ".."
      Entry& added = entries.emplace_back();
      added.name = entry->d_name;
      added.type = entry->d_type;
    }
    ::closedir(stream);
    return problem;
  }

  void skip(const std::string& rel, std::string reason) {
    out_.skipped.push_back({rel.empty() ? "." : rel, std::move(reason)});
  }

  // An image file at `path`, in the folder `rel`.
  void found(const std::string& rel, std::string path, const FileStamp& stamp) {
    if (class_folders_) {
      if (rel.empty()) {
        loose_.push_back(std::move(path));
        return;
      }
      const std::string_view top = std::string_view(rel).substr(0, rel.find('/'));
      if (top != last_class_) {
        last_class_ = top;
        classes_.emplace(top);
      }
    }
    if (keep_ && !keep_(path, stamp)) {
      ++out_.unselected;
      return;
    }
    files_.push_back({std::move(path), stamp});
  }

  fs::path root_;
  SourceList& out_;
  unsigned threads_;
  bool class_folders_;
  const InputSelector& keep_;
  std::set<DirId> visited_;
  std::set<DirId> excluded_;
  std::vector<std::pair<std::string, FileStamp>> files_;  // path, stat
  std::set<std::string> classes_;
  std::string last_class_;
  std::vector<std::string> loose_;
};

// A --csv-path value: one column name, or a template of literal text and
// {column} parts such as "train/{classname}/{img}".
class PathTemplate {
 public:
  PathTemplate(const std::string& spec, const CsvTable& table, const std::string& csv_name,
               const char* option = "CsvInput::path") {
    if (spec.find_first_of("{}") == std::string::npos) {
      parts_.push_back({"", table.require_column(spec, csv_name, option)});
      return;
    }
    std::size_t pos = 0;
    while (pos < spec.size()) {
      std::size_t open = spec.find('{', pos);
      std::size_t stray = spec.find('}', pos);
      if (stray < open) {
        throw UsageError(std::string(option) + " '" + spec + "': '}' without a matching '{'");
      }
      if (open == std::string::npos) {
        parts_.push_back({spec.substr(pos), std::nullopt});
        break;
      }
      std::size_t close = spec.find('}', open);
      if (close == std::string::npos) {
        throw UsageError(std::string(option) + " '" + spec + "': '{' without a matching '}'");
      }
      if (open > pos) parts_.push_back({spec.substr(pos, open - pos), std::nullopt});
      parts_.push_back(
          {"", table.require_column(spec.substr(open + 1, close - open - 1), csv_name, option)});
      pos = close + 1;
    }
  }

  // The path of one record, or "" if a column it uses is empty.
  std::string build(const CsvRecord& record, std::string* empty_column,
                    const CsvTable& table) const {
    std::string path;
    for (const Part& part : parts_) {
      if (!part.column) {
        path += part.literal;
        continue;
      }
      const std::string& value = record.fields[*part.column];
      if (value.empty()) {
        *empty_column = table.header[*part.column];
        return "";
      }
      path += value;
    }
    return path;
  }

 private:
  struct Part {
    std::string literal;
    std::optional<std::size_t> column;
  };
  std::vector<Part> parts_;
};

}  // namespace

std::string relative_to_root(const std::string& listed, const fs::path& src) {
  fs::path path = fs::path(listed).lexically_normal();
  if (path.is_absolute()) {
    std::error_code ec;
    fs::path root = fs::absolute(src, ec).lexically_normal();
    if (ec) return "";
    path = path.lexically_relative(root);
  }
  std::string text = path.generic_string();
  if (text.empty() || text == "." || text == ".." || text.starts_with("../")) return "";
  return text;
}

namespace {

// Sorted distinct non-empty names -> ids.
std::map<std::string, int32_t> number_names(const std::set<std::string>& names,
                                            std::vector<std::string>& out) {
  std::map<std::string, int32_t> ids;
  out.assign(names.begin(), names.end());
  for (std::size_t i = 0; i < out.size(); ++i) ids.emplace(out[i], static_cast<int32_t>(i));
  return ids;
}

// The names in a multi-label cell: split at ';', spaces and tabs around
// each name dropped, empty names (";;", a trailing ';') ignored.
std::vector<std::string> multilabel_cell(const std::string& cell) {
  std::vector<std::string> names;
  std::size_t begin = 0;
  while (begin <= cell.size()) {
    std::size_t end = cell.find(';', begin);
    if (end == std::string::npos) end = cell.size();
    std::size_t first = cell.find_first_not_of(" \t", begin);
    if (first != std::string::npos && first < end) {
      const std::size_t last = cell.find_last_not_of(" \t", end - 1);
      names.push_back(cell.substr(first, last + 1 - first));
    }
    begin = end + 1;
  }
  return names;
}

// Whether the decimal number `text` (a sign, digits with at most one point,
// an exponent) lies below 1 in magnitude, judged from its text alone: for a
// number beyond double's range.
bool below_one(std::string_view text) {
  if (text.starts_with('-') || text.starts_with('+')) text.remove_prefix(1);
  const std::size_t e = text.find_first_of("eE");
  const std::string_view mantissa = text.substr(0, e);
  const std::size_t first = mantissa.find_first_of("123456789");
  if (first == std::string_view::npos) return true;  // zero
  const std::size_t point = std::min(mantissa.find('.'), mantissa.size());
  // 10^magnitude <= |number| < 10^(magnitude + 1), before the exponent.
  int64_t magnitude = first < point ? static_cast<int64_t>(point - first - 1)
                                    : -static_cast<int64_t>(first - point);
  if (e == std::string_view::npos) return magnitude < 0;
  std::string_view exponent = text.substr(e + 1);
  const bool negative = exponent.starts_with('-');
  if (negative || exponent.starts_with('+')) exponent.remove_prefix(1);
  int64_t power = 0;
  const auto [next, error] =
      std::from_chars(exponent.data(), exponent.data() + exponent.size(), power);
  // An exponent past a million decides alone: no text has that many digits.
  if (error != std::errc{} || power > 1'000'000) return negative;
  magnitude += negative ? -power : power;
  return magnitude < 0;
}

// A numeric target cell: NaN when empty, else a finite decimal number within
// float32's range, rounded to the nearest float32 (a value too small for it
// becomes 0 or the nearest subnormal, as any rounding).
float target_cell(const std::string& cell, const std::string& where, const std::string& column) {
  if (cell.empty()) return std::numeric_limits<float>::quiet_NaN();
  double value = 0;
  const char* begin = cell.data();
  const char* end = begin + cell.size();
  if (cell.size() > 1 && cell[0] == '+' && cell[1] != '-') ++begin;  // from_chars takes no '+'
  const auto [next, error] = std::from_chars(begin, end, value);
  const auto refuse = [&](const std::string& what) {
    throw UsageError(where + "'" + cell + "' in target column '" + column + "' " + what +
                     " (leave the cell empty for no value)");
  };
  // Out of double's range (from_chars then leaves `value` as it was): too
  // small where the number is below 1 (its decimal magnitude, digits and
  // exponent together, is negative: 0.000...1, 1e-400), too large otherwise
  // (00999...9, 1000...0e-10).
  const std::string_view text(begin, static_cast<std::size_t>(end - begin));
  const bool underflow = error == std::errc::result_out_of_range && below_one(text);
  if ((error != std::errc{} && !underflow) || next != end || !std::isfinite(value)) {
    refuse(error == std::errc::result_out_of_range ? "is beyond float32's range (about 3.4e38)"
                                                   : "is not a finite number");
  }
  // What rounds to float32's largest value is in range: 3.4028235e+38, as
  // NumPy prints it, lies above it but below half a step past it.
  constexpr double kRoundsPastFloatMax = 0x1.ffffffp127;
  if (std::abs(value) >= kRoundsPastFloatMax) refuse("is beyond float32's range (about 3.4e38)");
  return static_cast<float>(value);
}

}  // namespace

FileStamp file_stamp(const struct stat& st) {
  auto nanoseconds = [](const struct timespec& t) {
    return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
  };
  return {static_cast<uint64_t>(st.st_size), nanoseconds(st.st_mtim), nanoseconds(st.st_ctim)};
}

bool is_image_file_name(std::string_view name) {
  const std::size_t dot = name.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return false;  // ".jpg" is a stem, as for fs::path
  const std::string_view ext = name.substr(dot);
  return std::any_of(std::begin(kImageExtensions), std::end(kImageExtensions),
                     [&](std::string_view known) {
                       return known.size() == ext.size() &&
                              std::equal(ext.begin(), ext.end(), known.begin(), [](char a, char b) {
                                return std::tolower(static_cast<unsigned char>(a)) == b;
                              });
                     });
}

bool has_image_extension(const fs::path& path) {
  return is_image_file_name(path.filename().native());
}

void assign_groups_by_regex(SourceList& list, const std::string& pattern, bool missing_ok) {
  std::regex regex;
  try {
    regex = std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw UsageError("ScanOptions::group_regex '" + pattern +
                     "' is not a valid regular expression: " + e.what());
  }
  if (regex.mark_count() < 1) {
    throw UsageError("ScanOptions::group_regex '" + pattern +
                     "' has no capture group; put the group name "
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
    std::string message = "ScanOptions::group_regex '" + pattern + "' does not match " +
                          std::to_string(unmatched_count) + " of " +
                          std::to_string(list.samples.size()) + " paths, e.g.";
    for (const std::string& path : unmatched) message += " " + path;
    message += " (use ScanOptions::group_missing_ok to give them no group)";
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

namespace {

// The end of a scan of image files (a walk, or a list of files): `files`
// (path, stamp) become the list's samples in path order, labelled by their
// class folder among `classes` (with LabelSource::dirs), and grouped by the
// regex; the images directly in SRC (`loose`) are skipped inputs.
void take_found_files(SourceList& list, const ScanOptions& options,
                      std::vector<std::pair<std::string, FileStamp>>& files,
                      const std::set<std::string>& classes, std::vector<std::string>& loose) {
  std::sort(files.begin(), files.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  const bool class_folders = options.labels == LabelSource::dirs;
  std::map<std::string, int32_t, std::less<>> class_ids;
  if (class_folders) {
    for (const std::string& name : classes) {
      class_ids.emplace(name, static_cast<int32_t>(list.class_names.size()));
      list.class_names.push_back(name);
    }
    std::sort(loose.begin(), loose.end());
    for (std::string& file : loose) {
      list.skipped.push_back({std::move(file), "not inside a class folder (LabelSource::dirs)"});
    }
  }
  list.samples.reserve(files.size());
  for (auto& [file, stamp] : files) {
    SourceSample sample;
    sample.file_size = stamp.size;
    sample.stamp = stamp;
    if (class_folders) {
      sample.label = class_ids.find(std::string_view(file).substr(0, file.find('/')))->second;
    }
    sample.path = std::move(file);
    list.samples.push_back(std::move(sample));
  }
  if (!options.group_regex.empty()) {
    assign_groups_by_regex(list, options.group_regex, options.group_missing_ok);
  }
}

}  // namespace

SourceList scan_directory(const fs::path& src, const ScanOptions& options, const fs::path& exclude,
                          const InputSelector& keep, unsigned threads) {
  std::error_code ec;
  if (!fs::exists(src, ec)) throw UsageError(src.string() + ": no such directory");
  if (!fs::is_directory(src, ec)) throw UsageError(src.string() + ": not a directory");

  SourceList list;
  const bool class_folders = options.labels == LabelSource::dirs;
  Walker walker(src, list, threads, class_folders, keep);
  if (!exclude.empty()) walker.exclude(exclude);
  walker.walk(src, "");
  take_found_files(list, options, walker.files(), walker.classes(), walker.outside_class_folders());
  return list;
}

namespace {

// Whether the '/'-separated relative `path` has a hidden part (a name
// starting with '.'), which a walk of SRC never enters or takes.
bool has_hidden_part(std::string_view path) {
  for (std::size_t begin = 0; begin < path.size();) {
    if (path[begin] == '.') return true;
    const std::size_t slash = path.find('/', begin);
    if (slash == std::string_view::npos) break;
    begin = slash + 1;
  }
  return false;
}

// `path` is `dir` or lies below it (both '/'-separated, relative to SRC).
bool is_at_or_below(const std::string& path, const std::string& dir) {
  return !dir.empty() && path.starts_with(dir) &&
         (path.size() == dir.size() || path[dir.size()] == '/');
}

}  // namespace

SourceList scan_file_list(const fs::path& src, const ScanOptions& options,
                          const fs::path& list_file, const fs::path& exclude,
                          const InputSelector& keep) {
  std::error_code ec;
  if (!fs::exists(src, ec)) throw UsageError(src.string() + ": no such directory");
  if (!fs::is_directory(src, ec)) throw UsageError(src.string() + ": not a directory");
  std::vector<uint8_t> bytes;
  if (std::string problem = read_file(list_file, bytes); !problem.empty()) {
    throw UsageError(list_file.string() + ": " + problem);
  }
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  require_text(text, list_file.string());
  std::string excluded;
  if (!exclude.empty()) excluded = relative_to_root(fs::absolute(exclude, ec).string(), src);

  SourceList list;
  const bool class_folders = options.labels == LabelSource::dirs;
  std::map<std::string, std::size_t> lines;  // path -> the line that listed it
  std::set<std::string> classes;
  std::vector<std::pair<std::string, FileStamp>> files;
  std::vector<std::string> loose;
  for_each_line(text, [&](uint32_t line_number, std::string_view listed) {
    if (listed.empty()) return true;
    const std::string line(listed);
    const std::string where = list_file.string() + ":" + std::to_string(line_number) + ": ";
    if (fs::path(line).lexically_normal() == ".") {  // SRC itself, as `find .` lists it
      ++list.ignored_files;
      return true;
    }
    std::string path = relative_to_root(line, src);
    if (path.empty()) {
      throw UsageError(where + "'" + line + "' is not a file inside " + src.string() +
                       " (paths are relative to it, or absolute inside it)");
    }
    if (auto [it, inserted] = lines.emplace(path, line_number); !inserted) {
      throw UsageError(where + path + " is listed twice (first on line " +
                       std::to_string(it->second) + ")");
    }
    if (has_hidden_part(path) || is_at_or_below(path, excluded)) {
      ++list.ignored_files;
      return true;
    }
    // A line that names nothing is a problem whatever it names (a typo, a
    // space at the end): only what exists may be passed over as a walk
    // would pass it over.
    struct stat st {};
    if (::stat((src / path).c_str(), &st) != 0) {
      list.skipped.push_back({path, std::string("cannot stat: ") + std::strerror(errno)});
      return true;
    }
    if (S_ISDIR(st.st_mode) || !has_image_extension(fs::path(path))) {
      ++list.ignored_files;  // a folder (its files have lines of their own), or not an image
      return true;
    }
    if (!S_ISREG(st.st_mode)) {
      list.skipped.push_back({path, not_a_regular_file(st.st_mode)});
      return true;
    }
    const std::size_t slash = path.find('/');
    if (class_folders) {
      if (slash == std::string::npos) {
        loose.push_back(std::move(path));
        return true;
      }
      classes.insert(path.substr(0, slash));
    }
    const FileStamp stamp = file_stamp(st);
    if (keep && !keep(path, stamp)) {
      ++list.unselected;
      return true;
    }
    files.emplace_back(std::move(path), stamp);
    return true;
  });
  take_found_files(list, options, files, classes, loose);
  // The list's skips and the images directly in SRC, in one path order.
  std::sort(list.skipped.begin(), list.skipped.end(),
            [](const SkippedInput& a, const SkippedInput& b) { return a.path < b.path; });
  return list;
}

}  // namespace imgpack

namespace imgpack {

SourceList scan_csv(const fs::path& src, const ScanOptions& options, const InputSelector& keep) {
  if (!options.csv) throw UsageError("scan_csv: no CSV file given");
  const CsvInput& csv = *options.csv;
  std::error_code ec;
  if (!fs::is_directory(src, ec)) throw UsageError(src.string() + ": no such directory");
  if (options.labels == LabelSource::csv && csv.label.empty()) {
    throw UsageError("LabelSource::csv needs CsvInput::label naming the label column");
  }
  if (options.labels != LabelSource::csv && !csv.label.empty()) {
    throw UsageError(std::string("CsvInput::label conflicts with ScanOptions::labels ") +
                     (options.labels == LabelSource::dirs ? "dirs" : "none"));
  }
  if (!csv.group.empty() && !options.group_regex.empty()) {
    throw UsageError(
        "CsvInput::group and ScanOptions::group_regex both name groups; give only one");
  }
  const std::string name = csv.file.string();
  const CsvTable table = read_csv(csv.file);
  if (table.rows.empty()) throw UsageError(name + ": has a header but no rows");
  const PathTemplate path_template(csv.path, table, name);
  std::optional<std::size_t> label_column, group_column;
  if (!csv.label.empty()) label_column = table.require_column(csv.label, name, "CsvInput::label");
  if (!csv.group.empty()) group_column = table.require_column(csv.group, name, "CsvInput::group");
  std::optional<PathTemplate> mask_template;
  if (!csv.mask.empty()) mask_template.emplace(csv.mask, table, name, "CsvInput::mask");
  std::vector<std::size_t> target_columns;
  for (const std::string& target : csv.targets) {
    const std::size_t column = table.require_column(target, name, "CsvInput::targets");
    if (std::find(target_columns.begin(), target_columns.end(), column) != target_columns.end()) {
      throw UsageError(name + ": target column '" + target + "' is named twice");
    }
    target_columns.push_back(column);
  }
  std::optional<std::size_t> multilabel_column;
  if (!csv.multilabel.empty()) {
    multilabel_column = table.require_column(csv.multilabel, name, "CsvInput::multilabel");
  }

  struct Row {
    std::string path;
    const CsvRecord* record;
  };
  std::vector<Row> rows;
  rows.reserve(table.rows.size());
  std::map<std::string, uint64_t> line_of_path;
  std::set<std::string> labels, groups, multilabels;
  std::vector<uint64_t> groupless_lines;
  for (const CsvRecord& record : table.rows) {
    const std::string where = name + ":" + std::to_string(record.line) + ": ";
    std::string empty_column;
    const std::string listed = path_template.build(record, &empty_column, table);
    if (listed.empty()) throw UsageError(where + "empty '" + empty_column + "' cell; no path");
    std::string path = relative_to_root(listed, src);
    if (path.empty()) {
      throw UsageError(where + "path '" + listed + "' is outside SRC (" + src.string() +
                       "); CSV paths are relative to SRC");
    }
    auto [it, inserted] = line_of_path.emplace(path, record.line);
    if (!inserted) {
      throw UsageError(where + "path '" + path + "' is listed twice (first on line " +
                       std::to_string(it->second) + ")");
    }
    if (label_column && !record.fields[*label_column].empty()) {
      labels.insert(record.fields[*label_column]);
    }
    if (multilabel_column) {
      for (std::string& label : multilabel_cell(record.fields[*multilabel_column])) {
        multilabels.insert(std::move(label));
      }
    }
    for (std::size_t t = 0; t < target_columns.size(); ++t) {
      target_cell(record.fields[target_columns[t]], where, csv.targets[t]);  // checked here
    }
    if (group_column) {
      if (record.fields[*group_column].empty()) {
        groupless_lines.push_back(record.line);
      } else {
        groups.insert(record.fields[*group_column]);
      }
    }
    rows.push_back({std::move(path), &record});
  }
  if (!groupless_lines.empty() && !options.group_missing_ok) {
    std::string lines;
    for (std::size_t i = 0; i < std::min<std::size_t>(groupless_lines.size(), 5); ++i) {
      lines += (i ? ", " : "") + std::to_string(groupless_lines[i]);
    }
    throw UsageError(name + ":" + std::to_string(groupless_lines[0]) + ": empty '" + csv.group +
                     "' cell (" + std::to_string(groupless_lines.size()) +
                     " rows without a group, on lines " + lines +
                     (groupless_lines.size() > 5 ? ", ..." : "") +
                     "); use ScanOptions::group_missing_ok to give them no group");
  }

  SourceList list;
  const std::map<std::string, int32_t> class_ids = number_names(labels, list.class_names);
  const std::map<std::string, int32_t> group_ids = number_names(groups, list.group_names);
  if (multilabel_column && multilabels.empty()) {
    throw UsageError(name + ": multi-label column '" + csv.multilabel +
                     "' names no class in any row");
  }
  const std::map<std::string, int32_t> multilabel_ids =
      number_names(multilabels, list.multilabel_names);
  if (multilabel_column) {
    // One byte a row and label (/samples/multilabel, docs/FORMAT.md), held
    // while the index is made, twice while it is written.
    refuse_past_half_memory(
        name,
        "multi-label column '" + csv.multilabel + "' (CsvInput::multilabel) names " +
            std::to_string(multilabels.size()) + " distinct labels over " +
            std::to_string(rows.size()) +
            " rows: their multi-hot table, one byte a row and label held up to twice",
        static_cast<long double>(rows.size()) * static_cast<long double>(multilabels.size()) * 2);
  }
  list.target_names = csv.targets;
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.path < b.path; });
  std::size_t found = 0;  // listed files that exist, selected or not
  for (Row& row : rows) {
    const std::string line = name + " line " + std::to_string(row.record->line);
    struct stat st {};
    if (::stat((src / row.path).c_str(), &st) != 0) {
      list.skipped.push_back({row.path, std::string(errno == ENOENT ? "missing" : "cannot stat") +
                                            ": listed on " + line + ": " + std::strerror(errno)});
      continue;
    }
    if (!S_ISREG(st.st_mode)) {
      list.skipped.push_back({row.path, "not a regular file (listed on " + line + ")"});
      continue;
    }
    ++found;
    SourceSample sample;
    sample.file_size = static_cast<uint64_t>(st.st_size);
    sample.stamp = file_stamp(st);
    if (keep && !keep(row.path, sample.stamp)) {
      ++list.unselected;
      continue;
    }
    if (label_column) {
      const std::string& label = row.record->fields[*label_column];
      sample.label = label.empty() ? -1 : class_ids.at(label);
    }
    if (group_column) {
      const std::string& group = row.record->fields[*group_column];
      sample.group = group.empty() ? -1 : group_ids.at(group);
    }
    if (multilabel_column) {
      sample.multilabel.assign(list.multilabel_names.size(), 0);
      for (const std::string& label : multilabel_cell(row.record->fields[*multilabel_column])) {
        sample.multilabel[static_cast<std::size_t>(multilabel_ids.at(label))] = 1;
      }
    }
    for (std::size_t t = 0; t < target_columns.size(); ++t) {
      sample.targets.push_back(
          target_cell(row.record->fields[target_columns[t]], line + ": ", csv.targets[t]));
    }
    if (mask_template) {
      std::string empty_column;
      sample.mask_path = mask_template->build(*row.record, &empty_column, table);
      if (sample.mask_path.empty()) {
        sample.mask_problem = "no mask: empty '" + empty_column + "' cell on " + line;
      }
    }
    sample.path = std::move(row.path);
    list.samples.push_back(std::move(sample));
  }
  if (found == 0) {
    throw UsageError(
        name + ": none of the " + std::to_string(rows.size()) + " files it lists exists below " +
        src.string() + " (first: " + list.skipped.front().path +
        "); CSV paths are relative to SRC" +
        (csv.path.find('{') == std::string::npos
             ? ", and a CsvInput::path template can add folders, e.g. 'train/{" + csv.path + "}'"
             : ""));
  }
  if (options.labels == LabelSource::dirs) {
    // Class folders, as for a directory scan.
    std::set<std::string> folders;
    std::vector<SourceSample> kept;
    for (const SourceSample& sample : list.samples) {
      auto slash = sample.path.find('/');
      if (slash != std::string::npos) folders.insert(sample.path.substr(0, slash));
    }
    const std::map<std::string, int32_t> ids = number_names(folders, list.class_names);
    for (SourceSample& sample : list.samples) {
      auto slash = sample.path.find('/');
      if (slash == std::string::npos) {
        list.skipped.push_back({sample.path, "not inside a class folder (LabelSource::dirs)"});
        continue;
      }
      sample.label = ids.at(sample.path.substr(0, slash));
      kept.push_back(std::move(sample));
    }
    list.samples = std::move(kept);
  }
  if (!options.group_regex.empty()) {
    assign_groups_by_regex(list, options.group_regex, options.group_missing_ok);
  }
  std::sort(list.skipped.begin(), list.skipped.end(),
            [](const SkippedInput& a, const SkippedInput& b) { return a.path < b.path; });
  return list;
}

}  // namespace imgpack
