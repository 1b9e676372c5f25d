// imgpack split, convert --split and the split objects of inspect, end to end.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "files.hpp"
#include "h5.hpp"
#include "imgpack/dataset.hpp"
#include "imgpack/dataset_index.hpp"
#include "imgpack/format.hpp"
#include "imgpack/split.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using test::run_imgpack;
using test::shell_quote;

// A small image tree: classes a (12 images), b (9) and c (3) over groups
// g0..g5, named CLASS/GROUP_N.png so that --group-regex '/(g[0-9]+)_' finds the group.
void write_images(const fs::path& src) {
  const std::map<std::string, int> classes = {{"a", 12}, {"b", 9}, {"c", 3}};
  int n = 0;
  for (const auto& [name, count] : classes) {
    for (int i = 0; i < count; ++i, ++n) {
      char file[32];
      std::snprintf(file, sizeof file, "g%d_%d.png", n % 6, n);
      test::write_image(src / name / file, test::make_rgb_image(16, 12, static_cast<uint64_t>(n)));
    }
  }
}

std::string convert(const fs::path& src, const fs::path& out, const std::string& extra) {
  test::CommandResult r = run_imgpack("convert " + shell_quote(src.string()) + " " +
                                      shell_quote(out.string()) + " --shard-size 4K -q " + extra);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.err;
}

class SplitCli : public ::testing::Test {
 protected:
  void SetUp() override {
    write_images(dir_ / "src");
    convert(dir_ / "src", dataset(), "--group-regex '/(g[0-9]+)_'");
  }
  fs::path dataset() const { return dir_ / "ds"; }
  std::string ds() const { return shell_quote(dataset().string()); }
  test::CommandResult split(const std::string& arguments) const {
    return run_imgpack("split " + ds() + " " + arguments);
  }
  test::TempDir dir_;
};

