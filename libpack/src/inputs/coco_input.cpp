#include "inputs/coco_input.hpp"

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "imgpack/error.hpp"
#include "inputs/annotation_text.hpp"
#include "inputs/boxes_input.hpp"
#include "inputs/coco_json.hpp"
#include "inputs/memory_budget.hpp"

namespace imgpack {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// Where in a COCO file a value is, for messages: "FILE: images[12].width: ...".
struct CocoPlace {
  const fs::path& file;
  const char* array;
  std::size_t index;

  std::string text(const char* key = nullptr) const {
    return file.string() + ": " + array + "[" + std::to_string(index) + "]" +
           (key != nullptr ? std::string(".") + key : "");
  }
  [[noreturn]] void fail(const char* key, const std::string& message) const {
    throw UsageError(text(key) + ": " + message);
  }

  const json& object(const json& value) const {
    if (!value.is_object()) throw UsageError(text() + ": expected an object");
    return value;
  }
  const json& member(const json& object, const char* key) const {
    const auto it = object.find(key);
    if (it == object.end()) fail(key, "missing");
    return *it;
  }
  int64_t integer(const json& object, const char* key) const {
    const json& value = member(object, key);
    if (value.is_number_integer() &&
        (!value.is_number_unsigned() ||
         value.get<uint64_t>() <= uint64_t{std::numeric_limits<int64_t>::max()})) {
      return value.get<int64_t>();
    }
    if (value.is_number_float()) {
      const double number = value.get<double>();
      if (number == std::floor(number) && std::fabs(number) < 0x1p53) {
        return static_cast<int64_t>(number);
      }
    }
    fail(key, "expected an integer, not " + json_excerpt(value));
  }
  uint32_t size(const json& object, const char* key) const {
    const int64_t value = integer(object, key);
    if (value <= 0 || value > std::numeric_limits<uint32_t>::max()) {
      fail(key, "expected a positive number of pixels, not " + std::to_string(value));
    }
    return static_cast<uint32_t>(value);
  }
  const std::string& string(const json& object, const char* key) const {
    const json& value = member(object, key);
    if (!value.is_string()) fail(key, "expected a string, not " + json_excerpt(value));
    return value.get_ref<const std::string&>();
  }
};

// The named array of the file's top-level object; empty where it is absent
// and `required` is false.
const json& top_array(const json& root, const char* key, const fs::path& file, bool required) {
  static const json empty = json::array();
  const auto it = root.find(key);
  if (it == root.end()) {
    if (required) throw UsageError(file.string() + ": no '" + key + "' array");
    return empty;
  }
  if (!it->is_array()) {
    throw UsageError(file.string() + ": '" + key + "' is " + it->type_name() + ", not an array");
  }
  return *it;
}

struct CocoCategories {
  std::unordered_map<int64_t, int32_t> class_of_id;
  std::vector<std::string> names;           // class -> name
  std::vector<uint8_t> has_keypoints;       // class -> 1 where its category names keypoints
  std::vector<std::string> keypoint_names;  // [K]
  std::vector<int32_t> skeleton;            // [E x 2] keypoint pairs, from 0
};

// The "skeleton" of a category naming `keypoints` keypoints, at `at`: COCO's
// [[a, b], ...] pairs of keypoints numbered from 1, as pairs numbered from 0.
std::vector<int32_t> read_skeleton(const json& category, const CocoPlace& at,
                                   std::size_t keypoints) {
  std::vector<int32_t> pairs;
  const auto skeleton = category.find("skeleton");
  if (skeleton == category.end()) return pairs;
  if (!skeleton->is_array()) at.fail("skeleton", "expected an array of [a, b] keypoint pairs");
  if (!skeleton->empty() && keypoints == 0) {
    at.fail("skeleton", "joins keypoints, but the category names none (keypoints)");
  }
  for (std::size_t e = 0; e < skeleton->size(); ++e) {
    const json& edge = (*skeleton)[e];
    const std::string where = "skeleton[" + std::to_string(e) + "]";
    if (!edge.is_array() || edge.size() != 2) {
      at.fail(where.c_str(),
              "expected a pair [a, b] of keypoint numbers, not " + json_excerpt(edge));
    }
    std::array<int32_t, 2> ends{};
    for (std::size_t i = 0; i < 2; ++i) {
      const json& end = edge[i];
      if (!end.is_number_integer() || end.get<int64_t>() < 1 ||
          end.get<int64_t>() > static_cast<int64_t>(keypoints)) {
        at.fail(where.c_str(), json_excerpt(end) + " is not a keypoint number (1 to " +
                                   std::to_string(keypoints) +
                                   ", COCO numbers the category's keypoints from 1)");
      }
      ends[i] = static_cast<int32_t>(end.get<int64_t>() - 1);
    }
    if (ends[0] == ends[1]) at.fail(where.c_str(), "joins a keypoint to itself");
    pairs.insert(pairs.end(), ends.begin(), ends.end());
  }
  return pairs;
}

CocoCategories read_categories(const json& root, const fs::path& file) {
  const json& categories = top_array(root, "categories", file, false);
  struct Category {
    int64_t id;
    std::size_t index;
    std::vector<std::string> keypoints;
    std::vector<int32_t> skeleton;
  };
  std::vector<Category> sorted;
  sorted.reserve(categories.size());
  for (std::size_t i = 0; i < categories.size(); ++i) {
    const CocoPlace at{file, "categories", i};
    const json& category = at.object(categories[i]);
    Category entry{at.integer(category, "id"), i, {}, {}};
    if (trim(at.string(category, "name")).empty()) at.fail("name", "an empty name");
    const auto keypoints = category.find("keypoints");
    if (keypoints != category.end()) {
      if (!keypoints->is_array()) at.fail("keypoints", "expected an array of names");
      for (const json& name : *keypoints) {
        if (!name.is_string() || trim(name.get<std::string>()).empty()) {
          at.fail("keypoints", "expected names, not " + json_excerpt(name));
        }
        entry.keypoints.push_back(name.get<std::string>());
      }
      if (const auto repeat = first_repeat(entry.keypoints)) {
        at.fail("keypoints", "names '" + entry.keypoints[repeat->second] + "' twice");
      }
    }
    entry.skeleton = read_skeleton(category, at, entry.keypoints.size());
    sorted.push_back(std::move(entry));
  }
  std::sort(sorted.begin(), sorted.end(),
            [](const Category& a, const Category& b) { return a.id < b.id; });
  CocoCategories out;
  std::size_t keypoints_from = 0;
  std::size_t skeleton_from = 0;
  for (std::size_t c = 0; c < sorted.size(); ++c) {
    const Category& category = sorted[c];
    const CocoPlace at{file, "categories", category.index};
    if (c > 0 && sorted[c - 1].id == category.id) {
      at.fail("id", "category id " + std::to_string(category.id) + " is also categories[" +
                        std::to_string(sorted[c - 1].index) + "]'s");
    }
    out.class_of_id.emplace(category.id, static_cast<int32_t>(c));
    out.names.push_back(at.string(categories[category.index], "name"));
    out.has_keypoints.push_back(category.keypoints.empty() ? 0 : 1);
    if (category.keypoints.empty()) continue;
    if (out.keypoint_names.empty()) {
      out.keypoint_names = category.keypoints;
      keypoints_from = category.index;
    } else if (category.keypoints != out.keypoint_names) {
      at.fail("keypoints", "names [" + join(category.keypoints) + "] differ from categories[" +
                               std::to_string(keypoints_from) + "]'s [" + join(out.keypoint_names) +
                               "]; every category with keypoints must name the same ones");
    }
    // One skeleton joins the keypoints every category shares: where several
    // categories give one, they give the same.
    if (category.skeleton.empty()) continue;
    if (out.skeleton.empty()) {
      out.skeleton = category.skeleton;
      skeleton_from = category.index;
    } else if (category.skeleton != out.skeleton) {
      at.fail("skeleton", "differs from categories[" + std::to_string(skeleton_from) +
                              "]'s; the categories with keypoints share one skeleton");
    }
  }
  if (const auto repeat = first_repeat(out.names)) {
    const CocoPlace at{file, "categories", sorted[repeat->second].index};
    at.fail("name", "'" + out.names[repeat->second] + "' is also categories[" +
                        std::to_string(sorted[repeat->first].index) +
                        "]'s name (each category needs a name of its own)");
  }
  return out;
}

// The listing's samples by relative path and, for file names that are not
// paths below SRC, by bare file name (where exactly one sample has it). In
// an append, the samples the dataset holds count too: the listing lacks
// them, but an image naming one is theirs, and their file names make a
// listed one's ambiguous as they would have in one conversion of both.
class SampleFinder {
 public:
  static constexpr int64_t kNone = -1;       // no sample has the path or the file name
  static constexpr int64_t kAmbiguous = -2;  // no sample has the path; several the file name
  static constexpr int64_t kHeld = -3;       // a sample the dataset holds, not listed

