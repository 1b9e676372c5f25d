// LoaderState: its fingerprint, its JSON and bytes, and the check restore()
// makes. The batch arithmetic that deals the rest of an epoch from `consumed` is in
// epoch_batches.cpp.
#include "loader_state.hpp"

#include <charconv>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "flat_json.hpp"
#include "imgpack/checksum.hpp"
#include "imgpack/error.hpp"

namespace imgpack {

namespace {

// Version 2 added `generation`; a version 1 state, saved before datasets
// had generations, is of generation 0 and is read as such.
constexpr uint64_t kStateVersion = 2;
constexpr uint64_t kOldestStateVersion = 1;
constexpr std::string_view kWhat = "loader state";
// Bytes: this line, the XXH3-64 of the JSON as 16 hex digits and a newline, the JSON.
constexpr std::string_view kMagic = "imgpack loader state\n";
constexpr std::size_t kHexDigits = 16;

std::string hex16(uint64_t value) {
  char text[kHexDigits + 1];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

// Exactly 16 hex digits; nullopt otherwise.
std::optional<uint64_t> parse_hex16(std::string_view text) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, ec] = std::from_chars(text.data(), end, value, 16);
  if (text.size() != kHexDigits || ec != std::errc() || stop != end) return std::nullopt;
  return value;
}

uint64_t hash_member(const detail::FlatJsonObject& o, std::string_view key) {
  const std::optional<uint64_t> value = parse_hex16(o.string_member(key));
  if (!value)
    throw Error(std::string(kWhat) + ": member '" + std::string(key) + "' is not 16 hex digits");
  return *value;
}

[[noreturn]] void out_of_range(std::string_view key, const std::string& value) {
  throw Error(std::string(kWhat) + ": member '" + std::string(key) + "' is out of range (" + value +
              ")");
}

template <class T>
T narrow_member(const detail::FlatJsonObject& o, std::string_view key) {
  if constexpr (std::is_signed_v<T>) {
    const int64_t value = o.signed_member(key);
    if (value < std::numeric_limits<T>::min() || value > std::numeric_limits<T>::max()) {
      out_of_range(key, std::to_string(value));
    }
    return static_cast<T>(value);
  } else {
    const uint64_t value = o.unsigned_member(key);
    if (value > std::numeric_limits<T>::max()) out_of_range(key, std::to_string(value));
    return static_cast<T>(value);
  }
}

// An enum member by name: a name this reader does not know is a damaged state.
template <class Parse>
auto enum_member(const detail::FlatJsonObject& o, std::string_view key, Parse parse) {
  try {
    return parse(o.string_member(key));
  } catch (const UsageError& e) {
    throw Error(std::string(kWhat) + ": member '" + std::string(key) + "': " + e.what());
  }
}

// What every state a Loader saves satisfies, checked field by field: a state
// forged or damaged behind a valid checksum is refused with the field named
// rather than restored into an impossible position.
void require_consistent(const LoaderState& s) {
  auto refuse = [](const std::string& problem) {
    throw Error(std::string(kWhat) + ": " + problem + " (damaged or forged state)");
  };
  if (s.world_size == 0) refuse("world_size is 0");
  if (s.batch_size == 0) refuse("batch_size is 0");
  if (s.batch_size > std::numeric_limits<uint64_t>::max() / s.world_size ||
      s.global_batch != uint64_t{s.batch_size} * s.world_size) {
    refuse("global_batch " + std::to_string(s.global_batch) + " is not batch_size " +
           std::to_string(s.batch_size) + " x world_size " + std::to_string(s.world_size));
  }
  if (s.consumed > s.epoch_positions) {
    refuse("consumed " + std::to_string(s.consumed) + " is more than the epoch's " +
           std::to_string(s.epoch_positions) + " positions");
  }
  // `consumed` need not be a step of the global batch: a state saved in an
  // epoch resumed on another topology counts from where that one resumed.
  if ((s.order == OrderMode::shard_window) != (s.window_shards > 0)) {
    refuse("window_shards " + std::to_string(s.window_shards) + " with order " +
           std::string(order_mode_name(s.order)));
  }
  if (s.sampling != Sampling::weighted && s.weights_hash != 0) {
    refuse("a weights_hash without weighted sampling");
  }
  if (s.split.empty() && s.fold != 0) refuse("fold " + std::to_string(s.fold) + " without a split");
  if (s.fold < 0) refuse("fold " + std::to_string(s.fold));
  if (s.variants == VariantPolicy::automatic) refuse("variants is automatic (never saved)");
}

}  // namespace

