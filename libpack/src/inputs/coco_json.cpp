#include "inputs/coco_json.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <iterator>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "imgpack/error.hpp"
#include "inputs/annotation_text.hpp"

namespace imgpack {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// Empties `value` without allocating, the last leaves first (see
// CocoDocument). Each pass walks down from `value` along last children, so
// the cost is the number of containers times the depth, which
// CocoDomBuilder bounds.
void release(json& value) noexcept {
  // The last child of a container; nullptr for anything else or an empty one.
  const auto last = [](json& node) -> json* {
    if (auto* array = node.get_ptr<json::array_t*>(); array != nullptr && !array->empty()) {
      return &array->back();
    }
    if (auto* object = node.get_ptr<json::object_t*>(); object != nullptr && !object->empty()) {
      return &std::prev(object->end())->second;
    }
    return nullptr;
  };
  const auto pop = [](json& node) {
    if (auto* array = node.get_ptr<json::array_t*>()) {
      array->pop_back();
    } else if (auto* object = node.get_ptr<json::object_t*>()) {
      object->erase(std::prev(object->end()));
    }
  };
  while (last(value) != nullptr) {
    json* node = &value;
    while (json* child = last(*node)) {
      if (last(*child) == nullptr) break;
      node = child;
    }
    while (json* child = last(*node)) {
      if (last(*child) != nullptr) break;
      pop(*node);
    }
  }
}

// Builds the DOM of a COCO file as nlohmann::json::parse() would, less every
// member nothing reads (read_coco_file()): the segmentations' polygons and
// run lengths are most of a COCO file. On a 340 MB file of 700k
// annotations: 10 s and 1 GB, where a full parse takes 19 s and 2 GB. (A
// parse callback could drop them too, but nlohmann's callback parser is a
// hundred times slower.)
class CocoDomBuilder : public nlohmann::json_sax<json> {
 public:
  CocoDomBuilder() = default;
  CocoDomBuilder(const CocoDomBuilder&) = delete;
  CocoDomBuilder& operator=(const CocoDomBuilder&) = delete;
  ~CocoDomBuilder() override { release(root_); }

  bool null() override { return add(json(nullptr)); }
  bool boolean(bool value) override { return add(json(value)); }
  bool number_integer(json::number_integer_t value) override { return add(json(value)); }
  bool number_unsigned(json::number_unsigned_t value) override { return add(json(value)); }
  bool number_float(json::number_float_t value, const json::string_t& /*text*/) override {
    return add(json(value));
  }
  bool string(json::string_t& value) override { return add(json(std::move(value))); }
  bool binary(json::binary_t& /*value*/) override { return true; }  // not in JSON text
  bool start_object(std::size_t /*elements*/) override { return open(json::object()); }
  bool end_object() override { return close(); }
  bool start_array(std::size_t /*elements*/) override { return open(json::array()); }
  bool end_array() override { return close(); }
  bool key(json::string_t& name) override {
    if (skip_depth_ > 0) return true;
    skip_value_ = !kept(name);
    if (!skip_value_ && stack_.back()->contains(name)) {
      return refuse(stack_.size() - 1, "the member \"" + name + "\" appears twice");
    }
    key_ = std::move(name);
    return true;
  }
  bool parse_error(std::size_t position, const std::string& /*token*/,
                   const nlohmann::detail::exception& failure) override {
    // The library's message less its "[json.exception.parse_error.101] "
    // tag, with the place where it names none (a number overflow).
    std::string_view text = failure.what();
    if (text.starts_with("[json.exception.")) {
      if (const std::size_t end = text.find("] "); end != std::string_view::npos) {
        text.remove_prefix(end + 2);
      }
    }
    error_ = std::string(text);
    if (error_.find(" at line ") == std::string::npos) {
      error_ = "at byte " + std::to_string(position) + ": " + error_;
    }
    error_ = "not valid JSON: " + error_;
    return false;
  }

  json& root() { return root_; }
  const std::string& error() const { return error_; }

 private:
  static constexpr std::size_t kMaxDepth = 64;