  SampleFinder(const SourceList& list, const HeldTargets* held) {
    by_path_.reserve(list.samples.size());
    for (std::size_t i = 0; i < list.samples.size(); ++i) {
      by_path_.emplace(list.samples[i].path, static_cast<int64_t>(i));
    }
    if (held == nullptr) return;
    // A changed input is listed and held: the listing's sample it is.
    for (const std::string& path : held->sample_paths) by_path_.emplace(path, kHeld);
  }

  // The sample that `file_name`, `relative` to SRC ("" where it is outside
  // it, as relative_to_root() says), names; else kNone or kAmbiguous.
  int64_t find(const std::string& file_name, const std::string& relative) {
    if (!relative.empty()) {
      const auto it = by_path_.find(relative);
      if (it != by_path_.end()) return it->second;
    }
    if (by_name_.empty()) index_names();
    const std::size_t slash = file_name.rfind('/');
    const auto it = by_name_.find(
        std::string_view(file_name).substr(slash == std::string::npos ? 0 : slash + 1));
    return it == by_name_.end() ? kNone : it->second;
  }

 private:
  void index_names() {
    by_name_.reserve(by_path_.size());
    for (const auto& [path, sample] : by_path_) {
      const std::size_t slash = path.rfind('/');
      const auto [it, inserted] =
          by_name_.emplace(path.substr(slash == std::string_view::npos ? 0 : slash + 1), sample);
      if (!inserted) it->second = kAmbiguous;
    }
  }

