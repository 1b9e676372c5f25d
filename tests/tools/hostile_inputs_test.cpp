// imgpack convert on inputs built to break it: truncated, empty and random
// files with image extensions, decompression bombs, 1x1 and tiny images,
// CMYK and 16-bit, symbolic link loops, FIFOs, unreadable files, and names
// with spaces, newlines and bytes that are not UTF-8. Each input is either
// converted correctly or skipped with a reason in report.json; the tool
// never crashes or hangs (every run is under a time limit), and the dataset
// it writes verifies clean and reads back in h5py.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <set>

#include "image_fixtures.hpp"
#include "imgpack/dataset.hpp"
#include "imgpack/dataset_index.hpp"
#include "random.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;
using test::CommandResult;
using test::encode_image;
using test::shell_quote;
using test::write_bytes;

std::string q(const fs::path& p) { return shell_quote(p.string()); }

// imgpack under a time limit: a hang is exit 137 (SIGKILL), not a stuck test.
CommandResult run_limited(const std::string& arguments) {
  return test::run_command("timeout -s KILL 300 " + shell_quote(test::imgpack_cli()) + " " +
                           arguments);
}

std::string random_bytes(uint64_t seed, std::size_t size) {
  CounterRng rng(seed, 0x686f7374);
  std::string bytes(size, '\0');
  for (char& c : bytes) c = static_cast<char>(rng.next() >> 56);
  return bytes;
}

// The record of every converted sample (variant 0), by source path.
std::map<std::string, cv::Mat> records_by_path(const fs::path& dataset) {
  Dataset d = Dataset::open(dataset, DatasetOpenOptions{.verify_checksums = true, .index = {}});
  std::map<std::string, cv::Mat> out;
  for (uint64_t r = 0; r < d.num_records(); ++r) {
    const cv::Mat record(static_cast<int>(d.height()), static_cast<int>(d.width()),
                         CV_8UC(static_cast<int>(d.channels())),
                         const_cast<uint8_t*>(d.record_data(r)));
    out[d.index().sample_path[static_cast<std::size_t>(d.record_sample(r))]] = record.clone();
  }
  return out;
}

class HostileInputsTest : public ::testing::Test {
 protected:
  void add(const std::string& rel, const std::string& bytes) { write_bytes(src_ / rel, bytes); }
  void expect_converted(const std::string& rel, const std::string& bytes) {
    add(rel, bytes);
    converted_.insert(rel);
  }
  void expect_skipped(const std::string& rel, const std::string& bytes) {
    add(rel, bytes);
    skipped_.insert(rel);
  }

  test::TempDir dir_;
  fs::path src_ = dir_ / "src";
  fs::path out_ = dir_ / "out";
  std::set<std::string> converted_, skipped_;
};

