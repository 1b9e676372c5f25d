// The choice between direct and staged upload (upload_choice.hpp), made on
// the host: the decision needs no device, only what it is told about one.
#include <gtest/gtest.h>

#include <algorithm>

#include <string>

#include "cpu_affinity.hpp"
#include "imgpack/error.hpp"
#include "synthetic_dataset.hpp"
#include "test_support.hpp"
#include "upload_choice.hpp"

namespace imgpack::detail {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

UploadContext device_with(uint64_t dataset_bytes, uint64_t memory) {
  UploadContext c;
  c.device_memory = true;
  c.dataset_bytes = dataset_bytes;
  c.memory = memory;
  return c;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(UploadChoice, AutomaticIsDirectWhenTheShardsFitAndNothingTouchesTheRecords) {
  const LoaderOptions o;  // the default: DirectUpload::automatic
  ASSERT_EQ(o.direct_upload, DirectUpload::automatic);
  const UploadChoice c = choose_upload(o, device_with(10 * kGiB, 64 * kGiB));
  EXPECT_TRUE(c.direct);
  EXPECT_TRUE(contains(c.reason,
                       "direct (direct_upload auto): the shards (10.0 GiB) fit in half "
                       "the memory the page cache may use (64.0 GiB)"))
      << c.reason;
}

TEST(UploadChoice, AutomaticIsStagedWhenTheShardsWouldPinMoreThanHalfTheMemory) {
  const LoaderOptions o;
  EXPECT_TRUE(choose_upload(o, device_with(32 * kGiB, 64 * kGiB)).direct);  // exactly half
  const UploadChoice c = choose_upload(o, device_with(32 * kGiB + 1, 64 * kGiB));
  EXPECT_FALSE(c.direct);
  EXPECT_TRUE(contains(c.reason,
                       "staged (direct_upload auto): the shards (32.0 GiB) do not fit "
                       "in half the memory the page cache may use (64.0 GiB)"))
      << c.reason;
}

TEST(UploadChoice, AutomaticIsStagedWhenTheHostMustTouchTheRecords) {
  const UploadContext fits = device_with(kGiB, 64 * kGiB);
  struct Case {
    LoaderOptions options;
    std::string why;
  };
  std::vector<Case> cases(5);
  cases[0].options.crop.height = cases[0].options.crop.width = 8;
  cases[0].why = "online crop or flip";
  cases[1].options.crop.hflip = 0.5;
  cases[1].why = "online crop or flip";
  cases[2].options.verify_checksums = true;
  cases[2].why = "verify_checksums hashes each record on the host";
  cases[3].options.read_path = ReadPath::read;
  cases[3].why = "read_path read";
  cases[4].options.direct_io = DirectIo::on;
  cases[4].why = "direct_io on";
  for (const Case& k : cases) {
    const UploadChoice c = choose_upload(k.options, fits);
    EXPECT_FALSE(c.direct) << k.why;
    EXPECT_TRUE(contains(c.reason, "staged (direct_upload auto): " + k.why)) << c.reason;
  }
}

TEST(UploadChoice, OnAndOffAreObeyedAndHostDeliveryUploadsNothing) {
  LoaderOptions o;
  o.direct_upload = DirectUpload::on;
  EXPECT_TRUE(choose_upload(o, device_with(100 * kGiB, 64 * kGiB)).direct);
  EXPECT_EQ(choose_upload(o, device_with(kGiB, 64 * kGiB)).reason, "direct_upload on");
  o.direct_upload = DirectUpload::off;
  const UploadChoice off = choose_upload(o, device_with(kGiB, 64 * kGiB));
  EXPECT_FALSE(off.direct);
  EXPECT_EQ(off.reason, "direct_upload off");
  for (DirectUpload mode : {DirectUpload::automatic, DirectUpload::on, DirectUpload::off}) {
    o.direct_upload = mode;
    const UploadChoice host = choose_upload(o, UploadContext{});
    EXPECT_FALSE(host.direct);
    EXPECT_EQ(host.reason, "host delivery: nothing to upload");
  }
}

TEST(UploadChoice, NamesRoundTrip) {
  for (DirectUpload mode : {DirectUpload::automatic, DirectUpload::on, DirectUpload::off}) {
    EXPECT_EQ(parse_direct_upload(direct_upload_name(mode)), mode);
  }
  EXPECT_EQ(direct_upload_name(DirectUpload::automatic), "auto");
  EXPECT_THROW(parse_direct_upload("yes"), UsageError);
}

// Reader threads: as given, else 2, or for staged upload to a device half
// the cores, 2 to 8.
TEST(UploadChoice, AutomaticThreadsFillTheCopyEngineOnlyWhenStaging) {
  LoaderOptions o;
  ASSERT_EQ(o.threads, 0u);  // automatic by default
  for (unsigned cores : {1u, 2u, 4u, 6u, 16u, 64u}) {
    SCOPED_TRACE(cores);
    EXPECT_EQ(choose_threads(o, false, false, cores), 2u);  // host delivery
    EXPECT_EQ(choose_threads(o, true, true, cores), 2u);    // direct upload
    EXPECT_EQ(choose_threads(o, true, false, cores), std::clamp(cores / 2, 2u, 8u));
  }
  EXPECT_EQ(choose_threads(o, true, false, 16), 8u);
  EXPECT_EQ(choose_threads(o, true, false, 6), 3u);
  o.threads = 5;
  for (bool device : {false, true})
    for (bool direct : {false, true}) EXPECT_EQ(choose_threads(o, device, direct, 16), 5u);
  EXPECT_GE(cores_available(), 1u);
}

// A host loader reports the choice too.
TEST(UploadChoice, HostLoaderStatsSayThereIsNothingToUpload) {
  test::TempDir dir;
  test::SyntheticOptions options;
  options.samples = 12;
  test::write_synthetic_dataset(dir.path(), options);
  LoaderOptions o;
  o.batch_size = 4;
  Loader loader(Dataset::open(dir.path()), o);
  const LoaderStats s = loader.stats();
  EXPECT_FALSE(s.direct_upload);
  EXPECT_EQ(s.upload, "host delivery: nothing to upload");
  EXPECT_EQ(s.threads, 2u);  // the automatic choice for host delivery
  o.threads = 3;
  EXPECT_EQ(Loader(Dataset::open(dir.path()), o).stats().threads, 3u);
}

}  // namespace
}  // namespace imgpack::detail