TEST_F(SplitCli, CreatesListsExportsAndDeletesSplits) {
  test::CommandResult r = split("--name cv --kind stratified-group --folds 3 --seed 4 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["name"], "cv");
  EXPECT_EQ(j["kind"], "stratified-group");
  EXPECT_EQ(j["folds"], 3);
  EXPECT_EQ(j["seed"], 4);
  EXPECT_EQ(j["test_size"], 0);
  EXPECT_EQ(j["group_leakage"], 0);
  ASSERT_EQ(j["fold_stats"].size(), 3u);
  int64_t total = 0;
  for (const json& fold : j["fold_stats"]) {
    for (const char* key : {"fold", "size", "max_class_dev", "mean_class_dev", "missing_classes"}) {
      EXPECT_TRUE(fold.contains(key)) << key;
    }
    total += fold["size"].get<int64_t>();
  }
  EXPECT_EQ(total, 24);

  // Stored as DESIGN describes: one int16 per source sample.
  DatasetIndex index = read_index(dataset());
  const Split* stored = index.find_split("cv");
  ASSERT_NE(stored, nullptr);
  EXPECT_EQ(stored->kind, "stratified-group");
  EXPECT_EQ(stored->folds, 3);
  ASSERT_EQ(stored->assign.size(), index.num_samples());
  EXPECT_FALSE(stored->created.empty());
  EXPECT_EQ(split_quality(index, *stored).group_leakage, 0);

  r = split("--name hold --kind holdout --val 0.25 --test 0.2 --no-stratify");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("hold: holdout"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not stratified, groups whole"), std::string::npos) << r.out;
  r = split("--list --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = json::parse(r.out);
  ASSERT_EQ(j["splits"].size(), 2u);
  EXPECT_EQ(j["splits"][1]["name"], "hold");
  EXPECT_EQ(j["splits"][1]["folds"], 2);
  EXPECT_EQ(j["splits"][1]["stratified"], false);  // as asked, though the data has labels
  EXPECT_EQ(j["splits"][1]["grouped"], true);
  EXPECT_EQ(j["splits"][0]["stratified"], true);  // cv: stratified-group
  EXPECT_EQ(j["splits"][0]["grouped"], true);
  EXPECT_GT(j["splits"][1]["test_size"].get<int>(), 0);
  EXPECT_EQ(j["splits"][1]["group_leakage"], 0);

  // Export: path,label,group,fold for every sample, as stored.
  r = split("--export cv --out " + shell_quote((dir_ / "cv.csv").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream csv(test::read_bytes(dir_ / "cv.csv"));
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line, "path,label,group,fold");
  std::map<std::string, int> fold_of;
  while (std::getline(csv, line)) {
    std::vector<std::string> fields;
    std::stringstream row(line);
    for (std::string field; std::getline(row, field, ',');) fields.push_back(field);
    ASSERT_EQ(fields.size(), 4u) << line;
    EXPECT_EQ(fields[0].substr(0, fields[0].find('/')), fields[1]);  // class folder = label
    EXPECT_EQ(fields[2], fields[0].substr(2, 2));                    // "a/g3_..." -> g3
    fold_of[fields[0]] = std::stoi(fields[3]);
  }
  ASSERT_EQ(fold_of.size(), index.num_samples());
  for (std::size_t i = 0; i < index.num_samples(); ++i) {
    EXPECT_EQ(fold_of[index.sample_path[i]], stored->assign[i]) << index.sample_path[i];
  }

  r = split("--delete hold");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  index = read_index(dataset());
  EXPECT_EQ(index.find_split("hold"), nullptr);
  EXPECT_NE(index.find_split("cv"), nullptr);
  r = split("");  // lists by default
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("cv: stratified-group, 3 folds"), std::string::npos) << r.out;
}

struct FileState {
  std::string bytes;
  struct timespec mtime {};
};

std::map<std::string, FileState> shard_states(const fs::path& dataset) {
  std::map<std::string, FileState> states;
  for (const fs::directory_entry& entry : fs::directory_iterator(dataset)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("shard-")) continue;
    struct stat st {};
    EXPECT_EQ(::stat(entry.path().c_str(), &st), 0);
    states[name] = {test::read_bytes(entry.path()), st.st_mtim};
  }
  return states;
}

// README: every subcommand takes --quiet (-q); split's messages on stderr then
// stay silent, its results on stdout do not.
TEST_F(SplitCli, QuietSilencesTheMessagesButNotTheResults) {
  const std::string csv = shell_quote((dir_ / "cv.csv").string());
  test::CommandResult r = split("--name cv --kind stratified --folds 3 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("cv: stratified"), std::string::npos) << r.out;
  r = split("--export cv --out " + csv + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(fs::exists(dir_ / "cv.csv"));
  r = split("--delete cv -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  for (const std::string& command : {"inspect " + ds() + " -q", "verify " + ds() + " -q"}) {
    r = run_imgpack(command);
    EXPECT_EQ(r.exit_code, 0) << command << ": " << r.err;
    EXPECT_EQ(r.err, "") << command;
  }
}

// Folds made elsewhere: what --export writes imports back unchanged, with the
// quality report; a row naming no sample is refused with its line, and the
// dataset is left as it was.
TEST_F(SplitCli, ImportStoresFoldsMadeElsewhere) {
  const fs::path csv = dir_ / "cv.csv";
  ASSERT_EQ(split("--name cv --kind stratified-group --folds 3 -q").exit_code, 0);
  ASSERT_EQ(split("--export cv --out " + shell_quote(csv.string()) + " -q").exit_code, 0);
  test::CommandResult r = split("--import " + shell_quote(csv.string()) + " --name theirs");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("theirs: imported"), std::string::npos) << r.out;
  DatasetIndex index = read_index(dataset());
  ASSERT_NE(index.find_split("theirs"), nullptr);
  EXPECT_EQ(index.find_split("theirs")->assign, index.find_split("cv")->assign);
  EXPECT_EQ(index.find_split("theirs")->folds, 3);

  const std::string before = test::read_bytes(dataset() / "splits.h5");
  test::write_bytes(csv, test::read_bytes(csv) + "z/none.png,,,1\n");
  r = split("--import " + shell_quote(csv.string()) + " --name other");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cv.csv:26: 'z/none.png' is not a sample of the dataset"), std::string::npos)
      << r.err;
  r = split("--import " + shell_quote(csv.string()) + " --name theirs");
  EXPECT_EQ(r.exit_code, 2);  // exists: --force replaces it
  r = split("--import " + shell_quote(csv.string()) + " --name x --fold-column k");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no column 'k' (--fold-column)"), std::string::npos) << r.err;
  EXPECT_EQ(test::read_bytes(dataset() / "splits.h5"), before);
}

// Names a reader would trim, commas and quotes: the export quotes what needs
// it, so that every path and class name imports back as it is.
TEST_F(SplitCli, AnExportOfOddNamesImportsBack) {
  const fs::path src = dir_ / "odd";
  int n = 0;
  for (const std::string name : {" lead", "trail\t", "com,ma", "quo\"te"}) {
    for (int i = 0; i < 3; ++i, ++n) {
      test::write_image(src / name / (" " + std::to_string(n) + " .png"),
                        test::make_rgb_image(8, 8, static_cast<uint64_t>(n)));
    }
  }
  const fs::path odd = dir_ / "odd-ds";
  convert(src, odd, "");
  const std::string ds = shell_quote(odd.string());
  const fs::path csv = dir_ / "odd.csv";
  ASSERT_EQ(run_imgpack("split " + ds + " --name r --kind stratified --folds 3 -q").exit_code, 0);
  ASSERT_EQ(run_imgpack("split " + ds + " --export r --out " + shell_quote(csv.string()) + " -q")
                .exit_code,
            0);
  test::CommandResult r =
      run_imgpack("split " + ds + " --import " + shell_quote(csv.string()) + " --name back -q");
  ASSERT_EQ(r.exit_code, 0) << r.err << test::read_bytes(csv);
  const DatasetIndex index = read_index(odd);
  EXPECT_EQ(index.find_split("back")->assign, index.find_split("r")->assign);
}

// The inode of `path`, or 0 when it does not exist.
ino_t inode_of(const fs::path& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

TEST_F(SplitCli, ChangingSplitsReplacesSplitsH5AloneLeavingTheSampleTableAndShardsUntouched) {
  const std::map<std::string, FileState> before = shard_states(dataset());
  ASSERT_GT(before.size(), 1u);  // 4K shards: several
  const fs::path index_path = dataset() / format::kIndexFile;
  const fs::path splits_path = dataset() / format::kSplitsFile;
  const std::string index_bytes = test::read_bytes(index_path);
  struct stat index_before {};
  ASSERT_EQ(::stat(index_path.c_str(), &index_before), 0);
  // Holding the old splits.h5 open keeps its inode allocated, so a rename
  // shows as a different inode number.
  const int old_splits = ::open(splits_path.c_str(), O_RDONLY);
  ASSERT_GE(old_splits, 0);

  ASSERT_EQ(split("--name cv --kind group --folds 3").exit_code, 0);
  ASSERT_EQ(split("--name cv --kind stratified-group --folds 4 --seed 1 --force").exit_code, 0);
  ASSERT_EQ(split("--name r --kind random --folds 5 --test 0.25").exit_code, 0);
  ASSERT_EQ(split("--delete r").exit_code, 0);

  const std::map<std::string, FileState> after = shard_states(dataset());
  ASSERT_EQ(after.size(), before.size());
  for (const auto& [name, state] : before) {
    ASSERT_TRUE(after.count(name)) << name;
    EXPECT_EQ(after.at(name).bytes, state.bytes) << name;
    EXPECT_EQ(after.at(name).mtime.tv_sec, state.mtime.tv_sec) << name;
    EXPECT_EQ(after.at(name).mtime.tv_nsec, state.mtime.tv_nsec) << name;
  }
  // index.h5, the sample table, is the very same file with the same bytes.
  struct stat index_after {};
  ASSERT_EQ(::stat(index_path.c_str(), &index_after), 0);
  EXPECT_EQ(index_after.st_ino, index_before.st_ino);
  EXPECT_EQ(index_after.st_mtim.tv_sec, index_before.st_mtim.tv_sec);
  EXPECT_EQ(index_after.st_mtim.tv_nsec, index_before.st_mtim.tv_nsec);
  EXPECT_EQ(test::read_bytes(index_path), index_bytes);
  // splits.h5 was replaced by rename (a new inode), never edited in place,
  // and no temporary file is left.
  struct stat splits_before {};
  ASSERT_EQ(::fstat(old_splits, &splits_before), 0);
  EXPECT_NE(inode_of(splits_path), splits_before.st_ino);
  ::close(old_splits);
  EXPECT_FALSE(fs::exists(dataset() / "splits.h5.tmp"));
  EXPECT_FALSE(fs::exists(dataset() / "index.h5.tmp"));
  EXPECT_EQ(read_index(dataset()).find_split("cv")->folds, 4);
}

// A damaged or missing splits.h5 makes every command refuse the dataset,
// saying how to go on; split --reset writes it anew without splits (the
// index and the shards untouched), after which the dataset is whole and the
// same split made again is the split it lost.
TEST_F(SplitCli, ADamagedSplitsFileIsResetAndTheSplitsMadeAgain) {
  ASSERT_EQ(split("--name cv --kind stratified-group --folds 3 --seed 4").exit_code, 0);
  const fs::path splits_path = dataset() / format::kSplitsFile;
  const std::string intact = test::read_bytes(splits_path);
  const std::vector<int16_t> assign = read_index(dataset()).splits.at(0).assign.to_vector();
  const std::string index_bytes = test::read_bytes(dataset() / format::kIndexFile);
  auto shard_bytes = [&] {
    std::map<std::string, std::string> bytes;
    for (const auto& [name, state] : shard_states(dataset())) bytes[name] = state.bytes;
    return bytes;
  };
  const std::map<std::string, std::string> shards = shard_bytes();
  test::CommandResult r = split("--reset");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("reads as it should; there is nothing to reset"), std::string::npos)
      << r.err;
  EXPECT_EQ(test::read_bytes(splits_path), intact);

  for (const bool missing : {false, true}) {
    SCOPED_TRACE(missing ? "missing" : "truncated");
    if (missing) {
      fs::remove(splits_path);
    } else {
      fs::resize_file(splits_path, intact.size() / 2);
    }
    r = run_imgpack("inspect " + ds());
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find(splits_path.string() + ": "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("index.h5 and the shards do not depend on it: restore it from a copy, "
                         "or imgpack split DATASET --reset writes it anew"),
              std::string::npos)
        << r.err;
    r = split("--reset --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(json::parse(r.out)["reset"].get<bool>());
    EXPECT_EQ(run_imgpack("verify " + ds() + " -q").exit_code, 0);
    EXPECT_TRUE(read_index(dataset()).splits.empty());
    EXPECT_EQ(test::read_bytes(dataset() / format::kIndexFile), index_bytes);
    EXPECT_EQ(shard_bytes(), shards);
    ASSERT_EQ(split("--name cv --kind stratified-group --folds 3 --seed 4").exit_code, 0);
    EXPECT_EQ(read_index(dataset()).splits.at(0).assign.to_vector(), assign);
  }
  r = split("--reset --list");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--reset takes no other action"), std::string::npos) << r.err;
}

// A splits.h5 that cannot be opened, or that another program holds HDF5's
// lock on to write it, may be whole: --reset refuses it, naming why, rather
// than throw away splits nothing may make again (an imported one), and the
// reading commands do not offer --reset for it.
TEST_F(SplitCli, ASplitsFileThatCannotBeOpenedOrIsBeingWrittenIsNotReset) {
  ASSERT_EQ(split("--name cv --kind stratified --folds 3").exit_code, 0);
  const fs::path splits_path = dataset() / format::kSplitsFile;
  const std::string intact = test::read_bytes(splits_path);
  {
    // HDF5 takes flock(LOCK_EX) on a file it opens to write.
    const FileDescriptor writer(splits_path, O_RDWR);
    ASSERT_EQ(::flock(writer.get(), LOCK_EX | LOCK_NB), 0);
    test::CommandResult r = split("--reset");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find(splits_path.string() +
                         ": another program holds it open to write it; "
                         "imgpack split DATASET --reset writes anew only a splits file that is "
                         "missing or damaged"),
              std::string::npos)
        << r.err;
    r = run_imgpack("inspect " + ds());
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find(splits_path.string()), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("--reset"), std::string::npos) << r.err;
  }
  EXPECT_EQ(test::read_bytes(splits_path), intact);

  // A file that cannot be opened (root opens any file, so a link that loops
  // stands for one it may not read).
  const fs::path aside = dataset() / "splits.h5.aside";
  fs::rename(splits_path, aside);
  fs::create_symlink(splits_path.filename(), splits_path);
  test::CommandResult r = split("--reset");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(splits_path.string() + ": cannot open: Too many levels of symbolic links"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(fs::is_symlink(splits_path));
  fs::remove(splits_path);
  fs::rename(aside, splits_path);
  EXPECT_EQ(split("--list -q").exit_code, 0);
  EXPECT_EQ(read_index(dataset()).find_split("cv")->folds, 3);
}

TEST_F(SplitCli, AFormat1DatasetKeepsItsSplitsInIndexH5AndStaysFormat1) {
  test::rewrite_as_format1(dataset());
  const fs::path index_path = dataset() / format::kIndexFile;
  const ino_t index_before = inode_of(index_path);
  const int hold = ::open(index_path.c_str(), O_RDONLY);  // keeps the old inode allocated
  ASSERT_GE(hold, 0);
  ASSERT_EQ(split("--name cv --kind stratified --folds 3").exit_code, 0);
  ::close(hold);
  EXPECT_NE(inode_of(index_path), index_before);  // rewritten whole, by rename
  EXPECT_FALSE(fs::exists(dataset() / format::kSplitsFile));
  h5::File file = h5::File::open_read(index_path);
  EXPECT_EQ(file.read_int_attr("/", format::kAttrFormat), 1);
  EXPECT_TRUE(file.exists("/splits/cv/assign"));
  const DatasetIndex index = read_index(dataset());
  EXPECT_EQ(index.format_version, 1);
  ASSERT_NE(index.find_split("cv"), nullptr);
  EXPECT_EQ(split("--delete cv").exit_code, 0);
  EXPECT_EQ(read_index(dataset()).find_split("cv"), nullptr);
}

TEST_F(SplitCli, AReaderThatOpenedTheDatasetBeforeKeepsItsView) {
  const fs::path splits_path = dataset() / format::kSplitsFile;
  const std::string old_bytes = test::read_bytes(splits_path);
  const DatasetIndex old_index = read_index(dataset());
  const Dataset opened = Dataset::open(dataset());  // maps index.h5 and splits.h5
  h5::File old_file = h5::File::open_read(splits_path);
  const int fd = ::open(splits_path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);

  ASSERT_EQ(split("--name cv --kind stratified --folds 3").exit_code, 0);

  // The open HDF5 file still reads the old, complete splits: no split in it.
  EXPECT_FALSE(old_file.exists("/splits/cv"));
  // And the old file's bytes are intact through a descriptor opened before.
  std::string through_fd(old_bytes.size() + 1, '\0');
  const ssize_t n = ::pread(fd, through_fd.data(), through_fd.size(), 0);
  ::close(fd);
  ASSERT_EQ(n, static_cast<ssize_t>(old_bytes.size()));
  through_fd.resize(static_cast<std::size_t>(n));
  EXPECT_EQ(through_fd, old_bytes);
  // A new open sees the new split; the old in-memory index and the dataset
  // opened before are unchanged, their sample paths still readable.
  EXPECT_NE(read_index(dataset()).find_split("cv"), nullptr);
  EXPECT_NE(Dataset::open(dataset()).index().find_split("cv"), nullptr);
  EXPECT_EQ(old_index.find_split("cv"), nullptr);
  EXPECT_EQ(opened.index().find_split("cv"), nullptr);
  EXPECT_EQ(opened.sample_paths(), old_index.sample_path);
}

TEST_F(SplitCli, RequestsThatCannotBeMetExitTwoAndChangeNothing) {
  ASSERT_EQ(split("--name cv --kind group --folds 3").exit_code, 0);
  const std::string index_bytes = test::read_bytes(dataset() / "index.h5");
  const std::string splits_bytes = test::read_bytes(dataset() / "splits.h5");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--name x --kind stratfied --folds 3", "unknown split kind 'stratfied'"},
      {"--name cv --kind random --folds 3", "exists; pass --force"},
      {"--name x --kind random --folds 3 --test 1.5", "--test 1.5 is outside [0, 1)"},
      {"--name x --kind holdout --val 1.5", "--val 1.5 is outside (0, 1)"},
      {"--name x --kind holdout --val 0.5 --test 0.5", "leave nothing to train on"},
      {"--name x --kind holdout", "needs --val"},
      {"--name x --kind holdout --val 0.2 --folds 3", "--folds does not apply"},
      {"--name x --kind random --folds 3 --val 0.2", "--val applies only to --kind holdout"},
      {"--name x --kind group --folds 7", "more than the 6 groups"},
      {"--name x --kind stratified --folds 13", "more than the members of every class"},
      {"--name x --kind stratified --folds 1", "--folds 1 is outside"},
      {"--name 'a/b' --kind random --folds 3", "split name 'a/b'"},
      {"--name x", "--name needs --kind"},
      {"--delete nosuch", "no split named 'nosuch'"},
      {"--export cv", "--export needs --out"},
      {"--list --delete cv", "give one of"},
      // An export never replaces a file of the dataset, by name or link.
      {"--export cv --out " + shell_quote((dataset() / "index.h5").string()),
       "is index.h5 of the dataset"},
      {"--export cv --out " + shell_quote((dir_ / "link.csv").string()),
       "is splits.h5 of the dataset"},
  };
  fs::create_symlink(dataset() / "splits.h5", dir_ / "link.csv");
  for (const auto& [arguments, reason] : cases) {
    test::CommandResult r = split(arguments);
    EXPECT_EQ(r.exit_code, 2) << arguments << ": " << r.err;
    EXPECT_NE(r.err.find(reason), std::string::npos) << arguments << ": " << r.err;
  }
  EXPECT_EQ(test::read_bytes(dataset() / "index.h5"), index_bytes);
  EXPECT_EQ(test::read_bytes(dataset() / "splits.h5"), splits_bytes);

  // A group kind on a dataset converted without groups.
  convert(dir_ / "src", dir_ / "plain", "");
  test::CommandResult r = run_imgpack("split " + shell_quote((dir_ / "plain").string()) +
                                      " --name cv --kind stratified-group --folds 3");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("needs groups"), std::string::npos) << r.err;
  r = run_imgpack("split " + shell_quote((dir_ / "missing").string()) + " --list");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("missing: no such dataset directory"), std::string::npos) << r.err;
}