  // Whether the member `name` of the object open now is kept: at the top
  // (depth 1), the three lists; in their entries (depth 3: the top object,
  // a list, an entry), what read_coco_file() names; everything inside a kept
  // value, and the members of a list that is an object (which the reader
  // refuses, showing them).
  bool kept(const std::string& name) const {
    static constexpr std::array<std::string_view, 3> kLists = {"images", "annotations",
                                                               "categories"};
    static constexpr std::array<std::string_view, 11> kEntryMembers = {
        "id",   "file_name", "width",     "height", "image_id", "category_id",
        "bbox", "iscrowd",   "keypoints", "name",   "skeleton"};
    const auto among = [&](const auto& names) {
      return std::find(names.begin(), names.end(), name) != names.end();
    };
    if (stack_.size() == 1) return among(kLists);
    if (stack_.size() == 3) return among(kEntryMembers);
    return true;
  }
  // Stops the parse with `problem`, named by the place of the value open
  // `levels` below the top object (at most), as the reader names places:
  // "images[3].bbox" at 3.
  bool refuse(std::size_t levels, const std::string& problem) {
    std::string place;
    for (std::size_t i = 1; i <= levels && i < stack_.size(); ++i) {
      const json& parent = *stack_[i - 1];
      if (parent.is_array()) {
        // The one being built. Appended piecewise: GCC 12 at -O3 reports a
        // false -Wrestrict on "[" + std::to_string().
        place.append(1, '[').append(std::to_string(parent.size() - 1)).append(1, ']');
        continue;
      }
      for (const auto& [name, value] : parent.get_ref<const json::object_t&>()) {
        if (&value != stack_[i]) continue;
        if (!place.empty()) place += '.';
        place += name;
      }
    }
    error_ = place;
    if (!error_.empty()) error_ += ": ";
    error_ += problem;
    return false;
  }
  // Where a new value goes: the root, the end of the open array, or the open
  // object's last key.
  json* place(json value) {
    if (stack_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    json& parent = *stack_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(value));
      return &parent.back();
    }
    json& slot = parent[key_];
    slot = std::move(value);
    return &slot;
  }
  bool add(json value) {
    if (skip_depth_ > 0 || std::exchange(skip_value_, false)) return true;
    place(std::move(value));
    return true;
  }
  bool open(json container) {
    if (skip_depth_ > 0 || std::exchange(skip_value_, false)) {
      ++skip_depth_;
      return true;
    }
    if (stack_.size() == kMaxDepth) {
      return refuse(
          3, "nested more than " + std::to_string(kMaxDepth) + " deep, which no COCO file is");
    }
    stack_.push_back(place(std::move(container)));
    return true;
  }
  bool close() {
    if (skip_depth_ > 0) {
      --skip_depth_;
    } else {
      stack_.pop_back();
    }
    return true;
  }

  // null, as by default, but from basic_json(value_t), which may throw: a
  // defaulted constructor calling the noexcept default would be noexcept too.
  json root_{json::value_t::null};
  std::vector<json*> stack_;  // the open containers; only the last one grows
  std::string key_;
  bool skip_value_ = false;     // the next value is of a member not kept
  std::size_t skip_depth_ = 0;  // containers open inside a skipped value
  std::string error_;
};

constexpr std::size_t kExcerptChars = 60;

// `text` cut to at most `limit` bytes at a UTF-8 character's start, "..."
// after it when cut.
std::string cut(std::string text, std::size_t limit) {
  if (text.size() <= limit) return text;
  std::size_t end = limit;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  text.resize(end);
  return text + "...";
}

void append_excerpt(const json& value, int depth, std::string& out) {
  if (!value.is_structured()) {  // a scalar: dump() does not recurse
    out += cut(value.dump(), kExcerptChars);
    return;
  }
  const bool array = value.is_array();
  if (depth == 0 && !value.empty()) {
    out += array ? "[...]" : "{...}";
    return;
  }
  out += array ? '[' : '{';
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (it != value.begin()) out += ',';
    if (out.size() >= kExcerptChars) {
      out += "...";
      break;
    }
    if (!array) out += cut(json(it.key()).dump(), kExcerptChars) + ':';
    append_excerpt(*it, depth - 1, out);
  }
  out += array ? ']' : '}';
}

}  // namespace

std::string json_excerpt(const json& value) {
  std::string out;
  append_excerpt(value, 3, out);
  return out;
}

CocoDocument::CocoDocument(json root) : root_(std::make_unique<json>(std::move(root))) {}

CocoDocument::~CocoDocument() { release(*root_); }

CocoDocument read_coco_file(const fs::path& file) {
  std::string text = read_text_file(file, "the COCO file (BoxOptions::coco)");
  CocoDomBuilder builder;
  try {
    if (!json::sax_parse(text, &builder)) throw UsageError(file.string() + ": " + builder.error());
  } catch (const std::bad_alloc&) {
    release(builder.root());
    const std::size_t bytes = text.size();
    std::string().swap(text);
    throw Error(file.string() + ": out of memory parsing its " + std::to_string(bytes >> 20) +
                " MiB of JSON");
  }
  if (!builder.root().is_object()) {
    throw UsageError(file.string() + ": not a JSON object (COCO)");
  }
  return CocoDocument(std::move(builder.root()));
}

}  // namespace imgpack
