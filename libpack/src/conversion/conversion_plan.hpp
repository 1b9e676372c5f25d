// What determines a conversion's output, fixed before any pixel is written
// (internal to imgpack::pack).
#pragma once

#include <oneapi/tbb/task_arena.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "conversion/conversion_parts.hpp"
#include "imgpack/convert_options.hpp"
#include "imgpack/dataset_index.hpp"
#include "inputs/boxes_input.hpp"
#include "inputs/scan.hpp"
#include "masks/mask_decode.hpp"

namespace imgpack {

struct ConversionPlan {
  SourceList list;
  RecordShape shape;
  std::string options_json;
  std::string uuid;
  // Write order, as indices into list.samples: every sample, or those of
  // ConvertOptions::part. list.samples is always the whole listing, while
  // list.skipped holds only the part's scan-time skips.
  std::vector<std::size_t> order;
  std::optional<PartRecord> part;  // set for ConvertOptions::part
  // The splits of ConvertOptions::splits over every input, in write order:
  // what the dataset stores when no input is skipped. For a part, computed
  // over the whole listing only to refuse an impossible request early.
  std::vector<SplitResult> splits;
  // With masks: the colour table of MaskOptions::colors (empty without one)
  // and the label names of MaskOptions::classes or of the table's names.
  MaskColors mask_colors;
  std::vector<std::string> mask_class_names;
};

// Scans the inputs and fixes the samples, the record shape (probing every
// input on `arena`'s threads when no size is given), the options JSON, the
// dataset uuid, the write order and the requested splits. Throws
// UsageError for requests the inputs cannot meet (no images, sizes that
// differ without --size, a split the samples cannot make), before anything
// is written. With `keep`, the plan holds only the inputs it selects
// (scan.hpp); "no images" is then an error only when the scan found none at
// all. With `listed` (a folder conversion's append given the new files), the
// inputs are the files that list names (scan_file_list()), not a walk of SRC.
// With `held` (an append), boxes are attached knowing what the dataset
// holds (attach_boxes()).
ConversionPlan make_plan(const ConvertOptions& options, tbb::task_arena& arena,
                         const InputSelector& keep = {}, const std::filesystem::path& listed = {},
                         const HeldTargets* held = nullptr);

// The warnings about the inputs `plan` converts: masks that are JPEG files
// (the compression changes labels along every edge and invents labels
// between them, which the conversion stores as they decode) and objects
// left out for having no area inside their image. None where all is well.
std::vector<std::string> input_warnings(const ConvertOptions& options, const ConversionPlan& plan);

// The write order of `samples` listed samples (ConvertOptions::order,
// seeded by ConvertOptions::seed): indices into the listing.
std::vector<std::size_t> write_order(const ConvertOptions& options, std::size_t samples);

// A fingerprint of the inputs at write positions [first, end): each one's
// path, size, and modification and status-change times (FileStamp) as the
// scan saw them, and those of its mask. A resumed conversion keeps a shard only if the fingerprint
// of its inputs is what the interrupted run journaled.
uint64_t inputs_fingerprint(const ConversionPlan& plan, uint64_t first, uint64_t end);

// The index of the planned dataset before any sample is added: root
// attributes and the class and group tables. A part's convert_options carry
// its PartRecord under "part".
DatasetIndex planned_index(const ConvertOptions& options, const ConversionPlan& plan);

}  // namespace imgpack
