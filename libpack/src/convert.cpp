#include "imgpack/convert.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/parallel_pipeline.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "convert_output.hpp"
#include "imgpack/augment.hpp"
#include "imgpack/checksum.hpp"
#include "imgpack/convert_journal.hpp"
#include "imgpack/dataset_index.hpp"
#include "imgpack/error.hpp"
#include "imgpack/files.hpp"
#include "imgpack/format.hpp"
#include "imgpack/image_probe.hpp"
#include "imgpack/random.hpp"
#include "imgpack/shard_writer.hpp"
#include "imgpack/version.hpp"
#include "tbb_tsan.hpp"

namespace imgpack {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

// Stream ids for CounterRng, so unrelated random choices never share a stream.
constexpr uint64_t kWriteOrderStream = 0x6f72646572;  // "order"

const char* name_of(ResizeMode mode) {
  switch (mode) {
    case ResizeMode::crop:
      return "crop";
    case ResizeMode::stretch:
      return "stretch";
    case ResizeMode::pad:
      return "pad";
  }
  return "?";
}

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

uint64_t parse_unsigned(const std::string& text, const std::string& what) {
  if (text.empty() || !std::all_of(text.begin(), text.end(), ::isdigit) || text.size() > 19) {
    throw UsageError(what + " '" + text + "' is not a non-negative integer");
  }
  return std::stoull(text);
}

// Reads a whole file into `out` (reusing its capacity). Returns "" or the reason.
// Inputs larger than this are refused unread: no image format needs it, and
// reading it whole would hold that much memory per thread.
constexpr uint64_t kMaxInputBytes = uint64_t{2} << 30;

// Reads a file into `out` (reusing its capacity): the whole file, or only its
// first `prefix` bytes when prefix > 0. Returns "" or the reason it failed.
std::string read_file(const fs::path& path, std::vector<uint8_t>& out, std::size_t prefix = 0) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return std::string("cannot open: ") + std::strerror(errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return std::string("cannot stat: ") + std::strerror(errno);
  auto size = static_cast<uint64_t>(st.st_size);
  if (prefix == 0 && size > kMaxInputBytes) {
    return "file is " + std::to_string(size >> 20) + " MiB, larger than any image imgpack reads";
  }
  out.resize(prefix > 0 ? std::min<uint64_t>(size, prefix) : size);
  std::size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::read(fd.get(), out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::string("cannot read: ") + std::strerror(errno);
    if (n == 0) break;  // shrank while reading
    done += static_cast<std::size_t>(n);
  }
  out.resize(done);
  return "";
}

std::string format_uuid(Hash128 h) {
  // RFC 9562 layout with version 8 (custom) and the RFC variant bits.
  uint64_t hi = (h.high & ~0xF000ULL) | 0x8000ULL;
  uint64_t lo = (h.low & ~(3ULL << 62)) | (2ULL << 62);
  char text[40];
  std::snprintf(text, sizeof text, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xFFFF), static_cast<unsigned>(hi & 0xFFFF),
                static_cast<unsigned>(lo >> 48),
                static_cast<unsigned long long>(lo & 0xFFFFFFFFFFFFULL));
  return text;
}

// The dataset uuid is derived from what determines the output, so a rerun of
// the same conversion yields the same bytes.
std::string derive_uuid(const std::string& options_json, const SourceList& list) {
  std::string key = options_json;
  for (const SourceSample& s : list.samples) {
    key += '\n';
    key += s.path;
    key += '\t';
    key += std::to_string(s.file_size);
    key += '\t';
    key += std::to_string(s.label);
    key += '\t';
    key += std::to_string(s.group);
  }
  return format_uuid(hash128(key, 0x696d677061636bULL));
}

