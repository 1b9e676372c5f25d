// A multi-label split at scale, timed: iterative_stratification() (the
// greedy pass and the local search `imgpack split` runs for a dataset with
// multi-label targets) over a synthetic layout, the labels drawn with
// Zipf-like popularity (label l with weight 1 / (l + 1)) as tag vocabularies
// are. Prints one JSON line per layout: seconds (median, min, max over the
// rounds), the partition's LD and ED, and a hash of the parts (the same on
// every machine for the same layout and seed).
//
// usage: imgpack_multilabel_split SAMPLES LABELS PER_SAMPLE [GROUPS] [--rounds N] [--folds K]
//   PER_SAMPLE  label draws per sample (repeats merge, so a few have fewer)
//   GROUPS      samples dealt at random into this many groups (0: none)
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "split/multilabel_split.hpp"

namespace {

struct Layout {
  imgpack::LabelRows labels;
  std::vector<int32_t> groups;
};

Layout make_layout(std::size_t samples, std::size_t columns, int per_sample, std::size_t groups) {
  std::mt19937_64 rng(7);
  std::vector<double> weight(columns);
  for (std::size_t l = 0; l < columns; ++l) weight[l] = 1.0 / (static_cast<double>(l) + 1.0);
  std::discrete_distribution<int32_t> pick(weight.begin(), weight.end());
  Layout layout;
  layout.labels.columns = columns;
  std::vector<int32_t> row;
  for (std::size_t s = 0; s < samples; ++s) {
    row.clear();
    for (int k = 0; k < per_sample; ++k) row.push_back(pick(rng));
    std::sort(row.begin(), row.end());
    row.erase(std::unique(row.begin(), row.end()), row.end());
    layout.labels.label.insert(layout.labels.label.end(), row.begin(), row.end());
    layout.labels.end_row();
  }
  if (groups > 0) {
    layout.groups.resize(samples);
    for (int32_t& g : layout.groups) g = static_cast<int32_t>(rng() % groups);
  }
  return layout;
}

int usage() {
  std::fprintf(stderr,
               "usage: imgpack_multilabel_split SAMPLES LABELS PER_SAMPLE [GROUPS] [--rounds N] "
               "[--folds K]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<long> numbers;
  int rounds = 3;
  int folds = 5;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--folds") == 0 && i + 1 < argc) {
      folds = std::atoi(argv[++i]);
    } else {
      char* end = nullptr;
      const long value = std::strtol(argv[i], &end, 10);
      if (*end != '\0' || value < 0) return usage();
      numbers.push_back(value);
    }
  }
  if (numbers.size() < 3 || numbers.size() > 4 || rounds < 1 || folds < 2) return usage();
  const auto samples = static_cast<std::size_t>(numbers[0]);
  const auto columns = static_cast<std::size_t>(numbers[1]);
  const auto per_sample = static_cast<int>(numbers[2]);
  const auto groups = numbers.size() > 3 ? static_cast<std::size_t>(numbers[3]) : 0;
  if (samples == 0 || columns == 0) return usage();

  const Layout layout = make_layout(samples, columns, per_sample, groups);
  const std::vector<double> fractions(static_cast<std::size_t>(folds), 1.0 / folds);
  std::vector<double> seconds;
  std::vector<int32_t> parts;
  for (int r = 0; r < rounds; ++r) {
    const auto start = std::chrono::steady_clock::now();
    parts = imgpack::iterative_stratification(layout.labels, layout.groups, fractions, 1);
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  const imgpack::MultilabelQuality quality =
      imgpack::multilabel_quality(layout.labels, parts, fractions);
  uint64_t hash = 1469598103934665603ULL;  // FNV-1a over the part ids
  for (int32_t p : parts) hash = (hash ^ static_cast<uint32_t>(p)) * 1099511628211ULL;
  std::sort(seconds.begin(), seconds.end());
  std::printf(
      "{\"samples\": %zu, \"labels\": %zu, \"per_sample\": %d, \"groups\": %zu, \"folds\": %d, "
      "\"seconds\": %.4f, \"min\": %.4f, \"max\": %.4f, \"ld\": %.17g, \"ed\": %.17g, "
      "\"parts_hash\": \"%016llx\"}\n",
      samples, columns, per_sample, groups, folds, seconds[seconds.size() / 2], seconds.front(),
      seconds.back(), quality.label_distribution, quality.examples_distribution,
      static_cast<unsigned long long>(hash));
  return 0;
}
