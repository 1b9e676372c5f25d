// imgpack convert --variants K --augment SPEC and imgpack preview, end to end
// through the CLI: variant 0 is the plain conversion, output does not depend
// on the thread count or on which other inputs exist, bad specs exit 2, and
// inspect and preview show what was done.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "h5.hpp"
#include "imgpack/dataset.hpp"
#include "imgpack/dataset_index.hpp"
#include "imgpack/format.hpp"
#include "imgpack/loader.hpp"
#include "imgpack/preview.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;
using test::run_imgpack;
using test::shell_quote;

const char* const kSpec =
    "hflip,rotate=20,shift=0.05,zoom=0.9:1.6,shear=5,crop_scale=0.3:1,aspect=0.8:1.25,"
    "brightness=0.2,contrast=0.2,saturation=0.3,hue=0.05,gray=0.1";

// Every record of a dataset, keyed by (source path, variant).
using Records = std::map<std::pair<std::string, uint16_t>, std::string>;

Records read_records(const fs::path& dir) {
  const DatasetIndex index = read_index(dir);
  std::vector<std::string> shards;
  for (std::size_t s = 0; s < index.num_shards(); ++s) {
    h5::File file = h5::File::open_read(dir / index.shards.file[s]);
    h5::Handle images = file.open_dataset(format::kImages);
    std::string bytes(index.shards.records[s] * index.record_bytes(), '\0');
    file.check_status(
        H5Dread(images.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()),
        "H5Dread", format::kImages);
    shards.push_back(std::move(bytes));
  }
  Records records;
  for (std::size_t r = 0; r < index.num_records(); ++r) {
    const std::string& path = index.sample_path[static_cast<std::size_t>(index.records.sample[r])];
    records[{path, index.records.variant[r]}] = shards[index.records.shard[r]].substr(
        index.records.row[r] * index.record_bytes(), index.record_bytes());
  }
  return records;
}

class AugmentCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Photo-sized for a 96-pixel output, so the JPEG decoder works at reduced
    // DCT scales; landscape, portrait and a PNG.
    int n = 0;
    for (const char* label : {"cat", "dog", "fox"}) {
      for (int i = 0; i < 4; ++i, ++n) {
        const bool portrait = n % 3 == 1;
        cv::Mat image = test::make_rgb_image(portrait ? 300 : 400, portrait ? 400 : 300,
                                             static_cast<uint64_t>(n));
        const std::string ext = n % 5 == 4 ? ".png" : ".jpg";
        test::write_image(
            src() / label / ("img" + std::to_string(i) + ext), image,
            ext == ".jpg" ? std::vector<int>{cv::IMWRITE_JPEG_QUALITY, 92} : std::vector<int>{});
      }
    }
  }

  fs::path src() const { return dir_ / "src"; }
  fs::path out(const std::string& name) const { return dir_ / name; }

  void convert(const fs::path& from, const fs::path& to, const std::string& extra) {
    test::CommandResult r =
        run_imgpack("convert " + shell_quote(from.string()) + " " + shell_quote(to.string()) +
                    " --size 96 --seed 5 -q " + extra);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  std::string augment_args(int variants = 3) const {
    return "--variants " + std::to_string(variants) + " --augment " + shell_quote(kSpec);
  }

  test::TempDir dir_;
};

TEST_F(AugmentCliTest, VariantZeroIsTheConversionWithoutAugment) {
  convert(src(), out("plain"), "");
  convert(src(), out("aug"), augment_args());
  const Records plain = read_records(out("plain"));
  const Records aug = read_records(out("aug"));
  ASSERT_EQ(plain.size(), 12u);
  ASSERT_EQ(aug.size(), 36u);
  for (const auto& [key, bytes] : plain) {
    ASSERT_EQ(key.second, 0);
    ASSERT_TRUE(aug.count(key)) << key.first;
    EXPECT_TRUE(aug.at(key) == bytes) << key.first << ": variant 0 differs";
  }
}

