// The progress record of a conversion, for `convert --resume`.
//
// While converting, OUT/convert.journal holds one JSON line per committed
// shard, appended and fsynced after the shard's rename: which shard, how many
// records, the position in the write plan after its last input, and the
// inputs skipped since the previous shard. After a crash, the journal and the
// shard files it names tell a resumed conversion which shards it may keep and
// where to continue; everything after the last complete line is redone.
// The journal is removed once index.h5 is in place.
//
// Not thread-safe: the conversion's writer thread owns it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "files.hpp"

namespace imgpack {

inline constexpr const char* kJournalFile = "convert.journal";

struct JournalShard {
  uint32_t shard = 0;
  std::string file;
  uint64_t records = 0;
  uint64_t next_position = 0;  // plan position of the first input after this shard
  // Inputs skipped after the previous shard's inputs, up to next_position:
  // (plan position, reason).
  std::vector<std::pair<uint64_t, std::string>> skipped;
  // inputs_fingerprint() of the inputs from the previous shard's
  // next_position up to this one's, when the shard was committed; absent in
  // journals written before it was recorded.
  std::optional<uint64_t> inputs;
};

struct JournalState {
  std::string dataset_uuid;
  uint64_t inputs = 0;
  std::vector<JournalShard> shards;  // in commit order
  // The journal is what a crash while creating it leaves (empty, or its
  // header line torn): nothing was committed after it, so a resumed run
  // starts over. dataset_uuid and inputs are then unknown.
  bool torn_header = false;
};

class ConvertJournal {
 public:
  // Starts a new journal for a conversion (replacing any old one).
  static ConvertJournal create(const std::filesystem::path& out_dir, const std::string& uuid,
                               uint64_t inputs);
  // Replaces the journal with `state` (the shards a resumed conversion keeps)
  // and continues appending after them.
  static ConvertJournal rewrite(const std::filesystem::path& out_dir, const JournalState& state);

  // Reads OUT/convert.journal. Returns nullopt if there is none; a torn last
  // line (a crash mid-append) is ignored, a torn header gives a state with
  // torn_header set; any other damage is an Error.
  static std::optional<JournalState> read(const std::filesystem::path& out_dir);

  ConvertJournal(ConvertJournal&&) noexcept = default;
  ConvertJournal& operator=(ConvertJournal&&) noexcept = default;

  // Appends one committed shard and fsyncs.
  void append(const JournalShard& shard);
  // Closes and deletes the journal (the conversion is complete).
  void remove();

 private:
  ConvertJournal(std::filesystem::path path, FileDescriptor fd)
      : path_(std::move(path)), fd_(std::move(fd)) {}
  void write_line(const std::string& line);

  std::filesystem::path path_;
  FileDescriptor fd_;
};

// The fingerprint of the inputs at write positions [first, end)
// (inputs_fingerprint() in conversion_plan.hpp).
using InputsFingerprint = std::function<uint64_t(uint64_t first, uint64_t end)>;

// Journals each shard as the dataset writer commits it (DatasetWriter's
// on_seal and on_commit): the inputs the shard's records came from end at
// the position the pipeline had reported done when the shard was sealed,
// and the inputs skipped since the previous shard and their fingerprint go
// with it; the line is written once the shard is renamed into place. Not
// thread-safe: the writer thread's.
class ShardCommitJournal {
 public:
  // Continues after the inputs before `first_position`, which kept shards hold.
  ShardCommitJournal(ConvertJournal journal, InputsFingerprint fingerprint, uint64_t first_position)
      : journal_(std::move(journal)),
        fingerprint_(std::move(fingerprint)),
        shard_first_(first_position),
        next_position_(first_position) {}

  // Every input before `next_position` of the write order is done.
  void inputs_done(uint64_t next_position) { next_position_ = next_position; }
  // The input at `position` was skipped for `reason`.
  void skipped(uint64_t position, const std::string& reason) {
    skipped_since_.emplace_back(position, reason);
  }
  // Shard `shard` holds all its records, `records` of them, and will be
  // committed as `file`: its line is taken now, from the inputs done so far.
  void sealed(uint32_t shard, const std::string& file, uint64_t records);
  // The sealed shard `shard` is in place: appends its line.
  void committed(uint32_t shard);
  // The conversion is complete: the journal goes.
  void remove() { journal_.remove(); }

 private:
  ConvertJournal journal_;
  InputsFingerprint fingerprint_;
  uint64_t shard_first_ = 0;  // the first input of the shard being filled
  uint64_t next_position_ = 0;
  std::vector<std::pair<uint64_t, std::string>> skipped_since_;
  std::optional<JournalShard> sealed_;  // the line of the shard being committed
};

}  // namespace imgpack
