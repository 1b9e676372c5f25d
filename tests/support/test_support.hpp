// Helpers shared by imgpack's tests: scratch directories, generated images,
// running the imgpack CLI and the system Python.
#pragma once

#include <opencv2/core.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace imgpack::test {

// A fresh directory under the system temp dir, removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// A deterministic RGB test image (CV_8UC3, channels in RGB order) with
// gradients, edges and noise, so resizing and decoding errors show.
cv::Mat make_rgb_image(int width, int height, uint64_t seed);

// Writes an RGB image (RGB channel order) with OpenCV, creating parent folders.
// `extension` picks the format: ".jpg", ".png", ...
void write_image(const std::filesystem::path& path, const cv::Mat& rgb,
                 const std::vector<int>& params = {});

// Writes raw bytes to a file, creating parent folders.
void write_bytes(const std::filesystem::path& path, const std::string& bytes);
std::string read_bytes(const std::filesystem::path& path);

// XORs the byte at `offset` of `file` with `mask`, for tests that damage a
// file (a gtest failure if the file is shorter).
void flip_bits(const std::filesystem::path& file, uint64_t offset, uint8_t mask);

// Every file and folder under `dir`, by its path relative to it, with its
// size and the checksum of its bytes ("<dir>" for a folder): compare two to
// tell that a command changed nothing (a failure names the files that differ).
std::map<std::string, std::string> directory_snapshot(const std::filesystem::path& dir);

// Expects `dir` to hold the very dataset in `reference`: the same shard
// files, index.h5 and splits.h5, byte for byte, and no temporary or journal file left
// (gtest failures name the file).
void expect_same_dataset_bytes(const std::filesystem::path& dir,
                               const std::filesystem::path& reference);

// Rewrites the dataset in `dir` as an imgpack of index format 1 wrote it:
// index.h5 in format 1 (variable-length strings, the splits inside it), no
// splits.h5. For tests of what still reads format 1, and of upgrading it.
void rewrite_as_format1(const std::filesystem::path& dir);

// OpenCV's decode of a file, converted to RGB (or gray), EXIF orientation applied.
cv::Mat opencv_decode_rgb(const std::filesystem::path& path, bool gray = false);

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// The imgpack CLI of this build (IMGPACK_TEST_CLI instead where set: for
// test executables run away from their build folder), and the Python the
// tests run (CMake's Python_EXECUTABLE; empty when CMake found none).
// Paths fixed at build time are defined for test_support.cpp alone, so that
// every other test compiles to the same object in any build folder or clone
// (what the compiler cache needs to reuse it).
const std::string& imgpack_cli();
const std::string& system_python();

// Runs a shell command line, capturing stdout and stderr.
CommandResult run_command(const std::string& command_line);

// Runs the imgpack CLI with the given arguments (already shell-quoted where needed).
CommandResult run_imgpack(const std::string& arguments);

// Single-quotes a string for /bin/sh.
std::string shell_quote(const std::string& text);

// Mean absolute difference between two images of the same size and type.
double mean_abs_diff(const cv::Mat& a, const cv::Mat& b);

// The largest per-channel difference between two images; +infinity when
// their sizes or types differ.
double max_pixel_difference(const cv::Mat& a, const cv::Mat& b);

// True if system_python() names a Python that can import all of `modules`.
bool python_has_modules(const std::vector<std::string>& modules);

// Runs `child` in a forked process whose address space (RLIMIT_AS) is
// capped `headroom` bytes above what it maps when it starts, and returns the
// child's exit status: what `child` returned, or 10 where the cap could not
// be set, or 128 + the signal that ended it. For tests that a large
// allocation fails cleanly; an ASan build cannot hold such a cap
// (kAddressSanitizer).
int run_under_address_space_cap(uint64_t headroom, const std::function<int()>& child);

// True in an AddressSanitizer build (scripts/sanitize). ASan reserves terabytes
// of address space for its shadow memory at start-up, so a test that caps the
// address space (setrlimit(RLIMIT_AS), `ulimit -v`) cannot run under it and
// skips itself; the plain build runs it.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif
#else
inline constexpr bool kThreadSanitizer = false;
#endif

// A sanitizer build runs several times slower: exhaustive sweeps over
// damaged bytes take a sample there instead (the libFuzzer run covers the same
// open path under AddressSanitizer).
inline constexpr bool kSanitizer = kAddressSanitizer || kThreadSanitizer;

// The step of a randomized property sweep (seeds, layouts, sizes): 1 in the
// plain build, which checks the property over every case; `under_sanitizer`
// in a sanitizer build, which runs the same code on every that-many-th case
// for memory and thread errors (scripts/test runs both). Pure computations
// run 10-30 times slower there, so a full sweep would prove the property a
// second time at that cost.
constexpr uint64_t sweep_step(uint64_t under_sanitizer) { return kSanitizer ? under_sanitizer : 1; }

}  // namespace imgpack::test
