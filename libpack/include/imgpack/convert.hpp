// Converting an image directory into an imgpack dataset.
//
// convert() scans SRC, decodes, resizes (and augments) every image on a
// oneTBB pipeline and writes shards and index.h5 into OUT, as the format
// describes. Memory is bounded by the images in flight (a few per thread),
// never by the dataset size. Output is byte-identical for the same inputs and
// options whatever the thread count. Inputs that cannot be used are skipped and
// reported (or stop the run with OnError::fail); SRC is never modified.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "imgpack/decode.hpp"
#include "imgpack/resize.hpp"
#include "imgpack/scan.hpp"
#include "imgpack/split.hpp"

namespace imgpack {

enum class WriteOrder { shuffle, sorted };
enum class OnError { skip, fail };

struct ConvertOptions {
  std::filesystem::path src;
  std::filesystem::path out;

  // Output size; unset = the size all inputs share (they must share one).
  std::optional<std::pair<uint32_t, uint32_t>> size;  // width, height
  ResizeMode resize = ResizeMode::crop;
  std::array<uint8_t, 3> fill = {0, 0, 0};
  ColorMode color = ColorMode::rgb;

  ScanOptions scan;

  // Records per image: variant 0 is the clean resized image, variants
  // 1..K-1 are augmented as `augment` says (parse_augment_spec() in
  // augment.hpp lists the keys). K > 1 needs a spec and a spec needs K > 1.
  uint32_t variants = 1;
  std::string augment;  // spec; empty = none

  uint64_t shard_size = uint64_t{1} << 30;  // bytes of pixels per shard at most
  unsigned threads = 0;                     // 0 = all cores
  uint64_t seed = 0;
  WriteOrder order = WriteOrder::shuffle;
  OnError on_error = OnError::skip;
  bool overwrite = false;
  // Continue an interrupted run of the same conversion in OUT: keep its
  // shards that are whole and match their checksums, redo the rest. The
  // result is byte-identical to an uninterrupted run.
  bool resume = false;
  uint64_t max_pixels = uint64_t{1} << 28;
  bool dct_scaling = true;

  // Splits to store in index.h5 (convert --split NAME:KIND:K), computed with
  // the conversion's seed after the records are written. Their `created` is
  // empty, so index.h5 stays byte-identical across identical conversions.
  std::vector<NamedSplitSpec> splits;

  // Throws UsageError naming the first invalid value.
  void validate() const;
  // The options that determine the output, as JSON (stored in index.h5).
  std::string to_json() const;
};

struct ConvertProgress {
  uint64_t done = 0;   // inputs processed (converted or skipped)
  uint64_t total = 0;  // inputs to process
  uint64_t skipped = 0;
  double elapsed_s = 0;
};

struct ConvertResult {
  uint64_t records = 0;
  uint64_t samples = 0;
  uint64_t shards = 0;
  std::vector<SkippedInput> skipped;
  uint64_t ignored_files = 0;
  uint32_t width = 0;
  uint32_t height = 0;
  uint32_t channels = 0;
  double seconds = 0;
  std::string uuid;
  std::vector<std::string> split_warnings;  // e.g. classes smaller than the folds
  // --resume: shards kept from the interrupted run, inputs it had already
  // processed, and anything it could not keep (and why).
  uint64_t resumed_shards = 0;
  uint64_t resumed_inputs = 0;
  std::vector<std::string> resume_notes;
  bool already_complete = false;  // --resume found the dataset finished
};

// Called from the writer thread, in order, after every input.
using ProgressFn = std::function<void(const ConvertProgress&)>;

// Runs a conversion. Throws UsageError for problems with the request (exit 2
// in the CLI) and Error for failures while converting; on failure OUT has no
// index.h5 and no temporary files.
ConvertResult convert(const ConvertOptions& options, const ProgressFn& progress = {});

// "224" -> 224x224, "320x240" -> width 320, height 240. Throws UsageError.
std::pair<uint32_t, uint32_t> parse_image_size(const std::string& text);
// "1G", "512M", "64K", "4096" -> bytes (powers of 1024). Throws UsageError.
uint64_t parse_byte_size(const std::string& text);
// "0", "128", "255,255,255" -> RGB. Throws UsageError.
std::array<uint8_t, 3> parse_fill(const std::string& text);

}  // namespace imgpack