std::string LoaderState::to_json() const {
  detail::FlatJsonWriter j;
  j.add_unsigned("imgpack_loader_state", kStateVersion);
  j.add_unsigned("epoch", epoch);
  j.add_unsigned("consumed", consumed);
  j.add_unsigned("world_size", world_size);
  j.add_unsigned("batch_size", batch_size);
  j.add_string("dataset_uuid", dataset_uuid);
  j.add_unsigned("generation", generation);
  j.add_string("split", split);
  j.add_signed("fold", fold);
  j.add_string("role", role_name(role));
  j.add_string("variants", variant_policy_name(variants));
  j.add_unsigned("selected_samples", selected_samples);
  j.add_string("selection_hash", hex16(selection_hash));
  j.add_string("order", order_mode_name(order));
  j.add_unsigned("seed", seed);
  j.add_unsigned("window_shards", window_shards);
  j.add_string("rank_policy", rank_policy_name(rank_policy));
  j.add_string("sampling", sampling_name(sampling));
  j.add_string("weights_hash", hex16(weights_hash));
  j.add_unsigned("epoch_positions", epoch_positions);
  j.add_unsigned("global_batch", global_batch);
  j.add_string("last_batch", last_batch_name(last_batch));
  return j.text();
}

LoaderState LoaderState::from_json(std::string_view json) {
  const detail::FlatJsonObject o = detail::FlatJsonObject::parse(json, kWhat);
  const uint64_t version = o.unsigned_member("imgpack_loader_state");
  if (version < kOldestStateVersion || version > kStateVersion) {
    throw Error(std::string(kWhat) + ": version " + std::to_string(version) +
                ", this imgpack reads versions " + std::to_string(kOldestStateVersion) + " to " +
                std::to_string(kStateVersion));
  }
  LoaderState s;
  s.epoch = o.unsigned_member("epoch");
  s.consumed = o.unsigned_member("consumed");
  s.world_size = narrow_member<uint32_t>(o, "world_size");
  s.batch_size = o.unsigned_member("batch_size");
  s.dataset_uuid = o.string_member("dataset_uuid");
  s.generation = version >= 2 ? o.unsigned_member("generation") : 0;
  s.split = o.string_member("split");
  s.fold = narrow_member<int32_t>(o, "fold");
  s.role = enum_member(o, "role", parse_role);
  s.variants = enum_member(o, "variants", parse_variant_policy);
  s.selected_samples = o.unsigned_member("selected_samples");
  s.selection_hash = hash_member(o, "selection_hash");
  s.order = enum_member(o, "order", parse_order_mode);
  s.seed = o.unsigned_member("seed");
  s.window_shards = narrow_member<uint32_t>(o, "window_shards");
  s.rank_policy = enum_member(o, "rank_policy", parse_rank_policy);
  s.sampling = enum_member(o, "sampling", parse_sampling);
  s.weights_hash = hash_member(o, "weights_hash");
  s.epoch_positions = o.unsigned_member("epoch_positions");
  s.global_batch = o.unsigned_member("global_batch");
  s.last_batch = enum_member(o, "last_batch", parse_last_batch);
  require_consistent(s);
  return s;
}

std::vector<uint8_t> LoaderState::to_bytes() const {
  const std::string json = to_json();
  std::string text(kMagic);
  text += hex16(checksum(json.data(), json.size()));
  text += '\n';
  text += json;
  return {text.begin(), text.end()};
}

LoaderState LoaderState::from_bytes(std::span<const uint8_t> bytes) {
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (text.substr(0, kMagic.size()) != kMagic) {
    throw Error(std::string(kWhat) + ": these " + std::to_string(bytes.size()) +
                " bytes are not an imgpack loader state (no '" +
                std::string(kMagic.substr(0, kMagic.size() - 1)) + "' header)");
  }
  const std::string_view rest = text.substr(kMagic.size());
  const std::optional<uint64_t> stored = parse_hex16(rest.substr(0, kHexDigits));
  if (!stored || rest.size() <= kHexDigits || rest[kHexDigits] != '\n') {
    throw Error(std::string(kWhat) + ": damaged (no checksum line)");
  }
  const std::string_view json = rest.substr(kHexDigits + 1);
  if (checksum(json.data(), json.size()) != *stored) {
    throw Error(std::string(kWhat) + ": damaged (the checksum does not match its " +
                std::to_string(json.size()) + " bytes of JSON)");
  }
  return from_json(json);
}

