// LoaderState (loader_state.cpp) and what Loader::state() and restore() promise:
// serialisation, same-topology resumption byte for byte, elastic resumption
// (every position of the epoch once over old and new ranks), and states of
// another configuration rejected with the reason. Host backend. Long because
// each promise of the header has its own case over the same fixture dataset.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "imgpack/checksum.hpp"
#include "imgpack/error.hpp"
#include "imgpack/loader.hpp"
#include "synthetic_dataset.hpp"
#include "test_support.hpp"

namespace imgpack {

// gtest prints a state as its JSON.
void PrintTo(const LoaderState& state, std::ostream* os) { *os << state.to_json(); }

namespace {

using test::SyntheticOptions;
using test::TempDir;

constexpr uint64_t kEpoch = 3;
// Divisible by every world size the tests restore to (1, 2, 3, 4).
constexpr std::size_t kGlobalBatch = 12;

// Everything one batch showed, pixels included.
struct Delivered {
  std::size_t index = 0;
  std::size_t padding = 0;
  std::vector<uint64_t> records;
  std::vector<int64_t> samples;
  std::vector<int32_t> labels;
  std::vector<uint8_t> pixels;
  bool operator==(const Delivered&) const = default;
};

void PrintTo(const Delivered& d, std::ostream* os) {
  *os << "batch " << d.index << " (padding " << d.padding << "):";
  for (uint64_t r : d.records) *os << " " << r;
}

Delivered take(const Batch& batch) {
  Delivered d;
  d.index = batch.index();
  d.padding = batch.padding();
  d.records.assign(batch.records().begin(), batch.records().end());
  d.samples.assign(batch.samples().begin(), batch.samples().end());
  d.labels.assign(batch.labels().begin(), batch.labels().end());
  const auto* pixels = batch.data_as<uint8_t>();
  d.pixels.assign(pixels, pixels + batch.bytes());
  return d;
}

std::vector<Delivered> read_rest(Loader& loader) {
  std::vector<Delivered> out;
  while (std::optional<Batch> batch = loader.next()) out.push_back(take(*batch));
  return out;
}

void add_non_padding(const Delivered& d, std::multiset<uint64_t>& into) {
  for (std::size_t i = 0; i + d.padding < d.records.size(); ++i) into.insert(d.records[i]);
}

// 61 samples with 3 variants (labels s % 4); split cv3: fold s % 3, every
// 10th sample in the test set.
class LoaderStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.samples = 61;
    options_.variants = 3;
    options_.records_per_shard = 20;
    test::write_synthetic_dataset(dir_.path(), options_);
    std::vector<int16_t> assign(61);
    for (std::size_t s = 0; s < assign.size(); ++s) {
      assign[s] = s % 10 == 9 ? int16_t{-1} : static_cast<int16_t>(s % 3);
    }
    test::add_split(dir_.path(), "cv3", 3, assign);
    dataset_ = Dataset::open(dir_.path());
  }

  static LoaderOptions base_options() {
    LoaderOptions o;
    o.batch_size = 8;
    o.threads = 2;
    o.prefetch = 3;
    o.order.seed = 42;
    return o;
  }