  std::unordered_map<std::string_view, int64_t> by_path_;
  std::unordered_map<std::string_view, int64_t> by_name_;  // kAmbiguous: several samples
};

// The COCO images whose files are neither in the listing nor under SRC,
// collected as skipped inputs: once per path, and not where the scan already
// skipped that path.
class MissingImages {
 public:
  MissingImages(const SourceList& list, const fs::path& src, const fs::path& file)
      : src_(src), file_(file) {
    for (const SkippedInput& input : list.skipped) reported_.insert(input.path);
  }

  // Records images[index] (`file_name`, `relative` to SRC or "" outside it),
  // which no sample matches (`ambiguous` where several have its file name),
  // unless its file exists under SRC: such a file is not an input of this
  // conversion (a CSV does not list it, the scan skipped it).
  void add(std::size_t index, const std::string& file_name, const std::string& relative,
           bool ambiguous) {
    if (!relative.empty()) {
      struct stat st {};
      if (::stat((src_ / relative).c_str(), &st) == 0) return;
    }
    const std::string& path = relative.empty() ? file_name : relative;
    if (!reported_.insert(path).second) return;
    std::string reason = "missing: listed in " + file_.string() + " (images[" +
                         std::to_string(index) + "]) but not found under " + src_.string();
    if (ambiguous) {
      reason += " (and more than one listed file has its file name, so it names none of them)";
    }
    skipped_.push_back({path, std::move(reason)});
  }

