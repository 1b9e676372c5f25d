// libFuzzer target for the text imgpack reads beside images and datasets:
// CSV lists, COCO-style JSON, YOLO label files, keypoint flip maps, mask
// colour tables, imported splits and the journal of an interrupted
// conversion.
//
// Input: byte 0 selects the reader, the rest is the text:
//   0  parse_csv
//   1  a COCO file, attached to a listing of two images (attach_boxes)
//   2  the YOLO label file of the first of them (attach_boxes)
//   3  a keypoint flip map over five named keypoints (keypoint_flip_table)
//   4  a mask colour table (MaskColors::read)
//   5  a split made elsewhere, imported into a dataset of 12 samples and
//      extended over those it does not list (import_split_extended)
//   6  OUT/convert.journal, read as `convert --resume` reads it
// UsageError is the documented answer to a malformed file (imgpack::Error
// for one that cannot be read); a sample whose annotations cannot be used
// gets a box_problem. Any other exception, a crash, a sanitizer report or a
// hang is a bug, and so is a result that breaks its contract: every CSV
// record as wide as the header; boxes normalised to [0, 1] with x0 <= x1
// and y0 <= y1, of a known class; K keypoint triples per box, their flip
// table a pairing of the K; colours that map to the labels read; a split
// of at least two folds, each sample in one of them or the test set; a torn
// journal header with no shards after it.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "conversion/convert_journal.hpp"
#include "imgpack/dataset_index.hpp"
#include "imgpack/error.hpp"
#include "imgpack/split.hpp"
#include "inputs/boxes_input.hpp"
#include "inputs/csv.hpp"
#include "inputs/scan.hpp"
#include "masks/mask_decode.hpp"

namespace fs = std::filesystem;

namespace {

fs::path g_root;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "text_inputs_fuzzer: %s\n", what);
  std::abort();
}

void write_file(const fs::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) fail("cannot write a file of the fixture");
}

void remove_root() {
  std::error_code ec;
  fs::remove_all(g_root, ec);
}

// SRC with two images (empty files: nothing here decodes them).
fs::path source_dir() {
  if (g_root.empty()) {
    char pattern[] = "/tmp/imgpack-text-inputs-fuzz-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) fail("mkdtemp failed");
    g_root = pattern;
    std::atexit(remove_root);
    fs::create_directories(g_root / "src" / "a");
    fs::create_directories(g_root / "src" / "b");
    write_file(g_root / "src" / "a" / "x.jpg", "");
    write_file(g_root / "src" / "b" / "y.jpg", "");
  }
  return g_root / "src";
}

imgpack::SourceList two_images() {
  imgpack::SourceList list;
  for (const char* path : {"a/x.jpg", "b/y.jpg"}) {
    imgpack::SourceSample sample;
    sample.path = path;
    list.samples.push_back(sample);
  }
  return list;
}

void check_flip(const std::vector<int32_t>& flip, std::size_t k) {
  if (flip.size() != k) fail("a flip table of another length than the keypoints");
  for (std::size_t i = 0; i < k; ++i) {
    const int32_t partner = flip[i];
    if (partner < 0 || static_cast<std::size_t>(partner) >= k) fail("a flip partner out of range");
    if (flip[static_cast<std::size_t>(partner)] != static_cast<int32_t>(i)) {
      fail("a flip table that is not a pairing");
    }
  }
}

bool unit(float v) { return std::isfinite(v) && v >= 0.0F && v <= 1.0F; }

void check_boxes(const imgpack::SourceList& list) {
  const std::size_t k = list.keypoint_names.size();
  check_flip(list.keypoint_flip, k);
  for (const imgpack::SourceSample& sample : list.samples) {
    if (!sample.box_problem.empty()) continue;  // skipped by the conversion, with the reason
    if (sample.keypoints.size() != sample.boxes.size() * k * 3) fail("keypoints of another count");
    for (const imgpack::SourceBox& box : sample.boxes) {
      if (!unit(box.x0) || !unit(box.y0) || !unit(box.x1) || !unit(box.y1)) {
        fail("a box corner outside [0, 1]");
      }
      if (box.x0 > box.x1 || box.y0 > box.y1) fail("a box with its corners swapped");
      if (box.cls < 0 || static_cast<std::size_t>(box.cls) >= list.box_class_names.size()) {
        fail("a box of an unknown class");
      }
    }
    for (std::size_t i = 0; i < sample.keypoints.size(); ++i) {
      if (!std::isfinite(sample.keypoints[i])) fail("a keypoint value that is not finite");
    }
  }
}

