#include "convert_output.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <oneapi/tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "imgpack/checksum.hpp"
#include "imgpack/dataset_index.hpp"
#include "imgpack/error.hpp"
#include "imgpack/files.hpp"
#include "imgpack/format.hpp"
#include "imgpack/h5.hpp"
#include "tbb_tsan.hpp"

namespace imgpack {

namespace fs = std::filesystem;

namespace {

bool is_imgpack_output(const std::string& name) {
  return name == format::kIndexFile || name == format::kReportFile || name == kJournalFile ||
         format::is_shard_file_name(name) || name.ends_with(format::kTmpSuffix);
}

bool is_inside(const fs::path& child, const fs::path& parent) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(child, ec);
  fs::path p = fs::weakly_canonical(parent, ec);
  auto [pi, ci] = std::mismatch(p.begin(), p.end(), c.begin(), c.end());
  return pi == p.end();
}

void remove_file(const fs::path& path) {
  std::error_code ec;
  fs::remove(path, ec);
  if (ec) throw file_error(path, "cannot remove: " + ec.message());
}

// The files in OUT, all of which imgpack must have written.
std::vector<fs::path> list_output(const fs::path& out) {
  std::vector<fs::path> ours;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(out, ec)) {
    std::string name = entry.path().filename().string();
    if (!is_imgpack_output(name)) {
      throw UsageError(out.string() + ": not empty and holds " + name +
                       ", which imgpack did not write; choose an empty or new directory");
    }
    ours.push_back(entry.path());
  }
  if (ec) throw UsageError(out.string() + ": cannot list directory: " + ec.message());
  std::sort(ours.begin(), ours.end());
  return ours;
}

