// Writes the seed corpus of dataset_open_fuzzer into OUT_DIR: one input per
// file of the template datasets, its selector byte followed by the file's
// unmodified contents, so fuzzing starts from valid HDF5 files.
#include <filesystem>
#include <string>

#include "fuzz_datasets.hpp"
#include "fuzz_seeds.hpp"

int main(int argc, char** argv) {
  return imgpack::fuzz::seeds_main(argc, argv, "write_dataset_open_fuzz_seeds", [&](auto& seeds) {
    const std::filesystem::path work = std::filesystem::path(argv[1]) / ".datasets";
    std::filesystem::remove_all(work);
    const auto files = imgpack::fuzz::write_fuzz_datasets(work);
    for (std::size_t i = 0; i < files.size(); ++i) {
      std::string name = files[i].path.string();
      for (char& c : name) c = c == '/' ? '-' : c;
      seeds.write(
          static_cast<char>(i),
          {reinterpret_cast<const char*>(files[i].contents.data()), files[i].contents.size()},
          name);
    }
    std::filesystem::remove_all(work);
  });
}
