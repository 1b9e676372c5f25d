#include "cli_wording.hpp"

#include <array>
#include <cctype>
#include <string>
#include <utility>

namespace imgpack::cli {

namespace {

// Library name -> what the CLI user types. A name that is a prefix of
// another (ScanOptions::group_regex, ScanOptions::group_missing_ok) is fine:
// the longest match at a position wins.
constexpr std::array<std::pair<std::string_view, std::string_view>, 68> kWording = {{
    {"SelectionOptions::split", "--split"},
    {"ConvertOptions::size", "--size"},
    {"AppendOptions::csv", "--csv"},
    {"AppendOptions::masks", "--masks"},
    {"AppendOptions::coco", "--coco"},
    {"AppendOptions::replace_changed", "--replace-changed"},
    {"read_path_list's column", "--csv-path"},
    {"ConvertOptions::variants", "--variants"},
    {"ConvertOptions::augment", "--augment"},
    {"ConvertOptions::shard_size", "--shard-size"},
    {"ConvertOptions::max_pixels", "--max-pixels"},
    {"ConvertOptions::max_skipped", "--max-skipped"},
    {"ConvertOptions::threads", "--threads"},
    {"ConvertOptions::splits", "--split"},
    {"ConvertOptions::overwrite", "--overwrite"},
    {"ConvertOptions::resume", "--resume"},
    {"ConvertOptions::part", "--part"},
    {"ConvertOptions::fill", "--fill"},
    {"CsvInput::path", "--csv-path"},
    {"CsvInput::label", "--csv-label"},
    {"CsvInput::group", "--csv-group"},
    {"CsvInput::mask", "--csv-mask"},
    {"CsvInput::targets", "--csv-targets"},
    {"CsvInput::multilabel", "--csv-multilabel"},
    {"AppendOptions::files", "--files"},
    {"as DatasetIndex::sample_path holds them", "as split --export writes them"},
    {"MaskOptions::dir", "--masks"},
    {"MaskOptions::suffix", "--mask-suffix"},
    {"MaskOptions::fill", "--mask-fill"},
    {"MaskOptions::colors", "--mask-colors FILE"},
    {"MaskOptions::classes", "--mask-classes"},
    {"BoxOptions::coco", "--coco"},
    {"BoxOptions::yolo_names", "--yolo-names"},
    {"BoxOptions::yolo_keypoints", "--yolo-keypoints"},
    {"BoxOptions::yolo", "--yolo"},
    {"BoxOptions::min_visible", "--box-min-visible"},
    {"BoxOptions::keypoint_flip_map", "--keypoint-flip-map"},
    {"ScanOptions::group_regex", "--group-regex"},
    {"ScanOptions::group_missing_ok", "--group-missing ok"},
    {"ScanOptions::labels", "--labels"},
    {"LabelSource::dirs", "--labels dirs"},
    {"LabelSource::csv", "--labels csv"},
    {"OnError::fail", "--on-error fail"},
    {"ResizeMode::pad", "--resize pad"},
    {"SplitSpec::test_fraction", "--test"},
    {"SplitSpec::val_fraction", "--val"},
    {"SplitSpec::folds", "--folds"},
    {"SplitSpec::kind", "--kind"},
    {"SplitSpec::use_labels", "--no-stratify"},
    {"SplitSpec::use_groups", "--no-groups"},
    {"SplitSpec::use_groups false", "--no-groups"},
    {"parse_split_option:", "--split"},
    {"store_split replaces it only when asked to", "pass --force to replace it"},
    {"make_split() makes a split", "imgpack split makes a split"},
    {"CropOptions::hflip", "--hflip"},
    {"CropOptions::vflip", "--vflip"},
    {"augment_spec_help()", "see imgpack convert --help"},
    {"SplitImport::path", "--path-column"},
    {"SplitImport::fold", "--fold-column"},
    {"PreviewOptions::samples", "--samples"},
    {"SampleDataOptions::classes", "--classes"},
    {"SampleDataOptions::groups", "--groups"},
    {"SampleDataOptions::per_class", "--per-class"},
    {"SampleDataOptions::width and height", "--size"},
    {"verify_dataset()", "imgpack verify"},
    {"reset_splits_file()", "imgpack split DATASET --reset"},
    {"merge() finishes the merge", "imgpack merge OUT finishes it"},
    {"merge() joins them", "imgpack merge OUT joins them"},
}};

}  // namespace

std::string cli_wording(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  std::size_t at = 0;
  while (at < message.size()) {
    std::size_t best = 0;
    std::string_view replacement;
    // Every name begins with a letter: the rest of the text is copied as is.
    const auto c = static_cast<unsigned char>(message[at]);
    if (!std::isalpha(c) || (at > 0 && std::isalnum(static_cast<unsigned char>(message[at - 1])))) {
      out += message[at++];
      continue;
    }
    for (const auto& [name, flag] : kWording) {
      if (name.size() > best && message.substr(at).starts_with(name)) {
        best = name.size();
        replacement = flag;
      }
    }
    if (best > 0) {
      out += replacement;
      at += best;
    } else {
      out += message[at++];
    }
  }
  return out;
}

namespace {

// The start of the UTF-8 character holding byte `at` of `text`.
std::size_t character_start(std::string_view text, std::size_t at) {
  while (at > 0 && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) --at;
  return at;
}

// `text` without its middle: the first and last `kept` bytes (whole UTF-8
// characters) around a note of how much was left out.
std::string cut_middle(std::string_view text, std::size_t kept, std::string_view pad) {
  const std::size_t head = character_start(text, kept);
  const std::size_t tail = character_start(text, text.size() - kept);
  return std::string(text.substr(0, head)) + std::string(pad) + "[... " +
         std::to_string(tail - head) + " bytes left out ...]" + std::string(pad) +
         std::string(text.substr(tail));
}

}  // namespace

std::string error_text(std::string_view message) {
  constexpr std::size_t kLimit = 4096;
  constexpr std::size_t kLongWord = 1024;
  constexpr std::size_t kWordKept = 384;
  if (message.size() <= kLimit) return cli_wording(message);
  // Each word over 1 KiB (a path near PATH_MAX, a huge value echoed) is cut
  // first, so that the text between such words, the reason, stays whole.
  std::string shortened;
  std::size_t at = 0;
  while (at < message.size()) {
    std::size_t end = message.find(' ', at);
    if (end == std::string_view::npos) end = message.size();
    const std::string_view word = message.substr(at, end - at);
    shortened += word.size() > kLongWord ? cut_middle(word, kWordKept, "") : std::string(word);
    if (end < message.size()) shortened += ' ';
    at = end + 1;
  }
  if (shortened.size() > kLimit) shortened = cut_middle(shortened, kLimit / 2, " ");
  return cli_wording(shortened);
}

}  // namespace imgpack::cli
