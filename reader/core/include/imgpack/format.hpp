// Names and constants of the imgpack dataset format (see docs/FORMAT.md).
//
// These are a contract shared by the writer (imgpack::pack), the reader and
// every tool: a change here is a format-version bump.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace imgpack::format {

// The index format (index.h5, splits.h5) this imgpack writes, and the oldest
// it reads. Format 2 stores strings as bytes plus offsets and keeps the splits
// in splits.h5; `imgpack upgrade` rewrites a format 1 index as format 2.
inline constexpr int kIndexVersion = 2;
inline constexpr int kOldestIndexVersion = 1;
// The shard layout, the same in both index formats: every shard carries
// imgpack_format = 1.
inline constexpr int kShardVersion = 1;

inline constexpr const char* kIndexFile = "index.h5";
// Format 2: the splits, beside index.h5, so that changing one rewrites this
// small file alone.
inline constexpr const char* kSplitsFile = "splits.h5";
inline constexpr const char* kReportFile = "report.json";
inline constexpr const char* kTmpSuffix = ".tmp";

// Alignment of every dataset of at least this many bytes, and so of /images,
// so that a shard's pixels are one page-aligned run in the file.
inline constexpr std::size_t kAlignment = 4096;
inline constexpr std::size_t kAlignmentThreshold = 4096;

// Labels and groups that are absent.
inline constexpr int32_t kNoLabel = -1;
inline constexpr int32_t kNoGroup = -1;
// Split assignment of a sample that is in the test set (never train or val).
inline constexpr int16_t kTestFold = -1;

// "shard-00042.h5"
std::string shard_file_name(std::size_t shard_index);
// True for names of the form shard-NNNNN.h5 (five or more digits).
bool is_shard_file_name(const std::string& name);
// The number in a shard file name ("shard-00042.h5" -> 42); 0 for a name
// is_shard_file_name() refuses.
uint64_t shard_file_number(const std::string& name);

// Shard file objects.
inline constexpr const char* kImages = "/images";
inline constexpr const char* kLabels = "/labels";
inline constexpr const char* kSample = "/sample";
inline constexpr const char* kVariant = "/variant";
inline constexpr const char* kChecksum = "/checksum";
// Segmentation masks (additive to format 1; only in datasets whose index has
// `masks` = 1): label maps uint8 [n, H, W], laid out like /images, and the
// XXH3-64 of each record's H*W mask bytes.
inline constexpr const char* kMasks = "/masks";
inline constexpr const char* kMaskChecksum = "/mask_checksum";

// Object boxes (additive to format 1; only in datasets whose index has
// `boxes` = 1): ragged per record, record r owning rows
// box_offsets[r]..box_offsets[r + 1] of /boxes float32 [B, 4] (x0, y0, x1, y1
// in output pixels, the record spanning [0, W) x [0, H)), /box_class int32
// [B], /box_crowd uint8 [B] and, with keypoints (index attribute `keypoints`
// = K > 0), /keypoints float32 [B, K, 3] (x, y in output pixels, visibility
// 0, 1 or 2); /box_offsets int64 [n + 1]; /box_checksum uint64 [n], the
// XXH3-64 of the record's rows (box_checksum() in checksum.hpp).
inline constexpr const char* kBoxes = "/boxes";
inline constexpr const char* kBoxClass = "/box_class";
inline constexpr const char* kBoxCrowd = "/box_crowd";
inline constexpr const char* kKeypoints = "/keypoints";
inline constexpr const char* kBoxOffsets = "/box_offsets";
inline constexpr const char* kBoxChecksum = "/box_checksum";

