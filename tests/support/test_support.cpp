#include "test_support.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>

#include <gtest/gtest.h>

#include "conversion/convert_journal.hpp"
#include "imgpack/checksum.hpp"
#include "imgpack/dataset_index.hpp"
#include "imgpack/format.hpp"

namespace imgpack::test {

namespace fs = std::filesystem;

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "imgpack-test-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  // Restore permissions that tests may have removed, so cleanup can proceed.
  for (auto it = fs::recursive_directory_iterator(path_, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
  }
  fs::remove_all(path_, ec);
}

void expect_same_dataset_bytes(const fs::path& dir, const fs::path& reference) {
  const DatasetIndex index = read_index(dir);
  const DatasetIndex expected = read_index(reference);
  ASSERT_EQ(index.shards.file, expected.shards.file) << dir;
  for (const std::string& shard : index.shards.file) {
    EXPECT_EQ(read_bytes(dir / shard), read_bytes(reference / shard)) << dir / shard;
  }
  EXPECT_EQ(read_bytes(dir / format::kIndexFile), read_bytes(reference / format::kIndexFile))
      << dir / format::kIndexFile;
  EXPECT_EQ(fs::exists(dir / format::kSplitsFile), fs::exists(reference / format::kSplitsFile))
      << dir / format::kSplitsFile;
  if (fs::exists(reference / format::kSplitsFile)) {
    EXPECT_EQ(read_bytes(dir / format::kSplitsFile), read_bytes(reference / format::kSplitsFile))
        << dir / format::kSplitsFile;
  }
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    EXPECT_FALSE(name.ends_with(format::kTmpSuffix)) << entry.path();
    EXPECT_NE(name, kJournalFile) << entry.path();
  }
}

int run_under_address_space_cap(uint64_t headroom, const std::function<int()>& child) {
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    long vm_kb = 0;
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("VmSize:", 0) == 0) vm_kb = std::stol(line.substr(7));
    }
    const auto cap = static_cast<rlim_t>(vm_kb) * 1024 + headroom;
    const rlimit limit{cap, cap};
    if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(10);
    _exit(child());
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void rewrite_as_format1(const fs::path& dir) {
  DatasetIndex index = read_index(dir);
  index.format_version = 1;
  write_index(dir, index);
  fs::remove(dir / format::kSplitsFile);
}

cv::Mat make_rgb_image(int width, int height, uint64_t seed) {
  cv::Mat image(height, width, CV_8UC3);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> noise(-12, 12);
  const double phase = static_cast<double>(seed % 97) / 97.0 * 6.28;
  for (int y = 0; y < height; ++y) {
    auto* row = image.ptr<cv::Vec3b>(y);
    for (int x = 0; x < width; ++x) {
      double fx = static_cast<double>(x) / width, fy = static_cast<double>(y) / height;
      row[x][0] = cv::saturate_cast<uint8_t>(255 * fx + noise(rng));
      row[x][1] = cv::saturate_cast<uint8_t>(255 * fy + noise(rng));
      row[x][2] = cv::saturate_cast<uint8_t>(128 + 100 * std::sin(10 * fx + 7 * fy + phase));
    }
  }
  // A few hard-edged blocks so geometry mistakes show.
  cv::rectangle(image, cv::Rect(width / 8, height / 8, width / 4, height / 5),
                cv::Scalar(250, 20, 20), cv::FILLED);
  cv::circle(image, cv::Point(width * 2 / 3, height * 2 / 3), std::min(width, height) / 6,
             cv::Scalar(20, 20, 240), cv::FILLED);
  return image;
}

void write_image(const fs::path& path, const cv::Mat& rgb, const std::vector<int>& params) {
  fs::create_directories(path.parent_path());
  cv::Mat bgr;
  if (rgb.channels() == 3) {
    cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  } else if (rgb.channels() == 4) {
    cv::cvtColor(rgb, bgr, cv::COLOR_RGBA2BGRA);
  } else {
    bgr = rgb;
  }
  if (!cv::imwrite(path.string(), bgr, params)) {
    throw std::runtime_error("cannot write test image " + path.string());
  }
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void flip_bits(const fs::path& file, uint64_t offset, uint8_t mask) {
  std::string bytes = read_bytes(file);
  ASSERT_LT(offset, bytes.size()) << file;
  bytes[offset] = static_cast<char>(bytes[offset] ^ mask);
  write_bytes(file, bytes);
}

std::map<std::string, std::string> directory_snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    std::string& value = files[fs::relative(entry.path(), dir).string()];
    if (!entry.is_regular_file()) {
      value = "<dir>";
      continue;
    }
    const std::string bytes = read_bytes(entry.path());
    value = std::to_string(bytes.size()) + " bytes, checksum " +
            std::to_string(checksum(bytes.data(), bytes.size()));
  }
  return files;
}

cv::Mat opencv_decode_rgb(const fs::path& path, bool gray) {
  cv::Mat image = cv::imread(path.string(), gray ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR);
  if (image.empty()) throw std::runtime_error("OpenCV cannot read " + path.string());
  if (!gray) cv::cvtColor(image, image, cv::COLOR_BGR2RGB);
  return image;
}

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

CommandResult run_command(const std::string& command_line) {
  TempDir capture;
  fs::path out = capture / "stdout", err = capture / "stderr";
  std::string full =
      "(" + command_line + ") >" + shell_quote(out.string()) + " 2>" + shell_quote(err.string());
  int status = std::system(full.c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = read_bytes(out);
  result.err = read_bytes(err);
  return result;
}

const std::string& imgpack_cli() {
  static const std::string path = [] {
    const char* moved = std::getenv("IMGPACK_TEST_CLI");
    return std::string(moved != nullptr && *moved != '\0' ? moved : IMGPACK_CLI);
  }();
  return path;
}

const std::string& system_python() {
  static const std::string path = IMGPACK_SYSTEM_PYTHON;
  return path;
}

CommandResult run_imgpack(const std::string& arguments) {
  return run_command(shell_quote(imgpack_cli()) + " " + arguments);
}

double mean_abs_diff(const cv::Mat& a, const cv::Mat& b) {
  if (a.size() != b.size() || a.type() != b.type()) {
    throw std::runtime_error("mean_abs_diff: images differ in size or type");
  }
  cv::Mat diff;
  cv::absdiff(a, b, diff);
  cv::Scalar mean = cv::mean(diff);
  double total = 0;
  for (int c = 0; c < a.channels(); ++c) total += mean[c];
  return total / a.channels();
}

double max_pixel_difference(const cv::Mat& a, const cv::Mat& b) {
  if (a.size() != b.size() || a.type() != b.type()) return std::numeric_limits<double>::infinity();
  cv::Mat diff;
  cv::absdiff(a, b, diff);
  double max = 0;
  cv::minMaxLoc(diff.reshape(1), nullptr, &max);
  return max;
}

bool python_has_modules(const std::vector<std::string>& modules) {
  std::string imports;
  if (system_python().empty()) return false;
  for (const std::string& m : modules) imports += (imports.empty() ? "import " : ", ") + m;
  return run_command(shell_quote(system_python()) + " -c " + shell_quote(imports)).exit_code == 0;
}

}  // namespace imgpack::test
