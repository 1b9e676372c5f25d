#include "imgpack/upgrade.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <map>

#include "h5.hpp"
#include "imgpack/dataset.hpp"
#include "imgpack/dataset_index.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "synthetic_dataset.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;

// Every file of `dir` with its bytes and modification time.
struct FileState {
  std::string bytes;
  timespec mtime{};
};
std::map<std::string, FileState> states(const fs::path& dir) {
  std::map<std::string, FileState> out;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    struct stat st {};
    EXPECT_EQ(::stat(entry.path().c_str(), &st), 0);
    out[entry.path().filename().string()] = {test::read_bytes(entry.path()), st.st_mtim};
  }
  return out;
}

// A dataset written as format 2 (the reference) and the same one as format 1.
class Upgrade : public ::testing::Test {
 protected:
  void SetUp() override {
    test::SyntheticOptions options;
    options.variants = 2;
    test::write_synthetic_dataset(reference(), options);
    std::vector<int16_t> assign(options.samples);
    for (std::size_t s = 0; s < assign.size(); ++s) assign[s] = static_cast<int16_t>(s % 3);
    test::add_split(reference(), "cv", 3, assign, "stratified");
    test::add_split(reference(), "other", 3, assign, "random");
    fs::copy(reference(), old(), fs::copy_options::recursive);
    test::rewrite_as_format1(old());
  }
  fs::path reference() const { return dir_ / "reference"; }
  fs::path old() const { return dir_ / "old"; }
  test::TempDir dir_;
};

TEST_F(Upgrade, WritesTheFormat2IndexAConversionWritesAndLeavesTheShards) {
  ASSERT_EQ(read_index(old()).format_version, 1);
  ASSERT_FALSE(fs::exists(old() / format::kSplitsFile));
  const std::map<std::string, FileState> before = states(old());

  const UpgradeResult result = upgrade_dataset(old());
  EXPECT_TRUE(result.upgraded);
  EXPECT_EQ(result.from_version, 1);
  EXPECT_EQ(result.to_version, 2);
  EXPECT_EQ(result.samples, 40u);
  EXPECT_EQ(result.records, 80u);
  EXPECT_EQ(result.splits, 2u);

  // Byte for byte what the format 2 writer wrote, splits and `created` included.
  test::expect_same_dataset_bytes(old(), reference());
  EXPECT_TRUE(test::index_differences(read_index(old()), read_index(reference())).empty());
  // The shards are the same files, untouched.
  const std::map<std::string, FileState> after = states(old());
  for (const auto& [name, state] : before) {
    if (!format::is_shard_file_name(name)) continue;
    ASSERT_TRUE(after.count(name)) << name;
    EXPECT_EQ(after.at(name).bytes, state.bytes) << name;
    EXPECT_EQ(after.at(name).mtime.tv_sec, state.mtime.tv_sec) << name;
    EXPECT_EQ(after.at(name).mtime.tv_nsec, state.mtime.tv_nsec) << name;
  }
  const Dataset dataset = Dataset::open(old());
  EXPECT_EQ(dataset.sample_paths(), read_index(reference()).sample_path);
}

TEST_F(Upgrade, AFormat2DatasetIsLeftAsItIs) {
  const std::map<std::string, FileState> before = states(reference());
  const UpgradeResult result = upgrade_dataset(reference());
  EXPECT_FALSE(result.upgraded);
  EXPECT_EQ(result.from_version, 2);
  const std::map<std::string, FileState> after = states(reference());
  ASSERT_EQ(after.size(), before.size());
  for (const auto& [name, state] : before) {
    EXPECT_EQ(after.at(name).bytes, state.bytes) << name;
    EXPECT_EQ(after.at(name).mtime.tv_nsec, state.mtime.tv_nsec) << name;
  }
}

// A damaged index is refused, naming the file, and the dataset is left as it was.
TEST_F(Upgrade, ADamagedIndexIsRefusedAndLeftAsItWas) {
  {
    h5::File file = h5::File::open_write(old() / format::kIndexFile);
    std::vector<int32_t> labels = file.read<int32_t>(format::kSamplesLabel);
    labels[3] = (labels[3] + 1) % 4;
    h5::Handle dataset = file.open_dataset(format::kSamplesLabel);
    ASSERT_GE(
        H5Dwrite(dataset.get(), H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels.data()), 0);
    file.close();
  }
  const std::map<std::string, FileState> before = states(old());
  try {
    upgrade_dataset(old());
    ADD_FAILURE() << "upgraded a damaged index";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("index.h5"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("/samples/label"), std::string::npos) << e.what();
  }
  const std::map<std::string, FileState> after = states(old());
  ASSERT_EQ(after.size(), before.size());  // no splits.h5, no temporary file
  for (const auto& [name, state] : before) EXPECT_EQ(after.at(name).bytes, state.bytes) << name;
  EXPECT_THROW(upgrade_dataset(dir_ / "nothing"), Error);
}

// A format 1 index has no checksums to vouch for it, and the checksums
// format 2 writes would: the shards are opened as a reader opens them first,
// so two swapped shards (whose records the index places wrongly) are refused
// rather than certified, and the dataset is left as it was.
TEST_F(Upgrade, ShardsThatDoNotMatchTheIndexAreRefusedNotCertified) {
  fs::rename(old() / "shard-00000.h5", old() / "swap");
  fs::rename(old() / "shard-00001.h5", old() / "shard-00000.h5");
  fs::rename(old() / "swap", old() / "shard-00001.h5");
  const std::map<std::string, FileState> before = states(old());
  try {
    upgrade_dataset(old());
    ADD_FAILURE() << "upgraded a dataset whose shards were swapped";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shard-0000"), std::string::npos) << e.what();
  }
  const std::map<std::string, FileState> after = states(old());
  ASSERT_EQ(after.size(), before.size());
  for (const auto& [name, state] : before) EXPECT_EQ(after.at(name).bytes, state.bytes) << name;
  EXPECT_EQ(read_index(old()).format_version, 1);
}

}  // namespace
}  // namespace imgpack
