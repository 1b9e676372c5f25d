#include "fuzz_seeds.hpp"

#include <cstdio>
#include <exception>
#include <fstream>
#include <stdexcept>
#include <utility>

namespace imgpack::fuzz {

SeedDirectory::SeedDirectory(std::filesystem::path dir) : dir_(std::move(dir)) {
  std::filesystem::create_directories(dir_);
}

void SeedDirectory::write(char selector, std::string_view bytes, const std::string& name) {
  std::string file = "seed-" + std::to_string(count_++);
  if (!name.empty()) file += "-" + name;
  const std::filesystem::path path = dir_ / file;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(&selector, 1);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

int seeds_main(int argc, char** argv, const char* program,
               const std::function<void(SeedDirectory&)>& write_seeds) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", program);
    return 2;
  }
  try {
    SeedDirectory seeds(argv[1]);
    write_seeds(seeds);
    std::printf("%zu seeds in %s\n", seeds.count(), argv[1]);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 1;
  }
}

}  // namespace imgpack::fuzz
