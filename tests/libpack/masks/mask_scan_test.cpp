#include "masks/mask_scan.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "imgpack/error.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::write_bytes;

const SourceSample& sample(const SourceList& list, const std::string& path) {
  for (const SourceSample& s : list.samples) {
    if (s.path == path) return s;
  }
  throw std::runtime_error("no sample " + path);
}

std::vector<std::string> paths_of(const SourceList& list) {
  std::vector<std::string> out;
  for (const SourceSample& s : list.samples) out.push_back(s.path);
  return out;
}

std::string usage_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

ConvertOptions options_for(const fs::path& src, const fs::path& masks,
                           const std::string& suffix = "") {
  ConvertOptions o;
  o.src = src;
  o.masks.dir = masks;
  o.masks.suffix = suffix;
  return o;
}

SourceList scan_with_masks(const ConvertOptions& o) {
  SourceList list = scan_directory(o.src, o.scan, mask_folder_inside_source(o.src, o.masks));
  attach_masks(list, o.src, o.scan, o.masks);
  return list;
}

TEST(AttachMasks, EachImageGetsTheOneFileOfItsStemInTheMaskFolder) {
  TempDir dir;
  write_bytes(dir / "src/cat/a.jpg", "x");
  write_bytes(dir / "src/cat/b.jpg", "x");
  write_bytes(dir / "src/dog/deep/c.png", "x");
  write_bytes(dir / "src/dog/d.jpg", "x");
  write_bytes(dir / "src/dog/e.v2.jpg", "x");
  write_bytes(dir / "masks/cat/a.png", "12345");
  write_bytes(dir / "masks/cat/b.png", "1");
  write_bytes(dir / "masks/cat/b.tif", "1");  // two candidates
  write_bytes(dir / "masks/dog/deep/c.bmp", "1");
  write_bytes(dir / "masks/dog/e.v2.png", "1");
  write_bytes(dir / "masks/dog/d.txt", "1");  // not an image: no candidate
  write_bytes(dir / "src/dog/f.jpg", "x");
  fs::create_symlink(dir / "nowhere.png", dir / "masks/dog/f.png");  // a link to nothing

  const SourceList list = scan_with_masks(options_for(dir / "src", dir / "masks"));
  ASSERT_EQ(list.samples.size(), 6u);
  EXPECT_EQ(sample(list, "cat/a.jpg").mask_path, "cat/a.png");
  EXPECT_EQ(sample(list, "cat/a.jpg").mask_stamp.size, 5u);
  EXPECT_EQ(sample(list, "cat/a.jpg").mask_problem, "");
  EXPECT_EQ(sample(list, "dog/deep/c.png").mask_path, "dog/deep/c.bmp");
  EXPECT_EQ(sample(list, "dog/e.v2.jpg").mask_path, "dog/e.v2.png");
  const std::string two = sample(list, "cat/b.jpg").mask_problem;
  EXPECT_NE(two.find("two masks"), std::string::npos) << two;
  EXPECT_NE(two.find("b.png"), std::string::npos) << two;
  const std::string none = sample(list, "dog/d.jpg").mask_problem;
  EXPECT_EQ(none, "no mask: expected " + (dir / "masks/dog/d").string() +
                      ".<ext> (png, tif, bmp, ...: any image extension)");
  EXPECT_EQ(sample(list, "dog/f.jpg").mask_problem,
            "no mask: " + (dir / "masks/dog/f.png").string() +
                ": cannot stat: No such file or directory (a link to nothing?)");
}

