// The choice between direct and staged upload (upload_choice.hpp), made on
// the host: the decision needs no device, only what it is told about one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "cpu_affinity.hpp"
#include "imgpack/error.hpp"
#include "imgpack/upload_backend.hpp"
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

// A device of its own as far as the upload path can tell, whose
// registrations fail from the `refuse_from`-th on (counting from 0); the
// rest is the host backend's.
class RegisteringDevice : public UploadBackend {
 public:
  explicit RegisteringDevice(std::size_t refuse_from) : refuse_from_(refuse_from) {}
  std::size_t registered() const { return registered_; }

  Device device() const override { return host_->device(); }
  bool separate_device_memory() const override { return true; }
  bool pinned_host_memory() const override { return false; }
  Memory allocate_host(std::size_t bytes) override { return host_->allocate_host(bytes); }
  Memory allocate_device(std::size_t bytes) override { return host_->allocate_device(bytes); }
  std::unique_ptr<UploadEvent> create_event() override { return host_->create_event(); }
  std::unique_ptr<HostRegistration> register_host(const void* data, std::size_t bytes) override {
    if (registered_ >= refuse_from_) throw Error("out of pinnable memory (test)");
    ++registered_;
    return host_->register_host(data, bytes);
  }
  void stream_wait(UploadEvent& event) override { host_->stream_wait(event); }
  void copy_to_device(void* dst, const void* src, std::size_t bytes) override {
    host_->copy_to_device(dst, src, bytes);
  }
  void gather_to_device(void* dst, const void* const* srcs, std::size_t count,
                        std::size_t bytes_each) override {
    host_->gather_to_device(dst, srcs, count, bytes_each);
  }
  void convert(const ConvertJob& job) override { host_->convert(job); }
  void record(UploadEvent& event) override { host_->record(event); }
  void synchronize(UploadEvent& event) override { host_->synchronize(event); }
  bool query(UploadEvent& event) override { return host_->query(event); }
  void record_on_stream(UploadEvent& event, void* stream) override {
    host_->record_on_stream(event, stream);
  }
  void wait_on_stream(UploadEvent& event, void* stream) override {
    host_->wait_on_stream(event, stream);
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override {
    host_->copy_to_host(dst, src, bytes);
  }
  void* native_stream() const override { return nullptr; }

 private:
  std::unique_ptr<UploadBackend> host_ = make_host_backend();
  std::size_t refuse_from_;
  std::size_t registered_ = 0;
};

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

// The choice carried out: direct registers every shard's pixels and masks;
// a shard the device will not register turns the automatic choice into
// staged upload naming the shard and the reason, and is an error naming it
// where direct upload was asked for.
TEST(UploadChoice, AShardTheDeviceWillNotRegisterMeansStagedOrAnErrorWhenDirectWasAskedFor) {
  test::TempDir dir;
  test::SyntheticOptions options;
  options.samples = 40;
  options.records_per_shard = 16;  // three shards
  options.masks = true;
  test::write_synthetic_dataset(dir.path(), options);
  const Dataset dataset = Dataset::open(dir.path());
  ASSERT_EQ(dataset.num_shards(), 3u);
  LoaderOptions o;

  RegisteringDevice willing(SIZE_MAX);
  UploadPath path = open_upload_path(dataset, o, willing, 64 * kGiB);
  EXPECT_TRUE(path.choice.direct) << path.choice.reason;
  EXPECT_EQ(path.registrations.size(), 6u);  // each shard's images and masks
  EXPECT_EQ(willing.registered(), 6u);

  RegisteringDevice refusing(3);  // shard 0's two layers, then shard 1's images
  path = open_upload_path(dataset, o, refusing, 64 * kGiB);
  EXPECT_FALSE(path.choice.direct);
  EXPECT_TRUE(path.registrations.empty());
  EXPECT_EQ(path.choice.reason, "staged (direct_upload auto): " + dataset.shard_path(1).string() +
                                    ": cannot register for direct upload: out of pinnable "
                                    "memory (test)");

  o.direct_upload = DirectUpload::on;
  RegisteringDevice refusing_on(3);
  try {
    open_upload_path(dataset, o, refusing_on, 64 * kGiB);
    ADD_FAILURE() << "direct upload went on without shard 1";
  } catch (const UsageError& e) {
    ADD_FAILURE() << e.what();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), dataset.shard_path(1).string())) << e.what();
    EXPECT_TRUE(contains(e.what(), "cannot register for direct upload")) << e.what();
  }

  // Staged by the choice itself: nothing is registered.
  o.direct_upload = DirectUpload::automatic;
  RegisteringDevice untouched(SIZE_MAX);
  path = open_upload_path(dataset, o, untouched, 1024);
  EXPECT_FALSE(path.choice.direct);
  EXPECT_EQ(untouched.registered(), 0u);
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
