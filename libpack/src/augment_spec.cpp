#include "augment_spec.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>

#include "imgpack/convert_options.hpp"
#include "imgpack/error.hpp"

namespace imgpack {

namespace {

enum class KeyKind { probability_flag, number, range, fill };

struct KeyRule {
  const char* name;
  KeyKind kind;
  double lo, hi;            // allowed values (both ends of a range)
  const char* placeholder;  // the value as help and errors show it
  const char* meaning;
};

constexpr KeyRule kRules[] = {
    {"hflip", KeyKind::probability_flag, 0, 1, "P",
     "mirror left-right with probability P (default 0.5)"},
    {"vflip", KeyKind::probability_flag, 0, 1, "P",
     "mirror upside down with probability P (default 0.5)"},
    {"rotate", KeyKind::number, 0, 180, "DEG", "rotate by U(-DEG, DEG) degrees, + = anticlockwise"},
    {"shift", KeyKind::number, 0, 1, "FRAC", "shift by U(-FRAC, FRAC) of the width and height"},
    {"zoom", KeyKind::range, 0.1, 10, "LO:HI", "scale by U(LO, HI) about the centre; > 1 enlarges"},
    {"shear", KeyKind::number, 0, 45, "DEG", "shear horizontally by U(-DEG, DEG) degrees"},
    {"crop_scale", KeyKind::range, 0.01, 1, "LO:HI",
     "random resized crop of U(LO, HI) of the source area"},
    {"aspect", KeyKind::range, 0.1, 10, "LO:HI",
     "crop (or framing) aspect / output aspect, log-uniform"},
    {"brightness", KeyKind::number, 0, 1, "F", "multiply by U(1-F, 1+F)"},
    {"contrast", KeyKind::number, 0, 1, "F", "blend with the mean gray by U(1-F, 1+F)"},
    {"saturation", KeyKind::number, 0, 1, "F", "blend with the pixel's gray by U(1-F, 1+F)"},
    {"hue", KeyKind::number, 0, 0.5, "F", "rotate the hue by U(-F, F) turns"},
    {"gray", KeyKind::number, 0, 1, "P", "grayscale with probability P"},
    {"fill", KeyKind::fill, 0, 0, "MODE",
     "outside the source: reflect (default), constant (ConvertOptions::fill), edge"},
};

std::string format_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

// "DEG", "P", "LO:HI"
std::string syntax(const KeyRule& rule) {
  const bool optional = rule.kind == KeyKind::probability_flag;
  std::string text = rule.name;
  text.append(optional ? "[=" : "=").append(rule.placeholder).append(optional ? "]" : "");
  return text;
}

// "rotate=DEG with DEG in 0..180"
std::string allowed(const KeyRule& rule) {
  const std::string lo = format_number(rule.lo), hi = format_number(rule.hi);
  switch (rule.kind) {
    case KeyKind::probability_flag:
    case KeyKind::number:
      return syntax(rule) + " with " + rule.placeholder + " in " + lo + ".." + hi;
    case KeyKind::range:
      return syntax(rule) + " with " + lo + " <= LO <= HI <= " + hi;
    case KeyKind::fill:
      return "fill=reflect, fill=constant or fill=edge";
  }
  return syntax(rule);
}

[[noreturn]] void fail(const KeyRule& rule, std::string_view item, const std::string& problem) {
  throw UsageError("ConvertOptions::augment: '" + std::string(item) + "': " + problem + "; " +
                   rule.name + " takes " + allowed(rule));
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

double parse_number(const KeyRule& rule, std::string_view item, std::string_view text) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(value)) {
    std::string problem = "'";
    problem.append(text).append("' is not a number");
    fail(rule, item, problem);
  }
  if (value < rule.lo || value > rule.hi) fail(rule, item, "out of range");
  return value;
}

void parse_item(std::string_view item, AugmentSpec& spec, std::set<std::string>& seen) {
  const std::size_t eq = item.find('=');
  const std::string key(trim(item.substr(0, eq)));
  const bool has_value = eq != std::string_view::npos;
  const std::string_view value = has_value ? trim(item.substr(eq + 1)) : std::string_view();

  const KeyRule* rule = nullptr;
  for (const KeyRule& r : kRules) {
    if (key == r.name) rule = &r;
  }
  if (rule == nullptr) {
    std::string known;
    for (const KeyRule& r : kRules) known += (known.empty() ? "" : ", ") + std::string(r.name);
    throw UsageError("ConvertOptions::augment: unknown key '" + key + "' in '" + std::string(item) +
                     "'; known keys: " + known + " (augment_spec_help())");
  }
  if (!seen.insert(key).second) fail(*rule, item, "given twice");

  double lo = 0, hi = 0;
  switch (rule->kind) {
    case KeyKind::probability_flag:
      lo = has_value ? parse_number(*rule, item, value) : 0.5;
      break;
    case KeyKind::number:
      if (!has_value) fail(*rule, item, "needs a value");
      lo = parse_number(*rule, item, value);
      break;
    case KeyKind::range: {
      const std::size_t colon = value.find(':');
      if (!has_value || colon == std::string_view::npos) fail(*rule, item, "needs LO:HI");
      lo = parse_number(*rule, item, trim(value.substr(0, colon)));
      hi = parse_number(*rule, item, trim(value.substr(colon + 1)));
      if (lo > hi) fail(*rule, item, "LO is above HI");
      break;
    }
    case KeyKind::fill:
      if (value == "reflect") {
        spec.fill = FillMode::reflect;
      } else if (value == "constant") {
        spec.fill = FillMode::constant;
      } else if (value == "edge") {
        spec.fill = FillMode::edge;
      } else {
        fail(*rule, item, has_value ? "unknown mode" : "needs a mode");
      }
      return;
  }

  if (key == "hflip")
    spec.hflip = lo;
  else if (key == "vflip")
    spec.vflip = lo;
  else if (key == "rotate")
    spec.rotate = lo;
  else if (key == "shift")
    spec.shift = lo;
  else if (key == "shear")
    spec.shear = lo;
  else if (key == "brightness")
    spec.brightness = lo;
  else if (key == "contrast")
    spec.contrast = lo;
  else if (key == "saturation")
    spec.saturation = lo;
  else if (key == "hue")
    spec.hue = lo;
  else if (key == "gray")
    spec.gray = lo;
  else if (key == "zoom") {
    spec.zoom_min = lo;
    spec.zoom_max = hi;
  } else if (key == "crop_scale") {
    spec.crop = true;
    spec.crop_scale_min = lo;
    spec.crop_scale_max = hi;
  } else if (key == "aspect") {
    spec.aspect_min = lo;
    spec.aspect_max = hi;
  }
}

}  // namespace

