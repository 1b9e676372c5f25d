#include "conversion/resume.hpp"

#include <map>
#include <string>
#include <utility>

namespace imgpack {

void add_sample(DatasetIndex& index, const SourceSample& sample) {
  index.sample_path.push_back(sample.path);
  index.sample_label.push_back(sample.label);
  index.sample_group.push_back(sample.group);
  std::vector<uint8_t>& multilabel = index.sample_multilabel.values();
  multilabel.insert(multilabel.end(), sample.multilabel.begin(), sample.multilabel.end());
  std::vector<float>& targets = index.sample_targets.values();
  targets.insert(targets.end(), sample.targets.begin(), sample.targets.end());
  index.sample_size.push_back(sample.stamp.size);
  index.sample_mtime.push_back(sample.stamp.mtime_ns);
}

ConversionStart restore_kept_shards(const ConvertOptions& options, const ConversionPlan& plan,
                                    const ResumePoint& resume, DatasetIndex& index,
                                    DatasetWriter& writer) {
  JournalState kept{plan.uuid, plan.order.size(), {}};
  std::map<uint64_t, std::string> skipped_before;
  for (const KeptShard& shard : resume.shards) {
    kept.shards.push_back(shard.journal);
    for (const auto& [position, reason] : shard.journal.skipped) skipped_before[position] = reason;
  }
  std::vector<SkippedInput> skipped;
  for (uint64_t position = 0; position < resume.next_position; ++position) {
    const SourceSample& sample = plan.list.samples[plan.order[position]];
    auto it = skipped_before.find(position);
    if (it != skipped_before.end()) {
      skipped.push_back({sample.path, it->second});
    } else {
      add_sample(index, sample);
    }
  }
  for (const KeptShard& shard : resume.shards) {
    writer.adopt(shard.journal.file, shard.samples, shard.variants);
  }
  ConvertJournal journal = resume.shards.empty()
                               ? ConvertJournal::create(options.out, plan.uuid, plan.order.size())
                               : ConvertJournal::rewrite(options.out, kept);
  InputsFingerprint fingerprint = [&plan](uint64_t first, uint64_t end) {
    return inputs_fingerprint(plan, first, end);
  };
  return {resume.next_position, std::move(skipped),
          ShardCommitJournal(std::move(journal), std::move(fingerprint), resume.next_position)};
}

}  // namespace imgpack