// The boxes `options` gives the two images of SRC, checked.
void attach_and_check(const imgpack::BoxOptions& options) {
  imgpack::SourceList list = two_images();
  imgpack::attach_boxes(list, source_dir(), options);
  check_boxes(list);
}

// Samples c<i%3>/s<i>.jpg, labels i % 3, groups i % 4.
const imgpack::DatasetIndex& twelve_samples() {
  static const imgpack::DatasetIndex index = [] {
    imgpack::DatasetIndex built;
    built.class_names = {"c0", "c1", "c2"};
    built.group_names = {"g0", "g1", "g2", "g3"};
    for (int i = 0; i < 12; ++i) {
      built.sample_path.push_back("c" + std::to_string(i % 3) + "/s" + std::to_string(i) + ".jpg");
      built.sample_label.push_back(i % 3);
      built.sample_group.push_back(i % 4);
    }
    return built;
  }();
  return index;
}

void check_split(const imgpack::Split& split, uint64_t samples) {
  if (split.folds < 2) fail("a split of fewer than two folds");
  if (split.assign.size() != samples) fail("a split that does not assign every sample");
  std::vector<bool> used(static_cast<std::size_t>(split.folds), false);
  for (std::size_t s = 0; s < split.assign.size(); ++s) {
    const int16_t fold = split.assign[s];
    if (fold < -1 || fold >= split.folds) fail("a sample assigned to no fold of the split");
    if (fold >= 0) used[static_cast<std::size_t>(fold)] = true;
  }
  for (const bool fold_used : used) {
    if (!fold_used) fail("an empty fold");
  }
}

void read(std::string_view text, int reader) {
  switch (reader) {
    case 0: {
      const imgpack::CsvTable table = imgpack::parse_csv(text, "list.csv");
      for (const imgpack::CsvRecord& row : table.rows) {
        if (row.fields.size() != table.header.size())
          fail("a CSV record not as wide as its header");
      }
      return;
    }
    case 1: {
      source_dir();
      imgpack::BoxOptions options;
      options.coco = g_root / "coco.json";
      write_file(options.coco, text);
      attach_and_check(options);
      return;
    }
    case 2: {
      write_file(source_dir() / "a" / "x.txt", text);
      imgpack::BoxOptions options;
      options.yolo = true;
      attach_and_check(options);
      return;
    }
    case 3: {
      const std::vector<std::string> names = {"nose", "left_eye", "right_eye", "LeftHand",
                                              "RightHand"};
      check_flip(imgpack::keypoint_flip_table(names, std::string(text)), names.size());
      return;
    }
    case 4: {
      source_dir();
      const fs::path csv = g_root / "colors.csv";
      write_file(csv, text);
      const imgpack::MaskColors colors = imgpack::MaskColors::read(csv);
      if (colors.empty()) fail("a colour table without colours was accepted");
      return;
    }
    case 6: {
      source_dir();
      write_file(g_root / imgpack::kJournalFile, text);
      const std::optional<imgpack::JournalState> journal = imgpack::ConvertJournal::read(g_root);
      if (!journal) fail("a journal that is there was read as none");
      if (journal->torn_header && !journal->shards.empty()) fail("shards after a torn header");
      return;
    }
    default: {
      source_dir();
      const fs::path csv = g_root / "split.csv";
      write_file(csv, text);
      const imgpack::DatasetIndex& index = twelve_samples();
      const imgpack::ExtendedImport imported =
          imgpack::import_split_extended(index, csv, {}, "imported", "");
      check_split(imported.split, index.num_samples());
      return;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const int reader = data[0] % 7;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    read(text, reader);
  } catch (const imgpack::Error&) {
    // UsageError (malformed) or Error (unreadable): the documented answers.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "text_inputs_fuzzer: unexpected exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}