bool AugmentSpec::has_color() const {
  return brightness != 0 || contrast != 0 || saturation != 0 || hue != 0 || gray != 0;
}

bool AugmentSpec::draws() const {
  const auto chance = [](double p) { return p > 0 && p < 1; };
  return chance(hflip) || chance(vflip) || chance(gray) || rotate != 0 || shift != 0 ||
         zoom_min != zoom_max || shear != 0 ||
         (crop && (crop_scale_min != crop_scale_max || aspect_min != aspect_max)) ||
         brightness != 0 || contrast != 0 || saturation != 0 || hue != 0;
}

AugmentSpec parse_augment_spec(std::string_view text) {
  AugmentSpec spec;
  if (trim(text).empty()) return spec;
  std::set<std::string> seen;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string_view item =
        trim(text.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (item.empty()) {
      throw UsageError("ConvertOptions::augment: empty item in '" + std::string(text) +
                       "' (keys are separated by single commas)");
    }
    parse_item(item, spec, seen);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return spec;
}

std::string augment_spec_help() {
  std::string text;
  for (const KeyRule& rule : kRules) {
    std::string key = syntax(rule), range;
    if (rule.kind != KeyKind::fill) range = format_number(rule.lo) + ".." + format_number(rule.hi);
    key.resize(std::max<std::size_t>(key.size() + 1, 18), ' ');
    range.resize(9, ' ');
    text += "  " + key + range + rule.meaning + "\n";
  }
  return text;
}

std::string reflected_objects_warning(std::string_view augment, uint32_t variants, bool boxes) {
  if (!boxes || variants < 2) return "";
  const AugmentSpec spec = parse_augment_spec(augment);
  const bool uncovers = spec.rotate > 0 || spec.shift > 0 || spec.zoom_min < 1 || spec.shear > 0;
  if (!uncovers || spec.fill != FillMode::reflect) return "";
  return "ConvertOptions::augment '" + std::string(augment) +
         "' fills what a rotation, shift, shear or zoom-out uncovers with a mirror of the image "
         "(fill=reflect, the default), where objects appear again without boxes; for boxes add "
         "fill=constant (or fill=edge)";
}

}  // namespace imgpack