TEST_F(AugmentCliTest, ZoomedVariantsAreNotUpsampledFromTheReducedJpegDecode) {
  // A 1600x1200 photo for a 96-pixel output decodes at 1/8 for variant 0;
  // zoom 3 needs three times the pixels. Rendered from a full-size decode
  // (--no-dct-scaling) the variant must look the same; upsampled from the
  // 1/8 decode it would be visibly blurred.
  fs::path big = dir_ / "big";
  cv::Mat photo = test::make_rgb_image(1600, 1200, 42);
  cv::Mat detail(1200, 1600, CV_8UC3);
  cv::randu(detail, cv::Scalar::all(0), cv::Scalar::all(255));
  cv::GaussianBlur(detail, detail, cv::Size(0, 0), 2.5);
  cv::addWeighted(photo, 0.5, detail, 0.5, 0, photo);
  test::write_image(big / "a" / "photo.jpg", photo, {cv::IMWRITE_JPEG_QUALITY, 95});
  const std::string spec = " --variants 2 --augment 'zoom=3:3,fill=edge'";
  convert(big, out("dct"), spec);
  convert(big, out("full"), spec + " --no-dct-scaling");
  const std::string dct = read_records(out("dct")).at({"a/photo.jpg", 1});
  const std::string full = read_records(out("full")).at({"a/photo.jpg", 1});
  cv::Mat a(96, 96, CV_8UC3, const_cast<char*>(dct.data()));
  cv::Mat b(96, 96, CV_8UC3, const_cast<char*>(full.data()));
  // Measured: 0.69 with the second decode, 1.89 when upsampled from 1/8.
  EXPECT_LT(test::mean_abs_diff(a, b), 1.2);
}

TEST_F(AugmentCliTest, AugmentedVariantsDifferFromTheCleanImageAndEachOther) {
  convert(src(), out("aug"), augment_args(4));
  const Records aug = read_records(out("aug"));
  for (const auto& [key, bytes] : aug) {
    if (key.second != 0) continue;
    for (uint16_t v = 1; v < 4; ++v) {
      const std::string& variant = aug.at({key.first, v});
      EXPECT_NE(variant, bytes) << key.first << " variant " << v;
      for (uint16_t w = 1; w < v; ++w) EXPECT_NE(variant, aug.at({key.first, w}));
    }
  }
}

TEST_F(AugmentCliTest, OutputIsByteIdenticalForOneAndTwoThreads) {
  convert(src(), out("t1"), augment_args() + " --threads 1");
  convert(src(), out("t2"), augment_args() + " --threads 2");
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(out("t1"))) {
    const std::string name = entry.path().filename().string();
    if (name == format::kReportFile) continue;  // holds timings
    names.push_back(name);
    EXPECT_TRUE(test::read_bytes(entry.path()) == test::read_bytes(out("t2") / name))
        << name << " differs between --threads 1 and --threads 2";
  }
  EXPECT_GE(names.size(), 2u);  // index.h5 and at least one shard
}

TEST_F(AugmentCliTest, VariantsDependOnThePathNotOnTheOtherInputs) {
  convert(src(), out("before"), augment_args());
  // A corrupt input that sorts first shifts every sample's write position.
  fs::path extra = dir_ / "src2";
  fs::copy(src(), extra, fs::copy_options::recursive);
  test::write_bytes(extra / "cat" / "a_broken.jpg", "\xff\xd8\xff not really a jpeg");
  test::write_image(extra / "dog" / "a_new.png", test::make_rgb_image(200, 150, 99));
  convert(extra, out("after"), augment_args() + " --max-skipped 1");
  const Records before = read_records(out("before"));
  const Records after = read_records(out("after"));
  EXPECT_EQ(after.size(), before.size() + 3);
  for (const auto& [key, bytes] : before) {
    ASSERT_TRUE(after.count(key)) << key.first;
    EXPECT_TRUE(after.at(key) == bytes) << key.first << " variant " << key.second << " changed";
  }
  auto report = nlohmann::json::parse(test::read_bytes(out("after") / format::kReportFile));
  ASSERT_EQ(report["skipped"].size(), 1u);
  EXPECT_EQ(report["skipped"][0]["path"], "cat/a_broken.jpg");
}

TEST_F(AugmentCliTest, SeedChangesTheVariantsButNotVariantZero) {
  convert(src(), out("s5"), augment_args());
  test::CommandResult r =
      run_imgpack("convert " + shell_quote(src().string()) + " " + shell_quote(out("s6").string()) +
                  " --size 96 --seed 6 -q " + augment_args());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Records a = read_records(out("s5")), b = read_records(out("s6"));
  for (const auto& [key, bytes] : a) {
    if (key.second == 0) {
      EXPECT_TRUE(b.at(key) == bytes);
    } else {
      EXPECT_FALSE(b.at(key) == bytes) << key.first << " variant " << key.second;
    }
  }
}