// The upright size all readable inputs share, for conversions without --size.
std::pair<uint32_t, uint32_t> common_input_size(const ConvertOptions& options,
                                                const SourceList& list) {
  std::mutex mutex;
  std::map<std::pair<uint32_t, uint32_t>, std::string> sizes;  // size -> first path
  const tsan::ForkJoinBody probe([&](std::size_t i) {
    // Headers sit at the start: read a prefix, and the whole file only when
    // the probe cannot tell the size from it.
    const fs::path path = options.src / list.samples[i].path;
    std::vector<uint8_t> bytes;
    if (!read_file(path, bytes, 256u << 10).empty()) return;
    std::optional<ImageInfo> info = probe_image(bytes);
    if (!info && bytes.size() == (256u << 10) && read_file(path, bytes).empty()) {
      info = probe_image(bytes);
    }
    std::pair<uint32_t, uint32_t> size;
    if (info) {
      size = {info->upright_width(), info->upright_height()};
    } else {
      try {
        DecodeOptions decode;
        decode.max_pixels = options.max_pixels;
        decode.dct_scaling = false;
        DecodedImage image = decode_image(bytes, decode);
        size = {static_cast<uint32_t>(image.pixels.cols), static_cast<uint32_t>(image.pixels.rows)};
      } catch (const DecodeError&) {
        return;  // reported when the pipeline reaches it
      }
    }
    std::lock_guard lock(mutex);
    auto it = sizes.find(size);
    if (it == sizes.end() || list.samples[i].path < it->second) {
      sizes[size] = list.samples[i].path;
    }
  });
  probe.fork();
  tbb::parallel_for(std::size_t{0}, list.samples.size(), probe);
  probe.join();
  if (sizes.empty()) throw UsageError(options.src.string() + ": no readable images found");
  if (sizes.size() > 1) {
    auto a = sizes.begin();
    auto b = std::next(a);
    throw UsageError("input images differ in size (" + a->second + " is " +
                     std::to_string(a->first.first) + "x" + std::to_string(a->first.second) + ", " +
                     b->second + " is " + std::to_string(b->first.first) + "x" +
                     std::to_string(b->first.second) + ", " + std::to_string(sizes.size()) +
                     " sizes in all); pass --size to resize them");
  }
  return sizes.begin()->first;
}

// One input in flight through the pipeline. Slots are reused round-robin, so
// the pipeline allocates nothing per image beyond what decoding needs.
struct Slot {
  std::size_t position = 0;  // in the write order
  std::size_t sample = 0;    // index into SourceList::samples
  std::vector<uint8_t> file_bytes;
  std::vector<uint8_t> pixels;  // variants x record bytes
  std::vector<uint64_t> checksums;
  std::vector<AugmentParams> augment;  // variants 1..K-1
  std::string error;
};

class RecordRenderer {
 public:
  RecordRenderer(const ConvertOptions& options, RecordShape shape, const SourceList& list)
      : options_(options), list_(list) {
    spec_.width = shape.width;
    spec_.height = shape.height;
    spec_.mode = options.resize;
    spec_.fill = options.fill;
    record_bytes_ = shape.bytes();
    if (options.variants > 1) {
      augmenter_.emplace(parse_augment_spec(options.augment), spec_, options.seed);
    }
  }

  // Decodes `bytes` and renders every variant into slot.pixels: variant 0
  // exactly as a conversion without augmentation, the others from the same
  // decode when it is large enough for them.
  void render(Slot& slot) const {
    DecodeOptions decode;
    decode.color = options_.color;
    decode.max_pixels = options_.max_pixels;
    decode.fill = options_.fill;
    decode.dct_scaling = options_.dct_scaling;
    std::optional<ImageInfo> info = probe_image(slot.file_bytes);
    if (info) {
      cv::Size need = spec_.required_source_size(info->upright_width(), info->upright_height());
      decode.min_width = static_cast<uint32_t>(need.width);
      decode.min_height = static_cast<uint32_t>(need.height);
    }
    DecodedImage image = decode_image(slot.file_bytes, decode);
    resize_into(image.pixels, spec_, slot.pixels.data());
    slot.checksums[0] = checksum(slot.pixels.data(), record_bytes_);
    if (augmenter_) render_augmented(slot, info, image, decode);
  }

 private:
  void render_augmented(Slot& slot, const std::optional<ImageInfo>& info, const DecodedImage& image,
                        DecodeOptions& decode) const {
    const cv::Size full = info ? cv::Size(static_cast<int>(info->upright_width()),
                                          static_cast<int>(info->upright_height()))
                               : image.pixels.size();
    // Keyed by the path, not the write position, which shifts when inputs are skipped.
    const uint64_t key = augment_sample_key(list_.samples[slot.sample].path);
    slot.augment.resize(options_.variants - 1);
    for (uint32_t v = 1; v < options_.variants; ++v) {
      slot.augment[v - 1] = augmenter_->sample(key, v, full);
    }
    // A zoomed-in variant may need more pixels than the clean image's reduced
    // JPEG decode has: decode again rather than upsample.
    const cv::Size need = augmenter_->required_source_size(slot.augment, full);
    DecodedImage larger;
    const cv::Mat* source = &image.pixels;
    if (source->cols < need.width || source->rows < need.height) {
      decode.min_width = static_cast<uint32_t>(need.width);
      decode.min_height = static_cast<uint32_t>(need.height);
      larger = decode_image(slot.file_bytes, decode);
      source = &larger.pixels;
    }
    cv::Mat reduced;
    const cv::Mat& from = augmenter_->reduce_source(*source, slot.augment, reduced);
    for (uint32_t v = 1; v < options_.variants; ++v) {
      uint8_t* out = slot.pixels.data() + v * record_bytes_;
      augmenter_->render(from, slot.augment[v - 1], out);
      slot.checksums[v] = checksum(out, record_bytes_);
    }
  }

