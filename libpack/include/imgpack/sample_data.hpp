// A generated, labeled image directory for demos, tests and benchmarks.
//
// Each class is a shape in its own colour (circle, square, triangle, ...),
// drawn at a random position, scale and angle; each group has its own
// background (gradient and texture), as photos from one camera or site would.
// Files are real JPEGs and PNGs of varying size, laid out as
// OUT/<class>/<group>_<n>.<ext>, so the class comes from the folder and the
// group from `--group-regex '/([^_/]+)_'`. OUT/labels.csv lists path,class,group.
// The same options and seed always give the same files.
//
// With masks, OUT/masks/<class>/<group>_<n>.png is each image's label map:
// the exact shape (hard-edged, where the image's is anti-aliased) in label
// 1 + the class id a conversion gives its folder (class names sorted),
// background 0, and OUT/masks/classes.txt names the labels ("background",
// then the classes): `imgpack convert OUT DATASET --masks OUT/masks
// --mask-classes OUT/masks/classes.txt` (a mask folder inside SRC is not
// scanned for images).
//
// With boxes, OUT/<class>/<group>_<n>.txt beside each image is its YOLO
// label: one line, the class id (OUT/classes.txt names them, in id order),
// the exact box of the hard-edged shape (its label map's pixels) as centre
// and size normalised to the image, and two keypoints, `left` and `right`,
// half a radius either side of the shape's centre, visible:
// `imgpack convert OUT DATASET --yolo --yolo-keypoints left,right`.
#pragma once

#include <cstdint>
#include <filesystem>

namespace imgpack {

struct SampleDataOptions {
  uint32_t classes = 4;
  uint32_t groups = 6;
  uint32_t per_class = 50;
  uint32_t width = 160;  // typical size; each image varies by up to +-25%
  uint32_t height = 120;
  uint64_t seed = 0;
  bool vary_size = true;
  // Every n-th image is a PNG, the rest JPEG (0 = JPEG only).
  uint32_t png_every = 4;
  // Also write each image's label map under OUT/masks/ (above).
  bool masks = false;
  // Also write each image's YOLO label (its box and two keypoints, above).
  bool boxes = false;
};

// The folder of the label maps below OUT.
inline constexpr const char* kSampleMasksFolder = "masks";

struct SampleDataResult {
  uint64_t images = 0;
  uint64_t masks = 0;
  uint64_t labels = 0;  // YOLO label files
  uint64_t bytes = 0;   // of images and masks
};

// Writes the directory, created if missing. Throws UsageError for invalid
// options or an `out` that holds anything (the file names are fixed: they
// would overwrite files there), Error for write failures; each file is
// written aside and renamed into place, so a failure leaves no cut file
// under its name.
SampleDataResult write_sample_data(const std::filesystem::path& out,
                                   const SampleDataOptions& options);

// The class names write_sample_data uses, in id order.
std::string sample_class_name(uint32_t class_id);

}  // namespace imgpack