  // The message of the UsageError that restoring `state` into a loader with `options` throws.
  std::string rejection(const LoaderState& state, const LoaderOptions& options) {
    Loader loader(dataset_, options);
    try {
      loader.restore(state);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "(accepted)";
  }

  LoaderState state_after(const LoaderOptions& options, std::size_t batches) {
    Loader loader(dataset_, options);
    loader.set_epoch(kEpoch);
    for (std::size_t b = 0; b < batches; ++b) EXPECT_TRUE(loader.next());
    return loader.state();
  }

  SyntheticOptions options_;
  TempDir dir_;
  Dataset dataset_;
};

// --- The value and its two serialisations -------------------------------------

TEST_F(LoaderStateTest, StateSaysWhereTheLoaderIs) {
  LoaderOptions o = base_options();
  o.selection = {.split = "cv3", .fold = 1, .role = Role::train};
  o.order.world_size = 2;
  o.order.rank = 1;
  Loader loader(dataset_, o);
  LoaderState s = loader.state();
  EXPECT_EQ(s.epoch, 0u);
  EXPECT_EQ(s.consumed, 0u);
  loader.set_epoch(kEpoch);
  ASSERT_TRUE(loader.next());
  ASSERT_TRUE(loader.next());
  s = loader.state();
  EXPECT_EQ(s.epoch, kEpoch);
  EXPECT_EQ(s.consumed, 2u * 8 * 2);  // 2 steps of 8 images on each of 2 ranks
  EXPECT_EQ(s.world_size, 2u);
  EXPECT_EQ(s.batch_size, 8u);
  EXPECT_EQ(s.global_batch, 16u);
  EXPECT_EQ(s.dataset_uuid, options_.uuid);
  EXPECT_EQ(s.split, "cv3");
  EXPECT_EQ(s.fold, 1);
  EXPECT_EQ(s.role, Role::train);
  EXPECT_EQ(s.variants, VariantPolicy::rotate);
  EXPECT_EQ(s.selected_samples, 37u);
  EXPECT_EQ(s.epoch_positions, 37u);
  EXPECT_EQ(s.order, OrderMode::random);
  EXPECT_EQ(s.seed, 42u);
  EXPECT_EQ(s.last_batch, LastBatch::partial);
  while (loader.next()) {
  }
  EXPECT_EQ(loader.state().consumed, 37u);  // the whole epoch
}

// batches_left(): the whole epoch before it starts, one fewer per batch, and
// after a restore what the restored epoch has left: none for a state saved
// after its last batch, which set_epoch(epoch + 1) then continues.
TEST_F(LoaderStateTest, BatchesLeftCountsDownAndSurvivesARestore) {
  const LoaderOptions o = base_options();
  Loader loader(dataset_, o);
  const std::size_t whole = loader.batches_per_epoch();
  ASSERT_GT(whole, 2u);
  EXPECT_EQ(loader.batches_left(), whole);
  loader.set_epoch(kEpoch);
  ASSERT_TRUE(loader.next());
  EXPECT_EQ(loader.batches_left(), whole - 1);
  Loader resumed(dataset_, o);
  resumed.restore(loader.state());
  EXPECT_EQ(resumed.batches_left(), whole - 1);
  while (loader.next()) {
  }
  EXPECT_EQ(loader.batches_left(), 0u);
  resumed.restore(loader.state());
  EXPECT_EQ(resumed.batches_left(), 0u);
  EXPECT_FALSE(resumed.next());
  resumed.set_epoch(kEpoch + 1);
  EXPECT_EQ(resumed.batches_left(), whole);
}

TEST_F(LoaderStateTest, BytesAndJsonRoundTrip) {
  LoaderOptions o = base_options();
  o.selection = {.split = "cv3", .fold = 2, .role = Role::val};
  o.order.mode = OrderMode::shard_window;
  o.order.seed = 18446744073709551615u;
  o.last_batch = LastBatch::pad;
  const LoaderState s = state_after(o, 1);
  EXPECT_EQ(LoaderState::from_json(s.to_json()), s);
  EXPECT_EQ(LoaderState::from_bytes(s.to_bytes()), s);
  const std::string json = s.to_json();
  for (const char* member :
       {R"("imgpack_loader_state":2)", R"("generation":0)", R"("epoch":3)", R"("consumed":8)",
        R"("split":"cv3")", R"("role":"val")", R"("order":"shard-window")",
        R"("seed":18446744073709551615)", R"("last_batch":"pad")", R"("sampling":"uniform")"}) {
    EXPECT_NE(json.find(member), std::string::npos) << member << " in " << json;
  }
}

TEST_F(LoaderStateTest, JsonMayBeReformattedAndExtended) {
  // What a Python state_dict round trip (json.loads, json.dumps(indent=2)) gives back.
  const LoaderState s = state_after(base_options(), 2);
  std::string json = s.to_json();
  std::string spaced;
  for (char c : json) {
    spaced += c;
    if (c == ',' || c == '{') spaced += "\n  ";
  }
  spaced.insert(spaced.size() - 1, ",\n  \"added_by_a_later_version\": \"ignored\"\n");
  EXPECT_EQ(LoaderState::from_json(spaced), s);
}

TEST_F(LoaderStateTest, DamagedOrForeignBytesAreErrors) {
  const std::vector<uint8_t> bytes = state_after(base_options(), 1).to_bytes();
  auto message = [](const std::vector<uint8_t>& b) -> std::string {
    try {
      LoaderState::from_bytes(b);
    } catch (const UsageError& e) {
      return std::string("usage error: ") + e.what();
    } catch (const Error& e) {
      return e.what();
    }
    return "(accepted)";
  };
  std::vector<uint8_t> flipped = bytes;
  flipped[flipped.size() - 10] ^= 0x01;
  EXPECT_NE(message(flipped).find("damaged"), std::string::npos) << message(flipped);
  std::vector<uint8_t> truncated(bytes.begin(), bytes.end() - 5);
  EXPECT_NE(message(truncated).find("damaged"), std::string::npos) << message(truncated);
  EXPECT_NE(message({'P', 'K', 3, 4}).find("not an imgpack loader state"), std::string::npos);
  EXPECT_NE(message({}).find("not an imgpack loader state"), std::string::npos);
  EXPECT_EQ(message(bytes), "(accepted)");
}

TEST_F(LoaderStateTest, JsonErrorsNameTheMember) {
  const std::string json = state_after(base_options(), 1).to_json();
  auto message = [](const std::string& text) -> std::string {
    try {
      LoaderState::from_json(text);
    } catch (const Error& e) {
      return e.what();
    }
    return "(accepted)";
  };
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string text = json;
    const std::size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return text.replace(at, from.size(), to);
  };
  EXPECT_EQ(message(replaced(R"("role":"all")", R"("role":"everything")")),
            "loader state: member 'role': unknown role 'everything' (use train, val, test or all)");
  EXPECT_EQ(message(replaced(R"("imgpack_loader_state":2)", R"("imgpack_loader_state":3)")),
            "loader state: version 3, this imgpack reads versions 1 to 2");
  EXPECT_EQ(message(replaced(R"("imgpack_loader_state":2)", R"("imgpack_loader_state":0)")),
            "loader state: version 0, this imgpack reads versions 1 to 2");
  EXPECT_EQ(message(replaced(R"("generation":0,)", "")),
            "loader state: member 'generation' is missing");
  EXPECT_EQ(message(replaced(R"("world_size":1)", R"("world_size":4294967296)")),
            "loader state: member 'world_size' is out of range (4294967296)");
  EXPECT_EQ(message(replaced(R"("epoch":3,)", "")), "loader state: member 'epoch' is missing");
  EXPECT_NE(message(replaced(R"("selection_hash":")", R"("selection_hash":"x)"))
                .find("'selection_hash' is not 16 hex digits"),
            std::string::npos);
}

