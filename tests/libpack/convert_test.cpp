#include "imgpack/convert.hpp"

#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "files.hpp"
#include "h5.hpp"
#include "image/resize.hpp"
#include "imgpack/checksum.hpp"
#include "imgpack/dataset_index.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "imgpack/growth.hpp"
#include "imgpack/split.hpp"
#include "imgpack/verify.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;

// A small class-folder tree: two classes, JPEG and PNG, one gray JPEG, one
// RGBA PNG, varied sizes, one nested folder.
void make_tree(const fs::path& src) {
  test::write_image(src / "cat" / "a.jpg", test::make_rgb_image(120, 90, 1),
                    {cv::IMWRITE_JPEG_QUALITY, 95});
  test::write_image(src / "cat" / "b.png", test::make_rgb_image(64, 80, 2));
  test::write_image(src / "cat" / "deep" / "er" / "c.jpg", test::make_rgb_image(200, 100, 3));
  cv::Mat gray;
  cv::cvtColor(test::make_rgb_image(90, 90, 4), gray, cv::COLOR_RGB2GRAY);
  test::write_image(src / "dog" / "gray.jpg", gray);
  cv::Mat rgba;
  cv::cvtColor(test::make_rgb_image(70, 50, 5), rgba, cv::COLOR_RGB2RGBA);
  test::write_image(src / "dog" / "alpha.png", rgba);
  test::write_image(src / "dog" / "e.JPEG", test::make_rgb_image(48, 48, 6));
  test::write_bytes(src / "dog" / "notes.txt", "not an image, ignored");
}

ConvertOptions options_for(const fs::path& src, const fs::path& out) {
  ConvertOptions options;
  options.src = src;
  options.out = out;
  options.size = {{32, 24}};
  options.threads = 2;
  return options;
}

// Runs a conversion that must fail on its input and returns the message: a
// bad input is a runtime failure (Error), never a UsageError.
std::string runtime_failure(const ConvertOptions& options, const ProgressFn& progress = {}) {
  try {
    convert(options, progress);
  } catch (const UsageError& e) {
    ADD_FAILURE() << "a bad input is a runtime failure, not a usage error: " << e.what();
    return e.what();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an error";
  return {};
}

std::vector<uint8_t> read_record(const fs::path& dataset, const DatasetIndex& index,
                                 std::size_t r) {
  h5::File shard = h5::File::open_read(dataset / index.shards.file[index.records.shard[r]]);
  h5::Handle images = shard.open_dataset(format::kImages);
  h5::Handle space(H5Dget_space(images.get()));
  hsize_t start[4] = {index.records.row[r], 0, 0, 0};
  hsize_t count[4] = {1, index.height, index.width, index.channels};
  H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr);
  h5::Handle mem(H5Screate_simple(4, count, nullptr));
  std::vector<uint8_t> pixels(index.record_bytes());
  EXPECT_GE(
      H5Dread(images.get(), H5T_NATIVE_UINT8, mem.get(), space.get(), H5P_DEFAULT, pixels.data()),
      0);
  return pixels;
}

