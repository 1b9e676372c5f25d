// Writes the seed corpus of dataset_open_fuzzer into OUT_DIR: one input per
// file of the template datasets, its selector byte followed by the file's
// unmodified contents, so fuzzing starts from valid HDF5 files.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

#include "fuzz_datasets.hpp"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  try {
    const fs::path out_dir = argv[1];
    const fs::path work = out_dir / ".datasets";
    fs::create_directories(out_dir);
    fs::remove_all(work);
    const auto files = imgpack::fuzz::write_fuzz_datasets(work);
    for (std::size_t i = 0; i < files.size(); ++i) {
      std::string name = "seed-" + files[i].path.string();
      for (char& c : name) c = c == '/' ? '-' : c;
      std::ofstream out(out_dir / name, std::ios::binary | std::ios::trunc);
      const char selector = static_cast<char>(i);
      out.write(&selector, 1);
      out.write(reinterpret_cast<const char*>(files[i].contents.data()),
                static_cast<std::streamsize>(files[i].contents.size()));
      if (!out) throw std::runtime_error("cannot write " + (out_dir / name).string());
    }
    fs::remove_all(work);
    std::printf("%zu seeds in %s\n", files.size(), out_dir.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "write_fuzz_seeds: %s\n", e.what());
    return 1;
  }
}