  // Appends what add() recorded to `skipped`, in the file's order, or
  // merged by path where `skipped` is sorted by path (as scan_csv() leaves
  // it).
  void append_to(std::vector<SkippedInput>& skipped) {
    const auto by_path = [](const SkippedInput& a, const SkippedInput& b) {
      return a.path < b.path;
    };
    const bool sorted = std::is_sorted(skipped.begin(), skipped.end(), by_path);
    const auto middle = static_cast<std::ptrdiff_t>(skipped.size());
    skipped.insert(skipped.end(), std::make_move_iterator(skipped_.begin()),
                   std::make_move_iterator(skipped_.end()));
    skipped_.clear();
    if (!sorted) return;
    std::stable_sort(skipped.begin() + middle, skipped.end(), by_path);
    std::inplace_merge(skipped.begin(), skipped.begin() + middle, skipped.end(), by_path);
  }

 private:
  const fs::path& src_;
  const fs::path& file_;
  std::unordered_set<std::string> reported_;
  std::vector<SkippedInput> skipped_;
};

// One annotation's values, their form checked (a UsageError otherwise).
struct CocoAnnotation {
  double x, y, w, h;  // pixels
  bool crowd;
  const json* keypoints;  // nullptr where it has none
};

CocoAnnotation read_annotation(const json& annotation, const CocoPlace& at) {
  const json& bbox = at.member(annotation, "bbox");
  if (!bbox.is_array() || bbox.size() != 4 ||
      !std::all_of(bbox.begin(), bbox.end(), [](const json& v) { return v.is_number(); })) {
    at.fail("bbox", "expected [x, y, width, height] in pixels, not " + json_excerpt(bbox));
  }
  CocoAnnotation out{bbox[0].get<double>(),
                     bbox[1].get<double>(),
                     bbox[2].get<double>(),
                     bbox[3].get<double>(),
                     false,
                     nullptr};
  if (const auto crowd = annotation.find("iscrowd"); crowd != annotation.end()) {
    if (crowd->is_boolean()) {
      out.crowd = crowd->get<bool>();
    } else if (crowd->is_number() && (crowd->get<double>() == 0 || crowd->get<double>() == 1)) {
      out.crowd = crowd->get<double>() != 0;
    } else {
      at.fail("iscrowd", "expected 0 or 1, not " + json_excerpt(*crowd));
    }
  }
  if (const auto keypoints = annotation.find("keypoints"); keypoints != annotation.end()) {
    out.keypoints = &*keypoints;
  }
  return out;
}

// A box_problem for the annotation `object` at `at`: "FILE:
// annotations[3] (annotation id 17): MESSAGE".
std::string annotation_problem(const json& object, const CocoPlace& at,
                               const std::string& message) {
  const auto id = object.find("id");
  return at.text() + (id != object.end() ? " (annotation id " + json_excerpt(*id) + ")" : "") +
         ": " + message;
}

// Whether `keypoints` (an annotation's, or null) is an array with a triple
// whose visibility is not 0 (not labelled).
bool labels_a_keypoint(const json* keypoints) {
  if (keypoints == nullptr || !keypoints->is_array()) return false;
  for (std::size_t i = 2; i < keypoints->size(); i += 3) {
    const json& v = (*keypoints)[i];
    if (!v.is_number() || v.get<double>() != 0) return true;
  }
  return false;
}

// Appends one annotation's box and keypoints (normalised by the sample's
// box_width and box_height) to `sample`, or sets its box_problem.
void add_coco_annotation(SourceSample& sample, const CocoAnnotation& annotation, const json& object,
                         const CocoPlace& at, int32_t cls, bool category_has_keypoints,
                         std::size_t keypoint_count) {
  auto problem = [&](const std::string& message) {
    sample.box_problem = annotation_problem(object, at, message);
  };
  const double width = sample.box_width;
  const double height = sample.box_height;
  const double x = annotation.x, y = annotation.y, w = annotation.w, h = annotation.h;
  auto bbox = [&] {
    return "bbox [" + number_text(x) + ", " + number_text(y) + ", " + number_text(w) + ", " +
           number_text(h) + "]";
  };
  if (!std::isfinite(x + y + w + h)) {
    problem(bbox() + " (x, y, width, height) is too large to compute with");
    return;
  }
  if (w < 0 || h < 0) {
    problem(bbox() + " (x, y, width, height) has a negative size");
    return;
  }
  const SourceBox box = clipped_box(x / width, y / height, (x + w) / width, (y + h) / height, cls,
                                    static_cast<uint8_t>(annotation.crowd ? 1 : 0));
  if (!(w > 0 && h > 0) || !(box.x1 > box.x0 && box.y1 > box.y0)) {
    // No area inside the image (empty, wholly outside, or too small for
    // float32): left out with its keypoints, as a variant drops a box it
    // leaves no area of.
    sample.drop_box(static_cast<uint32_t>(at.index));
    return;
  }
  const json* keypoints = annotation.keypoints;
  const std::size_t first = sample.keypoints.size();
  if (!category_has_keypoints && labels_a_keypoint(keypoints)) {
    problem(
        "keypoints are labelled, but its category names no keypoints (categories[]."
        "keypoints), so they would be lost");
    return;
  }
  if (keypoint_count == 0) {
    // the categories name no keypoints
  } else if (!category_has_keypoints || keypoints == nullptr || keypoints->empty()) {
    sample.keypoints.resize(first + keypoint_count * 3, 0.0F);
  } else if (!keypoints->is_array() || keypoints->size() != keypoint_count * 3) {
    problem("keypoints: expected " + std::to_string(keypoint_count) +
            " triples x, y, v (the categories name " + std::to_string(keypoint_count) +
            " keypoints), not " +
            (keypoints->is_array() ? std::to_string(keypoints->size()) + " values"
                                   : json_excerpt(*keypoints)));
    return;
  } else {
    for (std::size_t i = 0; i < keypoints->size(); ++i) {
      const json& value = (*keypoints)[i];
      const double number = value.is_number() ? value.get<double>() : 0;
      const double scale = i % 3 == 0 ? width : i % 3 == 1 ? height : 1;
      const char* wrong = nullptr;
      if (!value.is_number()) {
        wrong = "is not a number";
      } else if (i % 3 == 2 && number != 0 && number != 1 && number != 2) {
        wrong = "is a visibility other than 0 (not labelled), 1 (hidden) or 2 (visible)";
      } else if (!std::isfinite(static_cast<float>(number / scale))) {
        wrong = "is too large a coordinate";
      }
      if (wrong != nullptr) {
        sample.keypoints.resize(first);
        problem("keypoints[" + std::to_string(i) + "] = " + json_excerpt(value) + " " + wrong);
        return;
      }
      sample.keypoints.push_back(static_cast<float>(number / scale));
    }
  }
  sample.boxes.push_back(box);
}

}  // namespace

