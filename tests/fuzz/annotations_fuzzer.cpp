// libFuzzer target for the text a conversion reads beside its images: CSV
// lists, COCO-style JSON, YOLO label files and keypoint flip maps.
//
// Input: byte 0 selects the reader, the rest is the text:
//   0  parse_csv
//   1  a COCO file, attached to a listing of two images (attach_boxes)
//   2  the YOLO label file of the first of them (attach_boxes)
//   3  a keypoint flip map over five named keypoints (keypoint_flip_table)
// UsageError is the documented answer to a malformed file (imgpack::Error
// for one that cannot be read); a sample whose annotations cannot be used
// gets a box_problem. Any other exception, a crash, a sanitizer report or a
// hang is a bug, and so is a result that breaks its contract: every CSV
// record as wide as the header; boxes normalised to [0, 1] with x0 <= x1
// and y0 <= y1, of a known class; K keypoint triples per box, their flip
// table a pairing of the K.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "imgpack/error.hpp"
#include "inputs/boxes_input.hpp"
#include "inputs/csv.hpp"
#include "inputs/scan.hpp"

namespace fs = std::filesystem;

namespace {

fs::path g_root;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "annotations_fuzzer: %s\n", what);
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
    char pattern[] = "/tmp/imgpack-annotation-fuzz-XXXXXX";
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
      const fs::path src = source_dir();
      const fs::path coco = g_root / "coco.json";
      write_file(coco, text);
      imgpack::SourceList list = two_images();
      imgpack::BoxOptions options;
      options.coco = coco;
      imgpack::attach_boxes(list, src, options);
      check_boxes(list);
      return;
    }
    case 2: {
      const fs::path src = source_dir();
      write_file(src / "a" / "x.txt", text);
      imgpack::SourceList list = two_images();
      imgpack::BoxOptions options;
      options.yolo = true;
      imgpack::attach_boxes(list, src, options);
      check_boxes(list);
      return;
    }
    default: {
      const std::vector<std::string> names = {"nose", "left_eye", "right_eye", "LeftHand",
                                              "RightHand"};
      check_flip(imgpack::keypoint_flip_table(names, std::string(text)), names.size());
      return;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const int reader = data[0] % 4;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    read(text, reader);
  } catch (const imgpack::Error&) {
    // UsageError (malformed) or Error (unreadable): the documented answers.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "annotations_fuzzer: unexpected exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}