TEST(Convert, WritesTheFormatContract) {
  test::TempDir dir;
  make_tree(dir / "src");
  ConvertResult result = convert(options_for(dir / "src", dir / "out"));
  EXPECT_EQ(result.samples, 6u);
  EXPECT_EQ(result.records, 6u);
  EXPECT_EQ(result.ignored_files, 1u);
  EXPECT_TRUE(result.skipped.empty());

  DatasetIndex index = read_index(dir / "out");
  EXPECT_EQ(index.format_version, 2);
  EXPECT_EQ(index.height, 24u);
  EXPECT_EQ(index.width, 32u);
  EXPECT_EQ(index.channels, 3u);
  EXPECT_EQ(index.variants, 1u);
  EXPECT_EQ(index.color, "rgb");
  EXPECT_EQ(index.class_names, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_FALSE(index.uuid.empty());
  auto options = nlohmann::json::parse(index.convert_options);
  EXPECT_EQ(options["width"], 32);
  EXPECT_EQ(options["resize"], "crop");

  std::set<std::string> paths(index.sample_path.begin(), index.sample_path.end());
  EXPECT_EQ(paths, (std::set<std::string>{"cat/a.jpg", "cat/b.png", "cat/deep/er/c.jpg",
                                          "dog/alpha.png", "dog/e.JPEG", "dog/gray.jpg"}));

  // Index file attributes and the shard columns agree with the record table.
  h5::File index_file = h5::File::open_read(dir / "out" / "index.h5");
  EXPECT_EQ(index_file.read_int_attr("/", "imgpack_format"), 2);
  ASSERT_EQ(index.num_shards(), 1u);
  h5::File shard = h5::File::open_read(dir / "out" / index.shards.file[0]);
  EXPECT_EQ(shard.read_string_attr("/", "dataset_uuid"), index.uuid);
  EXPECT_EQ(shard.read_int_attr("/", "shard_index"), 0);
  EXPECT_EQ(shard.read_int_attr("/", "imgpack_format"), 1);
  EXPECT_EQ(shard.shape("/images"), (std::vector<uint64_t>{6, 24, 32, 3}));
  std::vector<int32_t> labels = shard.read<int32_t>("/labels");
  std::vector<int64_t> samples = shard.read<int64_t>("/sample");
  std::vector<uint16_t> variants = shard.read<uint16_t>("/variant");
  std::vector<uint64_t> sums = shard.read<uint64_t>("/checksum");
  for (std::size_t r = 0; r < index.num_records(); ++r) {
    uint32_t row = index.records.row[r];
    EXPECT_EQ(samples[row], index.records.sample[r]);
    EXPECT_EQ(variants[row], 0);
    EXPECT_EQ(labels[row], index.sample_label[static_cast<std::size_t>(samples[row])]);
    EXPECT_EQ(sums[row], checksum(read_record(dir / "out", index, r)));
  }
  // Labels map to folder names.
  for (std::size_t s = 0; s < index.num_samples(); ++s) {
    std::string folder = index.sample_path[s].substr(0, index.sample_path[s].find('/'));
    EXPECT_EQ(index.class_names[static_cast<std::size_t>(index.sample_label[s])], folder);
    EXPECT_EQ(index.sample_group[s], -1);
  }
  nlohmann::json report = nlohmann::json::parse(test::read_bytes(dir / "out" / "report.json"));
  EXPECT_EQ(report["records"], 6);
  EXPECT_EQ(report["samples"], 6);
  EXPECT_TRUE(report["skipped"].empty());
  EXPECT_EQ(report["options"]["height"], 24);
}

TEST(Convert, EveryRecordEqualsOpenCvDecodePlusTheSameResize) {
  test::TempDir dir;
  make_tree(dir / "src");
  for (bool dct : {false, true}) {
    ConvertOptions options = options_for(dir / "src", dir / (dct ? "dct" : "full"));
    options.dct_scaling = dct;
    options.fill = {255, 255, 255};
    convert(options);
    DatasetIndex index = read_index(options.out);
    ResizeSpec spec{32, 24, ResizeMode::crop, options.fill};
    for (std::size_t r = 0; r < index.num_records(); ++r) {
      const std::string& rel = index.sample_path[static_cast<std::size_t>(index.records.sample[r])];
      // (alpha.png is fully opaque, so its composite equals the colour channels.)
      cv::Mat source = test::opencv_decode_rgb(dir / "src" / rel);
      cv::Mat expected(24, 32, CV_8UC3);
      resize_into(source, spec, expected.data);
      std::vector<uint8_t> pixels = read_record(options.out, index, r);
      cv::Mat actual(24, 32, CV_8UC3, pixels.data());
      double diff = test::mean_abs_diff(actual, expected);
      // Full decode matches OpenCV to rounding. DCT-domain downscaling
      // resamples differently; on these noise-textured images (the worst
      // case) that costs a few levels, while a wrong crop, channel order or
      // orientation costs tens.
      EXPECT_LT(diff, dct ? 8.0 : 0.5) << rel << (dct ? " (DCT scaled)" : "");
    }
  }
}

// Variant 0 of every record, by its input's path.
std::map<std::string, std::vector<uint8_t>> records_by_path(const fs::path& dataset) {
  const DatasetIndex index = read_index(dataset);
  std::map<std::string, std::vector<uint8_t>> records;
  for (std::size_t r = 0; r < index.num_records(); ++r) {
    const auto sample = static_cast<std::size_t>(index.records.sample[r]);
    records[index.sample_path[sample]] = read_record(dataset, index, r);
  }
  return records;
}

// A dataset keeps the DCT scales it was converted with: an append to one that
// names eighths (as the options of every dataset converted before
// ConvertOptions::dct_scales mean) decodes its new inputs as a conversion of
// all of them with eighths does, not with a new conversion's halvings.
TEST(Convert, AnAppendDecodesAtTheScalesTheDatasetWasConvertedWith) {
  test::TempDir dir;
  // 200x150 JPEGs to 90x90 centre crops: 1/2 (100x75) is too small, so
  // halvings decode at full size and eighths at 5/8 (125x94).
  for (int i = 0; i < 6; ++i) {
    const std::string name = "c/" + std::to_string(i) + ".jpg";
    test::write_image(dir / "all" / name, test::make_rgb_image(200, 150, 40 + i),
                      {cv::IMWRITE_JPEG_QUALITY, 90});
    if (i >= 3) continue;  // the append brings 3..5
    fs::create_directories(dir / "first" / "c");
    fs::copy_file(dir / "all" / name, dir / "first" / name);
    fs::last_write_time(dir / "first" / name, fs::last_write_time(dir / "all" / name));
  }
  auto convert_with = [&](const char* src, const char* out, DctScales scales) {
    ConvertOptions options = options_for(dir / src, dir / out);
    options.size = {{90, 90}};
    options.dct_scales = scales;
    convert(options);
  };
  convert_with("first", "grown", DctScales::eighths);
  AppendOptions append_options;
  append_options.src = dir / "all";
  append_options.dataset = dir / "grown";
  append_options.threads = 2;
  EXPECT_EQ(append(append_options).added, 3u);
  convert_with("all", "eighths", DctScales::eighths);
  convert_with("all", "halvings", DctScales::halvings);

  const auto grown = records_by_path(dir / "grown");
  const auto eighths = records_by_path(dir / "eighths");
  const auto halvings = records_by_path(dir / "halvings");
  ASSERT_EQ(grown.size(), 6u);
  ASSERT_EQ(eighths.size(), 6u);
  for (const auto& [path, pixels] : grown) {
    EXPECT_EQ(pixels, eighths.at(path)) << path;
    EXPECT_NE(pixels, halvings.at(path)) << path;
  }
}

TEST(Convert, BadInputsAreSkippedAndReportedWhileTheRestConverts) {
  test::TempDir dir;
  make_tree(dir / "src");
  std::string jpeg = test::read_bytes(dir / "src" / "cat" / "a.jpg");
  test::write_bytes(dir / "src" / "cat" / "truncated.jpg", jpeg.substr(0, jpeg.size() / 2));
  test::write_bytes(dir / "src" / "cat" / "empty.jpg", "");
  test::write_bytes(dir / "src" / "dog" / "text.jpg", "hello, I am not a JPEG\n");
  auto before = test::directory_snapshot(dir / "src");

  ConvertOptions options = options_for(dir / "src", dir / "out");
  options.max_skipped.count = 3;  // the three above, a third of the inputs
  ConvertResult result = convert(options);
  EXPECT_EQ(result.samples, 6u);
  std::map<std::string, std::string> reasons;
  for (const SkippedInput& s : result.skipped) reasons[s.path] = s.reason;
  ASSERT_EQ(reasons.size(), 3u);
  EXPECT_NE(reasons["cat/truncated.jpg"].find("JPEG"), std::string::npos)
      << reasons["cat/truncated.jpg"];
  EXPECT_NE(reasons["cat/empty.jpg"].find("empty"), std::string::npos);
  EXPECT_NE(reasons["dog/text.jpg"].find("not an image"), std::string::npos);

  nlohmann::json report = nlohmann::json::parse(test::read_bytes(dir / "out" / "report.json"));
  ASSERT_EQ(report["skipped"].size(), 3u);
  for (const auto& entry : report["skipped"]) {
    EXPECT_TRUE(reasons.count(entry["path"].get<std::string>()));
    EXPECT_FALSE(entry["reason"].get<std::string>().empty());
  }
  DatasetIndex index = read_index(dir / "out");
  EXPECT_EQ(index.num_samples(), 6u);
  // The last shard was sized for 9 inputs and still holds exactly 6 records.
  h5::File shard = h5::File::open_read(dir / "out" / index.shards.file[0]);
  EXPECT_EQ(shard.shape("/images")[0], 6u);
  EXPECT_EQ(test::directory_snapshot(dir / "src"), before) << "SRC was modified";
}

// A split the plan could make over every input may not fit the images left
// once some fail to decode (more folds than images). The conversion is not
// lost to it: the dataset is finished without that split, the others
// stored, and the error (not a UsageError: the request was sound) says so.
TEST(Convert, ASplitThatNoLongerFitsLeavesTheDatasetCompleteWithoutIt) {
  test::TempDir dir;
  make_tree(dir / "src");
  const std::string jpeg = test::read_bytes(dir / "src" / "cat" / "a.jpg");
  test::write_bytes(dir / "src" / "cat" / "truncated.jpg", jpeg.substr(0, jpeg.size() / 2));
  ConvertOptions options = options_for(dir / "src", dir / "out");
  options.max_skipped.count = 1;
  options.splits = {parse_split_option("cv:random:7", 0), parse_split_option("two:random:2", 0)};
  try {
    convert(options);
    ADD_FAILURE() << "a split of 7 folds over 6 images was made";
  } catch (const UsageError& e) {
    ADD_FAILURE() << "a UsageError: " << e.what();
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("converted, 1 input skipped, but split cv was not made over the 6 "
                           "images converted: "),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("The dataset is complete without it"), std::string::npos) << message;
    EXPECT_EQ(message.find("journal"), std::string::npos) << message;
  }
  const DatasetIndex index = read_index(dir / "out");
  EXPECT_EQ(index.num_samples(), 6u);
  EXPECT_EQ(index.find_split("cv"), nullptr);
  ASSERT_NE(index.find_split("two"), nullptr);
  EXPECT_TRUE(verify_dataset(dir / "out", {}).ok());
  EXPECT_FALSE(fs::exists(dir / "out" / "convert.journal"));
}

