#include "merge/merge_plan.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "files.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "imgpack/merge.hpp"

namespace imgpack {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

constexpr int64_t kNoSample = -1;  // a shard row no record of the index is at (yet)

std::string read_text(const fs::path& path) {
  std::vector<uint8_t> bytes;
  const std::string problem = read_file(path, bytes);
  if (!problem.empty()) throw file_error(path, problem);
  return {bytes.begin(), bytes.end()};
}

// The part folders under OUT/parts, checked to be parts 0..N-1 of one N.
std::vector<ConvertPart> list_parts(const fs::path& out) {
  const fs::path parts = out / kPartsFolder;
  std::map<uint32_t, ConvertPart> found;
  std::optional<ConvertPart> first;
  for (const fs::directory_entry& entry : fs::directory_iterator(parts)) {
    const std::string name = entry.path().filename().string();
    const std::optional<ConvertPart> part = parse_part_name(name);
    if (!part || !entry.is_directory()) {
      throw UsageError(entry.path().string() + ": not a part folder (expected I-of-N)");
    }
    if (first && first->count != part->count) {
      throw UsageError(entry.path().string() + ": part of " + std::to_string(part->count) +
                       " parts, but " + part_name(*first) + " is a part of " +
                       std::to_string(first->count) + "; merge parts of one conversion only");
    }
    if (!first) first = part;
    found[part->index] = *part;
  }
  if (!first) throw UsageError(parts.string() + ": holds no parts");
  std::vector<ConvertPart> all;
  for (uint32_t i = 0; i < first->count; ++i) {
    const ConvertPart part{i, first->count};
    if (!found.contains(i)) {
      throw UsageError((parts / part_name(part)).string() + ": part " + part_name(part) +
                       " is missing; convert it with ConvertOptions::part " + std::to_string(i) +
                       "/" + std::to_string(first->count) + ", then merge again");
    }
    all.push_back(part);
  }
  return all;
}

}  // namespace

UsageError damaged_part(const fs::path& dir, const ConvertPart& part, const std::string& problem) {
  return UsageError("part " + part_name(part) + " (" + dir.string() + ") is damaged: " + problem +
                    "; nothing was merged. Convert the part again with ConvertOptions::part " +
                    std::to_string(part.index) + "/" + std::to_string(part.count) +
                    " and ConvertOptions::resume (which finds the damage and converts it "
                    "again), then merge");
}

