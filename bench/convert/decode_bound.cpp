// The decode bound of a conversion: the JPEGs of SRC read and decoded exactly
// as `imgpack convert SRC OUT --size S` decodes them (TurboJPEG at the DCT
// scale the conversion picks for an SxS output, RGB), on THREADS threads, and
// nothing else: no resize, no augmentation, no checksum, no shard. A
// conversion can approach this rate but not pass it; bench/convert/run.py
// reports the conversion's rate as a ratio of it, measured in the same run.
//
//   imgpack_decode_bound SRC --size S [--threads N] [--resize crop|pad|stretch]
//                        [--at-least F]
//
// --at-least F decodes each image at no less than F times its full size
// (0 < F <= 1: the smallest DCT scale the conversion may pick that reaches
// it) instead of what --size needs: the cost of each scale, such as that of
// the second, larger decode a zoomed-in variant needs (F = 1: a full decode;
// the smallest scale, 1/8, is little more than the entropy decoding every
// scale pays).
//
// Prints one JSON object: images, seconds, images_per_s, threads, pixels
// (decoded pixels in all).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "files.hpp"
#include "image/decode.hpp"
#include "image/image_probe.hpp"
#include "image/resize.hpp"
#include "imgpack/image_modes.hpp"

namespace {

namespace fs = std::filesystem;
using imgpack::DecodeOptions;
using imgpack::ResizeSpec;

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "imgpack_decode_bound: %s\nusage: imgpack_decode_bound SRC --size S "
               "[--threads N] [--resize crop|pad|stretch]\n",
               problem.c_str());
  std::exit(2);
}

std::vector<fs::path> jpegs_under(const fs::path& root) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file()) continue;
    std::string ext = entry.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (ext == ".jpg" || ext == ".jpeg") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());  // the conversion's order
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  fs::path src;
  uint32_t size = 0;
  unsigned threads = std::max(1U, std::thread::hardware_concurrency());
  ResizeSpec spec;
  double at_least = 0;  // of the full size; 0: what --size needs
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--size") {
      size = static_cast<uint32_t>(std::stoul(value()));
    } else if (arg == "--threads") {
      threads = static_cast<unsigned>(std::stoul(value()));
    } else if (arg == "--at-least") {
      at_least = std::stod(value());
      if (!(at_least > 0 && at_least <= 1)) usage("--at-least takes a fraction in (0, 1]");
    } else if (arg == "--resize") {
      try {
        spec.mode = imgpack::parse_resize_mode(value());
      } catch (const std::exception& e) {
        usage(e.what());
      }
    } else if (src.empty() && !arg.starts_with("-")) {
      src = arg;
    } else {
      usage("unknown argument " + arg);
    }
  }
  if (src.empty() || size == 0 || threads == 0) usage("SRC, --size and --threads > 0 are needed");
  spec.width = spec.height = size;

  const std::vector<fs::path> files = jpegs_under(src);
  if (files.empty()) usage("no JPEG under " + src.string());
  std::atomic<std::size_t> next{0};
  std::atomic<uint64_t> pixels{0};
  std::atomic<bool> failed{false};
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      std::vector<uint8_t> bytes;
      uint64_t decoded = 0;
      for (std::size_t i = next++; i < files.size(); i = next++) {
        try {
          const std::string problem = imgpack::read_file(files[i], bytes);
          if (!problem.empty()) throw std::runtime_error(problem);
          // As RecordRenderer::render: the header first, for the size to decode at.
          const std::optional<imgpack::ImageInfo> info = imgpack::probe_image(bytes);
          if (!info) throw std::runtime_error("unreadable header");
          const cv::Size need =
              at_least > 0
                  ? cv::Size(static_cast<int>(std::ceil(info->upright_width() * at_least)),
                             static_cast<int>(std::ceil(info->upright_height() * at_least)))
                  : spec.required_source_size(info->upright_width(), info->upright_height());
          DecodeOptions options;
          options.min_width = static_cast<uint32_t>(need.width);
          options.min_height = static_cast<uint32_t>(need.height);
          const imgpack::DecodedImage image = imgpack::decode_image(bytes, *info, options);
          decoded += static_cast<uint64_t>(image.pixels.total());
        } catch (const std::exception& e) {
          std::fprintf(stderr, "imgpack_decode_bound: %s: %s\n", files[i].c_str(), e.what());
          failed = true;
        }
      }
      pixels += decoded;
    });
  }
  for (std::thread& worker : workers) worker.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (failed) return 1;
  std::printf(
      "{\"images\": %zu, \"seconds\": %.6f, \"images_per_s\": %.3f, \"threads\": %u, "
      "\"pixels\": %llu}\n",
      files.size(), seconds, static_cast<double>(files.size()) / seconds, threads,
      static_cast<unsigned long long>(pixels.load()));
  return 0;
}
