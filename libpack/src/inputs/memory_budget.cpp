#include "inputs/memory_budget.hpp"

#include <unistd.h>

#include <cstdint>

#include "imgpack/error.hpp"

namespace imgpack {

namespace {

std::string gib(long double bytes) {
  if (bytes >= 1e18L) return "more than an exabyte";
  const auto tenths = static_cast<uint64_t>(bytes * 10 / (uint64_t{1} << 30));
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " GiB";
}

}  // namespace

void refuse_past_half_memory(const std::string& where, const std::string& what, long double bytes) {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_bytes = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_bytes <= 0) return;
  const long double memory = static_cast<long double>(pages) * static_cast<long double>(page_bytes);
  if (bytes <= memory / 2) return;
  throw UsageError(where + ": " + what + ", would take " + gib(bytes) +
                   ", more than half this machine's " + gib(memory) + " of memory");
}

}  // namespace imgpack