// A state whose checksum matches but whose fields cannot come from a Loader
// (forged, or damaged before it was checksummed) is refused naming the field.
TEST_F(LoaderStateTest, ImpossibleFieldsAreRefusedBehindAValidChecksum) {
  const LoaderState good = state_after(base_options(), 1);
  ASSERT_GT(good.consumed, 0u);
  auto message = [](const LoaderState& s) -> std::string {
    try {
      LoaderState::from_bytes(s.to_bytes());
    } catch (const Error& e) {
      return e.what();
    }
    return "(accepted)";
  };
  EXPECT_EQ(message(good), "(accepted)");
  auto forged = [&](auto change) {
    LoaderState s = good;
    change(s);
    return message(s);
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {forged([](LoaderState& s) { s.world_size = 0; }), "world_size is 0"},
      {forged([](LoaderState& s) { s.batch_size = 0; }), "batch_size is 0"},
      {forged([](LoaderState& s) { s.global_batch += 1; }), "is not batch_size"},
      {forged([](LoaderState& s) { s.consumed = s.epoch_positions + 1; }), "is more than"},
      {forged([](LoaderState& s) { s.window_shards = 2; }), "window_shards 2 with order"},
      {forged([](LoaderState& s) { s.weights_hash = 7; }), "weights_hash"},
      {forged([](LoaderState& s) { s.fold = -1; }), "fold -1"},
  };
  for (const auto& [what, expected] : cases) {
    EXPECT_NE(what.find(expected), std::string::npos) << what;
    EXPECT_NE(what.find("damaged or forged"), std::string::npos) << what;
  }
}

// --- Restore semantics ------------------------------------------------------------

TEST_F(LoaderStateTest, SetEpochAfterRestoreKeepsThePositionOnce) {
  const LoaderOptions o = base_options();
  Loader reference(dataset_, o);
  reference.set_epoch(kEpoch);
  std::vector<Delivered> epoch = read_rest(reference);
  ASSERT_EQ(epoch.size(), 8u);  // 61 records in batches of 8
  const LoaderState saved = state_after(o, 3);

  Loader loader(dataset_, o);
  loader.restore(saved);
  EXPECT_EQ(loader.epoch(), kEpoch);
  EXPECT_EQ(loader.state(), saved);
  loader.set_epoch(kEpoch);  // the top of the usual epoch loop: resumes
  loader.set_epoch(kEpoch);  // still before the first batch: still resumes
  std::optional<Batch> next = loader.next();
  ASSERT_TRUE(next);
  EXPECT_EQ(take(*next), epoch[3]);
  next.reset();
  loader.set_epoch(kEpoch);  // after a delivery: the epoch starts over
  EXPECT_EQ(read_rest(loader), epoch);

  Loader other(dataset_, o);
  other.restore(saved);
  other.set_epoch(kEpoch + 1);  // another epoch: from its start
  EXPECT_EQ(other.state().consumed, 0u);
  std::optional<Batch> first = other.next();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->index(), 0u);
  EXPECT_EQ(first->epoch(), kEpoch + 1);
}

