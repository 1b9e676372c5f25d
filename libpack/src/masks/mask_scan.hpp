// Finding each input's mask (internal to imgpack::pack).
//
// attach_masks() gives every sample of a listing its mask (MaskOptions):
//   - a folder of masks (MaskOptions::dir, no CsvInput::mask): the mask of
//     SRC/a/b.jpg is the one file DIR/a/b<suffix>.<ext> with an image
//     extension; DIR is listed once, not probed per sample;
//   - a CSV mask column (CsvInput::mask): the path its row lists, relative to
//     the mask root (MaskOptions::dir, or SRC).
// A sample without a usable mask keeps its place in the listing (so class
// ids, the dataset uuid and the parts of a conversion do not depend on it)
// with SourceSample::mask_problem saying why; the conversion skips it with
// that reason. Nothing is opened except directories being listed; nothing
// is modified.
#pragma once

#include <filesystem>

#include "imgpack/convert_options.hpp"
#include "inputs/scan.hpp"

namespace imgpack {

// The folder mask paths are relative to: MaskOptions::dir, or SRC.
std::filesystem::path mask_root(const std::filesystem::path& src, const MaskOptions& masks);

// A mask folder below SRC (not SRC itself) that a directory scan must not
// walk, or an empty path.
std::filesystem::path mask_folder_inside_source(const std::filesystem::path& src,
                                                const MaskOptions& masks);

// Attaches masks as above to the listing of SRC made with `scan`; nothing
// without a mask folder or a CSV mask column. When DIR is SRC itself, files
// whose name (without extension) ends in MaskOptions::suffix are masks: they
// are taken out of the listing's images. Throws UsageError when DIR is not a
// directory, or is SRC without a suffix to tell masks from images.
void attach_masks(SourceList& list, const std::filesystem::path& src, const ScanOptions& scan,
                  const MaskOptions& masks);

}  // namespace imgpack