namespace detail {

LoaderState initial_loader_state(const EpochOrder& order, const LoaderOptions& options) {
  const OrderOptions& o = order.options();
  LoaderState s;
  s.world_size = o.world_size;
  s.batch_size = options.batch_size;
  s.dataset_uuid = order.dataset().index().uuid;
  s.generation = order.dataset().generation();
  // Without a split the fold means nothing: keep it out of the comparison.
  s.split = options.selection.split;
  s.fold = s.split.empty() ? 0 : options.selection.fold;
  s.role = options.selection.role;
  s.variants = order.variant_policy();
  const std::span<const int64_t> samples = order.samples();
  s.selected_samples = samples.size();
  s.selection_hash = checksum(samples.data(), samples.size_bytes());
  s.order = o.mode;
  s.seed = o.seed;
  s.window_shards = o.mode == OrderMode::shard_window ? o.window_shards : 0;
  s.rank_policy = o.rank_policy;
  s.sampling = o.sampling;
  s.weights_hash = o.sampling == Sampling::weighted
                       ? checksum(o.weights.data(), o.weights.size() * sizeof(double))
                       : 0;
  s.epoch_positions = order.epoch_size();
  s.global_batch = uint64_t{options.batch_size} * o.world_size;
  s.last_batch = options.last_batch;
  return s;
}

namespace {

// Collects "NAME is A in the state, B here" for each field that differs.
class Mismatches {
 public:
  template <class T, class Show>
  void compare(std::string_view name, const T& saved, const T& here, Show show) {
    if (saved == here) return;
    add(std::string(name) + " is " + show(saved) + " in the state, " + show(here) + " here");
  }
  void add(const std::string& text) { list_ += (list_.empty() ? "" : "; ") + text; }
  bool empty() const { return list_.empty(); }
  const std::string& text() const { return list_; }

 private:
  std::string list_;
};

std::string number(uint64_t value) { return std::to_string(value); }
std::string quoted(const std::string& text) { return "'" + text + "'"; }
template <class Enum, class Name>
auto named(Name name) {
  return [name](Enum value) { return std::string(name(value)); };
}

}  // namespace

void require_same_fingerprint(const LoaderState& saved, const LoaderState& here) {
  // Another generation of the same dataset: its positions count samples
  // that may since have been removed or added, whatever else matches. Not a
  // wrong option (UsageError) but a dataset changed under the checkpoint.
  if (saved.dataset_uuid == here.dataset_uuid && saved.generation != here.generation) {
    throw Error("the loader state is of generation " + std::to_string(saved.generation) +
                " of dataset " + saved.dataset_uuid + " and the dataset is now generation " +
                std::to_string(here.generation) +
                ": reopen the dataset with the data of generation " +
                std::to_string(saved.generation) +
                " to continue its epoch, or start a new epoch (set_epoch) without the state");
  }
  Mismatches m;
  m.compare("the dataset uuid", saved.dataset_uuid, here.dataset_uuid, quoted);
  m.compare("the split", saved.split, here.split, quoted);
  m.compare("the fold", saved.fold, here.fold, [](int32_t f) { return std::to_string(f); });
  m.compare("the role", saved.role, here.role, named<Role>(role_name));
  m.compare("the variant policy", saved.variants, here.variants,
            named<VariantPolicy>(variant_policy_name));
  m.compare("the number of selected samples", saved.selected_samples, here.selected_samples,
            number);
  if (saved.selected_samples == here.selected_samples &&
      saved.selection_hash != here.selection_hash) {
    m.add("the selected samples are other ones (a split re-made under the same name?)");
  }
  m.compare("the order", saved.order, here.order, named<OrderMode>(order_mode_name));
  m.compare("the seed", saved.seed, here.seed, number);
  m.compare("the shard window", saved.window_shards, here.window_shards,
            [](uint32_t w) { return std::to_string(w); });
  m.compare("the rank policy", saved.rank_policy, here.rank_policy,
            named<RankPolicy>(rank_policy_name));
  m.compare("the sampling", saved.sampling, here.sampling, named<Sampling>(sampling_name));
  if (saved.sampling == here.sampling && saved.weights_hash != here.weights_hash) {
    m.add("the sampling weights are other ones");
  }
  m.compare("the epoch length", saved.epoch_positions, here.epoch_positions,
            [](uint64_t n) { return std::to_string(n) + " positions"; });
  m.compare("the last-batch policy", saved.last_batch, here.last_batch,
            named<LastBatch>(last_batch_name));
  if (!m.empty()) throw UsageError("the loader state does not fit this loader: " + m.text());
}

}  // namespace detail

}  // namespace imgpack