// Root attributes of shards and index.
inline constexpr const char* kAttrFormat = "imgpack_format";
inline constexpr const char* kAttrUuid = "dataset_uuid";
inline constexpr const char* kAttrShardIndex = "shard_index";
// A shard written by a part of a conversion: the part ("1-of-3").
inline constexpr const char* kAttrPart = "part";
inline constexpr const char* kAttrHeight = "height";
inline constexpr const char* kAttrWidth = "width";
inline constexpr const char* kAttrChannels = "channels";
inline constexpr const char* kAttrVariants = "variants";
inline constexpr const char* kAttrColor = "color";
inline constexpr const char* kAttrConvertOptions = "convert_options";
inline constexpr const char* kAttrCreatedBy = "created_by";
// Index root attributes of a dataset with masks (absent otherwise): `masks`
// = 1, and `mask_fill`, the label of mask areas outside the source image.
inline constexpr const char* kAttrMasks = "masks";
inline constexpr const char* kAttrMaskFill = "mask_fill";
// Index root attributes of a dataset with per-sample targets beyond one class
// (absent otherwise): how many multi-label classes (C, the columns of
// /samples/multilabel) and how many numeric targets (T, the columns of
// /samples/targets) it has, each at least 1 where present.
inline constexpr const char* kAttrMultilabelClasses = "multilabel_classes";
inline constexpr const char* kAttrTargets = "targets";
// Index root attributes of a dataset with boxes (absent otherwise): `boxes` =
// 1, the number of box classes (`box_classes`, C >= 0, the names in
// /box_classes/name), of keypoints per box (`keypoints`, K >= 0, named in
// /keypoints/name with their horizontal-flip partners in /keypoints/flip
// int32 [K]), and `box_min_visible`, the least fraction of a box's area that
// must stay inside a record (or a reader's crop window) for the box to stay.
// Where the annotations give a skeleton (COCO's categories), `keypoint_edges`
// (E >= 1) counts the pairs of keypoints it joins, /keypoints/skeleton int32
// [E, 2] (keypoint indices from 0); absent where none is given.
inline constexpr const char* kAttrBoxes = "boxes";
inline constexpr const char* kAttrBoxClasses = "box_classes";
inline constexpr const char* kAttrKeypoints = "keypoints";
inline constexpr const char* kAttrBoxMinVisible = "box_min_visible";
inline constexpr const char* kAttrKeypointEdges = "keypoint_edges";

// Index file objects.
inline constexpr const char* kSamplesPath = "/samples/path";
inline constexpr const char* kSamplesLabel = "/samples/label";
inline constexpr const char* kSamplesGroup = "/samples/group";
inline constexpr const char* kClassesName = "/classes/name";
inline constexpr const char* kGroupsName = "/groups/name";
inline constexpr const char* kRecordsShard = "/records/shard";
inline constexpr const char* kRecordsRow = "/records/row";
inline constexpr const char* kRecordsSample = "/records/sample";
inline constexpr const char* kRecordsVariant = "/records/variant";
inline constexpr const char* kShardsFile = "/shards/file";
inline constexpr const char* kShardsRecords = "/shards/records";
inline constexpr const char* kSplitsGroup = "/splits";  // in index.h5 (1) or splits.h5 (2)

// Format 2 string tables: a group holding the UTF-8 bytes of every string,
// concatenated, and offsets [n + 1] into them (string i is bytes
// [offsets[i], offsets[i + 1])).
inline constexpr const char* kStringBytes = "bytes";
inline constexpr const char* kStringOffsets = "offsets";

// splits.h5 root attribute: the number of samples of the index it belongs to.
inline constexpr const char* kAttrSamples = "samples";

// In a dataset with masks: mask label id -> name (a string table; possibly empty).
inline constexpr const char* kMaskClassesName = "/mask_classes/name";

// Targets beyond one class, per source sample (2-D numeric tables, row s for
// sample s): with multi-label classes, /samples/multilabel uint8 [S, C]
// (1 = the sample has class c) and their names /multilabel_classes/name [C];
// with numeric targets, /samples/targets float32 [S, T] (NaN = no value) and
// their names /targets/name [T].
inline constexpr const char* kSamplesMultilabel = "/samples/multilabel";
inline constexpr const char* kMultilabelClassesName = "/multilabel_classes/name";
inline constexpr const char* kSamplesTargets = "/samples/targets";
inline constexpr const char* kTargetsName = "/targets/name";

