#include "epoch_batches.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "imgpack/error.hpp"

namespace imgpack::detail {

std::size_t batches_per_epoch(std::size_t rank_records, std::size_t batch_size, LastBatch last) {
  const std::size_t full = rank_records / batch_size;
  return last == LastBatch::drop || rank_records % batch_size == 0 ? full : full + 1;
}

std::size_t images_per_epoch(std::size_t rank_records, std::size_t batch_size, LastBatch last) {
  switch (last) {
    case LastBatch::drop:
      return rank_records / batch_size * batch_size;
    case LastBatch::pad:
      return batches_per_epoch(rank_records, batch_size, last) * batch_size;
    case LastBatch::partial:
      break;
  }
  return rank_records;
}

std::size_t EpochBatches::size(std::size_t b) const {
  return std::min(batch_size, entries.size() - begin(b));
}

std::size_t EpochBatches::padding(std::size_t b) const {
  const std::size_t first = begin(b), end = first + size(b);
  const std::size_t padded_from = std::max(first, pad_from);
  return end > padded_from ? end - padded_from : 0;
}

namespace {

// Cuts a rank's records into batches; LastBatch::pad repeats `fill` (the
// rank's first records in an uninterrupted epoch; its own records when empty).
EpochBatches cut_into_batches(EpochPlan plan, std::size_t batch_size, LastBatch last,
                              std::span<const uint64_t> fill) {
  EpochBatches work;
  work.epoch = plan.epoch;
  work.batch_size = batch_size;
  const std::size_t m = plan.records.size();
  const std::size_t images = images_per_epoch(m, batch_size, last);
  work.batches = batches_per_epoch(m, batch_size, last);
  work.entries = std::move(plan.records);
  if (images < m) {
    work.entries.resize(images);
  } else {
    if (fill.empty()) fill = std::span<const uint64_t>(work.entries.data(), m);
    std::vector<uint64_t> padding;
    for (std::size_t j = 0; m + padding.size() < images; ++j) {
      padding.push_back(fill[j % fill.size()]);
    }
    work.entries.insert(work.entries.end(), padding.begin(), padding.end());
  }
  work.pad_from = std::min(m - plan.padding, work.entries.size());
  return work;
}

}  // namespace

EpochBatches make_epoch_batches(EpochPlan plan, std::size_t batch_size, LastBatch last) {
  return cut_into_batches(std::move(plan), batch_size, last, {});
}

EpochBatches make_resumed_batches(uint64_t epoch, std::span<const uint64_t> global, uint64_t first,
                                  RankLayout layout, std::size_t batch_size, LastBatch last) {
  const uint64_t n = global.size();
  const uint64_t w = layout.world;
  auto rank_records = [&](uint64_t positions) {
    return layout.policy == RankPolicy::pad ? (positions + w - 1) / w : positions / w;
  };
  EpochPlan plan;
  plan.epoch = epoch;
  const uint64_t count = first < n ? rank_records(n - first) : 0;
  plan.records.resize(count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t position = first + layout.rank + i * w;
    plan.records[i] = global[position % n];
    if (position >= n) ++plan.padding;
  }
  // What LastBatch::pad repeats: the rank's first records in an
  // uninterrupted epoch (no more than a batch of them is ever needed).
  std::vector<uint64_t> fill;
  if (last == LastBatch::pad && count > 0) {
    fill.resize(std::min<uint64_t>(rank_records(n), batch_size));
    for (uint64_t j = 0; j < fill.size(); ++j) fill[j] = global[(layout.rank + j * w) % n];
  }
  EpochBatches work = cut_into_batches(std::move(plan), batch_size, last, fill);
  work.first_position = first;
  work.first_index = static_cast<std::size_t>(first / (uint64_t{batch_size} * w));
  return work;
}

uint64_t consumed_positions(const EpochBatches& work, std::size_t delivered, uint64_t global_batch,
                            uint64_t epoch_positions) {
  if (delivered >= work.batches) return epoch_positions;
  return work.first_position + delivered * global_batch;
}

void require_batches(const EpochOrder& order, const LoaderOptions& options) {
  const std::size_t positions = order.epoch_size();
  const std::size_t rank_records = order.rank_size();
  if (batches_per_epoch(rank_records, options.batch_size, options.last_batch) > 0) return;
  const SelectionOptions& selection = options.selection;
  const std::string every_epoch = ": every epoch would be empty";
  if (positions == 0) {
    throw UsageError("the selection (" +
                     (selection.split.empty() ? std::string("all samples")
                                              : "split " + selection.split + ", fold " +
                                                    std::to_string(selection.fold) + ", role " +
                                                    std::string(role_name(selection.role))) +
                     ") holds no records" + every_epoch);
  }
  const std::size_t world = order.options().world_size;
  if (rank_records == 0) {
    throw UsageError("world_size " + std::to_string(world) + " is larger than the " +
                     std::to_string(positions) +
                     " records of an epoch and rank_policy is drop: no rank reads a record" +
                     every_epoch + " (use rank_policy pad or fewer ranks)");
  }
  throw UsageError("batch_size " + std::to_string(options.batch_size) + " is larger than the " +
                   std::to_string(rank_records) + " records each rank reads per epoch (" +
                   std::to_string(positions) + " over " + std::to_string(world) + " rank" +
                   (world == 1 ? "" : "s") + ") and last_batch is drop" + every_epoch +
                   " (use a smaller batch_size, or last_batch partial or pad)");
}

}  // namespace imgpack::detail
