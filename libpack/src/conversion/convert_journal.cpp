#include "conversion/convert_journal.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "files.hpp"
#include "imgpack/error.hpp"
#include "inputs/json_integer.hpp"

namespace imgpack {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr int kJournalVersion = 1;

std::string hex64(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

std::optional<uint64_t> parse_hex64(const std::string& text) {
  if (text.size() != 16 || text.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return std::nullopt;
  }
  return std::stoull(text, nullptr, 16);
}

std::string header_line(const std::string& uuid, uint64_t inputs) {
  json j = {{"imgpack_journal", kJournalVersion}, {"dataset_uuid", uuid}, {"inputs", inputs}};
  return j.dump() + "\n";
}

std::string shard_line(const JournalShard& shard) {
  json skipped = json::array();
  for (const auto& [position, reason] : shard.skipped) skipped.push_back({position, reason});
  json j = {{"shard", shard.shard},
            {"file", shard.file},
            {"records", shard.records},
            {"next_position", shard.next_position},
            {"skipped", std::move(skipped)}};
  if (shard.inputs) j["inputs_xxh3"] = hex64(*shard.inputs);
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

FileDescriptor open_for_append(const fs::path& path, bool truncate) {
  return FileDescriptor(path, O_WRONLY | O_CREAT | O_APPEND | (truncate ? O_TRUNC : 0));
}

}  // namespace

ConvertJournal ConvertJournal::create(const fs::path& out_dir, const std::string& uuid,
                                      uint64_t inputs) {
  fs::path path = out_dir / kJournalFile;
  ConvertJournal journal(path, open_for_append(path, true));
  journal.write_line(header_line(uuid, inputs));
  fsync_path(out_dir);
  return journal;
}

ConvertJournal ConvertJournal::rewrite(const fs::path& out_dir, const JournalState& state) {
  // Write the kept prefix to a new file and rename it over the old one, so a
  // crash now leaves either journal intact.
  std::string contents = header_line(state.dataset_uuid, state.inputs);
  for (const JournalShard& shard : state.shards) contents += shard_line(shard);
  fs::path path = out_dir / kJournalFile;
  write_file_atomic(path, contents);
  return ConvertJournal(path, open_for_append(path, false));
}

std::optional<JournalState> ConvertJournal::read(const fs::path& out_dir) {
  fs::path path = out_dir / kJournalFile;
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  const std::string text = [&] {
    std::ifstream file(path, std::ios::binary);
    std::ostringstream all;
    all << file.rdbuf();
    if (!file && !file.eof()) throw file_error(path, "cannot read");
    return all.str();
  }();
  JournalState state;
  if (text.find('\n') == std::string::npos) {
    // Created, then cut before its header line was complete (empty, or the
    // line without its newline). The header is written and fsynced before
    // any shard is committed, so none was.
    state.torn_header = true;
    return state;
  }
  std::istringstream in(text);
  std::string line;
  std::size_t number = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++number;
    bool complete = !in.eof();  // the last line of a torn append has no newline
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      if (!complete) break;
      throw file_error(path, "line " + std::to_string(number) + " is not valid JSON");
    }
    try {
      if (!header) {
        const auto version = j.find("imgpack_journal");
        if (version == j.end() || !version->is_number_integer() ||
            json_integer<int64_t>(*version) != kJournalVersion) {
          throw file_error(path, "not an imgpack conversion journal of version 1");
        }
        state.dataset_uuid = j.at("dataset_uuid").get<std::string>();
        state.inputs = json_integer<uint64_t>(j.at("inputs"));
        header = true;
        continue;
      }
      JournalShard shard;
      shard.shard = json_integer<uint32_t>(j.at("shard"));
      shard.file = j.at("file").get<std::string>();
      shard.records = json_integer<uint64_t>(j.at("records"));
      shard.next_position = json_integer<uint64_t>(j.at("next_position"));
      for (const json& s : j.at("skipped")) {
        shard.skipped.emplace_back(json_integer<uint64_t>(s.at(0)), s.at(1).get<std::string>());
      }
      if (j.contains("inputs_xxh3")) {
        shard.inputs = parse_hex64(j.at("inputs_xxh3").get<std::string>());
        if (!shard.inputs && complete) {
          throw file_error(path, "line " + std::to_string(number) + ": bad inputs_xxh3");
        }
      }
      if (!complete) break;
      state.shards.push_back(std::move(shard));
    } catch (const json::exception& e) {
      if (!complete) break;
      throw file_error(path, "line " + std::to_string(number) + ": " + e.what());
    }
  }
  if (!header) throw file_error(path, "has no header line");
  return state;
}

void ConvertJournal::append(const JournalShard& shard) { write_line(shard_line(shard)); }

void ConvertJournal::write_line(const std::string& line) {
  write_all(fd_.get(), path_, line, "cannot append to the conversion journal");
  if (::fsync(fd_.get()) != 0) throw system_error(path_, "fsync failed", errno);
}

void ConvertJournal::remove() {
  fd_.reset();
  std::error_code ec;
  fs::remove(path_, ec);
  if (ec) throw file_error(path_, "cannot remove: " + ec.message());
  fsync_path(path_.parent_path());
}

void ShardCommitJournal::sealed(uint32_t shard, const std::string& file, uint64_t records) {
  sealed_ = JournalShard{shard,
                         file,
                         records,
                         next_position_,
                         std::move(skipped_since_),
                         fingerprint_(shard_first_, next_position_)};
  skipped_since_.clear();
  shard_first_ = next_position_;
}

void ShardCommitJournal::committed(uint32_t shard) {
  if (!sealed_ || sealed_->shard != shard) {
    throw Error("convert journal: shard " + std::to_string(shard) + " committed but not sealed");
  }
  journal_.append(*sealed_);
  sealed_.reset();
}

}  // namespace imgpack