// With boxes: box class id -> name [C], keypoint names [K], and the keypoint
// each one becomes under a horizontal flip [K] (itself where it has no pair).
inline constexpr const char* kBoxClassesName = "/box_classes/name";
inline constexpr const char* kKeypointsName = "/keypoints/name";
inline constexpr const char* kKeypointsFlip = "/keypoints/flip";
inline constexpr const char* kKeypointsSkeleton = "/keypoints/skeleton";

// Growing datasets (additive to format 2; absent in a dataset as its
// conversion wrote it before these existed). Root attribute `generation` (>= 1)
// once a dataset has changed since its conversion (an append, a removal, a
// compaction): each change commits index.h5 and splits.h5 of the next
// generation, and /history holds one row per generation from 0 (the
// conversion): its number, UTC date (ISO 8601, or empty where unknown), the
// change ("convert", "append", "remove", "compact") and the samples it added
// and removed. Root attribute `removed` (>= 1) where samples are removed:
// /samples/removed uint8 [S] is then 1 for each of them (readers, splits and
// inspect leave them out). Root attribute `file_stamps` = 1 where the index
// keeps each sample's source file size (/samples/size uint64 [S]) and
// modification time (/samples/mtime int64 [S], nanoseconds since 1970 UTC),
// which an append compares to find changed inputs; 0 and INT64_MIN mark a
// sample whose stamps are unknown.
inline constexpr const char* kAttrGeneration = "generation";
inline constexpr const char* kAttrRemoved = "removed";
inline constexpr const char* kAttrFileStamps = "file_stamps";
inline constexpr const char* kHistoryGeneration = "/history/generation";
inline constexpr const char* kHistoryDate = "/history/date";
inline constexpr const char* kHistoryChange = "/history/change";
inline constexpr const char* kHistoryAdded = "/history/added";
inline constexpr const char* kHistoryRemoved = "/history/removed";
inline constexpr const char* kSamplesRemoved = "/samples/removed";
inline constexpr const char* kSamplesSize = "/samples/size";
inline constexpr const char* kSamplesMtime = "/samples/mtime";
// Split assignment of a removed sample (in splits.h5 of a dataset with
// removed samples): in no role, neither a fold nor the test set.
inline constexpr int16_t kRemovedFold = -2;

// Checksums (additive to format 1; absent in indexes written before them):
// on every table of index.h5, the XXH3-64 of its decoded contents; on the root
// and on every split group, the XXH3-64 of its attributes (docs/FORMAT.md).
inline constexpr const char* kAttrChecksum = "xxh3";
inline constexpr const char* kAttrAttributesChecksum = "attributes_xxh3";

// Split group attributes.
inline constexpr const char* kSplitKind = "kind";
inline constexpr const char* kSplitFolds = "folds";
inline constexpr const char* kSplitSeed = "seed";
inline constexpr const char* kSplitTestFraction = "test_fraction";
inline constexpr const char* kSplitValFraction = "val_fraction";
inline constexpr const char* kSplitCreated = "created";
inline constexpr const char* kSplitStratified = "stratified";  // int 0/1
inline constexpr const char* kSplitGrouped = "grouped";        // int 0/1
// In a split of splits.h5 written by a change that moved samples of the
// previous generation (removed them: -2): those samples (int64 ids) and their
// assignments before (int16), for a reader of the previous generation's
// index.h5 that finds this splits.h5 ahead of it (docs/FORMAT.md).
inline constexpr const char* kSplitPreviousSamples = "previous_samples";
inline constexpr const char* kSplitPreviousAssign = "previous_assign";

}  // namespace imgpack::format