TEST_F(AugmentCliTest, BadSpecsAndCombinationsExitWithUsageErrors) {
  struct Case {
    std::string args;
    std::vector<std::string> expected;
  };
  const Case cases[] = {
      {"--variants 2 --augment rotate=400", {"rotate", "0..180"}},
      {"--variants 2 --augment 'hue=0.7'", {"hue", "0..0.5"}},
      {"--variants 2 --augment 'zoom=0.01:2'", {"zoom", "0.1 <= LO <= HI <= 10"}},
      {"--variants 2 --augment 'crop_scale=0.5'", {"crop_scale", "LO:HI"}},
      {"--variants 2 --augment 'hflip,blur=2'", {"unknown key 'blur'"}},
      {"--variants 2 --augment 'fill=wrap'", {"fill", "reflect", "constant", "edge"}},
      {"--variants 3", {"--variants 3", "--augment"}},
      {"--augment hflip", {"--augment", "--variants"}},
  };
  for (const Case& c : cases) {
    const fs::path target = out("bad");
    test::CommandResult r = run_imgpack("convert " + shell_quote(src().string()) + " " +
                                        shell_quote(target.string()) + " --size 96 " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << ": " << r.err;
    for (const std::string& part : c.expected) {
      EXPECT_NE(r.err.find(part), std::string::npos) << c.args << ": " << r.err;
    }
    EXPECT_FALSE(fs::exists(target / format::kIndexFile)) << c.args;
  }
}

TEST_F(AugmentCliTest, ConvertHelpSaysWhereTheKeysAre) {
  test::CommandResult r = run_imgpack("convert --help");
  ASSERT_EQ(r.exit_code, 0);
  for (const char* part : {"--augment", "crop_scale=LO:HI", "fill=MODE", "README"}) {
    EXPECT_NE(r.out.find(part), std::string::npos) << part;
  }
}

TEST_F(AugmentCliTest, InspectShowsSpecVariantsAndSeed) {
  convert(src(), out("aug"), augment_args(4));
  test::CommandResult human = run_imgpack("inspect " + shell_quote(out("aug").string()));
  ASSERT_EQ(human.exit_code, 0) << human.err;
  EXPECT_NE(human.out.find("12 images x 4 variants"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find(std::string("augment     ") + kSpec), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("seed 5"), std::string::npos) << human.out;

  test::CommandResult json = run_imgpack("inspect --json " + shell_quote(out("aug").string()));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["variants"], 4);
  EXPECT_EQ(j["convert_options"]["augment"], kSpec);
  EXPECT_EQ(j["convert_options"]["variants"], 4);
  EXPECT_EQ(j["convert_options"]["seed"], 5);

  convert(src(), out("plain"), "");
  human = run_imgpack("inspect " + shell_quote(out("plain").string()));
  EXPECT_NE(human.out.find("augment     none"), std::string::npos) << human.out;
}

TEST_F(AugmentCliTest, PreviewDrawsOneRowPerSampleWithItsVariantsAcross) {
  convert(src(), out("aug"), augment_args());
  const fs::path sheet = out("sheet.png");
  test::CommandResult r = run_imgpack("preview " + shell_quote(out("aug").string()) + " --out " +
                                      shell_quote(sheet.string()) + " --samples 4 --seed 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["rows"], 4);
  EXPECT_EQ(j["columns"], 3);
  ASSERT_EQ(j["samples"].size(), 4u);

  // Read it back: 96-pixel tiles, 4-pixel margins, 16-pixel labels.
  cv::Mat png = test::opencv_decode_rgb(sheet);
  EXPECT_EQ(png.cols, 4 + 3 * (96 + 4));
  EXPECT_EQ(png.rows, 4 + 4 * (96 + 16 + 4));
  EXPECT_EQ(j["width"], png.cols);
  EXPECT_EQ(j["height"], png.rows);

  // Every tile shows its record's pixels exactly (96 is shown unscaled).
  const DatasetIndex index = read_index(out("aug"));
  const Records records = read_records(out("aug"));
  for (int row = 0; row < 4; ++row) {
    const std::string& path = index.sample_path[j["samples"][row].get<std::size_t>()];
    for (uint16_t v = 0; v < 3; ++v) {
      cv::Mat tile = png(cv::Rect(4 + v * 100, 4 + row * 116, 96, 96)).clone();
      const std::string& bytes = records.at({path, v});
      cv::Mat record(96, 96, CV_8UC3, const_cast<char*>(bytes.data()));
      EXPECT_EQ(test::mean_abs_diff(tile, record), 0) << path << " variant " << v;
    }
  }
}

TEST_F(AugmentCliTest, PreviewOfADatasetWithoutVariantsIsAGrid) {
  convert(src(), out("plain"), "");
  const fs::path sheet = out("grid.png");
  test::CommandResult r = run_imgpack("preview " + shell_quote(out("plain").string()) + " -o " +
                                      shell_quote(sheet.string()) + " --samples 10");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  cv::Mat png = test::opencv_decode_rgb(sheet);
  EXPECT_EQ(png.cols, 4 + 8 * (96 + 4));  // eight across
  EXPECT_EQ(png.rows, 4 + 2 * (96 + 16 + 4));

  // Only one class, and fewer samples than asked for.
  r = run_imgpack("preview " + shell_quote(out("plain").string()) + " -o " +
                  shell_quote(sheet.string()) + " --samples 10 --class dog --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["samples"].size(), 4u);
  const DatasetIndex index = read_index(out("plain"));
  for (const auto& id : j["samples"]) {
    EXPECT_EQ(index.class_names[index.sample_label[id.get<std::size_t>()]], "dog");
  }
  png = test::opencv_decode_rgb(sheet);
  EXPECT_EQ(png.cols, 4 + 4 * (96 + 4));
  EXPECT_EQ(png.rows, 4 + 1 * (96 + 16 + 4));
}

TEST_F(AugmentCliTest, PreviewWithACropShowsWhatTheLoaderDeliversEachEpoch) {
  convert(src(), out("plain"), "");
  const fs::path sheet = out("crops.png");
  test::CommandResult r = run_imgpack(
      "preview " + shell_quote(out("plain").string()) + " -o " + shell_quote(sheet.string()) +
      " --samples 2 --crop 64x48 --flip 0.5 --epochs 3 --seed 5 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["samples"].size(), 2u);
  EXPECT_EQ(j["epochs"], 3);
  const cv::Mat png = test::opencv_decode_rgb(sheet);
  const cv::Size tile = preview_tile_size(64, 48);  // 128 x 96: small windows grow
  ASSERT_EQ(png.cols, kPreviewMargin + 3 * (tile.width + kPreviewMargin));
  ASSERT_EQ(png.rows, kPreviewMargin + 2 * (tile.height + kPreviewLabelHeight + kPreviewMargin));

  // Each tile is the window a Loader with the same crop and seed cuts.
  const Dataset dataset = Dataset::open(out("plain"));
  LoaderOptions loader;
  loader.crop = {48, 64, CropMode::random, 0.5, 0};
  loader.order.seed = 5;
  int mirrored_or_moved = 0;
  for (int row = 0; row < 2; ++row) {
    const auto sample = j["samples"][row].get<int64_t>();
    uint64_t record = 0;
    while (dataset.record_sample(record) != sample) ++record;
    cv::Mat first;
    for (int epoch = 0; epoch < 3; ++epoch) {
      cv::Mat view(48, 64, CV_8UC3);
      copy_delivered_view(dataset, loader, static_cast<uint64_t>(epoch), sample, 0,
                          dataset.record_data(record), view.data);
      cv::Mat shown;
      cv::resize(view, shown, tile, 0, 0, cv::INTER_NEAREST);
      const cv::Point origin(
          kPreviewMargin + epoch * (tile.width + kPreviewMargin),
          kPreviewMargin + row * (tile.height + kPreviewLabelHeight + kPreviewMargin));
      EXPECT_EQ(test::mean_abs_diff(png(cv::Rect(origin, tile)), shown), 0)
          << "sample " << sample << " epoch " << epoch;
      if (epoch == 0) first = view;
      if (epoch > 0 && test::mean_abs_diff(view, first) > 0) ++mirrored_or_moved;
    }
  }
  EXPECT_GT(mirrored_or_moved, 0);  // the epochs show different views

  r = run_imgpack("preview " + shell_quote(out("plain").string()) + " -o " +
                  shell_quote(out("big.png").string()) + " --crop 200");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("larger than the dataset's records"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out("big.png")));
}

TEST_F(AugmentCliTest, PreviewRejectsAnUnknownClassAndAMissingDataset) {
  convert(src(), out("plain"), "");
  test::CommandResult r = run_imgpack("preview " + shell_quote(out("plain").string()) + " -o " +
                                      shell_quote(out("x.png").string()) + " --class wolf");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("wolf"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cat, dog, fox"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out("x.png")));

  // The sheet never replaces a file of the dataset.
  const std::string index_bytes = test::read_bytes(out("plain") / "index.h5");
  r = run_imgpack("preview " + shell_quote(out("plain").string()) + " -o " +
                  shell_quote((out("plain") / "index.h5").string()));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("is index.h5 of the dataset"), std::string::npos) << r.err;
  EXPECT_EQ(test::read_bytes(out("plain") / "index.h5"), index_bytes);

  r = run_imgpack("preview " + shell_quote(out("nothing").string()) + " -o " +
                  shell_quote(out("x.png").string()));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("nothing"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out("x.png")));
}

}  // namespace
}  // namespace imgpack
