#include "conversion/conversion_parts.hpp"

#include <charconv>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "h5.hpp"
#include "imgpack/checksum.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "inputs/json_integer.hpp"
#include "targets/box_geometry.hpp"

namespace imgpack {

namespace fs = std::filesystem;

std::string part_name(const ConvertPart& part) {
  return std::to_string(part.index) + "-of-" + std::to_string(part.count);
}

std::optional<ConvertPart> parse_part_name(const std::string& name) {
  const std::size_t dash = name.find("-of-");
  if (dash == std::string::npos || dash == 0) return std::nullopt;
  ConvertPart part;
  const char* end = name.data() + dash;
  if (std::from_chars(name.data(), end, part.index).ptr != end) return std::nullopt;
  const char* count_end = name.data() + name.size();
  if (std::from_chars(name.data() + dash + 4, count_end, part.count).ptr != count_end) {
    return std::nullopt;
  }
  if (part.count == 0 || part.index >= part.count || part_name(part) != name) return std::nullopt;
  return part;
}

uint32_t part_of_path(std::string_view path, uint32_t count) {
  return static_cast<uint32_t>(checksum(path.data(), path.size()) % count);
}

namespace {

using json = nlohmann::ordered_json;
constexpr const char* kPartKey = "part";

}  // namespace

std::string with_part_record(const std::string& options_json, const PartRecord& record) {
  json options = json::parse(options_json);
  options[kPartKey] = {{"index", record.part.index},
                       {"count", record.part.count},
                       {"fingerprint", record.fingerprint},
                       {"listing_inputs", record.listing_inputs},
                       {"part_inputs", record.part_inputs}};
  return options.dump();
}

std::string without_part_record(const std::string& convert_options) {
  json options = json::parse(convert_options);
  options.erase(kPartKey);
  return options.dump();
}

bool is_conversion_part(const std::string& convert_options) {
  const json options = json::parse(convert_options, nullptr, false);
  return options.is_object() && options.contains(kPartKey);
}

PartRecord read_part_record(const std::string& convert_options) {
  const json options = json::parse(convert_options);
  const json& stored = options.at(kPartKey);
  PartRecord record;
  record.part = {json_integer<uint32_t>(stored.at("index")),
                 json_integer<uint32_t>(stored.at("count"))};
  record.fingerprint = stored.at("fingerprint").get<std::string>();
  record.listing_inputs = json_integer<uint64_t>(stored.at("listing_inputs"));
  record.part_inputs = json_integer<uint64_t>(stored.at("part_inputs"));
  return record;
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
    // Only where there is one: the key of a listing without stays as it was.
    if (!list.keypoint_skeleton.empty()) {
      key += "skeleton\n";
      for (const int32_t end : list.keypoint_skeleton) key += std::to_string(end) + '\n';
    }
  }
  char text[20];
  std::snprintf(text, sizeof text, "%016llx",
                static_cast<unsigned long long>(checksum(key.data(), key.size())));
  return text;
}

std::string foreign_part_shard(const fs::path& dir, const DatasetIndex& index,
                               const std::string& part) {
  for (const std::string& file : index.shards.file) {
    const fs::path path = dir / file;
    const h5::File shard = h5::File::open_read(path);
    const std::string written_by = shard.has_attr("/", format::kAttrPart)
                                       ? shard.read_string_attr("/", format::kAttrPart)
                                       : std::string();
    if (written_by != part) {
      return file_error(path, (written_by.empty() ? std::string("names no part of a conversion")
                                                  : "was written by part " + written_by) +
                                  ", but this is part " + part +
                                  " (a shard copied from elsewhere, or written by an older "
                                  "imgpack)")
          .what();
    }
  }
  return "";
}

}  // namespace imgpack
