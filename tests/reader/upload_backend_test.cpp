// The upload backends' contract. Host tests run everywhere; the CUDA tests
// skip themselves on machines without a device (or without a driver).
#include "imgpack/upload_backend.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "imgpack/checksum.hpp"
#include "imgpack/error.hpp"
#include "imgpack/loader.hpp"
#include "random.hpp"
#include "synthetic_dataset.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

#define SKIP_WITHOUT_CUDA_DEVICE()                                                             \
  do {                                                                                         \
    if (cuda_device_count() == 0) {                                                            \
      GTEST_SKIP() << (built_with_cuda() ? "no CUDA device or driver" : "built without CUDA"); \
    }                                                                                          \
  } while (false)

std::vector<uint8_t> random_bytes(std::size_t n, uint64_t seed) {
  std::vector<uint8_t> bytes(n);
  CounterRng rng(seed);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng.next() >> 56);
  return bytes;
}

// One pass of the loader's upload protocol: wait for the consumer, copy,
// convert, record; then read the result back.
std::vector<uint8_t> run_upload(UploadBackend& backend, const std::vector<uint8_t>& input,
                                OutputFormat format, const RecordShape& g,
                                const Normalization& norm) {
  const std::size_t count = input.size() / g.elements();
  const std::size_t out_bytes = input.size() * output_element_bytes(format);
  Memory host = backend.allocate_host(input.size());
  Memory device = backend.allocate_device(input.size());
  Memory output = backend.allocate_device(out_bytes);
  std::memcpy(host.data(), input.data(), input.size());
  auto consumer_done = backend.create_event();
  auto upload_done = backend.create_event();
  backend.record_on_stream(*consumer_done, nullptr);
  backend.stream_wait(*consumer_done);
  backend.copy_to_device(device.data(), host.data(), input.size());
  if (format != OutputFormat::uint8_nhwc) {
    backend.convert(
        {static_cast<const uint8_t*>(device.data()), output.data(), count, format, g, norm});
  }
  backend.record(*upload_done);
  backend.synchronize(*upload_done);
  EXPECT_TRUE(backend.query(*upload_done));
  std::vector<uint8_t> result(format == OutputFormat::uint8_nhwc ? input.size() : out_bytes);
  backend.copy_to_host(result.data(),
                       format == OutputFormat::uint8_nhwc ? device.data() : output.data(),
                       result.size());
  return result;
}

TEST(HostBackend, ImplementsTheStreamContract) {
  std::unique_ptr<UploadBackend> backend = make_host_backend();
  EXPECT_FALSE(backend->device().is_cuda());
  EXPECT_FALSE(backend->separate_device_memory());
  EXPECT_EQ(backend->native_stream(), nullptr);
  const RecordShape g{4, 5, 3};
  const Normalization norm = Normalization::unit_range(3);
  std::vector<uint8_t> input = random_bytes(2 * g.elements(), 3);
  EXPECT_EQ(run_upload(*backend, input, OutputFormat::uint8_nhwc, g, norm), input);
  std::vector<uint8_t> converted = run_upload(*backend, input, OutputFormat::float32_nchw, g, norm);
  std::vector<float> expected(input.size());
  convert_records_host(input.data(), expected.data(), 2, OutputFormat::float32_nchw, g, norm);
  EXPECT_EQ(std::memcmp(converted.data(), expected.data(), converted.size()), 0);
  // An event never recorded counts as complete, as in CUDA.
  auto fresh = backend->create_event();
  EXPECT_TRUE(backend->query(*fresh));
  backend->synchronize(*fresh);
}

TEST(HostBackend, MemoryIsPageAlignedAndWritable) {
  std::unique_ptr<UploadBackend> backend = make_host_backend(/*pin_memory=*/true);
  Memory m = backend->allocate_host(100000);
  ASSERT_TRUE(m);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m.data()) % 4096, 0u);
  std::memset(m.data(), 7, m.size());
  Memory moved = std::move(m);
  EXPECT_FALSE(m);  // NOLINT(bugprone-use-after-move): the moved-from state is what is tested
  EXPECT_EQ(static_cast<uint8_t*>(moved.data())[99999], 7);
}

TEST(Backends, CudaIsRefusedClearlyWithoutADevice) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  try {
    make_upload_backend(Device::cuda(0));
    ADD_FAILURE() << "cuda:0 accepted without a device";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cuda:0"), std::string::npos) << e.what();
  }
}

