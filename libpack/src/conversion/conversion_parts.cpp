#include "conversion/conversion_parts.hpp"

#include <cstdio>

#include "imgpack/checksum.hpp"
#include "targets/box_geometry.hpp"

namespace imgpack {

std::string part_name(const ConvertPart& part) {
  return std::to_string(part.index) + "-of-" + std::to_string(part.count);
}

uint32_t part_of_path(std::string_view path, uint32_t count) {
  return static_cast<uint32_t>(checksum(path.data(), path.size()) % count);
}

std::string listing_fingerprint(const std::string& options_json, const SourceList& list) {
  std::string key = options_json;
  key += "\nsamples\n";
  for (const SourceSample& s : list.samples) {
    key += s.path;
    key += '\t';
    key += std::to_string(s.label);
    key += '\t';
    key += std::to_string(s.group);
    for (uint8_t has : s.multilabel) key += has != 0 ? "\t1" : "\t0";
    for (float target : s.targets) {
      char text[24];
      std::snprintf(text, sizeof text, "\t%.9g", static_cast<double>(target));
      key += text;
    }
    if (list.boxes) key += '\t' + std::to_string(annotation_hash(s));
    key += '\n';
  }
  key += "skipped\n";
  for (const SkippedInput& s : list.skipped) {
    key += s.path;
    key += '\n';
  }
  key += "classes\n";
  for (const std::string& name : list.class_names) key += name + '\n';
  key += "groups\n";
  for (const std::string& name : list.group_names) key += name + '\n';
  if (!list.multilabel_names.empty()) {
    key += "multilabel classes\n";
    for (const std::string& name : list.multilabel_names) key += name + '\n';
  }
  if (list.boxes) {
    key += "box classes\n";
    for (const std::string& name : list.box_class_names) key += name + '\n';
    key += "keypoints\n";
    for (std::size_t k = 0; k < list.keypoint_names.size(); ++k) {
      key += list.keypoint_names[k] + '\t' + std::to_string(list.keypoint_flip[k]) + '\n';
    }
  }
  char text[20];
  std::snprintf(text, sizeof text, "%016llx",
                static_cast<unsigned long long>(checksum(key.data(), key.size())));
  return text;
}

}  // namespace imgpack
