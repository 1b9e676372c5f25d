// libFuzzer target for checkpoints a training job hands back to its loader:
// LoaderState::from_bytes() and from_json() over the fuzzer's bytes, then
// Loader::restore() of what they accept on a small dataset, and the rest of
// the epoch read from there.
//
// Input: byte 0 selects the parser (bit 0: from_json, else from_bytes) and
// the topology restored on (bits 1-2: world size 1, 2, 3 or 4, this rank the
// last, of batch 4, 4, 5 or 3), the rest is the checkpoint. imgpack::Error
// (UsageError among them) is the documented answer to a damaged or foreign
// state. Any other exception, a crash, a sanitizer report or a hang is a
// bug, and so is a restored epoch that breaks its contract: no batch larger
// than the batch size or with more padding than records, no record
// delivered twice but as padding, no more records than the positions the
// state left, and the epoch's end reached.
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <optional>
#include <set>
#include <span>
#include <string_view>

#include "imgpack/dataset.hpp"
#include "imgpack/error.hpp"
#include "imgpack/loader.hpp"
#include "loader_state_fixture.hpp"

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "loader_state_fuzzer: %s\n", what);
  std::abort();
}

void read_rest_of_epoch(imgpack::Loader& loader, const imgpack::LoaderState& state,
                        std::size_t batch_size) {
  std::set<uint64_t> seen;
  const uint64_t left = state.epoch_positions - std::min(state.consumed, state.epoch_positions);
  uint64_t delivered = 0;
  // Every remaining position of the epoch in batches of at least one record,
  // plus the padding of a last batch and the wrap of RankPolicy::pad.
  const uint64_t most_batches = left + 2;
  for (uint64_t b = 0;; ++b) {
    if (b > most_batches) fail("the restored epoch does not end");
    std::optional<imgpack::Batch> batch = loader.next();
    if (!batch) return;
    const std::span<const uint64_t> records = batch->records();
    if (records.empty() || records.size() > batch_size) fail("a batch of a wrong size");
    if (batch->padding() > records.size()) fail("more padding than records");
    for (std::size_t i = 0; i + batch->padding() < records.size(); ++i) {
      if (!seen.insert(records[i]).second) fail("a record delivered twice in one epoch");
      ++delivered;
    }
    if (delivered > left) fail("more records than the positions the state left");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const bool json = (data[0] & 1) != 0;
  const imgpack::fuzz::Topology topology = imgpack::fuzz::kTopologies[(data[0] >> 1) % 4];
  const std::span<const uint8_t> checkpoint(data + 1, size - 1);
  try {
    const imgpack::LoaderState state =
        json ? imgpack::LoaderState::from_json(std::string_view(
                   reinterpret_cast<const char*>(checkpoint.data()), checkpoint.size()))
             : imgpack::LoaderState::from_bytes(checkpoint);
    imgpack::Loader loader(imgpack::fuzz::loader_state_dataset(),
                           imgpack::fuzz::loader_state_options(topology));
    loader.restore(state);
    read_rest_of_epoch(loader, state, topology.batch_size);
  } catch (const imgpack::Error&) {
    // A damaged, contradictory or foreign state: the documented answer.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loader_state_fuzzer: unexpected exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}
