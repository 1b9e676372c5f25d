#include "epoch_batches.hpp"

#include <algorithm>
#include <utility>

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

}  // namespace imgpack::detail
