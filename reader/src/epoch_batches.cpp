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

EpochBatches make_epoch_batches(EpochPlan plan, std::size_t batch_size, LastBatch last) {
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
    for (std::size_t j = 0; work.entries.size() < images; ++j) {
      work.entries.push_back(work.entries[j % m]);
    }
  }
  work.pad_from = std::min(m - plan.padding, work.entries.size());
  return work;
}

uint64_t consumed_positions(std::size_t delivered, std::size_t batches, uint64_t global_batch,
                            uint64_t epoch_positions) {
  return delivered >= batches ? epoch_positions : delivered * global_batch;
}

std::size_t resume_batch(uint64_t consumed, std::size_t batches, uint64_t global_batch,
                         uint64_t epoch_positions) {
  if (consumed == epoch_positions) return batches;
  if (consumed > epoch_positions || consumed % global_batch != 0 ||
      consumed / global_batch > batches) {
    throw Error("loader state: " + std::to_string(consumed) + " consumed positions of " +
                std::to_string(epoch_positions) + " is no step of a global batch of " +
                std::to_string(global_batch) + " (damaged state?)");
  }
  return static_cast<std::size_t>(consumed / global_batch);
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