TEST_F(SplitCli, WarnsWhenSomeClassesHaveFewerMembersThanFolds) {
  test::CommandResult r = split("--name cv --kind stratified --folds 4");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: 1 of 3 classes have fewer members than the 4 folds"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("'c', has 3"), std::string::npos) << r.err;
  r = split("--name cv2 --kind stratified --folds 3");
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
}

TEST_F(SplitCli, ConvertSplitUsesTheSameCodeAndStaysByteIdentical) {
  const std::string option =
      "--group-regex '/(g[0-9]+)_' --seed 5 --split cv:stratified-group:3 "
      "--split val:holdout:0.25";
  convert(dir_ / "src", dir_ / "one", option);
  convert(dir_ / "src", dir_ / "two", option);
  EXPECT_EQ(test::read_bytes(dir_ / "one" / "index.h5"),
            test::read_bytes(dir_ / "two" / "index.h5"));
  EXPECT_EQ(test::read_bytes(dir_ / "one" / "splits.h5"),
            test::read_bytes(dir_ / "two" / "splits.h5"));

  DatasetIndex index = read_index(dir_ / "one");
  const Split* cv = index.find_split("cv");
  const Split* val = index.find_split("val");
  ASSERT_NE(cv, nullptr);
  ASSERT_NE(val, nullptr);
  EXPECT_EQ(cv->seed, 5u);
  EXPECT_EQ(val->kind, "holdout");
  EXPECT_DOUBLE_EQ(val->val_fraction, 0.25);
  // imgpack split with the same kind, folds and seed computes the same assignment.
  ASSERT_EQ(run_imgpack("split " + shell_quote((dir_ / "one").string()) +
                        " --name again --kind stratified-group --folds 3 --seed 5")
                .exit_code,
            0);
  EXPECT_EQ(read_index(dir_ / "one").find_split("again")->assign, cv->assign);

  test::CommandResult r =
      run_imgpack("convert " + shell_quote((dir_ / "src").string()) + " " +
                  shell_quote((dir_ / "three").string()) + " -q --split cv:group:3");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--split cv: --kind group needs groups"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "three" / "index.h5"));
  r = run_imgpack("convert " + shell_quote((dir_ / "src").string()) + " " +
                  shell_quote((dir_ / "three").string()) + " -q --split cv:kfold:3");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown split kind 'kfold'"), std::string::npos) << r.err;
}