TEST(AttachMasks, ASuffixNamesMasksBesideTheirImagesEvenInSrcItself) {
  TempDir dir;
  write_bytes(dir / "src/c/a.tif", "x");
  write_bytes(dir / "src/c/a_mask.tif", "m");
  write_bytes(dir / "src/c/b.tif", "x");
  write_bytes(dir / "src/c/b_mask.png", "m");
  write_bytes(dir / "src/c/c.tif", "x");
  // In SRC without a suffix, masks and images cannot be told apart.
  EXPECT_NE(usage_error([&] {
              scan_with_masks(options_for(dir / "src", dir / "src"));
            }).find("give MaskOptions::suffix"),
            std::string::npos);
  const SourceList list = scan_with_masks(options_for(dir / "src", dir / "src", "_mask"));
  EXPECT_EQ(paths_of(list), (std::vector<std::string>{"c/a.tif", "c/b.tif", "c/c.tif"}));
  EXPECT_EQ(sample(list, "c/a.tif").mask_path, "c/a_mask.tif");
  EXPECT_EQ(sample(list, "c/b.tif").mask_path, "c/b_mask.png");
  EXPECT_NE(sample(list, "c/c.tif").mask_problem.find("c/c_mask.<ext>"), std::string::npos);
}

TEST(AttachMasks, AMaskFolderInsideSrcIsNotScannedForImages) {
  TempDir dir;
  write_bytes(dir / "src/cat/a.jpg", "x");
  write_bytes(dir / "src/masks/cat/a.png", "m");
  const ConvertOptions o = options_for(dir / "src", dir / "src/masks");
  const SourceList list = scan_with_masks(o);
  EXPECT_EQ(paths_of(list), (std::vector<std::string>{"cat/a.jpg"}));
  EXPECT_EQ(list.class_names, (std::vector<std::string>{"cat"}));
  EXPECT_EQ(sample(list, "cat/a.jpg").mask_path, "cat/a.png");
  EXPECT_NE(usage_error([&] {
              scan_with_masks(options_for(dir / "src", dir / "nowhere"));
            }).find("no such mask directory"),
            std::string::npos);
}

TEST(AttachMasks, ACsvColumnListsMasksRelativeToTheMaskFolder) {
  TempDir dir;
  write_bytes(dir / "src/img/1.jpg", "x");
  write_bytes(dir / "src/img/2.jpg", "x");
  write_bytes(dir / "src/img/3.jpg", "x");
  write_bytes(dir / "src/img/4.jpg", "x");
  write_bytes(dir / "labels/1_seg.png", "mm");
  write_bytes(dir / "list.csv",
              "id,seg\n1,labels/1_seg.png\n2,labels/2_seg.png\n3,\n4,../outside.png\n");
  ConvertOptions o;
  o.src = dir / "src";
  o.scan.labels = LabelSource::none;
  o.scan.csv = CsvInput{dir / "list.csv", "img/{id}.jpg", "", "", "seg", {}, ""};
  o.masks.dir = dir.path();
  SourceList list = scan_csv(o.src, o.scan);
  attach_masks(list, o.src, o.scan, o.masks);
  ASSERT_EQ(list.samples.size(), 4u);
  EXPECT_EQ(sample(list, "img/1.jpg").mask_path, "labels/1_seg.png");
  EXPECT_EQ(sample(list, "img/1.jpg").mask_stamp.size, 2u);
  EXPECT_EQ(sample(list, "img/2.jpg").mask_problem,
            "mask " + (dir / "labels/2_seg.png").string() + ": missing");
  EXPECT_NE(sample(list, "img/3.jpg").mask_problem.find("empty 'seg' cell"), std::string::npos);
  EXPECT_NE(sample(list, "img/4.jpg").mask_problem.find("outside the mask folder"),
            std::string::npos);
  // A template, relative to SRC without a mask folder.
  write_bytes(dir / "src/img/1.png", "m");
  o.scan.csv->mask = "img/{id}.png";
  o.masks.dir.clear();
  list = scan_csv(o.src, o.scan);
  attach_masks(list, o.src, o.scan, o.masks);
  EXPECT_EQ(sample(list, "img/1.jpg").mask_path, "img/1.png");
  EXPECT_NE(sample(list, "img/2.jpg").mask_problem.find("missing"), std::string::npos);
}

}  // namespace
}  // namespace imgpack
