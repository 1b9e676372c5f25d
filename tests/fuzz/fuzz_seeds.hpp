// What every seed writer of tests/fuzz shares: a seed is a fuzzer's
// selector byte followed by a file's bytes, written into OUT_DIR.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace imgpack::fuzz {

class SeedDirectory {
 public:
  explicit SeedDirectory(std::filesystem::path dir);
  // Writes OUT_DIR/seed-<count>-<name>: `selector`, then `bytes`. Throws
  // std::runtime_error naming the file if it cannot be written.
  void write(char selector, std::string_view bytes, const std::string& name = "");
  std::size_t count() const { return count_; }

 private:
  std::filesystem::path dir_;
  std::size_t count_ = 0;
};

// The whole main() of a seed writer `program` taking OUT_DIR: creates it,
// lets `write_seeds` fill it, prints how many seeds it holds. Returns 2 for
// a wrong command line, 1 (with the reason on stderr) if anything throws.
int seeds_main(int argc, char** argv, const char* program,
               const std::function<void(SeedDirectory&)>& write_seeds);

}  // namespace imgpack::fuzz