// Reads every record of a shard and compares it with its stored checksum,
// after checking the shard is whole and belongs to this conversion. Returns
// "" or what is wrong with it.
std::string check_kept_shard(const fs::path& path, const ConversionPlan& plan,
                             const JournalShard& entry, KeptShard& kept) {
  try {
    h5::File file = h5::File::open_read(path);
    if (file.read_int_attr("/", format::kAttrFormat) != format::kVersion ||
        file.read_string_attr("/", format::kAttrUuid) != plan.uuid ||
        file.read_int_attr("/", format::kAttrShardIndex) != entry.shard) {
      return "belongs to another conversion";
    }
    const RecordShape& shape = plan.shape;
    const std::vector<uint64_t> dims{entry.records, shape.height, shape.width, shape.channels};
    if (file.shape(format::kImages) != dims) return "/images has the wrong shape";
    h5::Handle images = file.open_dataset(format::kImages);
    h5::Handle dcpl(
        file.check(H5Dget_create_plist(images.get()), "H5Dget_create_plist", format::kImages));
    if (H5Pget_layout(dcpl.get()) != H5D_CONTIGUOUS) return "/images is not contiguous";
    const haddr_t offset = H5Dget_offset(images.get());
    const uint64_t bytes = entry.records * shape.bytes();
    if (offset == HADDR_UNDEF || offset + bytes > file_length(path)) {
      return "is truncated";
    }
    std::vector<uint64_t> sums = file.read<uint64_t>(format::kChecksum);
    kept.samples = file.read<int64_t>(format::kSample);
    kept.variants = file.read<uint16_t>(format::kVariant);
    if (sums.size() != entry.records || kept.samples.size() != entry.records ||
        kept.variants.size() != entry.records) {
      return "has columns of the wrong length";
    }
    images.reset();
    file.close();

    const FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return std::string("cannot open: ") + std::strerror(errno);
    std::atomic<uint64_t> first_bad{entry.records};
    const tsan::ForkJoinBody check_block([&](uint64_t row) {
      // Blocks of 64 rows, read and hashed by whichever thread takes them.
      const uint64_t end = std::min(row + 64, entry.records);
      std::vector<uint8_t> buffer((end - row) * shape.bytes());
      std::size_t done = 0;
      while (done < buffer.size()) {
        ssize_t n = ::pread(fd.get(), buffer.data() + done, buffer.size() - done,
                            static_cast<off_t>(offset + row * shape.bytes() + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          first_bad = std::min<uint64_t>(first_bad, row);
          return;
        }
        done += static_cast<std::size_t>(n);
      }
      for (uint64_t r = row; r < end; ++r) {
        if (checksum(buffer.data() + (r - row) * shape.bytes(), shape.bytes()) != sums[r]) {
          first_bad = std::min<uint64_t>(first_bad, r);
        }
      }
    });
    check_block.fork();
    tbb::parallel_for(uint64_t{0}, entry.records, uint64_t{64}, check_block);
    check_block.join();
    if (first_bad < entry.records) {
      return "record " + std::to_string(first_bad.load()) + " does not match its checksum";
    }
    kept.journal = entry;
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

// The shards of the journal that a resumed run keeps: the longest prefix that
// is whole, matches its checksums and continues the sample numbering.
ResumePoint keep_verified_shards(const ConvertOptions& options, const ConversionPlan& plan,
                                 const JournalState& journal) {
  ResumePoint point;
  const uint32_t variants = options.variants;
  int64_t next_sample = 0;
  std::size_t position = 0;
  for (const JournalShard& entry : journal.shards) {
    const fs::path path = options.out / entry.file;
    KeptShard kept;
    std::string problem;
    if (entry.shard != point.shards.size() || entry.file != format::shard_file_name(entry.shard)) {
      problem = "is out of sequence in the journal";
    } else if (entry.next_position < position || entry.next_position > plan.order.size()) {
      problem = "has an impossible position in the journal";
    } else {
      problem = check_kept_shard(path, plan, entry, kept);
    }
    if (problem.empty()) {
      // Records must be the variants of the next samples, in order.
      for (uint64_t row = 0; row < entry.records && problem.empty(); ++row) {
        if (kept.samples[row] != next_sample + static_cast<int64_t>(row / variants) ||
            kept.variants[row] != row % variants) {
          problem = "does not continue the sample numbering";
        }
      }
      const uint64_t converted = entry.next_position - position - entry.skipped.size();
      if (entry.records != converted * variants) problem = "disagrees with the journal";
    }
    if (!problem.empty()) {
      point.notes.push_back(entry.file + " " + problem + "; it is converted again");
      break;
    }
    next_sample += static_cast<int64_t>(entry.records / variants);
    position = entry.next_position;
    point.next_position = position;
    point.shards.push_back(std::move(kept));
  }
  return point;
}

}  // namespace

bool output_is_complete(const ConvertOptions& options, const ConversionPlan& plan) {
  std::error_code ec;
  if (!fs::exists(options.out / format::kIndexFile, ec)) return false;
  try {
    h5::File index = h5::File::open_read(options.out / format::kIndexFile);
    return index.read_string_attr("/", format::kAttrUuid) == plan.uuid;
  } catch (const Error&) {
    return false;
  }
}

ResumePoint prepare_output(const ConvertOptions& options, const ConversionPlan& plan) {
  const fs::path& out = options.out;
  if (is_inside(out, options.src)) {
    throw UsageError(out.string() + ": the output directory must not be inside SRC (" +
                     options.src.string() + "), which imgpack never modifies");
  }
  std::error_code ec;
  if (fs::exists(out, ec) && !fs::is_directory(out, ec)) {
    throw UsageError(out.string() + ": exists and is not a directory");
  }
  if (!fs::exists(out, ec)) {
    fs::create_directories(out, ec);
    if (ec) throw UsageError(out.string() + ": cannot create directory: " + ec.message());
    return {};
  }
  const std::vector<fs::path> ours = list_output(out);
  if (ours.empty()) return {};

  const bool complete = fs::exists(out / format::kIndexFile, ec);
  std::optional<JournalState> journal;
  std::string journal_problem;
  if (!complete && !options.overwrite) {
    try {
      journal = ConvertJournal::read(out);
    } catch (const Error& e) {
      journal_problem = e.what();
    }
  }

  if (!options.overwrite && !options.resume) {
    if (complete) {
      throw UsageError(out.string() + ": already holds a dataset; pass --overwrite to replace it");
    }
    throw UsageError(out.string() + ": holds an unfinished conversion" +
                     (journal ? " (" + std::to_string(journal->shards.size()) + " shards written)"
                              : std::string()) +
                     "; rerun the same command with --resume to keep its complete shards and "
                     "continue, or with --overwrite to start over");
  }

  ResumePoint point;
  if (options.resume && !options.overwrite) {
    if (complete) {
      throw UsageError(out.string() +
                       ": holds a complete dataset of another conversion (other "
                       "inputs or options); --resume continues only the same conversion, "
                       "--overwrite replaces it");
    }
    if (!journal_problem.empty()) {
      throw UsageError("cannot resume: " + journal_problem + "; pass --overwrite to start over");
    }
    if (journal && journal->dataset_uuid != plan.uuid) {
      throw UsageError(out.string() +
                       ": the unfinished conversion there had other inputs or "
                       "options, so its shards cannot be reused; rerun it with its original "
                       "command and --resume, or pass --overwrite to start over");
    }
    if (journal) point = keep_verified_shards(options, plan, *journal);
  } else {
    // --overwrite: invalidate the old dataset first; without index.h5 no reader accepts it.
    remove_file(out / format::kIndexFile);
    fsync_path(out);
  }

  // Remove everything not kept, the journal last (a crash meanwhile leaves it
  // describing shards that are still there or are redone).
  for (const fs::path& path : ours) {
    const std::string name = path.filename().string();
    bool kept = name == kJournalFile && !point.shards.empty();
    for (const KeptShard& shard : point.shards) kept = kept || name == shard.journal.file;
    if (!kept && name != kJournalFile) remove_file(path);
  }
  if (point.shards.empty()) remove_file(out / kJournalFile);
  fsync_path(out);
  return point;
}

}  // namespace imgpack
