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

#include "imgpack/convert_options.hpp"

namespace imgpack {

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
  // What the inputs hold that converts but is likely not what was meant:
  // masks stored as JPEG, whose lossy compression changes the labels.
  std::vector<std::string> input_warnings;
  // With boxes: the converted inputs some of whose annotated objects are
  // left out (no area inside the image, or less than BoxOptions::min_visible
  // of it), each with the count and why; report.json's `objects_left_out`.
  std::vector<SkippedInput> objects_left_out;
  // What the resize cut from the inputs converted by this run, e.g. "crop
  // keeps 75% of the width of 640x480 inputs (1200 of them); ...": the most
  // common input sizes that ResizeMode::crop cuts by more than 1% of a side.
  std::vector<std::string> resize_notes;
  // --resume: shards kept from the interrupted run, inputs it had already
  // processed, and anything it could not keep (and why).
  uint64_t resumed_shards = 0;
  uint64_t resumed_inputs = 0;
  std::vector<std::string> resume_notes;
  bool already_complete = false;  // --resume found the dataset finished and intact
};

// Called from the writer thread, in order, after every input.
using ProgressFn = std::function<void(const ConvertProgress&)>;

// Runs a conversion. Throws UsageError for problems with the request (exit 2
// in the CLI) and Error for failures while converting; on failure OUT has no
// index.h5 and no temporary files.
ConvertResult convert(const ConvertOptions& options, const ProgressFn& progress = {});

}  // namespace imgpack
