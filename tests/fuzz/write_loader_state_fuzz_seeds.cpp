// Writes the seed corpus of loader_state_fuzzer into OUT_DIR: the states a
// loader of each topology saved before every batch of an epoch and after
// its last, as bytes and as JSON, each behind the selector byte that
// restores it on every topology.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "imgpack/loader.hpp"
#include "loader_state_fixture.hpp"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  try {
    const fs::path out_dir = argv[1];
    fs::create_directories(out_dir);
    std::size_t written = 0;
    const auto write = [&](char selector, const std::string& bytes) {
      const fs::path path = out_dir / ("seed-" + std::to_string(written++));
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(&selector, 1);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      if (!out) throw std::runtime_error("cannot write " + path.string());
    };
    for (const imgpack::fuzz::Topology& saved : imgpack::fuzz::kTopologies) {
      imgpack::Loader loader(imgpack::fuzz::loader_state_dataset(),
                             imgpack::fuzz::loader_state_options(saved));
      loader.set_epoch(2);
      std::vector<imgpack::LoaderState> states{loader.state()};
      while (loader.next()) states.push_back(loader.state());
      for (const imgpack::LoaderState& state : states) {
        const std::vector<uint8_t> bytes = state.to_bytes();
        for (char topology = 0; topology < 4; ++topology) {
          write(static_cast<char>(topology << 1),
                std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
          write(static_cast<char>((topology << 1) | 1), state.to_json());
        }
      }
    }
    std::printf("%zu seeds in %s\n", written, out_dir.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "write_loader_state_fuzz_seeds: %s\n", e.what());
    return 1;
  }
}