namespace {

// Reads a complete part; throws UsageError if it is incomplete, being
// converted now, or not the part its folder names.
PartDataset read_part(const fs::path& dir, const ConvertPart& part,
                      std::vector<DirectoryLock>& locks) {
  std::optional<DirectoryLock> lock = DirectoryLock::try_acquire(dir);
  if (!lock) {
    throw UsageError(dir.string() + ": part " + part_name(part) +
                     " is being converted now; merge once it has finished");
  }
  locks.push_back(std::move(*lock));
  std::error_code ec;
  if (!fs::exists(dir / format::kIndexFile, ec)) {
    throw UsageError(dir.string() + ": part " + part_name(part) + " is incomplete (no " +
                     format::kIndexFile + "); finish it with ConvertOptions::resume, then merge");
  }
  PartDataset result;
  result.dir = dir;
  try {
    result.index = read_index(dir);
  } catch (const UsageError&) {
    throw;
  } catch (const ResourceShortage&) {
    throw;  // the process ran short, no fault of the part
  } catch (const Error& e) {
    // A damaged index is a damaged part, refused as one with a damaged shard.
    throw damaged_part(dir, part, e.what());
  }
  try {
    result.report = read_text(dir / format::kReportFile);
  } catch (const UsageError&) {
    throw;
  } catch (const ResourceShortage&) {
    throw;
  } catch (const Error& e) {
    throw damaged_part(dir, part, e.what());
  }
  try {
    result.skipped = json::parse(result.report).at("skipped").size();
    result.record = read_part_record(result.index.convert_options);
  } catch (const json::exception& e) {
    throw UsageError(dir.string() + ": not a part of a conversion (its " + format::kIndexFile +
                     " or " + format::kReportFile + " lacks what a part records: " + e.what() +
                     ")");
  }
  if (!(result.record.part == part)) {
    throw UsageError(dir.string() + ": holds part " + part_name(result.record.part) +
                     ", not part " + part_name(part) + " (a part copied into another's folder?)");
  }
  // Merging renumbers a part's samples and adopts its shards as its
  // conversion wrote them: removals, or compacted shards, would be lost or
  // half kept (changes refuse a part since; one changed before is refused here).
  if (result.index.generation != 0) {
    throw UsageError(dir.string() + ": part " + part_name(part) +
                     " was changed after its conversion (generation " +
                     std::to_string(result.index.generation) +
                     "); convert it again with ConvertOptions::overwrite, then merge");
  }
  return result;
}

// Every check between parts: same conversion, every input of the listing
// in exactly one part.
void check_parts(const std::vector<PartDataset>& parts) {
  const PartDataset& first = parts.front();
  std::set<std::string_view> paths;
  uint64_t inputs = 0;
  for (const PartDataset& p : parts) {
    const std::string name = "part " + part_name(p.record.part) + " (" + p.dir.string() + ")";
    if (p.record.fingerprint != first.record.fingerprint) {
      throw UsageError(name +
                       " was made with other options or from another input listing than part " +
                       part_name(first.record.part) + " (fingerprint " + p.record.fingerprint +
                       ", not " + first.record.fingerprint + "); convert it again like the others");
    }
    if (p.index.uuid != first.index.uuid || p.index.height != first.index.height ||
        p.index.width != first.index.width || p.index.channels != first.index.channels ||
        p.index.variants != first.index.variants || p.index.masks != first.index.masks ||
        p.index.mask_fill != first.index.mask_fill ||
        p.index.mask_class_names != first.index.mask_class_names ||
        p.index.multilabel_names != first.index.multilabel_names ||
        p.index.target_names != first.index.target_names || p.index.boxes != first.index.boxes ||
        p.index.box_class_names != first.index.box_class_names ||
        p.index.keypoint_names != first.index.keypoint_names ||
        p.index.keypoint_flip != first.index.keypoint_flip ||
        p.index.keypoint_skeleton != first.index.keypoint_skeleton ||
        p.index.box_min_visible != first.index.box_min_visible) {
      throw UsageError(
          name + " is dataset " + p.index.uuid + " of " + std::to_string(p.index.width) + "x" +
          std::to_string(p.index.height) + "x" + std::to_string(p.index.channels) +
          " records, part " + part_name(first.record.part) + " dataset " + first.index.uuid +
          " of " + std::to_string(first.index.width) + "x" + std::to_string(first.index.height) +
          "x" + std::to_string(first.index.channels) +
          ": the same listing, but inputs that differ in size (the uuid covers file "
          "sizes) or in image size (without ConvertOptions::size); convert it again "
          "like the others");
    }
    const uint32_t count = p.record.part.count;
    for (const std::string& path : p.index.sample_path) {
      const uint32_t owner = part_of_path(path, count);
      if (owner != p.record.part.index) {
        throw UsageError(name + " holds " + path + ", which belongs to part " +
                         part_name({owner, count}) + " (a part copied from another?)");
      }
      if (!paths.insert(path).second) throw UsageError(name + " holds " + path + " twice");
    }
    const uint64_t skipped = p.skipped;
    if (p.index.num_samples() + skipped != p.record.part_inputs) {
      throw UsageError(name + " accounts for " + std::to_string(p.index.num_samples() + skipped) +
                       " inputs, but its listing has " + std::to_string(p.record.part_inputs));
    }
    inputs += p.record.part_inputs;
  }
  if (inputs != first.record.listing_inputs) {
    throw UsageError("the parts hold " + std::to_string(inputs) + " inputs, but the listing has " +
                     std::to_string(first.record.listing_inputs));
  }
}

// The merged index (without splits) and the moves that make it true.
void join_parts(MergePlan& plan) {
  DatasetIndex& merged = plan.index;
  const DatasetIndex& first = plan.parts.front().index;
  merged = DatasetIndex{};
  merged.format_version = format::kIndexVersion;
  merged.uuid = first.uuid;
  merged.height = first.height;
  merged.width = first.width;
  merged.channels = first.channels;
  merged.variants = first.variants;
  merged.color = first.color;
  merged.convert_options = without_part_record(first.convert_options);
  merged.created_by = first.created_by;
  merged.class_names = first.class_names;
  merged.group_names = first.group_names;
  merged.masks = first.masks;
  merged.mask_fill = first.mask_fill;
  merged.mask_class_names = first.mask_class_names;
  merged.multilabel_names = first.multilabel_names;
  merged.target_names = first.target_names;
  merged.boxes = first.boxes;
  merged.box_class_names = first.box_class_names;
  merged.keypoint_names = first.keypoint_names;
  merged.keypoint_flip = first.keypoint_flip;
  merged.keypoint_skeleton = first.keypoint_skeleton;
  merged.box_min_visible = first.box_min_visible;
  for (std::size_t p = 0; p < plan.parts.size(); ++p) {
    const PartDataset& part = plan.parts[p];
    const DatasetIndex& index = part.index;
    const auto sample_base = static_cast<int64_t>(merged.num_samples());
    const auto shard_base = static_cast<uint32_t>(merged.num_shards());
    const std::string folder = std::string(kPartsFolder) + "/" + part_name(part.record.part) + "/";
    for (std::size_t s = 0; s < index.num_samples(); ++s) {
      merged.sample_path.push_back(index.sample_path[s]);
      merged.sample_label.push_back(index.sample_label[s]);
      merged.sample_group.push_back(index.sample_group[s]);
    }
    std::vector<uint8_t>& multilabel = merged.sample_multilabel.values();
    multilabel.insert(multilabel.end(), index.sample_multilabel.begin(),
                      index.sample_multilabel.end());
    std::vector<float>& targets = merged.sample_targets.values();
    targets.insert(targets.end(), index.sample_targets.begin(), index.sample_targets.end());
    if (first.has_file_stamps()) {  // every part of one conversion keeps them, or none
      std::vector<uint64_t>& sizes = merged.sample_size.values();
      sizes.insert(sizes.end(), index.sample_size.begin(), index.sample_size.end());
      std::vector<int64_t>& mtimes = merged.sample_mtime.values();
      mtimes.insert(mtimes.end(), index.sample_mtime.begin(), index.sample_mtime.end());
    }
    for (std::size_t k = 0; k < index.num_shards(); ++k) {
      const auto shard = static_cast<uint32_t>(shard_base + k);
      merged.shards.file.push_back(format::shard_file_name(shard));
      merged.shards.records.push_back(index.shards.records[k]);
      const std::size_t rows = index.shards.records[k];
      ShardMove move;
      move.from = folder + index.shards.file[k];
      move.to = format::shard_file_name(shard);
      move.shard = shard;
      move.samples.assign(rows, kNoSample);
      move.part = p;
      move.part_shard = static_cast<uint32_t>(k);
      move.part_samples.assign(rows, kNoSample);
      move.variants.resize(rows);
      move.labels.resize(rows);
      plan.moves.push_back(std::move(move));
    }
    for (std::size_t r = 0; r < index.num_records(); ++r) {
      const int64_t sample = index.records.sample[r] + sample_base;
      merged.records.push_back(index.records.shard[r] + shard_base, index.records.row[r], sample,
                               index.records.variant[r]);
      ShardMove& move = plan.moves[index.records.shard[r] + shard_base];
      const std::size_t row = index.records.row[r];
      if (move.samples.at(row) != kNoSample) {
        throw UsageError(part.dir.string() + ": its " + format::kIndexFile +
                         " places two records at " + index.shards.file[index.records.shard[r]] +
                         " row " + std::to_string(row));
      }
      move.samples[row] = sample;
      move.part_samples[row] = index.records.sample[r];
      move.variants[row] = index.records.variant[r];
      move.labels[row] = index.sample_label[static_cast<std::size_t>(index.records.sample[r])];
    }
  }
  merged.validate("the merged index");
}

}  // namespace

fs::path part_directory(const fs::path& out, const ConvertPart& part) {
  return out / kPartsFolder / part_name(part);
}

MergePlan plan_merge(const fs::path& out) {
  MergePlan plan;
  for (const ConvertPart& part : list_parts(out)) {
    plan.parts.push_back(read_part(part_directory(out, part), part, plan.locks));
  }
  check_parts(plan.parts);
  join_parts(plan);
  return plan;
}

std::string merge_journal_text(const MergePlan& plan) {
  json moves = json::array();
  for (const ShardMove& move : plan.moves) moves.push_back({{"from", move.from}, {"to", move.to}});
  json journal = {{"dataset_uuid", plan.index.uuid},
                  {"fingerprint", plan.parts.front().record.fingerprint},
                  {"moves", std::move(moves)}};
  return journal.dump(1) + "\n";
}

}  // namespace imgpack
