#include "index_checksum.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <new>

#include "imgpack/format.hpp"

namespace imgpack::index_checksum {

namespace {

XXH3_state_t* state(void* p) { return static_cast<XXH3_state_t*>(p); }

// One attribute: its name, then its value.
void add_attribute(Hasher& hasher, std::string_view name, int64_t value) {
  hasher.add_string(name);
  hasher.add_number(value);
}
void add_attribute(Hasher& hasher, std::string_view name, double value) {
  hasher.add_string(name);
  hasher.add_number(value);
}
void add_attribute(Hasher& hasher, std::string_view name, std::string_view value) {
  hasher.add_string(name);
  hasher.add_string(value);
}

}  // namespace

Hasher::Hasher() : state_(XXH3_createState()) {
  if (state_ == nullptr) throw std::bad_alloc();
  XXH3_64bits_reset(state(state_));
}

Hasher::~Hasher() { XXH3_freeState(state(state_)); }

void Hasher::add_bytes(const void* data, std::size_t size) {
  if (size > 0) XXH3_64bits_update(state(state_), data, size);
}

void Hasher::add_string(std::string_view text) {
  add_number(static_cast<uint64_t>(text.size()));
  add_bytes(text.data(), text.size());
}

uint64_t Hasher::digest() const { return XXH3_64bits_digest(state(state_)); }

uint64_t of_strings(const std::vector<std::string>& values) {
  Hasher hasher;
  for (const std::string& value : values) hasher.add_string(value);
  return hasher.digest();
}

uint64_t of_root_attributes(const DatasetIndex& index) {
  return of_root_attributes(index, index.num_removed(), index.has_file_stamps());
}

uint64_t of_root_attributes(const DatasetIndex& index, uint64_t removed, bool file_stamps) {
  Hasher hasher;
  add_attribute(hasher, format::kAttrFormat, index.format_version);
  add_attribute(hasher, format::kAttrUuid, index.uuid);
  add_attribute(hasher, format::kAttrHeight, int64_t{index.height});
  add_attribute(hasher, format::kAttrWidth, int64_t{index.width});
  add_attribute(hasher, format::kAttrChannels, int64_t{index.channels});
  add_attribute(hasher, format::kAttrVariants, int64_t{index.variants});
  add_attribute(hasher, format::kAttrColor, index.color);
  add_attribute(hasher, format::kAttrConvertOptions, index.convert_options);
  add_attribute(hasher, format::kAttrCreatedBy, index.created_by);
  // Only in a dataset with masks, so the checksum of any other is unchanged.
  if (index.masks) {
    add_attribute(hasher, format::kAttrMasks, int64_t{1});
    add_attribute(hasher, format::kAttrMaskFill, int64_t{index.mask_fill});
  }
  // Likewise only where there are such targets.
  if (index.has_multilabel()) {
    add_attribute(hasher, format::kAttrMultilabelClasses,
                  static_cast<int64_t>(index.multilabel_names.size()));
  }
  if (index.has_targets()) {
    add_attribute(hasher, format::kAttrTargets, static_cast<int64_t>(index.target_names.size()));
  }
  if (index.boxes) {
    add_attribute(hasher, format::kAttrBoxes, int64_t{1});
    add_attribute(hasher, format::kAttrBoxClasses,
                  static_cast<int64_t>(index.box_class_names.size()));
    add_attribute(hasher, format::kAttrKeypoints,
                  static_cast<int64_t>(index.keypoint_names.size()));
    add_attribute(hasher, format::kAttrBoxMinVisible, index.box_min_visible);
    if (!index.keypoint_skeleton.empty()) {
      add_attribute(hasher, format::kAttrKeypointEdges,
                    static_cast<int64_t>(index.keypoint_skeleton.size() / 2));
    }
  }
  // Likewise only once the dataset has grown or shrunk.
  if (index.generation > 0) {
    add_attribute(hasher, format::kAttrGeneration, static_cast<int64_t>(index.generation));
  }
  if (removed > 0) add_attribute(hasher, format::kAttrRemoved, static_cast<int64_t>(removed));
  if (file_stamps) add_attribute(hasher, format::kAttrFileStamps, int64_t{1});
  return hasher.digest();
}

uint64_t of_splits_file_attributes(int64_t format_version, const std::string& uuid, int64_t samples,
                                   uint64_t generation) {
  Hasher hasher;
  add_attribute(hasher, format::kAttrFormat, format_version);
  add_attribute(hasher, format::kAttrUuid, uuid);
  add_attribute(hasher, format::kAttrSamples, samples);
  if (generation > 0)
    add_attribute(hasher, format::kAttrGeneration, static_cast<int64_t>(generation));
  return hasher.digest();
}

uint64_t of_split_attributes(const Split& split) {
  Hasher hasher;
  hasher.add_string(split.name);
  add_attribute(hasher, format::kSplitKind, split.kind);
  add_attribute(hasher, format::kSplitFolds, int64_t{split.folds});
  add_attribute(hasher, format::kSplitSeed, static_cast<int64_t>(split.seed));
  add_attribute(hasher, format::kSplitTestFraction, split.test_fraction);
  add_attribute(hasher, format::kSplitValFraction, split.val_fraction);
  add_attribute(hasher, format::kSplitCreated, split.created);
  add_attribute(hasher, format::kSplitStratified, int64_t{split.stratified});
  add_attribute(hasher, format::kSplitGrouped, int64_t{split.grouped});
  return hasher.digest();
}

}  // namespace imgpack::index_checksum
