#include "imgpack/mask_stats.hpp"

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "imgpack/error.hpp"
#include "mapping_fault.hpp"

namespace imgpack {

uint64_t MaskLabelCounts::pixels_counted() const {
  uint64_t total = 0;
  for (uint64_t count : pixels) total += count;
  return total;
}

double MaskLabelCounts::fraction(uint8_t label) const {
  const uint64_t total = pixels_counted();
  return total == 0 ? 0 : static_cast<double>(pixels[label]) / static_cast<double>(total);
}

MaskLabelCounts count_mask_labels(const Dataset& dataset, uint64_t max_bytes) {
  if (!dataset.has_masks()) {
    throw UsageError(dataset.path().string() + ": the dataset has no masks");
  }
  MaskLabelCounts counts;
  const std::size_t bytes = dataset.mask_bytes();
  const DatasetIndex& index = dataset.index();
  for (uint64_t s = 0; s < dataset.num_samples(); ++s) {
    if (!index.is_removed(s) && !dataset.sample_records(s).empty()) ++counts.masks_total;
  }
  const uint64_t affordable = std::max<uint64_t>(1, max_bytes / std::max<std::size_t>(bytes, 1));
  const uint64_t step = (counts.masks_total + affordable - 1) / affordable;
  uint64_t with_record = 0;
  // Four histograms side by side: runs of one label would otherwise make
  // every increment wait for the previous one to the same counter.
  std::vector<std::array<uint64_t, 256>> lanes(4);
  for (uint64_t s = 0; s < dataset.num_samples(); ++s) {
    const RecordIds records = dataset.sample_records(s);
    if (records.empty() || index.is_removed(s)) continue;
    if (with_record++ % std::max<uint64_t>(step, 1) != 0) continue;
    const uint64_t record = records.front();  // ascending variant: the clean one first
    if (dataset.record_variant(record) != 0) continue;
    for (auto& lane : lanes) lane.fill(0);
    const uint8_t* mask = dataset.mask_data(record);
    // The masks are read through the shard's mapping: a shard cut short
    // since it was opened is an error naming it, not SIGBUS.
    const void* fault = detail::read_mapped([&] {
      std::size_t i = 0;
      for (; i + 4 <= bytes; i += 4) {
        ++lanes[0][mask[i]];
        ++lanes[1][mask[i + 1]];
        ++lanes[2][mask[i + 2]];
        ++lanes[3][mask[i + 3]];
      }
      for (; i < bytes; ++i) ++lanes[0][mask[i]];
    });
    if (fault != nullptr) {
      throw detail::mapping_fault_error(
          dataset.shard_path(dataset.record_shard(record)),
          "the masks of row " + std::to_string(index.records.row[record]));
    }
    for (std::size_t label = 0; label < 256; ++label) {
      const uint64_t n = lanes[0][label] + lanes[1][label] + lanes[2][label] + lanes[3][label];
      counts.pixels[label] += n;
      counts.masks[label] += n > 0 ? 1 : 0;
    }
    ++counts.masks_counted;
  }
  return counts;
}

}  // namespace imgpack