TEST(CudaBackend, CopiesAndConvertsLikeTheHost) {
  SKIP_WITHOUT_CUDA_DEVICE();
  std::unique_ptr<UploadBackend> cuda = make_upload_backend(Device::cuda(0));
  std::unique_ptr<UploadBackend> host = make_host_backend();
  EXPECT_TRUE(cuda->separate_device_memory());
  EXPECT_NE(cuda->native_stream(), nullptr);
  const RecordShape g{17, 23, 3};
  const float mean[3] = {0.485f, 0.456f, 0.406f};
  const float stdev[3] = {0.229f, 0.224f, 0.225f};
  const Normalization norm = Normalization::from_mean_std(mean, stdev, 3);
  std::vector<uint8_t> input = random_bytes(5 * g.elements(), 9);
  for (OutputFormat f :
       {OutputFormat::uint8_nhwc, OutputFormat::float32_nchw, OutputFormat::float16_nchw}) {
    // Bit-identical: the kernel and the host call the same convert_element().
    EXPECT_EQ(run_upload(*cuda, input, f, g, norm), run_upload(*host, input, f, g, norm))
        << static_cast<int>(f);
  }
}

class CudaLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_CUDA_DEVICE();
    options_.samples = 45;
    options_.height = 24;
    options_.width = 20;
    options_.masks = true;  // delivered in the same upload as the images
    test::write_synthetic_dataset(dir_.path(), options_);
    dataset_ = Dataset::open(dir_.path());
  }
  test::SyntheticOptions options_;
  test::TempDir dir_;
  Dataset dataset_;
};

TEST_F(CudaLoaderTest, DeliversTheSameBatchesAsTheHost) {
  for (const bool direct : {false, true})
    for (OutputFormat f :
         {OutputFormat::uint8_nhwc, OutputFormat::float32_nchw, OutputFormat::float16_nchw}) {
      SCOPED_TRACE(direct ? "direct upload" : "staged upload");
      LoaderOptions o;
      o.batch_size = 8;
      o.prefetch = 3;
      o.output = f;
      o.mean = {0.5f, 0.4f, 0.3f, 0};
      o.stddev = {0.2f, 0.25f, 0.3f, 1};
      Loader host(dataset_, o);
      o.device = Device::cuda(0);
      o.direct_upload = direct ? DirectUpload::on : DirectUpload::off;
      Loader cuda(dataset_, o);
      EXPECT_TRUE(cuda.device().is_cuda());
      EXPECT_GT(cuda.ring_device_bytes(), 0u);
      for (uint64_t epoch = 0; epoch < 2; ++epoch) {
        host.set_epoch(epoch);
        cuda.set_epoch(epoch);
        while (std::optional<Batch> h = host.next()) {
          std::optional<Batch> d = cuda.next();
          ASSERT_TRUE(d);
          EXPECT_TRUE(d->on_device());
          EXPECT_NE(d->ready_event(), nullptr);
          ASSERT_EQ(d->bytes(), h->bytes());
          EXPECT_TRUE(std::equal(h->records().begin(), h->records().end(), d->records().begin()));
          std::vector<uint8_t> from_device(d->bytes());
          d->wait_on_stream(nullptr);
          d->copy_to_host(from_device.data());
          // Full batches upload images and masks in one copy, the short last
          // one in two, the direct path gathers both from the mappings.
          ASSERT_EQ(d->mask_bytes(), h->mask_bytes());
          std::vector<uint8_t> masks_from_device(d->mask_bytes());
          d->copy_masks_to_host(masks_from_device.data());
          d->recycle_after(nullptr);
          EXPECT_EQ(std::memcmp(from_device.data(), h->data(), h->bytes()), 0);
          EXPECT_EQ(std::memcmp(masks_from_device.data(), h->masks(), h->mask_bytes()), 0);
        }
        EXPECT_FALSE(cuda.next().has_value());
      }
    }
}

TEST_F(CudaLoaderTest, DestroyingMidEpochIsPrompt) {
  LoaderOptions o;
  o.batch_size = 4;
  o.prefetch = 2;
  o.threads = 4;
  o.device = Device::cuda(0);
  std::optional<Batch> kept;
  {
    Loader loader(dataset_, o);
    kept = loader.next();
    ASSERT_TRUE(kept);
  }
  std::vector<uint8_t> bytes(kept->bytes());
  kept->copy_to_host(bytes.data());
  EXPECT_EQ(checksum(bytes.data(), dataset_.record_bytes()),
            dataset_.record_checksum(kept->records()[0]));
}

}  // namespace
}  // namespace imgpack
