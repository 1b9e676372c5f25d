// Progress on stderr: a one-line bar with count, rate and ETA on a terminal,
// a plain line every few seconds otherwise (batch logs), nothing when quiet.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace imgpack::cli {

class Progress {
 public:
  Progress(std::string label, bool quiet);
  // Reports `done` of `total`; cheap to call often (it throttles itself).
  void update(uint64_t done, uint64_t total, uint64_t skipped);
  // Prints the final state and ends the line.
  void finish(uint64_t done, uint64_t total, uint64_t skipped);

 private:
  void print(uint64_t done, uint64_t total, uint64_t skipped, bool final);

  std::string label_;
  bool quiet_;
  bool terminal_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_;
  bool printed_ = false;
};

}  // namespace imgpack::cli