TEST_F(HostileInputsTest, EveryInputIsConvertedOrSkippedWithAReason) {
  const cv::Mat picture = test::make_rgb_image(64, 48, 5);
  const std::string jpeg = encode_image(".jpg", picture);
  const std::string png = encode_image(".png", picture);
  const std::string tiff = encode_image(".tif", picture);
  const std::string webp = encode_image(".webp", picture);
  const std::string bmp = encode_image(".bmp", picture);

  // Truncated: each format cut inside its pixel data, and after its header.
  for (const auto& [ext, bytes] : std::map<std::string, std::string>{
           {"jpg", jpeg}, {"png", png}, {"tif", tiff}, {"webp", webp}, {"bmp", bmp}}) {
    expect_skipped("bad/truncated-half." + ext, bytes.substr(0, bytes.size() / 2));
    expect_skipped("bad/truncated-head." + ext, bytes.substr(0, 40));
    expect_skipped("bad/zero." + ext, "");
  }
  // Random bytes with image extensions, bare and behind a valid signature.
  const char* extensions[] = {"jpg", "jpeg", "png", "tif", "tiff", "webp",
                              "bmp", "ppm",  "pgm", "pam", "pbm",  "jfif"};
  uint64_t seed = 1;
  for (const char* ext : extensions) {
    expect_skipped(std::string("bad/random-") + ext + "." + ext,
                   random_bytes(seed, 100 + seed * 997));
    ++seed;
  }
  expect_skipped("bad/random-after-signature.jpg",
                 std::string("\xFF\xD8\xFF\xE0", 4) + random_bytes(40, 5000));
  expect_skipped("bad/random-after-signature.png",
                 std::string("\x89PNG\r\n\x1A\n", 8) + random_bytes(41, 5000));
  expect_skipped("bad/random-after-signature.tif",
                 std::string("II*\0", 4) + random_bytes(42, 5000));
  expect_skipped("bad/random-after-signature.webp",
                 "RIFF" + std::string("\x00\x10\x00\x00", 4) + "WEBPVP8 " + random_bytes(43, 4000));
  // Decompression bombs: tiny files declaring 60000 x 60000.
  for (const auto& [name, kind] : std::map<std::string, std::string>{{"bomb.jpg", "jpeg"},
                                                                     {"bomb.png", "png"},
                                                                     {"bomb.bmp", "bmp"},
                                                                     {"bomb.tif", "tiff"},
                                                                     {"bomb-big.tif", "bigtiff"},
                                                                     {"bomb.webp", "webp"},
                                                                     {"bomb.ppm", "pnm"},
                                                                     {"bomb.pam", "pam"}}) {
    expect_skipped("bad/" + name, test::bomb_header(kind, 60000, 60000));
  }

  // A 3 GiB file (sparse: no disk used) is refused without being read.
  expect_skipped("bad/huge.jpg", jpeg);
  fs::resize_file(src_ / "bad/huge.jpg", uint64_t{3} << 30);

  // Tiny and smaller-than-target images are upscaled.
  cv::Mat one(1, 1, CV_8UC3, cv::Scalar(200, 40, 90));
  expect_converted("good/one-pixel.png", encode_image(".png", one));
  expect_converted("good/one-pixel.jpg", encode_image(".jpg", one));
  expect_converted("good/one-by-nine.png", encode_image(".png", test::make_rgb_image(1, 9, 2)));
  expect_converted("good/line.png", encode_image(".png", test::make_rgb_image(1000, 1, 3)));
  expect_converted("good/small.png", encode_image(".png", test::make_rgb_image(7, 5, 4)));
  // CMYK, 16-bit colour and 16-bit gray.
  cv::Mat cmyk(48, 64, CV_8UC4);
  cmyk.forEach<cv::Vec4b>([&](cv::Vec4b& p, const int* pos) {
    const cv::Vec3b& c = picture.at<cv::Vec3b>(pos[0], pos[1]);
    p = cv::Vec4b(c[0], c[1], c[2], 255);
  });
  expect_converted("good/cmyk.jpg", test::cmyk_jpeg(cmyk, 95));
  cv::Mat deep;
  picture.convertTo(deep, CV_16UC3, 257.0);
  expect_converted("good/16bit.png", encode_image(".png", deep));
  expect_converted("good/16bit.tif", encode_image(".tif", deep));
  std::vector<uint16_t> gray16(std::size_t{8} * 6);
  for (std::size_t i = 0; i < gray16.size(); ++i) gray16[i] = static_cast<uint16_t>(i * 1300);
  expect_converted("good/gray16.png", test::png_raw(8, 6, 0, 16, gray16));
  // A PNG named .jpg: decoders look at the content.
  expect_converted("good/png-named.jpg", png);
  // Awkward names.
  const std::string latin1 = "good/caf\xE9 cr\xE8me.png";  // ISO-8859-1, not UTF-8
  expect_converted(latin1, png);
  expect_converted("good/with space.png", png);
  expect_converted("good/ leading and trailing .png", png);
  expect_converted("good/tab\tand\nnewline.png", png);
  expect_converted("good/\"quoted\", comma.png", png);
  expect_converted("\xFF\xFE class/image.png", png);  // a class folder that is not UTF-8

  // Links: a loop back to SRC, a link to itself, a dangling link; a FIFO.
  fs::create_directory_symlink("..", src_ / "good" / "loop");
  fs::create_symlink("self.jpg", src_ / "bad" / "self.jpg");
  fs::create_symlink("nowhere.png", src_ / "bad" / "dangling.png");
  skipped_.insert("bad/self.jpg");
  skipped_.insert("bad/dangling.png");
  ASSERT_EQ(::mkfifo((src_ / "bad" / "fifo.jpg").c_str(), 0600), 0);

  CommandResult r = run_limited("convert " + q(src_) + " " + q(out_) +
                                " --size 32 --threads 2 --quiet --json --max-skipped 100%");
  ASSERT_EQ(r.exit_code, 0) << "exit " << r.exit_code << " (>= 128: signal)\n" << r.err;

  // report.json is valid JSON (nlohmann's parser rejects invalid UTF-8).
  const nlohmann::json report = nlohmann::json::parse(test::read_bytes(out_ / "report.json"));
  std::map<std::string, std::string> reasons;
  for (const auto& s : report["skipped"]) reasons[s["path"]] = s["reason"];
  for (const std::string& path : skipped_) {
    SCOPED_TRACE(path);
    ASSERT_TRUE(reasons.count(path)) << "not in report.json's skipped list";
    EXPECT_FALSE(reasons[path].empty());
  }
  EXPECT_NE(reasons["bad/bomb.png"].find("60000x60000"), std::string::npos)
      << reasons["bad/bomb.png"];
  EXPECT_NE(reasons["bad/huge.jpg"].find("more than the 2048 MiB imgpack reads"), std::string::npos)
      << reasons["bad/huge.jpg"];
  EXPECT_NE(reasons["bad/self.jpg"].find("symbolic links"), std::string::npos)
      << reasons["bad/self.jpg"];
  EXPECT_NE(reasons["good/loop"].find("already visited"), std::string::npos)
      << reasons["good/loop"];

  // The index holds exactly the good inputs, names byte for byte.
  const DatasetIndex index = read_index(out_);
  const std::set<std::string> stored(index.sample_path.begin(), index.sample_path.end());
  EXPECT_EQ(stored, converted_);
  EXPECT_EQ(report["samples"], converted_.size());
  EXPECT_NE(std::find(index.class_names.begin(), index.class_names.end(), "\xFF\xFE class"),
            index.class_names.end());

  // Records: a 1x1 PNG fills the record with its one colour; 16-bit inputs
  // equal their 8-bit picture; CMYK is the picture up to JPEG loss.
  const std::map<std::string, cv::Mat> records = records_by_path(out_);
  EXPECT_EQ(test::max_pixel_difference(records.at("good/one-pixel.png"),
                                       cv::Mat(32, 32, CV_8UC3, cv::Scalar(200, 40, 90))),
            0);
  EXPECT_EQ(
      test::max_pixel_difference(records.at("good/16bit.png"), records.at("good/with space.png")),
      0);
  EXPECT_EQ(
      test::max_pixel_difference(records.at("good/16bit.tif"), records.at("good/with space.png")),
      0);
  EXPECT_EQ(test::max_pixel_difference(records.at(latin1), records.at("good/with space.png")), 0);
  EXPECT_LT(test::mean_abs_diff(records.at("good/cmyk.jpg"), records.at("good/with space.png")), 8);

  // verify finds the dataset intact, and every other command reads it,
  // names that are not UTF-8 included (JSON output must still parse).
  r = run_limited("verify " + q(out_));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run_limited("inspect " + q(out_) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["samples"], converted_.size());
  r = run_limited("split " + q(out_) + " --name cv --kind stratified --folds 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(nlohmann::json::accept(r.out)) << r.out;
  r = run_limited("split " + q(out_) + " --export cv --out -");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"good/tab\tand\nnewline.png\""), std::string::npos) << r.out;
  r = run_limited("preview " + q(out_) + " --out " + q(dir_ / "p.png") + " --samples 100");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run_limited("bench " + q(out_) +
                  " --batch 4 --threads 1 --epochs 1 --measure-seconds 0.2 --json --quiet");
  EXPECT_EQ(r.exit_code, 0) << r.err;

  // h5py reads the awkward names as the bytes they are.
  if (!test::python_has_modules({"h5py"})) GTEST_SKIP() << "h5py not available";
  r = test::run_command(
      test::system_python() + " -c " +
      shell_quote("import h5py, sys\n"
                  "f = h5py.File(sys.argv[1], 'r')\n"
                  "def strings(name):\n"
                  "    data, offsets = f[name + '/bytes'][:], f[name + '/offsets'][:]\n"
                  "    return [data[a:b].tobytes() for a, b in zip(offsets[:-1], offsets[1:])]\n"
                  "for p in strings('samples/path'):\n"
                  "    print(p.hex())\n"
                  "for c in strings('classes/name'):\n"
                  "    print('class', c.hex())\n") +
      " " + q(out_ / "index.h5"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto hex = [](const std::string& s) {
    static const char* digits = "0123456789abcdef";
    std::string h;
    for (unsigned char c : s) h += {digits[c >> 4], digits[c & 15]};
    return h;
  };
  for (const std::string& path : converted_) {
    EXPECT_NE(r.out.find(hex(path) + "\n"), std::string::npos) << path;
  }
  EXPECT_NE(r.out.find("class " + hex("\xFF\xFE class") + "\n"), std::string::npos) << r.out;
}

// The hostile mix: good JPEGs and PNGs interleaved (in path order, so in
// --order sorted write order) with every kind of broken input: JPEGs and PNGs
// cut at several offsets, damaged markers and chunks, zero-byte files, text,
// decompression bombs and FIFOs. Seeded, so the same files every run
// (IMGPACK_HOSTILE_SEED picks another mix). Every good input converts, to the
// same pixels as a conversion of the good inputs alone; every broken one is
// listed in report.json; and the dataset is byte-identical for --threads 1
// and 2 and across two runs.
TEST_F(HostileInputsTest, HostileMixLosesNoGoodInputAndIsDeterministic) {
  const char* seed_text = std::getenv("IMGPACK_HOSTILE_SEED");
  const uint64_t seed = seed_text != nullptr ? std::strtoull(seed_text, nullptr, 10) : 14;
  SCOPED_TRACE("IMGPACK_HOSTILE_SEED=" + std::to_string(seed));
  CounterRng rng(seed, 0x6d6978);
  const fs::path good_only = dir_ / "good-only";

  // A JPEG or PNG of a random size, and a broken file made from one.
  auto good_image = [&](bool jpeg) {
    const int width = 40 + static_cast<int>(rng.below(200));
    const int height = 40 + static_cast<int>(rng.below(200));
    const cv::Mat picture = test::make_rgb_image(width, height, rng.next());
    std::vector<int> params;
    if (jpeg && rng.below(4) == 0) params = {cv::IMWRITE_JPEG_PROGRESSIVE, 1};
    return encode_image(jpeg ? ".jpg" : ".png", picture, params);
  };
  const std::vector<std::string> broken_kinds = {
      "cut-jpeg-2",    "cut-jpeg-20",   "cut-jpeg-160", "cut-jpeg-400-900", "cut-jpeg-half",
      "cut-png-8",     "cut-png-30",    "cut-png-half", "bad-jpeg-marker",  "bad-png-chunk",
      "zero-byte.jpg", "zero-byte.png", "text.jpg",     "text.png",         "bomb.jpg",
      "bomb.png",      "fifo.jpg",      "fifo.png",     "cut-jpeg-sos",     "bad-jpeg-sof"};
  auto write_broken = [&](const std::string& rel, const std::string& kind) {
    const std::string jpeg = good_image(true);
    const std::string png = good_image(false);
    if (kind == "cut-jpeg-2") return add(rel, jpeg.substr(0, 2));
    if (kind == "cut-jpeg-20") return add(rel, jpeg.substr(0, 20));
    if (kind == "cut-jpeg-160") return add(rel, jpeg.substr(0, 160));
    if (kind == "cut-jpeg-400-900") return add(rel, jpeg.substr(0, 400 + rng.below(501)));
    if (kind == "cut-jpeg-half") return add(rel, jpeg.substr(0, jpeg.size() / 2));
    if (kind == "cut-jpeg-sos") return add(rel, jpeg.substr(0, jpeg.find("\xFF\xDA") + 6));
    if (kind == "cut-png-8") return add(rel, png.substr(0, 8));
    if (kind == "cut-png-30") return add(rel, png.substr(0, 30));
    if (kind == "cut-png-half") return add(rel, png.substr(0, png.size() / 2));
    if (kind == "bad-jpeg-marker") {
      std::string bad = jpeg;
      bad[bad.find("\xFF\xDB") + 1] = '\x01';  // the quantization table's marker
      return add(rel, bad);
    }
    if (kind == "bad-jpeg-sof") {
      std::string bad = jpeg;
      std::size_t sof = bad.find("\xFF\xC0");
      if (sof == std::string::npos) sof = bad.find("\xFF\xC2");  // progressive
      bad[sof + 9] = '\x07';                                     // components: 7
      return add(rel, bad);
    }
    if (kind == "bad-png-chunk") {
      std::string bad = png;
      bad[bad.find("IDAT") + 10] ^= 0x55;  // compressed data, so its CRC fails
      return add(rel, bad);
    }
    if (kind.starts_with("zero-byte")) return add(rel, "");
    if (kind.starts_with("text")) return add(rel, "plain text, not an image\n");
    if (kind == "bomb.jpg") return add(rel, test::bomb_header("jpeg", 60000, 60000));
    if (kind == "bomb.png") return add(rel, test::bomb_header("png", 60000, 60000));
    if (kind.starts_with("fifo")) {
      fs::create_directories((src_ / rel).parent_path());
      ASSERT_EQ(::mkfifo((src_ / rel).c_str(), 0600), 0) << rel;
      return;
    }
    FAIL() << "unknown kind " << kind;
  };

  // Per class folder, good and broken files alternate in path order; the
  // broken kinds cycle in a seeded order, each appearing at least twice.
  std::vector<std::string> kinds = broken_kinds;
  kinds.insert(kinds.end(), broken_kinds.begin(), broken_kinds.end());
  rng.shuffle(std::span(kinds));
  std::size_t n = 0;
  for (const std::string& kind : kinds) {
    const std::string folder = n % 2 == 0 ? "a/" : "b/";
    char number[16];
    std::snprintf(number, sizeof number, "%04zu", n++);
    const bool jpeg = rng.below(2) == 0;
    const std::string good = folder + number + "-good" + (jpeg ? ".jpg" : ".png");
    const std::string bytes = good_image(jpeg);
    expect_converted(good, bytes);
    write_bytes(good_only / good, bytes);
    const std::string ext = kind.find("png") != std::string::npos ? ".png" : ".jpg";
    const std::string broken =
        folder + number + "-x-" + kind + (kind.find('.') == std::string::npos ? ext : "");
    write_broken(broken, kind);
    skipped_.insert(broken);
  }
  ASSERT_EQ(converted_.size(), kinds.size());

  const std::string options = " --size 32 --order sorted --max-skipped 100% --quiet";
  std::vector<fs::path> outputs;
  for (const char* threads : {"1", "2", "2"}) {
    const fs::path out = dir_ / ("out-" + std::to_string(outputs.size()));
    CommandResult r =
        run_limited("convert " + q(src_) + " " + q(out) + options + " --threads " + threads);
    ASSERT_EQ(r.exit_code, 0) << "--threads " << threads << "\n" << r.err;
    outputs.push_back(out);
  }
  CommandResult r = run_limited("convert " + q(good_only) + " " + q(dir_ / "good-out") + options);
  ASSERT_EQ(r.exit_code, 0) << r.err;

  const nlohmann::json report = nlohmann::json::parse(test::read_bytes(outputs[0] / "report.json"));
  std::set<std::string> reported;
  for (const auto& s : report["skipped"]) {
    reported.insert(s["path"].get<std::string>());
    EXPECT_FALSE(s["reason"].get<std::string>().empty()) << s["path"];
  }
  EXPECT_EQ(reported, skipped_);
  const DatasetIndex index = read_index(outputs[0]);
  EXPECT_EQ(std::set<std::string>(index.sample_path.begin(), index.sample_path.end()), converted_);

  // The good inputs' pixels are what they are without the broken ones around.
  const std::map<std::string, cv::Mat> mixed = records_by_path(outputs[0]);
  const std::map<std::string, cv::Mat> alone = records_by_path(dir_ / "good-out");
  ASSERT_EQ(alone.size(), converted_.size());
  for (const auto& [path, record] : alone) {
    ASSERT_TRUE(mixed.count(path)) << path;
    EXPECT_EQ(test::max_pixel_difference(mixed.at(path), record), 0) << path;
  }
  test::expect_same_dataset_bytes(outputs[1], outputs[0]);
  test::expect_same_dataset_bytes(outputs[2], outputs[0]);
}

// More skipped inputs than --max-skipped allows (default 1%) fail the run
// loudly: exit 1, the count and the first reasons on stderr, every reason in
// report.json, no index.h5. --resume with a larger limit then finishes it.
TEST_F(HostileInputsTest, MoreSkippedThanMaxSkippedFailsLoudly) {
  const std::string png = encode_image(".png", test::make_rgb_image(8, 8, 3));
  for (int i = 0; i < 100; ++i) add("c/good-" + std::to_string(100 + i) + ".png", png);
  add("c/bad-1.jpg", "not a JPEG");
  const std::string convert = "convert " + q(src_) + " " + q(out_) + " --size 8 --quiet";
  // One of 101 is within 1%.
  CommandResult r = run_limited(convert);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  add("c/bad-2.png", "");
  r = run_limited(convert + " --overwrite");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("2 of the 102 inputs skipped so far, more than --max-skipped 1% allows (1)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("c/bad-1.jpg: not an image"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("c/bad-2.png: empty file"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out_ / "index.h5"));
  const nlohmann::json report = nlohmann::json::parse(test::read_bytes(out_ / "report.json"));
  EXPECT_EQ(report["skipped"].size(), 2u);
  // The CLI's report.json names the flags, as its messages do.
  EXPECT_NE(report["failed"].get<std::string>().find("more than --max-skipped 1% allows"),
            std::string::npos)
      << report["failed"];
  EXPECT_EQ(report["failed"].get<std::string>().find("ConvertOptions::"), std::string::npos)
      << report["failed"];
  // Read by every reader as the unfinished dataset it is.
  EXPECT_EQ(run_limited("inspect " + q(out_)).exit_code, 1);

  // A count or a larger fraction accepts them; --resume keeps what was written.
  r = run_limited(convert + " --resume --max-skipped 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["samples"], 100);
  r = run_limited(convert + " --overwrite --max-skipped 2%");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run_limited(convert + " --overwrite --max-skipped 1.5");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--max-skipped"), std::string::npos) << r.err;
}

TEST_F(HostileInputsTest, OnErrorFailNamesTheFirstBadFileAndLeavesNoIndex) {
  add("c/fine.png", encode_image(".png", test::make_rgb_image(20, 20, 1)));
  add("c/zz-random.png", random_bytes(9, 3000));
  CommandResult r =
      run_limited("convert " + q(src_) + " " + q(out_) + " --size 16 --quiet --on-error fail");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("zz-random.png"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out_ / "index.h5"));
}

TEST_F(HostileInputsTest, UnreadableFilesAndFoldersAreSkipped) {
  add("c/fine.png", encode_image(".png", test::make_rgb_image(20, 20, 1)));
  add("c/secret.png", encode_image(".png", test::make_rgb_image(20, 20, 2)));
  add("locked/hidden.png", encode_image(".png", test::make_rgb_image(20, 20, 3)));
  ASSERT_EQ(::chmod((src_ / "c/secret.png").c_str(), 0), 0);
  ASSERT_EQ(::chmod((src_ / "locked").c_str(), 0), 0);
  // Mode 000 does not stop root (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH): then
  // run imgpack as root without those two, if setpriv can drop them, or say
  // why nothing was tested. (As root still: another user, such as nobody,
  // could not run a build under /root.)
  std::string prefix;
  if (::access((src_ / "c/secret.png").c_str(), R_OK) == 0) {
    const std::string drop = "setpriv --bounding-set=-dac_override,-dac_read_search ";
    if (test::run_command(drop + "cat " + q(src_ / "c/secret.png") + " >/dev/null 2>&1")
            .exit_code == 0) {
      ::chmod((src_ / "locked").c_str(), 0755);  // so that TempDir can clean up
      GTEST_SKIP() << "mode-000 files stay readable here (CAP_DAC_OVERRIDE) and setpriv cannot "
                      "drop it: an unreadable file cannot be made";
    }
    prefix = drop;
  }
  CommandResult r = test::run_command("timeout -s KILL 300 " + prefix +
                                      shell_quote(test::imgpack_cli()) + " convert " + q(src_) +
                                      " " + q(out_) + " --size 16 --quiet --max-skipped 2");
  ::chmod((src_ / "locked").c_str(), 0755);
  ASSERT_EQ(r.exit_code, 0) << prefix << "\n" << r.err;
  const nlohmann::json report = nlohmann::json::parse(test::read_bytes(out_ / "report.json"));
  std::map<std::string, std::string> reasons;
  for (const auto& s : report["skipped"]) reasons[s["path"]] = s["reason"];
  EXPECT_NE(reasons["c/secret.png"].find("ermission denied"), std::string::npos)
      << reasons["c/secret.png"] << "\n"
      << report.dump(2);
  EXPECT_NE(reasons["locked"].find("ermission denied"), std::string::npos) << reasons["locked"];
  EXPECT_EQ(read_index(out_).sample_path, std::vector<std::string>{"c/fine.png"});
}

}  // namespace
}  // namespace imgpack
