// Sample ids by their paths, for what takes paths from outside a dataset (a
// removal list, an imported split, an append's scan). A conversion refuses a
// path twice, but an append that replaces a changed input removes its old
// sample and adds a new one with the same path after it: a path names the
// last sample that has it, the one not removed where there is one.
//
// The keys are views of DatasetIndex::sample_path: the index must outlive
// the lookup and keep its paths as they were. Thread-safe for reading.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "imgpack/dataset_index.hpp"

namespace imgpack {

class SampleLookup {
 public:
  explicit SampleLookup(const DatasetIndex& index) {
    ids_.reserve(index.sample_path.size());
    for (std::size_t s = 0; s < index.sample_path.size(); ++s)
      ids_.insert_or_assign(index.sample_path[s], s);
  }

  // The id of the sample at `path`, or std::nullopt for a path the index lacks.
  std::optional<std::size_t> find(std::string_view path) const {
    const auto it = ids_.find(path);
    if (it == ids_.end()) return std::nullopt;
    return it->second;
  }

 private:
  std::unordered_map<std::string_view, std::size_t> ids_;
};

}  // namespace imgpack