TEST_F(LoaderStateTest, RestoreWithoutSetEpochAndAfterAnotherEpoch) {
  const LoaderOptions o = base_options();
  const LoaderState saved = state_after(o, 5);
  Loader loader(dataset_, o);
  loader.set_epoch(1);
  ASSERT_TRUE(loader.next());
  std::optional<Batch> held = loader.next();  // stays valid across the restore
  loader.restore(saved);
  std::vector<Delivered> rest = read_rest(loader);
  ASSERT_EQ(rest.size(), 3u);
  EXPECT_EQ(rest.front().index, 5u);
  EXPECT_EQ(held->epoch(), 1u);
  EXPECT_EQ(loader.state().consumed, 61u);
}

TEST_F(LoaderStateTest, AStateAtTheEndOfAnEpochResumesIntoNothing) {
  const LoaderOptions o = base_options();
  const LoaderState saved = state_after(o, 8);
  EXPECT_EQ(saved.consumed, 61u);
  Loader loader(dataset_, o);
  loader.restore(saved);
  loader.set_epoch(kEpoch);
  EXPECT_FALSE(loader.next());
  loader.set_epoch(kEpoch + 1);  // the loop moves on
  EXPECT_EQ(read_rest(loader).size(), 8u);
}

TEST_F(LoaderStateTest, AFailedRestoreLeavesTheLoaderAsItWas) {
  LoaderOptions o = base_options();
  Loader loader(dataset_, o);
  loader.set_epoch(kEpoch);
  ASSERT_TRUE(loader.next());
  LoaderState foreign = state_after(o, 2);
  foreign.seed = 7;
  EXPECT_THROW(loader.restore(foreign), UsageError);
  LoaderState damaged = state_after(o, 2);
  damaged.consumed = damaged.epoch_positions + 1;  // past the epoch
  EXPECT_THROW(loader.restore(damaged), Error);
  std::optional<Batch> next = loader.next();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->index(), 1u);
}

// --- Mismatches ---------------------------------------------------------------------

TEST_F(LoaderStateTest, AStateOfAnotherDatasetIsRejected) {
  TempDir twin_dir;
  test::write_foreign_twin(twin_dir.path(), options_);
  Dataset twin = Dataset::open(twin_dir.path());
  Loader loader(twin, base_options());
  const LoaderState saved = state_after(base_options(), 1);
  try {
    loader.restore(saved);
    FAIL() << "restored a state of another dataset";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("the dataset uuid is '" + options_.uuid +
                                         "' in the state, '5e7a0000-0000-4000-8000-00000000beef' "
                                         "here"),
              std::string::npos)
        << e.what();
  }
}