  const ConvertOptions& options_;
  const SourceList& list_;
  ResizeSpec spec_;
  std::optional<Augmenter> augmenter_;
  std::size_t record_bytes_ = 0;
};

}  // namespace

void ConvertOptions::validate() const {
  if (size &&
      (size->first == 0 || size->second == 0 || size->first > 65535 || size->second > 65535)) {
    throw UsageError("--size must be between 1 and 65535 pixels per side");
  }
  if (variants < 1 || variants > 1024) throw UsageError("--variants must be between 1 and 1024");
  parse_augment_spec(augment);  // throws UsageError naming the key
  if (variants > 1 && augment.empty()) {
    throw UsageError("--variants " + std::to_string(variants) +
                     " needs --augment SPEC to say how the augmented variants differ from the "
                     "clean image (variant 0)");
  }
  if (variants == 1 && !augment.empty()) {
    throw UsageError("--augment needs --variants K with K >= 2 (variant 0 is the clean image)");
  }
  if (shard_size < 4096) throw UsageError("--shard-size must be at least 4K");
  if (max_pixels == 0) throw UsageError("--max-pixels must be positive");
  if (threads > 4096) throw UsageError("--threads must be at most 4096");
  for (std::size_t i = 0; i < splits.size(); ++i) {
    check_split_name(splits[i].name);
    splits[i].spec.validate();
    for (std::size_t j = 0; j < i; ++j) {
      if (splits[j].name == splits[i].name) {
        throw UsageError("--split names '" + splits[i].name + "' twice");
      }
    }
  }
}