// A split's creation date is SOURCE_DATE_EPOCH where set, as the history's
// dates are: the same split made twice is the same file, byte for byte.
TEST_F(SplitCli, SourceDateEpochDatesTheSplit) {
  const std::string date = "SOURCE_DATE_EPOCH=1790000000 ";
  const std::string make = " split " + ds() + " --name cv --kind stratified --folds 3 --force -q";
  ASSERT_EQ(test::run_command(date + shell_quote(test::imgpack_cli()) + make).exit_code, 0);
  EXPECT_EQ(read_index(dataset()).find_split("cv")->created, "2026-09-21T14:13:20Z");
  const std::string first = test::read_bytes(dataset() / format::kSplitsFile);
  ASSERT_EQ(test::run_command(date + shell_quote(test::imgpack_cli()) + make).exit_code, 0);
  EXPECT_EQ(test::read_bytes(dataset() / format::kSplitsFile), first);
  const test::CommandResult r =
      test::run_command("SOURCE_DATE_EPOCH=soon " + shell_quote(test::imgpack_cli()) + make);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("SOURCE_DATE_EPOCH='soon' is not a count of seconds"), std::string::npos)
      << r.err;
}

// The same command again (after a run killed once it had saved the split,
// say) finds the split there as it would make it: exit 0, nothing written.
// Another split under that name still needs --force.
TEST_F(SplitCli, TheSameSplitAgainChangesNothing) {
  const std::string make = "--name cv --kind stratified-group --folds 3 --seed 2";
  ASSERT_EQ(split(make).exit_code, 0);
  const std::string splits_bytes = test::read_bytes(dataset() / format::kSplitsFile);
  test::CommandResult r = split(make);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("split cv is there already as asked; nothing changed"), std::string::npos)
      << r.err;
  r = split(make + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["unchanged"], true);
  EXPECT_EQ(test::read_bytes(dataset() / format::kSplitsFile), splits_bytes);
  r = split("--name cv --kind stratified-group --folds 4 --seed 2");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("exists; pass --force"), std::string::npos) << r.err;
  r = split("--name cv --kind stratified-group --folds 4 --seed 2 --force --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["unchanged"], false);
}