// The message of the imgpack::Error (not a UsageError: no option is wrong,
// the data changed) that restoring `state` on `dataset` throws.
std::string generation_refusal(const Dataset& dataset, const LoaderOptions& options,
                               const LoaderState& state) {
  Loader loader(dataset, options);
  try {
    loader.restore(state);
  } catch (const UsageError& e) {
    return std::string("usage error: ") + e.what();
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

// Samples removed since the state was saved (generation 1): the epoch's
// positions now count other records, so the state is refused with the
// generations and what to do, and so is a state of generation 1 on a Dataset
// still open at generation 0. A state restores on its own generation.
TEST_F(LoaderStateTest, AStateOfAnotherGenerationIsRefusedWithTheReason) {
  LoaderOptions o = base_options();
  o.selection = {.split = "cv3", .fold = 1, .role = Role::train};
  const LoaderState saved = state_after(o, 2);
  EXPECT_EQ(saved.generation, 0u);
  test::remove_samples(dir_.path(), {4, 40});
  const Dataset grown = Dataset::open(dir_.path());
  ASSERT_EQ(grown.generation(), 1u);
  const std::string uuid = options_.uuid;
  EXPECT_EQ(generation_refusal(grown, o, saved),
            "the loader state is of generation 0 of dataset " + uuid +
                " and the dataset is now generation 1: reopen the dataset with the data of "
                "generation 0 to continue its epoch, or start a new epoch (set_epoch) without the "
                "state");
  // Restoring a state with the generation alone changed: refused all the same.
  LoaderState relabelled = saved;
  relabelled.generation = 1;
  EXPECT_NE(generation_refusal(dataset_, o, relabelled).find("is of generation 1"),
            std::string::npos);

  Loader loader(grown, o);
  loader.set_epoch(kEpoch);
  ASSERT_TRUE(loader.next());
  const LoaderState now = loader.state();
  EXPECT_EQ(now.generation, 1u);
  EXPECT_NE(now.to_json().find(R"("generation":1)"), std::string::npos) << now.to_json();
  EXPECT_EQ(LoaderState::from_bytes(now.to_bytes()), now);
  EXPECT_EQ(generation_refusal(dataset_, o, now)
                .find("the loader state is of generation 1 of "
                      "dataset " +
                      uuid + " and the dataset is now generation 0"),
            0u);
  const std::vector<Delivered> rest = read_rest(loader);
  Loader resumed(grown, o);
  resumed.restore(now);
  EXPECT_EQ(read_rest(resumed), rest);
  for (const Delivered& d : rest) {
    for (int64_t sample : d.samples) EXPECT_TRUE(sample != 4 && sample != 40) << sample;
  }
}

// What version 1 wrote (before generations): no `generation` member. It reads
// as generation 0, restores there, and is refused on generation 1.
TEST_F(LoaderStateTest, AVersionOneStateIsOfGenerationZero) {
  const LoaderState saved = state_after(base_options(), 1);
  std::string json = saved.to_json();
  for (const auto& [from, to] : {std::pair<std::string, std::string>{R"("imgpack_loader_state":2)",
                                                                     R"("imgpack_loader_state":1)"},
                                 {R"("generation":0,)", ""}}) {
    const std::size_t at = json.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    json.replace(at, from.size(), to);
  }
  EXPECT_EQ(LoaderState::from_json(json), saved);
  // Its bytes as version 1 wrote them: header, checksum, JSON.
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(checksum(json.data(), json.size())));
  const std::string text = "imgpack loader state\n" + std::string(hex) + "\n" + json;
  const LoaderState old = LoaderState::from_bytes(std::vector<uint8_t>(text.begin(), text.end()));
  EXPECT_EQ(old, saved);
  EXPECT_EQ(generation_refusal(dataset_, base_options(), old), "(accepted)");
  test::remove_samples(dir_.path(), {7});
  EXPECT_NE(generation_refusal(Dataset::open(dir_.path()), base_options(), old)
                .find("is of generation 0 of dataset"),
            std::string::npos);
}

TEST_F(LoaderStateTest, AStateOfAnotherSelectionOrderOrBatchIsRejectedWithTheReason) {
  LoaderOptions o = base_options();
  o.selection = {.split = "cv3", .fold = 1, .role = Role::train};
  o.order.world_size = 2;
  const LoaderState saved = state_after(o, 1);
  struct Case {
    const char* reason;
    void (*change)(LoaderOptions&);
  };
  const Case cases[] = {
      {"the fold is 1 in the state, 0 here", [](LoaderOptions& x) { x.selection.fold = 0; }},
      {"the role is train in the state, val here",
       [](LoaderOptions& x) { x.selection.role = Role::val; }},
      {"the split is 'cv3' in the state, '' here", [](LoaderOptions& x) { x.selection = {}; }},
      {"the variant policy is rotate in the state, all here",
       [](LoaderOptions& x) { x.selection.variants = VariantPolicy::all; }},
      {"the seed is 42 in the state, 43 here", [](LoaderOptions& x) { x.order.seed = 43; }},
      {"the order is random in the state, sequential here",
       [](LoaderOptions& x) { x.order.mode = OrderMode::sequential; }},
      {"the rank policy is pad in the state, drop here",
       [](LoaderOptions& x) { x.order.rank_policy = RankPolicy::drop; }},
      {"the sampling is uniform in the state, class-balanced here",
       [](LoaderOptions& x) { x.order.sampling = Sampling::class_balanced; }},
      {"the last-batch policy is partial in the state, drop here",
       [](LoaderOptions& x) { x.last_batch = LastBatch::drop; }},
  };
  for (const Case& c : cases) {
    LoaderOptions changed = o;
    c.change(changed);
    const std::string message = rejection(saved, changed);
    EXPECT_NE(message.find(c.reason), std::string::npos)
        << "want: " << c.reason << "\ngot:  " << message;
    EXPECT_EQ(message.rfind("the loader state does not fit this loader: ", 0), 0u) << message;
  }
  // Several at once: each one is named.
  LoaderOptions both = o;
  both.order.seed = 1;
  both.selection.fold = 2;
  const std::string message = rejection(saved, both);
  EXPECT_NE(message.find("the fold is 1 in the state, 2 here"), std::string::npos) << message;
  EXPECT_NE(message.find("the seed is 42 in the state, 1 here"), std::string::npos) << message;
  // What a state does not fix: threads, prefetch, output, the rank, the
  // world size and the batch size.
  LoaderOptions free = o;
  free.threads = 5;
  free.prefetch = 2;
  free.output = OutputFormat::float32_nchw;
  free.order.rank = 1;
  EXPECT_EQ(rejection(saved, free), "(accepted)");
  free.order.world_size = 3;
  free.batch_size = 5;
  EXPECT_EQ(rejection(saved, free), "(accepted)");
}

TEST_F(LoaderStateTest, ASplitRemadeUnderTheSameNameIsRejected) {
  LoaderOptions o = base_options();
  o.selection = {.split = "cv3", .fold = 0, .role = Role::val};
  const LoaderState saved = state_after(o, 1);
  // Same name, same fold sizes, other members: samples 0 (fold 0) and 1 (fold 1) swap folds.
  std::vector<int16_t> assign(61);
  for (std::size_t s = 0; s < assign.size(); ++s) {
    assign[s] = s % 10 == 9 ? int16_t{-1} : static_cast<int16_t>(s % 3);
  }
  std::swap(assign[0], assign[1]);
  test::add_split(dir_.path(), "cv3", 3, assign);
  dataset_ = Dataset::open(dir_.path());
  const std::string message = rejection(saved, o);
  EXPECT_NE(message.find("the selected samples are other ones"), std::string::npos) << message;
}

TEST_F(LoaderStateTest, WeightsAreFingerprinted) {
  LoaderOptions o = base_options();
  o.order.sampling = Sampling::weighted;
  o.order.weights.assign(61, 1.0);
  const LoaderState saved = state_after(o, 1);
  EXPECT_EQ(rejection(saved, o), "(accepted)");
  o.order.weights[5] = 2.0;
  EXPECT_NE(rejection(saved, o).find("the sampling weights are other ones"), std::string::npos);
  o.order.epoch_length = 30;
  o.order.weights[5] = 1.0;
  EXPECT_NE(rejection(saved, o).find("the epoch length is 61 positions in the state, 30 positions"),
            std::string::npos)
      << rejection(saved, o);
}

// --- Elastic: another world size and batch size -----------------------------------------

class ElasticTest : public LoaderStateTest {
 protected:
  static LoaderOptions options_for(uint32_t world, uint32_t rank, std::size_t batch) {
    LoaderOptions o = base_options();
    o.order.world_size = world;
    o.order.rank = rank;
    o.batch_size = batch;
    return o;
  }

  // What `world` ranks of `batch` deliver from `state` to the end of its
  // epoch, without padding, after checking each rank's batch indices, that
  // each ends the epoch, and that the next epoch is a fresh run's.
  std::multiset<uint64_t> rest_on(const LoaderState& state, uint32_t world, std::size_t batch) {
    std::multiset<uint64_t> delivered;
    for (uint32_t rank = 0; rank < world; ++rank) {
      SCOPED_TRACE("rank " + std::to_string(rank) + " of " + std::to_string(world) + ", batch " +
                   std::to_string(batch));
      Loader loader(dataset_, options_for(world, rank, batch));
      loader.restore(LoaderState::from_bytes(state.to_bytes()));  // as through a checkpoint
      loader.set_epoch(state.epoch);
      const std::vector<Delivered> rest = read_rest(loader);
      const std::size_t first = static_cast<std::size_t>(state.consumed / (world * batch));
      for (std::size_t i = 0; i < rest.size(); ++i) EXPECT_EQ(rest[i].index, first + i);
      EXPECT_LE(first + rest.size(), loader.batches_per_epoch());
      for (const Delivered& d : rest) add_non_padding(d, delivered);
      EXPECT_EQ(loader.state().consumed, state.epoch_positions);

      Loader fresh(dataset_, options_for(world, rank, batch));
      fresh.set_epoch(state.epoch + 1);
      loader.set_epoch(state.epoch + 1);
      EXPECT_EQ(read_rest(loader), read_rest(fresh)) << "the epoch after";
    }
    return delivered;
  }

  // Positions [from, N) of the epoch's global order.
  std::multiset<uint64_t> positions_from(uint64_t from) const {
    Loader loader(dataset_, base_options());
    const std::vector<uint64_t> global = loader.order().global_order(kEpoch);
    return {global.begin() + static_cast<std::ptrdiff_t>(from), global.end()};
  }
};

// A job of 2 ranks of batch 8 stops after 2 steps (32 of 61 positions); it
// continues on 3 ranks of 8, 4 of 5 or 1 of 3, none of whose global batches
// divide 32: the new ranks deliver the 29 remaining positions, each once.
TEST_F(ElasticTest, ARestoreOnAnyWorldSizeAndBatchSizeDeliversTheRestOfTheEpochOnce) {
  LoaderState saved;
  std::multiset<uint64_t> before;
  for (uint32_t rank = 0; rank < 2; ++rank) {
    Loader loader(dataset_, options_for(2, rank, 8));
    loader.set_epoch(kEpoch);
    for (int b = 0; b < 2; ++b) {
      std::optional<Batch> batch = loader.next();
      ASSERT_TRUE(batch);
      add_non_padding(take(*batch), before);
    }
    if (rank == 0) saved = loader.state();
    EXPECT_EQ(loader.state(), saved) << "every rank saves the same state";
  }
  ASSERT_EQ(saved.consumed, 32u);
  const std::multiset<uint64_t> remaining = positions_from(32);
  for (const auto& [world, batch] :
       std::vector<std::pair<uint32_t, std::size_t>>{{3, 8}, {4, 5}, {1, 3}, {2, 4}, {3, 1}}) {
    SCOPED_TRACE("restored on " + std::to_string(world) + " ranks of " + std::to_string(batch));
    const std::multiset<uint64_t> rest = rest_on(saved, world, batch);
    EXPECT_EQ(rest, remaining);
    std::multiset<uint64_t> whole = before;
    whole.insert(rest.begin(), rest.end());
    EXPECT_EQ(whole, positions_from(0)) << "every position of the epoch once, old and new ranks";
  }
}

// A state saved in an epoch resumed on another topology counts from where
// it resumed: restored on that topology it continues byte for byte, on yet
// another it still delivers the rest once.
TEST_F(ElasticTest, AStateSavedInAResumedEpochResumesAgain) {
  LoaderState saved;
  {
    Loader loader(dataset_, options_for(2, 0, 8));
    loader.set_epoch(kEpoch);
    ASSERT_TRUE(loader.next());
    saved = loader.state();  // 16 positions
  }
  // 3 ranks of 5 (global 15) from position 16: the rest, then a save after one step.
  std::vector<std::vector<Delivered>> uninterrupted;
  LoaderState again;
  for (uint32_t rank = 0; rank < 3; ++rank) {
    Loader loader(dataset_, options_for(3, rank, 5));
    loader.restore(saved);
    std::optional<Batch> first = loader.next();
    ASSERT_TRUE(first);
    EXPECT_EQ(first->index(), 1u);  // floor(16 / 15)
    std::vector<Delivered> rest{take(*first)};
    first.reset();
    if (rank == 0) again = loader.state();
    EXPECT_EQ(loader.state(), again);
    for (Delivered& d : read_rest(loader)) rest.push_back(std::move(d));
    uninterrupted.push_back(std::move(rest));
  }
  EXPECT_EQ(again.consumed, 16u + 15u);
  EXPECT_EQ(again.global_batch, 15u);
  for (uint32_t rank = 0; rank < 3; ++rank) {
    Loader loader(dataset_, options_for(3, rank, 5));
    loader.restore(LoaderState::from_bytes(again.to_bytes()));
    const std::vector<Delivered>& whole = uninterrupted[rank];
    EXPECT_EQ(read_rest(loader), std::vector<Delivered>(whole.begin() + 1, whole.end()))
        << "rank " << rank;
  }
  EXPECT_EQ(rest_on(again, 2, 8), positions_from(31));
  EXPECT_EQ(rest_on(again, 4, 3), positions_from(31));
}

// --- Every save point, every world size --------------------------------------------------

struct ResumeCase {
  const char* name;
  SelectionOptions selection;
  RankPolicy rank_policy;
  LastBatch last_batch;
  Sampling sampling;
};

std::ostream& operator<<(std::ostream& os, const ResumeCase& c) { return os << c.name; }

class ResumeTest : public LoaderStateTest, public ::testing::WithParamInterface<ResumeCase> {
 protected:
  static LoaderOptions options_for(uint32_t world, uint32_t rank) {
    const ResumeCase& c = GetParam();
    LoaderOptions o;
    o.selection = c.selection;
    o.order.seed = 9;
    o.order.rank = rank;
    o.order.world_size = world;
    o.order.rank_policy = c.rank_policy;
    o.order.sampling = c.sampling;
    o.batch_size = kGlobalBatch / world;
    o.last_batch = c.last_batch;
    o.threads = 1;
    o.prefetch = 2;
    return o;
  }

  // An uninterrupted epoch on `world` ranks: every rank's batches, and the
  // state before the first batch and after each (the same on every rank).
  struct Run {
    std::vector<std::vector<Delivered>> batches;  // [rank][batch]
    std::vector<LoaderState> states;              // [batches delivered]
    std::vector<uint64_t> global;                 // the epoch's global order
  };
  Run run_uninterrupted(uint32_t world) {
    Run run;
    for (uint32_t rank = 0; rank < world; ++rank) {
      Loader loader(dataset_, options_for(world, rank));
      loader.set_epoch(kEpoch);
      std::vector<LoaderState> states{loader.state()};
      std::vector<Delivered> batches;
      while (std::optional<Batch> batch = loader.next()) {
        batches.push_back(take(*batch));
        states.push_back(loader.state());
      }
      if (rank == 0) {
        run.states = states;
        run.global = loader.order().global_order(kEpoch);
      } else {
        EXPECT_EQ(states, run.states) << "rank " << rank << " of " << world;
      }
      run.batches.push_back(std::move(batches));
    }
    return run;
  }

  // What the contract says is delivered, without padding, over the whole
  // epoch when `world` ranks stopped after `k` of their `batches` batches and
  // `new_world` ranks did the rest: the global order from its start up to
  // where the new ranks stop (they cover what an uninterrupted epoch of
  // new_world ranks covers from step k on); a finished epoch is what the old
  // ranks delivered.
  std::multiset<uint64_t> expected(const Run& run, std::size_t k, uint32_t new_world) {
    const ResumeCase& c = GetParam();
    std::multiset<uint64_t> out;
    if (k == run.batches[0].size()) {
      for (const auto& rank : run.batches) {
        for (const Delivered& d : rank) add_non_padding(d, out);
      }
      return out;
    }
    const uint64_t n = run.global.size();
    const uint64_t remaining = n - k * kGlobalBatch;
    const uint64_t batch = kGlobalBatch / new_world;
    uint64_t per_rank = c.rank_policy == RankPolicy::pad ? (remaining + new_world - 1) / new_world
                                                         : remaining / new_world;
    if (c.last_batch == LastBatch::drop) per_rank = per_rank / batch * batch;
    const uint64_t end = std::min(n, k * kGlobalBatch + new_world * per_rank);
    out.insert(run.global.begin(), run.global.begin() + static_cast<std::ptrdiff_t>(end));
    return out;
  }
};

TEST_P(ResumeTest, EveryPositionOnceOnAnyWorldSizeAndByteIdenticalOnTheSame) {
  for (uint32_t world : {1u, 2u, 4u}) {
    const Run run = run_uninterrupted(world);
    const std::size_t batches = run.batches[0].size();
    ASSERT_GE(batches, 3u);
    for (std::size_t k = 0; k <= batches; ++k) {
      // The state travels as bytes, as through a checkpoint.
      const std::vector<uint8_t> saved = run.states[k].to_bytes();
      std::multiset<uint64_t> before;  // what the old ranks delivered before the save
      for (const auto& rank : run.batches) {
        for (std::size_t b = 0; b < k; ++b) add_non_padding(rank[b], before);
      }
      for (uint32_t new_world : {1u, 2u, 3u, 4u}) {
        SCOPED_TRACE("saved by " + std::to_string(world) + " ranks after batch " +
                     std::to_string(k) + ", restored on " + std::to_string(new_world));
        std::multiset<uint64_t> delivered = before;
        for (uint32_t rank = 0; rank < new_world; ++rank) {
          Loader loader(dataset_, options_for(new_world, rank));
          loader.restore(LoaderState::from_bytes(saved));
          if ((k + rank) % 2 == 0) loader.set_epoch(kEpoch);  // with and without the loop's call
          const std::vector<Delivered> rest = read_rest(loader);
          const std::size_t left = k == batches ? 0 : loader.batches_per_epoch() - k;
          ASSERT_EQ(rest.size(), left) << "rank " << rank;
          for (std::size_t i = 0; i < rest.size(); ++i) EXPECT_EQ(rest[i].index, k + i);
          if (new_world == world) {
            const std::vector<Delivered>& uninterrupted = run.batches[rank];
            EXPECT_EQ(rest,
                      std::vector<Delivered>(uninterrupted.begin() + static_cast<std::ptrdiff_t>(k),
                                             uninterrupted.end()))
                << "rank " << rank;
          }
          for (const Delivered& d : rest) add_non_padding(d, delivered);
          EXPECT_EQ(loader.state().consumed, run.global.size());
        }
        EXPECT_EQ(delivered, expected(run, k, new_world));
      }
    }
  }
}

const SelectionOptions kAll{};
const SelectionOptions kTrain{.split = "cv3", .fold = 1, .role = Role::train};  // 37, rotating

INSTANTIATE_TEST_SUITE_P(
    Policies, ResumeTest,
    ::testing::Values(
        ResumeCase{"pad_partial", kAll, RankPolicy::pad, LastBatch::partial, Sampling::uniform},
        ResumeCase{"pad_pad_train", kTrain, RankPolicy::pad, LastBatch::pad, Sampling::uniform},
        ResumeCase{"drop_drop", kAll, RankPolicy::drop, LastBatch::drop, Sampling::uniform},
        ResumeCase{"drop_partial_train", kTrain, RankPolicy::drop, LastBatch::partial,
                   Sampling::uniform},
        ResumeCase{"pad_drop", kAll, RankPolicy::pad, LastBatch::drop, Sampling::uniform},
        ResumeCase{"class_balanced_pad_pad", kAll, RankPolicy::pad, LastBatch::pad,
                   Sampling::class_balanced}),
    [](const ::testing::TestParamInfo<ResumeCase>& param) {
      return std::string(param.param.name);
    });

}  // namespace
}  // namespace imgpack
