// Reading a COCO file into a JSON DOM, less the members that nothing of a
// conversion reads (internal to imgpack::pack).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace imgpack {

// The parsed COCO file: its top-level object, holding only what a
// conversion reads. Freed leaf first: nlohmann::json's destructor gathers a
// container's children into a vector, an allocation that, failing where
// memory ran out, would end the process from a destructor.
class CocoDocument {
 public:
  explicit CocoDocument(nlohmann::json root);
  CocoDocument(const CocoDocument&) = delete;
  CocoDocument& operator=(const CocoDocument&) = delete;
  ~CocoDocument();
  const nlohmann::json& root() const { return *root_; }

 private:
  std::unique_ptr<nlohmann::json> root_;
};

// The COCO file `file`, as nlohmann::json::parse() gives it but with only
// the members a conversion reads: "images", "annotations" and "categories"
// at the top, and in their entries "id", "file_name", "width", "height",
// "image_id", "category_id", "bbox", "iscrowd", "keypoints", "skeleton" and "name"
// (whatever they hold, whole). The rest (segmentations, captions, licenses,
// anything else) is parsed but not kept. Throws UsageError naming the file
// where it cannot be read, is not valid JSON (with the parser's message),
// names a kept member twice in one object, nests a kept value more than 64
// deep or is not a JSON object; imgpack::Error where memory runs out.
CocoDocument read_coco_file(const std::filesystem::path& file);

// `value` as JSON text for an error message, as json::dump() writes it but
// three levels deep and about 60 characters at most, "..." for the rest.
// json::dump() recurses once a level (a value nested 100,000 deep overflows
// the stack) and prints all of it.
std::string json_excerpt(const nlohmann::json& value);

}  // namespace imgpack
