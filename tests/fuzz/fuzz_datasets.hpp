// The small valid datasets that the dataset fuzzer damages.
//
// A fuzz input names one file of one of these datasets (its first byte) and
// replaces that file's contents (the remaining bytes). The datasets are
// written by code, deterministically (fixed uuids, pixels from a seed), so
// the fuzzer and the seed writer always agree on them and a crash input
// reproduces anywhere from the fuzzer binary alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace imgpack::fuzz {

struct DatasetFile {
  std::filesystem::path path;  // inside the directory given to write_fuzz_datasets
  std::vector<uint8_t> contents;
};

// Writes every template dataset below `dir` (one subdirectory each) and
// returns their files in a fixed order: the order the selector byte indexes.
std::vector<DatasetFile> write_fuzz_datasets(const std::filesystem::path& dir);

// The file an input's first byte selects.
inline std::size_t selected_file(uint8_t selector, std::size_t num_files) {
  return selector % num_files;
}

}  // namespace imgpack::fuzz
