// One record's boxes as a shard stores them (internal to imgpack::pack).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace imgpack {

// The rows of one record (format.hpp, /boxes and its companions): B boxes of
// x0, y0, x1, y1 in output pixels, their class ids and crowd flags, and
// B x K x 3 keypoint values (x, y, visibility). A plain value.
struct RecordBoxes {
  std::vector<float> boxes;
  std::vector<int32_t> classes;
  std::vector<uint8_t> crowd;
  std::vector<float> keypoints;

  std::size_t size() const { return classes.size(); }
  void clear() {
    boxes.clear();
    classes.clear();
    crowd.clear();
    keypoints.clear();
  }
};

}  // namespace imgpack
