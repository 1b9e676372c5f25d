// loader_order DATASET [--split S] [--fold F] [--role R] [--variants V]
//              [--batch N] [--last-batch P] [--order O] [--seed S] [--window W]
//              [--rank R] [--world-size W] [--rank-policy P] [--epochs E,E,...]
//
// Prints, as JSON, the records a C++ Loader with these options delivers,
// batch by batch, for each listed epoch (default 0): what the Python module
// must deliver for the same options (tests/python/test_loader.py).
//   {"epochs": [{"epoch": E, "batches": [[record, ...], ...], "padding": [n, ...]}, ...]}
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "imgpack/dataset.hpp"
#include "imgpack/error.hpp"
#include "imgpack/loader.hpp"

namespace {

std::vector<uint64_t> numbers(const std::string& list) {
  std::vector<uint64_t> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::stoull(item));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || (argc % 2) != 0) {
    std::fprintf(stderr, "usage: loader_order DATASET [--option value]...\n");
    return 2;
  }
  try {
    imgpack::LoaderOptions o;
    o.threads = 3;  // the thread count must not matter
    std::vector<uint64_t> epochs = {0};
    for (int i = 2; i + 1 < argc; i += 2) {
      const std::string key = argv[i];
      const std::string value = argv[i + 1];
      if (key == "--split") {
        o.selection.split = value;
      } else if (key == "--fold") {
        o.selection.fold = std::stoi(value);
      } else if (key == "--role") {
        o.selection.role = imgpack::parse_role(value);
      } else if (key == "--variants") {
        o.selection.variants = imgpack::parse_variant_policy(value);
      } else if (key == "--batch") {
        o.batch_size = std::stoull(value);
      } else if (key == "--last-batch") {
        o.last_batch = imgpack::parse_last_batch(value);
      } else if (key == "--order") {
        o.order.mode = imgpack::parse_order_mode(value);
      } else if (key == "--seed") {
        o.order.seed = std::stoull(value);
      } else if (key == "--window") {
        o.order.window_shards = static_cast<uint32_t>(std::stoul(value));
      } else if (key == "--rank") {
        o.order.rank = static_cast<uint32_t>(std::stoul(value));
      } else if (key == "--world-size") {
        o.order.world_size = static_cast<uint32_t>(std::stoul(value));
      } else if (key == "--rank-policy") {
        o.order.rank_policy = imgpack::parse_rank_policy(value);
      } else if (key == "--epochs") {
        epochs = numbers(value);
      } else {
        std::fprintf(stderr, "loader_order: unknown option %s\n", key.c_str());
        return 2;
      }
    }
    imgpack::Loader loader(imgpack::Dataset::open(argv[1]), o);
    std::string out = "{\"epochs\": [";
    for (std::size_t e = 0; e < epochs.size(); ++e) {
      loader.set_epoch(epochs[e]);
      std::string batches, padding;
      while (std::optional<imgpack::Batch> batch = loader.next()) {
        batches += batches.empty() ? "[" : ", [";
        for (std::size_t i = 0; i < batch->size(); ++i) {
          batches += (i ? ", " : "") + std::to_string(batch->records()[i]);
        }
        batches += "]";
        padding += (padding.empty() ? "" : ", ") + std::to_string(batch->padding());
      }
      out += (e ? ", " : "") + std::string("{\"epoch\": ") + std::to_string(epochs[e]) +
             ", \"batches\": [" + batches + "], \"padding\": [" + padding + "]}";
    }
    out += "]}\n";
    std::fputs(out.c_str(), stdout);
    return 0;
  } catch (const imgpack::UsageError& e) {
    std::fprintf(stderr, "loader_order: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loader_order: %s\n", e.what());
    return 1;
  }
}