void attach_coco(SourceList& list, const fs::path& src, const BoxOptions& options,
                 const HeldTargets* held) {
  const fs::path& file = options.coco;
  const CocoDocument document = read_coco_file(file);
  const json& root = document.root();
  CocoCategories categories = read_categories(root, file);
  const std::size_t keypoint_count = categories.keypoint_names.size();
  list.box_class_names = std::move(categories.names);
  list.keypoint_names = std::move(categories.keypoint_names);
  list.keypoint_skeleton = std::move(categories.skeleton);
  list.keypoint_flip = held != nullptr && options.keypoint_flip_map.empty() &&
                               list.keypoint_names == held->keypoint_names
                           ? held->keypoint_flip
                           : keypoint_flip_table(list.keypoint_names, options.keypoint_flip_map);

  const json& images = top_array(root, "images", file, true);
  std::unordered_map<int64_t, std::size_t> image_of_id;
  image_of_id.reserve(images.size());
  std::vector<int64_t> sample_of_image(images.size(), -1);
  std::vector<int64_t> image_of_sample(list.samples.size(), -1);
  SampleFinder finder(list, held);
  MissingImages missing(list, src, file);
  for (std::size_t i = 0; i < images.size(); ++i) {
    const CocoPlace at{file, "images", i};
    const json& image = at.object(images[i]);
    const int64_t id = at.integer(image, "id");
    const auto [seen, inserted] = image_of_id.emplace(id, i);
    if (!inserted) {
      at.fail("id", "image id " + std::to_string(id) + " is also images[" +
                        std::to_string(seen->second) + "]'s");
    }
    const std::string& file_name = at.string(image, "file_name");
    if (trim(file_name).empty()) at.fail("file_name", "an empty name");
    const uint32_t width = at.size(image, "width");
    const uint32_t height = at.size(image, "height");
    const std::string relative = relative_to_root(file_name, src);
    const int64_t s = finder.find(file_name, relative);
    if (s == SampleFinder::kHeld) continue;  // converted before: not this listing's
    if (s < 0) {
      missing.add(i, file_name, relative, s == SampleFinder::kAmbiguous);
      continue;
    }
    SourceSample& sample = list.samples[static_cast<std::size_t>(s)];
    int64_t& first = image_of_sample[static_cast<std::size_t>(s)];
    if (first >= 0) {
      sample.box_problem = sample.path + " is listed twice in " + file.string() + " (images[" +
                           std::to_string(first) + "] and images[" + std::to_string(i) + "])";
      continue;
    }
    first = static_cast<int64_t>(i);
    sample_of_image[i] = s;
    sample.box_width = width;
    sample.box_height = height;
  }

  const json& annotations = top_array(root, "annotations", file, false);
  if (keypoint_count > 0) {
    // Every box holds K keypoints (x, y, visibility as float32), those of an
    // annotation without any too: K named by a category can make a small
    // file's boxes take gigabytes. A conversion holds them up to three times
    // (the listing, the records on their way, a shard's before its commit).
    refuse_past_half_memory(
        file.string(),
        "its categories name " + std::to_string(keypoint_count) + " keypoints and it has " +
            std::to_string(annotations.size()) +
            " annotations: their keypoints, 12 bytes a keypoint and box held up to three times",
        static_cast<long double>(annotations.size()) * static_cast<long double>(keypoint_count) *
            12 * 3);
  }
  // An annotation's id is optional here, but one named twice is two files joined or one list
  // appended twice: each of its boxes would be stored twice.
  std::unordered_map<std::string, std::size_t> annotation_of_id;
  annotation_of_id.reserve(annotations.size());
  for (std::size_t i = 0; i < annotations.size(); ++i) {
    const CocoPlace at{file, "annotations", i};
    const json& annotation = at.object(annotations[i]);
    if (const auto id_value = annotation.find("id");
        id_value != annotation.end() && !id_value->is_null()) {
      // An integer (7 and 7.0 alike), or a string some tools write, whole.
      const bool text = id_value->is_string();
      const std::string id = text ? "\"" + id_value->get<std::string>() + "\""
                                  : std::to_string(at.integer(annotation, "id"));
      const auto [seen, inserted] = annotation_of_id.emplace(id, i);
      if (!inserted) {
        at.fail("id", "annotation id " + (text ? json_excerpt(*id_value) : id) +
                          " is also annotations[" + std::to_string(seen->second) + "]'s");
      }
    }
    const int64_t image_id = at.integer(annotation, "image_id");
    const auto image = image_of_id.find(image_id);
    if (image == image_of_id.end()) {
      at.fail("image_id", std::to_string(image_id) + " is not the id of any of images[]");
    }
    const int64_t category_id = at.integer(annotation, "category_id");
    const CocoAnnotation values = read_annotation(annotation, at);
    const int64_t s = sample_of_image[image->second];
    if (s < 0) continue;  // an image this conversion does not take
    SourceSample& sample = list.samples[static_cast<std::size_t>(s)];
    if (!sample.box_problem.empty()) continue;
    const auto cls = categories.class_of_id.find(category_id);
    if (cls == categories.class_of_id.end()) {
      sample.box_problem = annotation_problem(
          annotation, at,
          "category_id " + std::to_string(category_id) + " is not the id of any of categories[]");
      continue;
    }
    add_coco_annotation(sample, values, annotation, at, cls->second,
                        categories.has_keypoints[static_cast<std::size_t>(cls->second)] != 0,
                        keypoint_count);
  }
  missing.append_to(list.skipped);
  for (std::size_t s = 0; s < list.samples.size(); ++s) {
    if (image_of_sample[s] < 0) {
      list.samples[s].box_problem = list.samples[s].path + " is not in " + file.string();
    }
  }
}

}  // namespace imgpack