std::string ConvertOptions::to_json() const {
  json j;
  if (size) {
    j["width"] = size->first;
    j["height"] = size->second;
  } else {
    j["width"] = nullptr;
    j["height"] = nullptr;
  }
  j["resize"] = name_of(resize);
  j["fill"] = {fill[0], fill[1], fill[2]};
  j["color"] = color == ColorMode::rgb ? "rgb" : "gray";
  j["labels"] = scan.labels == LabelSource::dirs  ? "dirs"
                : scan.labels == LabelSource::csv ? "csv"
                                                  : "none";
  j["group_regex"] = scan.group_regex;
  if (scan.csv) {
    j["csv"] = {{"file", scan.csv->file.string()},
                {"path", scan.csv->path},
                {"label", scan.csv->label},
                {"group", scan.csv->group}};
  }
  j["variants"] = variants;
  j["augment"] = augment;
  j["seed"] = seed;
  j["order"] = order == WriteOrder::shuffle ? "shuffle" : "sorted";
  j["shard_size"] = shard_size;
  j["max_pixels"] = max_pixels;
  j["dct_scaling"] = dct_scaling;
  if (!splits.empty()) {
    json names = json::array();
    for (const NamedSplitSpec& split : splits) {
      const SplitSpec& spec = split.spec;
      names.push_back(split.name + ":" + split_kind_name(spec.kind) + ":" +
                      (spec.kind == SplitKind::holdout ? json(spec.val_fraction).dump()
                                                       : std::to_string(spec.folds)));
    }
    j["splits"] = std::move(names);
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::pair<uint32_t, uint32_t> parse_image_size(const std::string& text) {
  auto x = text.find_first_of("xX");
  uint64_t w, h;
  if (x == std::string::npos) {
    w = h = parse_unsigned(text, "--size");
  } else {
    w = parse_unsigned(text.substr(0, x), "--size width");
    h = parse_unsigned(text.substr(x + 1), "--size height");
  }
  if (w == 0 || h == 0 || w > 65535 || h > 65535) {
    throw UsageError("--size '" + text + "': each side must be between 1 and 65535");
  }
  return {static_cast<uint32_t>(w), static_cast<uint32_t>(h)};
}

uint64_t parse_byte_size(const std::string& text) {
  if (text.empty()) throw UsageError("empty byte size");
  std::string digits = text;
  uint64_t unit = 1;
  char last = static_cast<char>(std::toupper(static_cast<unsigned char>(text.back())));
  if (last == 'B' && text.size() > 1) {
    digits.pop_back();
    last = static_cast<char>(std::toupper(static_cast<unsigned char>(digits.back())));
  }
  if (last == 'K' || last == 'M' || last == 'G' || last == 'T') {
    digits.pop_back();
    unit = last == 'K'   ? 1ULL << 10
           : last == 'M' ? 1ULL << 20
           : last == 'G' ? 1ULL << 30
                         : 1ULL << 40;
  }
  uint64_t value = parse_unsigned(digits, "byte size '" + text + "':");
  if (value > UINT64_MAX / unit) throw UsageError("byte size '" + text + "' is too large");
  return value * unit;
}

std::array<uint8_t, 3> parse_fill(const std::string& text) {
  std::vector<uint64_t> values;
  std::size_t start = 0;
  while (true) {
    auto comma = text.find(',', start);
    values.push_back(parse_unsigned(text.substr(start, comma - start), "--fill"));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (values.size() != 1 && values.size() != 3) {
    throw UsageError("--fill '" + text + "' must be one value or three (R,G,B)");
  }
  for (uint64_t v : values) {
    if (v > 255) throw UsageError("--fill '" + text + "': values must be 0..255");
  }
  if (values.size() == 1) values = {values[0], values[0], values[0]};
  return {static_cast<uint8_t>(values[0]), static_cast<uint8_t>(values[1]),
          static_cast<uint8_t>(values[2])};
}

namespace {

// Scans the inputs and fixes everything the output depends on: the samples,
// the record shape, the options JSON, the dataset uuid and the write order.
ConversionPlan make_plan(const ConvertOptions& options, tbb::task_arena& arena) {
  ConversionPlan plan;
  plan.list = options.scan.csv ? scan_csv(options.src, options.scan)
                               : scan_directory(options.src, options.scan);
  const SourceList& list = plan.list;
  if (list.samples.empty()) {
    throw UsageError(options.src.string() +
                     ": no images found (extensions: jpg, jpeg, png, bmp, "
                     "tif, tiff, webp, pnm, pam" +
                     std::string(options.scan.labels == LabelSource::dirs
                                     ? "; with --labels dirs they must be inside class folders"
                                     : "") +
                     ")");
  }
  if (!options.splits.empty()) {
    // Requests the scanned samples cannot meet (a group kind without groups,
    // more folds than groups) fail now, before anything is written.
    std::vector<int32_t> labels, groups;
    for (const SourceSample& sample : list.samples) {
      labels.push_back(sample.label);
      groups.push_back(sample.group);
    }
    for (const NamedSplitSpec& split : options.splits) {
      try {
        compute_split(labels, groups, split.spec);
      } catch (const UsageError& e) {
        throw UsageError("--split " + split.name + ": " + e.what());
      }
    }
  }
  std::pair<uint32_t, uint32_t> size;
  if (options.size) {
    size = *options.size;
  } else {
    arena.execute([&] { size = common_input_size(options, list); });
  }
  plan.shape = {size.second, size.first, options.color == ColorMode::gray ? 1u : 3u};
  plan.options_json = options.to_json();
  plan.uuid = derive_uuid(plan.options_json, list);
  plan.order.resize(list.samples.size());
  for (std::size_t i = 0; i < plan.order.size(); ++i) plan.order[i] = i;
  if (options.order == WriteOrder::shuffle) {
    CounterRng(options.seed, kWriteOrderStream).shuffle(std::span(plan.order));
  }
  return plan;
}

DatasetIndex empty_index(const ConvertOptions& options, const ConversionPlan& plan) {
  DatasetIndex index;
  index.format_version = format::kVersion;
  index.uuid = plan.uuid;
  index.height = plan.shape.height;
  index.width = plan.shape.width;
  index.channels = plan.shape.channels;
  index.variants = options.variants;
  index.color = options.color == ColorMode::rgb ? "rgb" : "gray";
  index.convert_options = plan.options_json;
  index.created_by = std::string("imgpack ") + kVersionString;
  index.class_names = plan.list.class_names;
  index.group_names = plan.list.group_names;
  return index;
}

void add_sample(DatasetIndex& index, const SourceSample& sample) {
  index.sample_path.push_back(sample.path);
  index.sample_label.push_back(sample.label);
  index.sample_group.push_back(sample.group);
}

}  // namespace

ConvertResult convert(const ConvertOptions& options, const ProgressFn& progress) {
  const Clock::time_point start = Clock::now();
  options.validate();
  const unsigned threads =
      options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  tbb::task_arena arena(static_cast<int>(threads));

  const ConversionPlan plan = make_plan(options, arena);
  const double plan_s = seconds_since(start);
  const SourceList& list = plan.list;
  const RecordShape& shape = plan.shape;
  const uint32_t variants = options.variants;

  ConvertResult result;
  result.width = shape.width;
  result.height = shape.height;
  result.channels = shape.channels;
  result.uuid = plan.uuid;
  if (options.resume && !options.overwrite && output_is_complete(options, plan)) {
    // A run stopped between writing index.h5 and removing its journal.
    if (fs::exists(options.out / kJournalFile)) {
      fs::remove(options.out / kJournalFile);
      fsync_path(options.out);
    }
    DatasetIndex done = read_index(options.out);
    result.records = done.num_records();
    result.samples = done.num_samples();
    result.shards = done.num_shards();
    result.already_complete = true;
    result.seconds = seconds_since(start);
    return result;
  }
  const ResumePoint resume = prepare_output(options, plan);

  // Everything before the resume point is restored from the kept shards and
  // the journal, exactly as the interrupted run had it.
  DatasetIndex index = empty_index(options, plan);
  result.skipped = list.skipped;
  result.ignored_files = list.ignored_files;
  result.resume_notes = resume.notes;
  result.resumed_shards = resume.shards.size();
  result.resumed_inputs = resume.next_position;
  JournalState kept_journal{plan.uuid, plan.order.size(), {}};
  std::map<uint64_t, std::string> skipped_before;
  for (const KeptShard& shard : resume.shards) {
    kept_journal.shards.push_back(shard.journal);
    for (const auto& [position, reason] : shard.journal.skipped) skipped_before[position] = reason;
  }
  for (uint64_t position = 0; position < resume.next_position; ++position) {
    const SourceSample& sample = list.samples[plan.order[position]];
    auto skipped = skipped_before.find(position);
    if (skipped != skipped_before.end()) {
      result.skipped.push_back({sample.path, skipped->second});
    } else {
      add_sample(index, sample);
    }
  }
  DatasetWriter writer(options.out, shape, options.shard_size, plan.uuid,
                       uint64_t{variants} * (plan.order.size() - resume.next_position), variants);
  for (const KeptShard& shard : resume.shards) {
    writer.adopt(shard.journal.file, shard.samples, shard.variants);
  }
  ConvertJournal journal = resume.shards.empty()
                               ? ConvertJournal::create(options.out, plan.uuid, plan.order.size())
                               : ConvertJournal::rewrite(options.out, kept_journal);
  // Skipped inputs since the last journal line, and a line per committed shard.
  std::vector<std::pair<uint64_t, std::string>> skipped_since;
  auto journal_new_shards = [&](uint64_t next_position) {
    while (kept_journal.shards.size() < writer.committed_shards()) {
      const auto k = static_cast<uint32_t>(kept_journal.shards.size());
      JournalShard line{k, writer.shard_file(k), writer.shard_records(k), next_position,
                        std::move(skipped_since)};
      skipped_since.clear();
      journal.append(line);
      kept_journal.shards.push_back(std::move(line));
    }
  };

  const std::size_t tokens = std::size_t{threads} * 4;
  std::vector<Slot> slots(tokens);
  for (Slot& slot : slots) {
    slot.pixels.resize(variants * shape.bytes());
    slot.checksums.resize(variants);
  }
  RecordRenderer renderer(options, shape, list);

  const Clock::time_point convert_start = Clock::now();
  ConvertProgress status;
  status.total = plan.order.size();
  status.done = resume.next_position;
  status.skipped = skipped_before.size();
  std::size_t next = resume.next_position;
  tsan::ForkJoin region;  // joins before the slots go, also on an exception
  arena.execute([&] {
    const auto filters =
        tbb::make_filter<void, Slot*>(tbb::filter_mode::serial_in_order,
                                      [&](tbb::flow_control& fc) -> Slot* {
                                        tsan::TaskScope task(region);
                                        tsan::Handoff serial(&next);
                                        if (next == plan.order.size()) {
                                          fc.stop();
                                          return nullptr;
                                        }
                                        Slot* slot = &slots[next % tokens];
                                        tsan::Handoff item(slot);
                                        slot->position = next;
                                        slot->sample = plan.order[next++];
                                        return slot;
                                      }) &
        tbb::make_filter<Slot*, Slot*>(
            tbb::filter_mode::parallel,
            [&](Slot* slot) {
              tsan::TaskScope task(region);
              tsan::Handoff item(slot);
              slot->error =
                  read_file(options.src / list.samples[slot->sample].path, slot->file_bytes);
              if (slot->error.empty()) {
                try {
                  renderer.render(*slot);
                } catch (const DecodeError& e) {
                  slot->error = e.what();
                } catch (const cv::Exception& e) {
                  slot->error = std::string("image processing failed: ") + e.what();
                }
              }
              return slot;
            }) &
        tbb::make_filter<Slot*, void>(tbb::filter_mode::serial_in_order, [&](Slot* slot) {
          tsan::TaskScope task(region);
          tsan::Handoff serial(&status);
          tsan::Handoff item(slot);
          const SourceSample& sample = list.samples[slot->sample];
          if (!slot->error.empty()) {
            if (options.on_error == OnError::fail) {
              throw Error((options.src / sample.path).string() + ": " + slot->error +
                          " (--on-error fail)");
            }
            result.skipped.push_back({sample.path, slot->error});
            skipped_since.emplace_back(slot->position, slot->error);
            writer.forgo(variants);
            ++status.skipped;
          } else {
            auto id = static_cast<int64_t>(index.num_samples());
            add_sample(index, sample);
            for (uint32_t v = 0; v < variants; ++v) {
              writer.add(slot->pixels.data() + v * shape.bytes(), slot->checksums[v], sample.label,
                         id, static_cast<uint16_t>(v));
            }
            journal_new_shards(slot->position + 1);
          }
          ++status.done;
          if (progress) {
            status.elapsed_s = seconds_since(convert_start);
            progress(status);
          }
        });
    region.fork(filters);  // after make_filter has copied the bodies the workers call
    tbb::parallel_pipeline(tokens, filters);
  });
  region.join();
  const double convert_s = seconds_since(convert_start);

  if (index.num_samples() == 0) {
    throw Error(options.src.string() + ": none of the " + std::to_string(plan.order.size()) +
                " images could be converted (the first: " + result.skipped.back().path + ": " +
                result.skipped.back().reason + ")");
  }
  writer.finish(index);
  journal_new_shards(plan.order.size());
  for (const NamedSplitSpec& split : options.splits) {
    Split stored = make_split(index, split.name, split.spec, "", &result.split_warnings);
    store_split(index, std::move(stored), false);
  }

  result.records = index.num_records();
  result.samples = index.num_samples();
  result.shards = index.num_shards();

  json report;
  report["imgpack_format"] = format::kVersion;
  report["created_by"] = index.created_by;
  report["dataset_uuid"] = plan.uuid;
  report["source"] = options.src.string();
  report["records"] = result.records;
  report["samples"] = result.samples;
  report["shards"] = result.shards;
  report["ignored_files"] = result.ignored_files;
  json skipped = json::array();
  for (const SkippedInput& s : result.skipped) {
    skipped.push_back({{"path", s.path}, {"reason", s.reason}});
  }
  report["skipped"] = std::move(skipped);
  if (options.resume) {
    report["resumed"] = {{"shards_kept", result.resumed_shards},
                         {"inputs_kept", result.resumed_inputs},
                         {"notes", result.resume_notes}};
  }
  report["threads"] = threads;
  report["timings"] = {
      {"plan_s", plan_s}, {"convert_s", convert_s}, {"total_s", seconds_since(start)}};
  const uint64_t converted_now = plan.order.size() - resume.next_position;
  report["images_per_s"] = convert_s > 0 ? static_cast<double>(converted_now) / convert_s : 0.0;
  report["options"] = json::parse(plan.options_json);
  // Paths need not be valid UTF-8; replace bad bytes rather than fail.
  write_file_atomic(options.out / format::kReportFile,
                    report.dump(2, ' ', false, json::error_handler_t::replace) + "\n");

  // index.h5 last: its presence is what makes the dataset complete.
  write_index(options.out, index);
  crash_point("index-committed");
  journal.remove();
  result.seconds = seconds_since(start);
  return result;
}

}  // namespace imgpack
