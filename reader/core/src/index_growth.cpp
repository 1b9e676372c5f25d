#include "index_growth.hpp"

#include <algorithm>
#include <string>

#include "files.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"

namespace imgpack {

std::size_t DatasetIndex::num_removed() const {
  return static_cast<std::size_t>(std::count_if(sample_removed.begin(), sample_removed.end(),
                                                [](uint8_t r) { return r != 0; }));
}

namespace detail {

namespace {

// Attribute `name` of the root, a count in [1, limit]; 0 where absent.
uint64_t read_count_attr(const h5::File& file, const char* name, int64_t limit) {
  if (!file.has_attr("/", name)) return 0;
  const int64_t value = file.read_int_attr("/", name);
  if (value < 1 || value > limit) {
    throw file_error(file.path(), std::string("attribute ") + name + " = " + std::to_string(value) +
                                      " is out of range");
  }
  return static_cast<uint64_t>(value);
}

}  // namespace

GrowthAttributes read_growth_attributes(const h5::File& file, DatasetIndex& index) {
  index.generation = read_count_attr(file, format::kAttrGeneration, int64_t{1} << 40);
  index.history.resize(index.generation == 0 ? 0 : index.generation + 1);
  GrowthAttributes attributes;
  attributes.removed = read_count_attr(file, format::kAttrRemoved, int64_t{1} << 40);
  const uint64_t stamps = read_count_attr(file, format::kAttrFileStamps, 1);
  attributes.file_stamps = stamps == 1;
  return attributes;
}

void read_growth_tables(const TableReader& tables, const GrowthAttributes& attributes,
                        DatasetIndex& index) {
  const h5::File& file = tables.file();
  const std::size_t samples = index.sample_label.size();
  auto check_length = [&](const char* table, std::size_t length, std::size_t expected) {
    if (length != expected) {
      throw file_error(file.path(), std::string(table) + " holds " + std::to_string(length) +
                                        " entries, expected " + std::to_string(expected));
    }
  };
  if (index.generation > 0) {
    const std::size_t rows = index.history.size();
    const Column<uint64_t> generation = tables.numbers<uint64_t>(format::kHistoryGeneration);
    const std::vector<std::string> date = tables.strings(format::kHistoryDate);
    const std::vector<std::string> change = tables.strings(format::kHistoryChange);
    const Column<uint64_t> added = tables.numbers<uint64_t>(format::kHistoryAdded);
    const Column<uint64_t> removed = tables.numbers<uint64_t>(format::kHistoryRemoved);
    check_length(format::kHistoryGeneration, generation.size(), rows);
    check_length(format::kHistoryDate, date.size(), rows);
    check_length(format::kHistoryChange, change.size(), rows);
    check_length(format::kHistoryAdded, added.size(), rows);
    check_length(format::kHistoryRemoved, removed.size(), rows);
    for (std::size_t g = 0; g < rows; ++g) {
      index.history[g] = {generation[g], date[g], change[g], added[g], removed[g]};
    }
  }
  if (attributes.removed > 0) {
    index.sample_removed = tables.numbers<uint8_t>(format::kSamplesRemoved);
    check_length(format::kSamplesRemoved, index.sample_removed.size(), samples);
    if (index.num_removed() != attributes.removed) {
      throw file_error(file.path(), std::string(format::kSamplesRemoved) + " marks " +
                                        std::to_string(index.num_removed()) +
                                        " samples, the root says " +
                                        std::to_string(attributes.removed));
    }
  }
  if (attributes.file_stamps) {
    index.sample_size = tables.numbers<uint64_t>(format::kSamplesSize);
    index.sample_mtime = tables.numbers<int64_t>(format::kSamplesMtime);
    check_length(format::kSamplesSize, index.sample_size.size(), samples);
    check_length(format::kSamplesMtime, index.sample_mtime.size(), samples);
  }
}

void write_growth_attributes(h5::File& file, const DatasetIndex& index) {
  if (index.generation > 0) {
    file.write_attr("/", format::kAttrGeneration, static_cast<int64_t>(index.generation));
  }
  if (const std::size_t removed = index.num_removed()) {
    file.write_attr("/", format::kAttrRemoved, static_cast<int64_t>(removed));
  }
  if (index.has_file_stamps()) file.write_attr("/", format::kAttrFileStamps, int64_t{1});
}

void write_growth_tables(TableWriter& tables, const DatasetIndex& index) {
  if (index.generation > 0) {
    std::vector<uint64_t> generation;
    std::vector<std::string> date;
    std::vector<std::string> change;
    std::vector<uint64_t> added;
    std::vector<uint64_t> removed;
    for (const IndexChange& row : index.history) {
      generation.push_back(row.generation);
      date.push_back(row.date);
      change.push_back(row.change);
      added.push_back(row.added);
      removed.push_back(row.removed);
    }
    tables.numbers(format::kHistoryGeneration, generation);
    tables.strings(format::kHistoryDate, date);
    tables.strings(format::kHistoryChange, change);
    tables.numbers(format::kHistoryAdded, added);
    tables.numbers(format::kHistoryRemoved, removed);
  }
  if (index.num_removed() > 0) tables.numbers(format::kSamplesRemoved, index.sample_removed);
  if (index.has_file_stamps()) {
    tables.numbers(format::kSamplesSize, index.sample_size);
    tables.numbers(format::kSamplesMtime, index.sample_mtime);
  }
}

void validate_growth(const DatasetIndex& index, const std::string& where) {
  auto fail = [&](const std::string& problem) { throw Error(where + ": " + problem); };
  const std::size_t samples = index.num_samples();
  if (index.generation > 0 && index.history.size() != index.generation + 1) {
    fail("generation " + std::to_string(index.generation) + " with " +
         std::to_string(index.history.size()) + " rows of /history, expected one per generation");
  }
  if (index.generation == 0 && !index.history.empty()) fail("/history without a generation");
  for (std::size_t g = 0; g < index.history.size(); ++g) {
    if (index.history[g].generation != g) {
      fail("/history row " + std::to_string(g) + " is generation " +
           std::to_string(index.history[g].generation));
    }
  }
  if (!index.sample_removed.empty() && index.sample_removed.size() != samples) {
    fail("/samples/removed holds " + std::to_string(index.sample_removed.size()) + " entries for " +
         std::to_string(samples) + " samples");
  }
  for (const uint8_t removed : index.sample_removed) {
    if (removed > 1) fail("/samples/removed holds " + std::to_string(removed) + ", not 0 or 1");
  }
  if (index.has_file_stamps() &&
      (index.sample_size.size() != samples || index.sample_mtime.size() != samples)) {
    fail("/samples/size and /samples/mtime do not hold one entry per sample");
  }
}

}  // namespace detail
}  // namespace imgpack
