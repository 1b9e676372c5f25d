// The dataset and loaders loader_state_fuzzer restores states into, shared
// with the program that writes its seeds (states those loaders saved).
#pragma once

#include <cstddef>
#include <cstdint>

#include "imgpack/dataset.hpp"
#include "imgpack/loader.hpp"

namespace imgpack::fuzz {

// A rank of a data-parallel job: `world_size` ranks of `batch_size` each.
struct Topology {
  uint32_t world_size = 1;
  uint32_t rank = 0;
  std::size_t batch_size = 4;
};

inline constexpr Topology kTopologies[4] = {{1, 0, 4}, {2, 1, 4}, {3, 2, 5}, {4, 3, 3}};

// 37 samples of one small record each, written once per process into a
// temporary folder (removed at exit) and opened.
const Dataset& loader_state_dataset();

// One reader thread, random order (seed 7), the topology's rank.
LoaderOptions loader_state_options(const Topology& topology);

}  // namespace imgpack::fuzz
