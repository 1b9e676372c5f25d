// imgpack inspect DATASET: what a dataset holds.
//
// The dataset is opened through the reader's checks (Dataset::open: the
// index, its checksums, every shard's structure), so a damaged dataset is an
// error naming the file, as in every other subcommand. --force shows what
// index.h5 says even when a shard is damaged or missing, naming the damage.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cli_common.hpp"
#include "cli_wording.hpp"
#include "escaped_text.hpp"
#include "files.hpp"
#include "imgpack/dataset.hpp"
#include "imgpack/dataset_index.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "imgpack/growth.hpp"
#include "imgpack/mask_stats.hpp"
#include "splits_file.hpp"
#include "summaries.hpp"

namespace imgpack::cli {

namespace {

struct InspectArgs {
  std::string dataset;
  bool json = false;
  bool force = false;
  bool quiet = false;  // accepted as by every subcommand: inspect prints no progress
};

// What inspect reads of index.h5: everything but the sample paths and the
// group names, the bulk of a large index, which it does not print (but for
// the name of one group without images, read when there is one).
constexpr IndexReadOptions kSummary{.sample_paths = false, .group_names = false};

// The masks' label frequencies are counted over at most this many bytes of
// clean masks (an evenly spaced subset of the samples beyond).
constexpr uint64_t kMaskCountBytes = uint64_t{1} << 30;

// The dataset when it passes the reader's checks, and its index. With
// --force, the index alone when the shards do not, and the problem (an
// index.h5 that cannot be read is an error either way).
DatasetIndex open_index(const InspectArgs& args, std::string& problem,
                        std::optional<Dataset>& dataset) {
  try {
    dataset = Dataset::open(args.dataset, {.index = kSummary});
    return dataset->index();
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    if (!args.force) throw;
    problem = e.what();
  }
  // A damaged splits.h5 leaves index.h5 to show, without splits.
  DatasetIndex index;
  try {
    index = read_index(args.dataset, kSummary);
  } catch (const UsageError&) {
    throw;
  } catch (const Error&) {
    index = detail::read_index_without_splits(args.dataset, kSummary);
  }
  std::cerr << "imgpack: warning: " << cli_wording(problem)
            << "; showing what index.h5 says (--force)\n";
  return index;
}

// "none", or "hflip,rotate=15 (variants 1..3 augmented, seed 7)" from convert_options.
std::string augment_summary(const DatasetIndex& index) {
  auto options = nlohmann::json::parse(index.convert_options, nullptr, false);
  if (!options.is_object() || !options.contains("augment") || !options["augment"].is_string() ||
      options["augment"].get<std::string>().empty()) {
    return "none";
  }
  std::string seed = options.contains("seed") ? options["seed"].dump() : "?";
  return options["augment"].get<std::string>() + " (variants 1.." +
         std::to_string(index.variants - 1) + " augmented, seed " + seed + ")";
}

// The name of group g, read for this alone.
std::string group_name(const std::string& dataset, std::size_t g) {
  return read_index(dataset, {.sample_paths = false, .group_names = true}).group_names.at(g);
}

// The mask labels that occur (or that the names table names), in order.
std::vector<int> mask_labels_to_show(const DatasetIndex& index, const MaskLabelCounts& counts) {
  std::vector<int> labels;
  for (int label = 0; label < 256; ++label) {
    if (counts.pixels[static_cast<std::size_t>(label)] > 0 ||
        static_cast<std::size_t>(label) < index.mask_class_names.size()) {
      labels.push_back(label);
    }
  }
  return labels;
}

std::string mask_label_name(const DatasetIndex& index, int label) {
  if (static_cast<std::size_t>(label) < index.mask_class_names.size()) {
    return index.mask_class_names[static_cast<std::size_t>(label)];
  }
  return label == index.mask_fill ? "(fill)" : "";
}

nlohmann::ordered_json masks_json(const DatasetIndex& index,
                                  const std::optional<MaskLabelCounts>& counts) {
  nlohmann::ordered_json j;
  j["fill"] = index.mask_fill;
  j["classes"] = index.mask_class_names;
  if (!counts) return j;
  j["masks_counted"] = counts->masks_counted;
  j["masks_total"] = counts->masks_total;
  nlohmann::ordered_json labels = nlohmann::ordered_json::array();
  for (int label : mask_labels_to_show(index, *counts)) {
    const auto l = static_cast<std::size_t>(label);
    labels.push_back({{"label", label},
                      {"name", mask_label_name(index, label)},
                      {"pixels", counts->pixels[l]},
                      {"fraction", counts->fraction(static_cast<uint8_t>(label))},
                      {"masks", counts->masks[l]}});
  }
  j["labels"] = std::move(labels);
  return j;
}

void print_masks(const DatasetIndex& index, const std::optional<MaskLabelCounts>& counts) {
  std::cout << "  masks       " << index.height << " x " << index.width
            << " uint8 labels per record, fill " << int{index.mask_fill};
  if (!counts) {
    std::cout << " (labels not counted: the shards did not open)\n";
    return;
  }
  std::cout << "; label pixels in " << counts->masks_counted;
  if (counts->masks_counted < counts->masks_total) std::cout << " of " << counts->masks_total;
  std::cout << " clean masks:\n";
  std::size_t width = 0;
  const std::vector<int> labels = mask_labels_to_show(index, *counts);
  for (int label : labels) width = std::max(width, mask_label_name(index, label).size());
  for (int label : labels) {
    std::string name = mask_label_name(index, label);
    name.resize(width, ' ');
    char line[160];
    std::snprintf(line, sizeof line, "    %3d %s  %6.2f%%  in %llu masks\n", label, name.c_str(),
                  100 * counts->fraction(static_cast<uint8_t>(label)),
                  static_cast<unsigned long long>(counts->masks[static_cast<std::size_t>(label)]));
    std::cout << line;
  }
}

// The names padded to the longest of them, for listings in columns.
std::vector<std::string> padded(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  out.reserve(names.size());
  for (const std::string& name : names) out.push_back(with_controls_escaped(name));
  std::size_t width = 0;
  for (const std::string& name : out) width = std::max(width, name.size());
  for (std::string& name : out) name.resize(width, ' ');
  return out;
}

// One line per name: the name, then its count.
void print_named_counts(const std::vector<std::string>& names,
                        const std::vector<uint64_t>& counts) {
  const std::vector<std::string> columns = padded(names);
  for (std::size_t i = 0; i < columns.size(); ++i) {
    std::cout << "    " << columns[i] << "  " << counts[i] << "\n";
  }
}

// Per multi-label class: the samples not removed that have it; and those with none.
struct MultilabelCounts {
  std::vector<uint64_t> per_class;
  uint64_t none = 0;
};

MultilabelCounts count_multilabel(const DatasetIndex& index) {
  MultilabelCounts counts;
  counts.per_class.assign(index.multilabel_names.size(), 0);
  for (std::size_t s = 0; s < index.num_samples() && index.has_multilabel(); ++s) {
    if (index.is_removed(s)) continue;  // counted as removed, nowhere else
    bool any = false;
    const std::span<const uint8_t> row = index.multilabel_of(s);
    for (std::size_t c = 0; c < row.size(); ++c) {
      counts.per_class[c] += row[c];
      any = any || row[c] != 0;
    }
    if (!any) ++counts.none;
  }
  return counts;
}

// One numeric target over the samples not removed that have a value (not NaN).
struct TargetSummary {
  uint64_t values = 0;
  double min = 0, mean = 0, max = 0;
};

std::vector<TargetSummary> summarize_targets(const DatasetIndex& index) {
  std::vector<TargetSummary> out(index.target_names.size());
  std::vector<double> sums(out.size(), 0);
  for (std::size_t s = 0; s < index.num_samples() && index.has_targets(); ++s) {
    if (index.is_removed(s)) continue;
    const std::span<const float> row = index.targets_of(s);
    for (std::size_t t = 0; t < row.size(); ++t) {
      if (std::isnan(row[t])) continue;
      const double v = row[t];
      TargetSummary& summary = out[t];
      summary.min = summary.values == 0 ? v : std::min(summary.min, v);
      summary.max = summary.values == 0 ? v : std::max(summary.max, v);
      sums[t] += v;
      ++summary.values;
    }
  }
  for (std::size_t t = 0; t < out.size(); ++t) {
    if (out[t].values > 0) out[t].mean = sums[t] / static_cast<double>(out[t].values);
  }
  return out;
}

void print_multilabel(const DatasetIndex& index, const MultilabelCounts& counts) {
  std::cout << "  multi-label " << index.multilabel_names.size() << " classes";
  if (counts.none > 0) std::cout << " (" << counts.none << " images with none)";
  std::cout << "\n";
  print_named_counts(index.multilabel_names, counts.per_class);
}

// A dataset's boxes, counted from the shards' tables (which Dataset keeps in
// memory): per class, in all, and the images (clean records, variant 0)
// without any.
struct BoxCounts {
  std::vector<uint64_t> per_class;
  uint64_t boxes = 0;
  uint64_t images = 0;
  uint64_t images_without = 0;
};

BoxCounts count_boxes(const Dataset& dataset) {
  BoxCounts counts;
  counts.per_class.assign(dataset.index().box_class_names.size(), 0);
  const DatasetIndex& index = dataset.index();
  for (uint64_t r = 0; r < dataset.num_records(); ++r) {
    // Removed images are left out of every count, as the summary says.
    if (index.is_removed(static_cast<std::size_t>(dataset.record_sample(r)))) continue;
    const Dataset::BoxRows rows = dataset.record_boxes(r);
    for (int32_t c : rows.classes) ++counts.per_class[static_cast<std::size_t>(c)];
    counts.boxes += rows.size();
    if (dataset.record_variant(r) != 0) continue;
    ++counts.images;
    if (rows.size() == 0) ++counts.images_without;
  }
  return counts;
}

std::string names_text(const std::vector<std::string>& names) {
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i)
    text += (i > 0 ? ", " : "") + with_controls_escaped(names[i]);
  return text;
}

void print_boxes(const DatasetIndex& index, const std::optional<BoxCounts>& counts) {
  std::cout << "  boxes       " << index.box_class_names.size() << " classes, kept where "
            << index.box_min_visible << " of a box stays inside";
  if (!counts) {
    std::cout << " (" << names_text(index.box_class_names)
              << "; not counted: the shards did not open)\n";
  } else {
    std::cout << "; " << counts->boxes << " in all records, " << counts->images_without << " of "
              << counts->images << " images without any:\n";
    print_named_counts(index.box_class_names, counts->per_class);
  }
  if (index.num_keypoints() == 0) return;
  std::cout << "  keypoints   " << index.num_keypoints() << " per box ("
            << names_text(index.keypoint_names) << ")";
  if (const std::size_t edges = index.keypoint_skeleton.size() / 2) {
    std::cout << ", a skeleton of " << edges << (edges == 1 ? " line" : " lines");
  }
  std::cout << "\n";
}

// [[a, b], ...]: the skeleton's pairs of keypoint indices.
nlohmann::ordered_json skeleton_pairs(const std::vector<int32_t>& skeleton) {
  nlohmann::ordered_json pairs = nlohmann::ordered_json::array();
  for (std::size_t e = 0; e + 1 < skeleton.size(); e += 2) {
    pairs.push_back({skeleton[e], skeleton[e + 1]});
  }
  return pairs;
}

nlohmann::ordered_json boxes_json(const DatasetIndex& index,
                                  const std::optional<BoxCounts>& counts) {
  nlohmann::ordered_json classes = nlohmann::ordered_json::array();
  for (std::size_t c = 0; c < index.box_class_names.size(); ++c) {
    nlohmann::ordered_json one = {{"name", index.box_class_names[c]}};
    if (counts) one["count"] = counts->per_class[c];
    classes.push_back(std::move(one));
  }
  nlohmann::ordered_json j = {{"classes", std::move(classes)},
                              {"keypoints", index.keypoint_names},
                              {"keypoint_flip", index.keypoint_flip},
                              {"keypoint_skeleton", skeleton_pairs(index.keypoint_skeleton)},
                              {"min_visible", index.box_min_visible}};
  if (counts) {
    j["boxes"] = counts->boxes;
    j["images_without"] = counts->images_without;
  }
  return j;
}

void print_targets(const DatasetIndex& index, const std::vector<TargetSummary>& summaries) {
  std::cout << "  targets     " << index.target_names.size() << " float32 per image\n";
  const std::vector<std::string> names = padded(index.target_names);
  for (std::size_t t = 0; t < summaries.size(); ++t) {
    const TargetSummary& summary = summaries[t];
    std::cout << "    " << names[t] << "  " << summary.values << " values";
    if (summary.values > 0) {
      char line[96];
      std::snprintf(line, sizeof line, ", min %g, mean %g, max %g", summary.min, summary.mean,
                    summary.max);
      std::cout << line;
    }
    std::cout << "\n";
  }
}

int run_inspect(const InspectArgs& args) {
  std::string problem;
  std::optional<Dataset> dataset;
  const DatasetIndex index = open_index(args, problem, dataset);
  std::optional<MaskLabelCounts> mask_counts;
  if (index.masks && dataset) mask_counts = count_mask_labels(*dataset, kMaskCountBytes);
  std::optional<BoxCounts> box_counts;
  if (index.boxes && dataset) box_counts = count_boxes(*dataset);
  std::filesystem::path dir(args.dataset);

  std::vector<uint64_t> class_counts(index.class_names.size(), 0);
  uint64_t unlabeled = 0;
  for (std::size_t s = 0; s < index.sample_label.size(); ++s) {
    if (index.is_removed(s)) continue;  // counted as removed, nowhere else
    const int32_t label = index.sample_label[s];
    if (label < 0) {
      ++unlabeled;
    } else {
      ++class_counts[static_cast<std::size_t>(label)];
    }
  }
  // Groups named by the inputs whose every image was skipped (a CSV's rows of
  // missing files, say): counted in `groups`, but holding nothing.
  std::vector<bool> group_used(index.num_groups(), false);
  for (int32_t group : index.sample_group) {
    if (group >= 0) group_used[static_cast<std::size_t>(group)] = true;
  }
  std::vector<std::size_t> empty_groups;
  for (std::size_t g = 0; g < group_used.size(); ++g) {
    if (!group_used[g]) empty_groups.push_back(g);
  }
  uint64_t disk_bytes = file_length(dir / format::kIndexFile);
  if (index.format_version >= 2) {
    std::error_code ec;  // missing under --force: counted as nothing
    const auto size = std::filesystem::file_size(dir / format::kSplitsFile, ec);
    if (!ec) disk_bytes += size;
  }
  std::vector<std::string> missing_shards;
  for (const std::string& shard : index.shards.file) {
    std::error_code ec;
    auto size = std::filesystem::file_size(dir / shard, ec);
    if (ec) {
      missing_shards.push_back(shard);
    } else {
      disk_bytes += size;
    }
  }
  const uint64_t pixel_bytes = index.num_records() * index.record_bytes();
  // The images whose records the shards hold: every sample, but those whose
  // records compact dropped.
  std::vector<bool> has_records(index.num_samples(), false);
  for (const int64_t sample : index.records.sample) {
    if (sample >= 0 && static_cast<std::size_t>(sample) < has_records.size())
      has_records[static_cast<std::size_t>(sample)] = true;
  }
  const auto held_images =
      static_cast<uint64_t>(std::count(has_records.begin(), has_records.end(), true));
  // A folder that may be entered but not listed (mode 711) is readable
  // otherwise: its unlisted files go uncounted rather than refuse it.
  std::optional<FileTally> unlisted;
  std::string unlisted_problem;
  try {
    unlisted = unlisted_shard_files(dir, index);
  } catch (const UsageError&) {
    throw;
  } catch (const ResourceShortage&) {
    throw;
  } catch (const Error& e) {
    unlisted_problem = e.what();
  }
  const MultilabelCounts multilabel = count_multilabel(index);
  const std::vector<TargetSummary> targets = summarize_targets(index);

  if (args.json) {
    nlohmann::ordered_json j;
    j["path"] = args.dataset;
    j["dataset_uuid"] = index.uuid;
    j["imgpack_format"] = index.format_version;
    j["records"] = index.num_records();
    j["samples"] = index.num_samples();
    j["removed"] = index.num_removed();
    j["generation"] = index.generation;
    nlohmann::ordered_json history = nlohmann::ordered_json::array();
    for (const IndexChange& change : index.history) {
      history.push_back({{"generation", change.generation},
                         {"date", change.date},
                         {"change", change.change},
                         {"added", change.added},
                         {"removed", change.removed}});
    }
    j["history"] = std::move(history);
    j["height"] = index.height;
    j["width"] = index.width;
    j["channels"] = index.channels;
    j["variants"] = index.variants;
    j["color"] = index.color;
    if (index.masks) j["masks"] = masks_json(index, mask_counts);
    if (index.boxes) j["boxes"] = boxes_json(index, box_counts);
    j["pixel_bytes"] = pixel_bytes;
    j["disk_bytes"] = disk_bytes;
    if (unlisted) {
      j["unlisted_shard_files"] = unlisted->files;
      j["unlisted_shard_bytes"] = unlisted->bytes;
    } else {
      j["unlisted_shard_files"] = nullptr;
      j["unlisted_shard_bytes"] = nullptr;
    }
    nlohmann::ordered_json classes = nlohmann::ordered_json::array();
    for (std::size_t c = 0; c < index.class_names.size(); ++c) {
      classes.push_back({{"name", index.class_names[c]}, {"count", class_counts[c]}});
    }
    j["classes"] = std::move(classes);
    j["unlabeled"] = unlabeled;
    j["groups"] = index.num_groups();
    j["empty_groups"] = empty_groups.size();
    if (index.has_multilabel()) {
      nlohmann::ordered_json classes_json = nlohmann::ordered_json::array();
      for (std::size_t c = 0; c < index.multilabel_names.size(); ++c) {
        classes_json.push_back(
            {{"name", index.multilabel_names[c]}, {"count", multilabel.per_class[c]}});
      }
      j["multilabel"] = {{"classes", std::move(classes_json)}, {"none", multilabel.none}};
    }
    if (index.has_targets()) {
      nlohmann::ordered_json targets_json = nlohmann::ordered_json::array();
      for (std::size_t t = 0; t < targets.size(); ++t) {
        nlohmann::ordered_json one = {{"name", index.target_names[t]},
                                      {"values", targets[t].values}};
        if (targets[t].values > 0) {
          one["min"] = targets[t].min;
          one["mean"] = targets[t].mean;
          one["max"] = targets[t].max;
        }
        targets_json.push_back(std::move(one));
      }
      j["targets"] = std::move(targets_json);
    }
    j["shards"] = index.num_shards();
    j["missing_shards"] = missing_shards;
    if (args.force)
      j["damage"] =
          problem.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(cli_wording(problem));
    nlohmann::ordered_json splits = nlohmann::ordered_json::array();
    for (const Split& split : index.splits) splits.push_back(split_json(index, split));
    j["splits"] = std::move(splits);
    j["convert_options"] = nlohmann::ordered_json::parse(index.convert_options, nullptr, false);
    j["created_by"] = index.created_by;
    print_json(j);
    return kExitOk;
  }

  std::cout << args.dataset << "\n"
            << "  uuid        " << index.uuid << "  (imgpack format " << index.format_version
            << ", " << index.created_by << ")\n"
            << (index.format_version < format::kIndexVersion
                    ? "  index       format " + std::to_string(index.format_version) +
                          ": imgpack upgrade rewrites it as format " +
                          std::to_string(format::kIndexVersion) + " (faster to open and split)\n"
                    : std::string())
            << "  records     " << index.num_records() << " (" << held_images << " images x "
            << index.variants << " variant" << (index.variants == 1 ? "" : "s") << ")\n"
            << "  shape       " << index.height << " x " << index.width << " x " << index.channels
            << " uint8 (" << index.color << "), " << human_bytes(index.record_bytes())
            << " per record\n"
            << "  size        " << human_bytes(pixel_bytes) << " of pixels, "
            << human_bytes(disk_bytes) << " on disk in " << index.num_shards() << " shard"
            << (index.num_shards() == 1 ? "" : "s") << "\n";
  if (!unlisted) {
    std::cout << "  unlisted    not counted (" << unlisted_problem << ")\n";
  } else if (unlisted->files > 0) {
    std::cout << "  unlisted    " << unlisted->files << " shard file"
              << (unlisted->files == 1 ? "" : "s") << " (" << human_bytes(unlisted->bytes)
              << ") not in this generation (kept for readers opened before it, or left by "
                 "an interrupted change); the dataset's next change (imgpack compact, say) "
                 "removes them\n";
  }
  if (index.num_removed() > 0) {
    uint64_t removed_records = 0;
    for (std::size_t r = 0; r < index.num_records(); ++r) {
      removed_records += index.is_removed(static_cast<std::size_t>(index.records.sample[r]));
    }
    std::cout << "  removed     " << index.num_removed()
              << " images (left out of every count below, every split and every reader; "
              << (removed_records > 0 ? std::to_string(removed_records) +
                                            " records of them stay in the shards until imgpack "
                                            "compact)\n"
                                      : std::string("their records dropped by imgpack compact)\n"));
  }
  if (index.generation > 0) {
    std::cout << "  generation  " << index.generation << "\n";
    for (const IndexChange& change : index.history) {
      std::cout << "    " << change.generation << "  " << (change.date.empty() ? "-" : change.date)
                << "  " << change.change << ": +" << change.added << " -" << change.removed
                << " images\n";
    }
  }
  if (!problem.empty()) std::cout << "  DAMAGED     " << cli_wording(problem) << "\n";
  if (!missing_shards.empty()) {
    std::cout << "  MISSING     " << missing_shards.size() << " shard files, e.g. "
              << missing_shards[0] << "\n";
  }
  std::cout << "  classes     " << index.class_names.size();
  if (unlabeled > 0) std::cout << " (" << unlabeled << " unlabeled images)";
  std::cout << "\n";
  print_named_counts(index.class_names, class_counts);
  std::cout << "  groups      " << index.num_groups();
  if (!empty_groups.empty()) {
    std::cout << " (" << empty_groups.size() << " without images, e.g. "
              << group_name(args.dataset, empty_groups[0]) << ")";
  }
  std::cout << "\n";
  if (index.has_multilabel()) print_multilabel(index, multilabel);
  if (index.has_targets()) print_targets(index, targets);
  if (index.masks) print_masks(index, mask_counts);
  if (index.boxes) print_boxes(index, box_counts);
  std::cout << "  augment     " << augment_summary(index) << "\n";
  std::cout << "  splits      "
            << (index.splits.empty() ? std::string("none") : std::to_string(index.splits.size()))
            << "\n";
  for (const Split& split : index.splits) {
    std::cout << "    ";
    print_split(std::cout, index, split, false);
  }
  return kExitOk;
}

}  // namespace

void add_inspect_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* cmd = app.add_subcommand("inspect",
                                     "Summarise a dataset: sizes, classes, groups, "
                                     "multi-label classes, targets, shards, splits, mask "
                                     "label frequencies");
  cmd->add_option("DATASET", args->dataset, "Dataset directory")
      ->required()
      ->check(dataset_directory());
  cmd->add_flag("--json", args->json, "Print one JSON object on stdout");
  cmd->add_flag("--quiet,-q", args->quiet, "No progress output (inspect prints none)");
  cmd->add_flag("--force", args->force,
                "Show what index.h5 says even when shards are damaged or missing (named on "
                "stderr; exit 0); a damaged index.h5 still fails");
  cmd->callback([args, &action] { action = [args] { return run_inspect(*args); }; });
}

}  // namespace imgpack::cli