TEST(Convert, OnErrorFailStopsWithoutAnIndex) {
  test::TempDir dir;
  make_tree(dir / "src");
  test::write_bytes(dir / "src" / "cat" / "empty.jpg", "");
  ConvertOptions options = options_for(dir / "src", dir / "out");
  options.on_error = OnError::fail;
  const std::string message = runtime_failure(options);
  EXPECT_NE(message.find("empty.jpg"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(dir / "out" / "index.h5"));
  for (const auto& entry : fs::directory_iterator(dir / "out")) {
    EXPECT_FALSE(entry.path().string().ends_with(".tmp")) << entry.path();
  }
  EXPECT_THROW(read_index(dir / "out"), Error);
}

// OnError::fail stops at what the scan skips too (here a link to nothing and
// an image outside any class folder), before converting anything: it is no
// more lenient than the default, whose budget these two would pass.
TEST(Convert, FailOnErrorStopsAtTheScansSkips) {
  test::TempDir dir;
  make_tree(dir / "src");
  fs::create_symlink(dir / "nowhere.png", dir / "src" / "cat" / "gone.png");
  test::write_bytes(dir / "src" / "loose.png", "");
  ConvertOptions options = options_for(dir / "src", dir / "out");
  options.on_error = OnError::fail;
  const std::string message = runtime_failure(options);
  EXPECT_NE(message.find((dir / "src").string() + "/"), std::string::npos) << message;
  EXPECT_NE(message.find("(OnError::fail; 2 inputs skipped, stopped without writing index.h5)"),
            std::string::npos)
      << message;
  EXPECT_FALSE(fs::exists(dir / "out" / "index.h5"));
  // report.json lists both, as for a run past max_skipped.
  const auto report = nlohmann::json::parse(test::read_bytes(dir / "out" / "report.json"));
  EXPECT_EQ(report["skipped"].size(), 2u);
  options.on_error = OnError::skip;
  options.max_skipped.fraction = 1.0;
  options.overwrite = true;
  EXPECT_EQ(convert(options).skipped.size(), 2u);
}

// Inputs that all fail (within the skip budget) leave no dataset, and
// report.json lists why each failed, as for a run past max_skipped.
TEST(Convert, NoImageConvertedLeavesTheReasonsInTheReport) {
  test::TempDir dir;
  test::write_bytes(dir / "src" / "cat" / "a.ppm", std::string("P6\n4 4\n255\n\x01\x02"));
  test::write_bytes(dir / "src" / "cat" / "b.png", "");
  ConvertOptions options = options_for(dir / "src", dir / "out");
  options.max_skipped.fraction = 1.0;
  const std::string message = runtime_failure(options);
  EXPECT_NE(message.find("none of the 2 images could be converted"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(dir / "out" / "index.h5"));
  const auto report = nlohmann::json::parse(test::read_bytes(dir / "out" / "report.json"));
  ASSERT_EQ(report["skipped"].size(), 2u);
  EXPECT_TRUE(message.starts_with(report["failed"].get<std::string>())) << message;
  bool named = false;
  for (const auto& skipped : report["skipped"]) {
    if (skipped["path"] == "cat/a.ppm") {
      EXPECT_EQ(skipped["reason"],
                "corrupt PNM: truncated: 2 bytes of pixel data where its header declares 48");
      named = true;
    }
  }
  EXPECT_TRUE(named) << report.dump();
}

// A run stops as soon as it has skipped more inputs than max_skipped allows,
// not after converting everything else, and leaves report.json saying why.
TEST(Convert, MaxSkippedStopsTheRunOnceItIsPassed) {
  test::TempDir dir;
  make_tree(dir / "src");
  for (int i = 0; i < 3; ++i) {
    test::write_bytes(dir / "src" / "cat" / ("0-broken-" + std::to_string(i) + ".png"), "");
  }
  ConvertOptions options = options_for(dir / "src", dir / "out");
  options.order = WriteOrder::sorted;
  options.threads = 1;
  options.max_skipped.count = 1;
  uint64_t last_done = 0;
  const std::string message =
      runtime_failure(options, [&](const ConvertProgress& p) { last_done = p.done; });
  EXPECT_NE(message.find("2 of the 9 inputs skipped so far"), std::string::npos) << message;
  EXPECT_EQ(last_done, 1u);  // the second skip stopped it
  EXPECT_FALSE(fs::exists(dir / "out" / "index.h5"));
  const auto report = nlohmann::json::parse(test::read_bytes(dir / "out" / "report.json"));
  EXPECT_EQ(report["skipped"].size(), 2u);
  EXPECT_TRUE(report.contains("failed"));

  // Scan-time skips count too; a fraction applies to every input found.
  options.overwrite = true;
  options.max_skipped = SkipLimit{};
  options.max_skipped.fraction = 0.3;  // 2 of 9 allowed: the third fails
  EXPECT_THROW(convert(options), Error);
  options.max_skipped.fraction = 0.34;  // 3 of 9
  EXPECT_EQ(convert(options).skipped.size(), 3u);
  // --on-error fail has no budget: it stops at the first.
  options.on_error = OnError::fail;
  EXPECT_THROW(convert(options), Error);
}

TEST(Convert, OutputIsIdenticalForOneAndTwoThreads) {
  test::TempDir dir;
  make_tree(dir / "src");
  for (unsigned threads : {1u, 2u}) {
    ConvertOptions options = options_for(dir / "src", dir / ("t" + std::to_string(threads)));
    options.threads = threads;
    options.shard_size = uint64_t{3} * 32 * 24 * 3;  // several shards
    convert(options);
  }
  DatasetIndex index = read_index(dir / "t1");
  EXPECT_EQ(index.num_shards(), 2u);
  for (const std::string& name : index.shards.file) {
    EXPECT_EQ(test::read_bytes(dir / "t1" / name), test::read_bytes(dir / "t2" / name)) << name;
  }
  EXPECT_EQ(test::read_bytes(dir / "t1" / "index.h5"), test::read_bytes(dir / "t2" / "index.h5"));
}

TEST(Convert, ShardsHoldAtMostShardSizeBytesOfWholeRecords) {
  test::TempDir dir;
  make_tree(dir / "src");
  ConvertOptions options = options_for(dir / "src", dir / "out");
  options.shard_size = 2 * 32 * 24 * 3 + 100;
  convert(options);
  DatasetIndex index = read_index(dir / "out");
  EXPECT_EQ(index.shards.records, (std::vector<uint64_t>{2, 2, 2}));
}

TEST(Convert, WriteOrderIsASeededShuffleOrSorted) {
  test::TempDir dir;
  make_tree(dir / "src");
  auto order_of = [&](WriteOrder order, uint64_t seed, const std::string& name) {
    ConvertOptions options = options_for(dir / "src", dir / name);
    options.order = order;
    options.seed = seed;
    convert(options);
    return read_index(dir / name).sample_path;
  };
  std::vector<std::string> sorted = order_of(WriteOrder::sorted, 0, "sorted");
  EXPECT_TRUE(std::is_sorted(sorted.begin(), sorted.end()));
  std::vector<std::string> a = order_of(WriteOrder::shuffle, 1, "a");
  std::vector<std::string> b = order_of(WriteOrder::shuffle, 2, "b");
  EXPECT_NE(a, b);
  EXPECT_TRUE(std::is_permutation(a.begin(), a.end(), sorted.begin()));
}

TEST(Convert, WithoutSizeInputsMustShareOne) {
  test::TempDir dir;
  test::write_image(dir / "same" / "x" / "1.png", test::make_rgb_image(40, 30, 1));
  test::write_image(dir / "same" / "y" / "2.jpg", test::make_rgb_image(40, 30, 2));
  ConvertOptions options = options_for(dir / "same", dir / "out");
  options.size.reset();
  ConvertResult result = convert(options);
  EXPECT_EQ(result.width, 40u);
  EXPECT_EQ(result.height, 30u);

  test::write_image(dir / "same" / "y" / "3.jpg", test::make_rgb_image(41, 30, 3));
  options.out = dir / "out2";
  try {
    convert(options);
    FAIL() << "expected a usage error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("ConvertOptions::size"), std::string::npos) << e.what();
  }
}

// Without --size, a few inputs of another size (a corrupt file whose header
// declares one, say) are skipped with the reason, within max_skipped, instead
// of stopping the conversion; a real mix of sizes still is a usage error.
TEST(Convert, WithoutSizeAFewInputsOfAnotherSizeAreSkipped) {
  test::TempDir dir;
  for (int i = 0; i < 4; ++i) {
    test::write_image(dir / "src" / "x" / (std::to_string(i) + ".png"),
                      test::make_rgb_image(40, 30, static_cast<uint64_t>(i)));
  }
  test::write_image(dir / "src" / "y" / "odd.png", test::make_rgb_image(41, 30, 9));
  ConvertOptions options = options_for(dir / "src", dir / "out");
  options.size.reset();
  options.max_skipped.count = 1;
  const ConvertResult result = convert(options);
  EXPECT_EQ(result.width, 40u);
  EXPECT_EQ(result.samples, 4u);
  ASSERT_EQ(result.skipped.size(), 1u);
  EXPECT_EQ(result.skipped[0].path, "y/odd.png");
  EXPECT_NE(result.skipped[0].reason.find("is 41x30, not the 40x30 of the other inputs"),
            std::string::npos)
      << result.skipped[0].reason;

  // Two of each: no size holds the rest, whatever max_skipped allows.
  test::write_image(dir / "src" / "y" / "odd2.png", test::make_rgb_image(41, 30, 10));
  test::write_image(dir / "src" / "y" / "odd3.png", test::make_rgb_image(41, 30, 11));
  std::filesystem::remove(dir / "src" / "x" / "0.png");
  options.out = dir / "out2";
  options.max_skipped.count = 3;
  EXPECT_THROW(convert(options), UsageError);
  // With OnError::fail nothing is skipped silently.
  options.on_error = OnError::fail;
  std::filesystem::remove(dir / "src" / "y" / "odd3.png");
  options.out = dir / "out3";
  EXPECT_THROW(convert(options), UsageError);
}

// ResizeMode::crop cuts inputs of another aspect ratio: the result says how
// much, once per common input size; inputs of the output's aspect lose nothing.
TEST(Convert, CropSaysHowMuchItCutsFromInputsOfAnotherAspect) {
  test::TempDir dir;
  for (int i = 0; i < 3; ++i) {
    test::write_image(dir / "src" / "x" / (std::to_string(i) + ".png"),
                      test::make_rgb_image(64, 24, static_cast<uint64_t>(i)));
  }
  test::write_image(dir / "src" / "y" / "tall.png", test::make_rgb_image(32, 48, 7));
  test::write_image(dir / "src" / "y" / "same.png", test::make_rgb_image(64, 48, 8));
  ConvertOptions options = options_for(dir / "src", dir / "out");  // 32x24 output
  options.max_skipped.count = 0;
  const ConvertResult result = convert(options);
  ASSERT_EQ(result.resize_notes.size(), 2u);
  // 64x24 scaled by 1 keeps 32 of 64 columns; 32x48 scaled by 1 keeps 24 of 48 rows.
  EXPECT_EQ(result.resize_notes[0],
            "crop keeps 50% of the width of 64x24 inputs (3 of them); ResizeMode::pad keeps all "
            "of it");
  EXPECT_EQ(result.resize_notes[1],
            "crop keeps 50% of the height of 32x48 inputs (1 of them); ResizeMode::pad keeps "
            "all of it");

  options.out = dir / "padded";
  options.resize = ResizeMode::pad;
  EXPECT_TRUE(convert(options).resize_notes.empty());
}

TEST(Convert, GrayOutputAndUnlabeledInputs) {
  test::TempDir dir;
  make_tree(dir / "src");
  test::write_image(dir / "src" / "top.png", test::make_rgb_image(40, 40, 9));
  ConvertOptions options = options_for(dir / "src", dir / "out");
  options.color = ColorMode::gray;
  options.scan.labels = LabelSource::none;
  ConvertResult result = convert(options);
  EXPECT_EQ(result.samples, 7u);
  DatasetIndex index = read_index(dir / "out");
  EXPECT_EQ(index.channels, 1u);
  EXPECT_EQ(index.color, "gray");
  EXPECT_TRUE(index.class_names.empty());
  for (int32_t label : index.sample_label) EXPECT_EQ(label, -1);
}

TEST(Convert, FilesOutsideClassFoldersAreSkippedWithDirLabels) {
  test::TempDir dir;
  make_tree(dir / "src");
  test::write_image(dir / "src" / "top.png", test::make_rgb_image(40, 40, 9));
  ConvertOptions options = options_for(dir / "src", dir / "out");
  options.max_skipped.count = 1;
  ConvertResult result = convert(options);
  ASSERT_EQ(result.skipped.size(), 1u);
  EXPECT_EQ(result.skipped[0].path, "top.png");
}

TEST(Convert, RefusesToClobberOrToWriteIntoSrc) {
  test::TempDir dir;
  make_tree(dir / "src");
  ConvertOptions options = options_for(dir / "src", dir / "out");
  convert(options);
  EXPECT_THROW(convert(options), UsageError);  // OUT holds a dataset
  options.overwrite = true;
  EXPECT_NO_THROW(convert(options));
  test::write_bytes(dir / "out" / "mine.txt", "user data");
  EXPECT_THROW(convert(options), UsageError);  // a file imgpack did not write
  EXPECT_TRUE(fs::exists(dir / "out" / "mine.txt"));

  ConvertOptions inside = options_for(dir / "src", dir / "src" / "packed");
  EXPECT_THROW(convert(inside), UsageError);
  EXPECT_FALSE(fs::exists(dir / "src" / "packed"));

  ConvertOptions missing = options_for(dir / "nowhere", dir / "out3");
  EXPECT_THROW(convert(missing), UsageError);
}

// Two conversions into one OUT at once would remove each other's files: the
// second is refused while the first holds OUT, and nothing of OUT is touched.
TEST(Convert, AConcurrentConversionIntoTheSameOutIsRefused) {
  test::TempDir dir;
  make_tree(dir / "src");
  const ConvertOptions options = options_for(dir / "src", dir / "out");
  fs::create_directories(dir / "out");
  test::write_bytes(dir / "out" / "convert.journal", "");  // as a run just started leaves it
  {
    const DirectoryLock running(dir / "out");  // what a running conversion holds
    ConvertOptions resumed = options;
    resumed.resume = true;
    try {
      convert(resumed);
      FAIL() << "expected a usage error";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("another conversion"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(fs::exists(dir / "out" / "convert.journal"));
  }
  ConvertOptions resumed = options;
  resumed.resume = true;
  EXPECT_GT(convert(resumed).samples, 0u);  // the lock released, the run goes on
}

// An OUT that is a link leading to no directory (its target missing, or a
// loop) is the request's fault, named as such; nothing is created.
TEST(Convert, AnOutThatIsALinkToNothingIsRefusedNamingTheLink) {
  test::TempDir dir;
  make_tree(dir / "src");
  fs::create_directory_symlink(dir / "nowhere", dir / "dangling");
  fs::create_directory_symlink(dir / "loop", dir / "loop");
  for (const char* name : {"dangling", "loop"}) {
    SCOPED_TRACE(name);
    try {
      convert(options_for(dir / "src", dir / name));
      FAIL() << "expected a usage error";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()), (dir / name).string() + ": a link to " +
                                           fs::read_symlink(dir / name).string() +
                                           " that leads to no directory; create the directory "
                                           "it names, or give another OUT");
    }
  }
  EXPECT_FALSE(fs::exists(dir / "nowhere"));
  fs::create_directory(dir / "nowhere");  // the way on it names
  EXPECT_GT(convert(options_for(dir / "src", dir / "dangling")).samples, 0u);
  EXPECT_TRUE(fs::exists(dir / "nowhere" / "index.h5"));
}

TEST(Convert, ReportsProgressInOrder) {
  test::TempDir dir;
  make_tree(dir / "src");
  std::vector<uint64_t> done;
  convert(options_for(dir / "src", dir / "out"), [&](const ConvertProgress& p) {
    EXPECT_EQ(p.total, 6u);
    done.push_back(p.done);
  });
  EXPECT_EQ(done, (std::vector<uint64_t>{1, 2, 3, 4, 5, 6}));
}

}  // namespace
}  // namespace imgpack
