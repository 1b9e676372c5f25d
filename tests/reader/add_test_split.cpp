// add_test_split DATASET NAME FOLDS: adds a seeded random k-fold split to a
// dataset's index, for tests that need a split before one is made by the CLI.
// Every 10th sample (by a seeded draw) goes to the test set.
#include <cstdio>
#include <string>

#include "imgpack/dataset_index.hpp"
#include "random.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: add_test_split DATASET NAME FOLDS\n");
    return 2;
  }
  try {
    imgpack::DatasetIndex index = imgpack::read_index(argv[1]);
    imgpack::Split split;
    split.name = argv[2];
    split.kind = "random";
    split.folds = std::stoi(argv[3]);
    split.seed = 1;
    split.test_fraction = 0.1;
    split.created = imgpack::utc_timestamp();
    for (std::size_t s = 0; s < index.num_samples(); ++s) {
      imgpack::CounterRng rng(split.seed, s);
      split.assign.push_back(
          rng.below(10) == 0 ? int16_t{-1}
                             : static_cast<int16_t>(rng.below(static_cast<uint64_t>(split.folds))));
    }
    std::erase_if(index.splits, [&](const imgpack::Split& s) { return s.name == split.name; });
    index.splits.push_back(split);
    imgpack::write_index(argv[1], index);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "add_test_split: %s\n", e.what());
    return 1;
  }
}
