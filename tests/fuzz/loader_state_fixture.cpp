#include "loader_state_fixture.hpp"

#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "synthetic_dataset.hpp"

namespace imgpack::fuzz {

namespace {

std::filesystem::path g_root;

void remove_root() {
  std::error_code ec;
  std::filesystem::remove_all(g_root, ec);
}

}  // namespace

const Dataset& loader_state_dataset() {
  static const Dataset dataset = [] {
    char pattern[] = "/tmp/imgpack-loader-state-fuzz-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    g_root = pattern;
    std::atexit(remove_root);
    test::SyntheticOptions options;
    options.samples = 37;
    test::write_synthetic_dataset(g_root / "data", options);
    return Dataset::open(g_root / "data");
  }();
  return dataset;
}

LoaderOptions loader_state_options(const Topology& topology) {
  LoaderOptions options;
  options.batch_size = topology.batch_size;
  options.threads = 1;
  options.prefetch = 2;
  options.order.seed = 7;
  options.order.world_size = topology.world_size;
  options.order.rank = topology.rank;
  return options;
}

}  // namespace imgpack::fuzz