TEST_F(SplitCli, InspectShowsEverySplitWithItsQuality) {
  ASSERT_EQ(split("--name cv --kind stratified-group --folds 3 --test 0.2").exit_code, 0);
  test::CommandResult r = run_imgpack("inspect " + ds() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  ASSERT_EQ(j["splits"].size(), 1u);
  const json& s = j["splits"][0];
  for (const char* key :
       {"name", "kind", "folds", "seed", "test_size", "group_leakage", "fold_stats"}) {
    EXPECT_TRUE(s.contains(key)) << key;
  }
  EXPECT_EQ(s["group_leakage"], 0);
  EXPECT_GT(s["test_size"].get<int>(), 0);
  EXPECT_EQ(s["fold_stats"].size(), 3u);
  EXPECT_TRUE(s["fold_stats"][0]["missing_classes"].is_array());
  r = run_imgpack("inspect " + ds());
  EXPECT_NE(r.out.find("cv: stratified-group, 3 folds"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("group leakage 0"), std::string::npos) << r.out;
}

TEST_F(SplitCli, ListingAndInspectReadNoPaths) {
  ASSERT_EQ(split("--name cv --kind group --folds 3").exit_code, 0);
  const std::string inspect = "inspect " + ds();
  const test::CommandResult listed = split("--list");
  const test::CommandResult inspected = run_imgpack(inspect + " --json");
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  ASSERT_EQ(inspected.exit_code, 0) << inspected.err;

  // Damage the bytes of one path where HDF5 keeps the strings of index.h5.
  const fs::path index_file = dataset() / format::kIndexFile;
  std::string bytes = test::read_bytes(index_file);
  const std::string path = read_index(dataset()).sample_path[0];
  const std::size_t at = bytes.find(path);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(bytes.find(path, at + 1), std::string::npos);
  bytes[at + path.size() - 1] ^= 0x01;
  test::write_bytes(index_file, bytes);

  // Both print what they printed before; whatever reads the paths fails.
  EXPECT_EQ(split("--list").out, listed.out);
  const test::CommandResult after = run_imgpack(inspect + " --json");
  EXPECT_EQ(after.exit_code, 0) << after.err;
  EXPECT_EQ(after.out, inspected.out);
  const test::CommandResult verified = run_imgpack("verify " + ds());
  EXPECT_NE(verified.exit_code, 0);
  EXPECT_NE(verified.err.find("/samples/path"), std::string::npos) << verified.err;
  EXPECT_NE(split("--export cv --out -").exit_code, 0);
}

TEST_F(SplitCli, ConcurrentChangesTakeTurnsAndLoseNothing) {
  // Another process is changing index.h5: it holds the dataset's lock.
  std::optional<DirectoryLock> held = DirectoryLock::try_acquire(dataset());
  ASSERT_TRUE(held);
  const fs::path err = dir_ / "split.err";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string command = shell_quote(test::imgpack_cli()) + " split " + ds() +
                                " --name theirs --kind random --folds 3 > /dev/null 2> " +
                                shell_quote(err.string());
    ::execl("/bin/sh", "sh", "-c", command.c_str(), nullptr);
    ::_exit(127);
  }
  // The split run says it waits, and does wait.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (test::read_bytes(err).find("waiting for another process") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_NE(test::read_bytes(err).find("waiting for another process"), std::string::npos);
  // The holder's change lands while the split run waits...
  DatasetIndex index = read_index(dataset());
  SplitSpec spec;
  spec.kind = SplitKind::stratified;
  spec.folds = 2;
  store_split(index, make_split(index, "mine", spec, ""), false);
  write_index(dataset(), index);
  held.reset();
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << test::read_bytes(err);
  // ...and the split run, reading index.h5 only once it holds the lock, keeps it.
  const DatasetIndex after = read_index(dataset());
  EXPECT_TRUE(after.find_split("mine"));
  EXPECT_TRUE(after.find_split("theirs"));
}

}  // namespace
}  // namespace imgpack
