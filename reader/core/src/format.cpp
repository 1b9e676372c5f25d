#include "imgpack/format.hpp"

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace imgpack::format {

std::string shard_file_name(std::size_t shard_index) {
  char name[32];
  std::snprintf(name, sizeof name, "shard-%05zu.h5", shard_index);
  return name;
}

bool is_shard_file_name(const std::string& name) {
  constexpr std::string_view prefix = "shard-";
  constexpr std::string_view suffix = ".h5";
  if (name.size() < prefix.size() + 5 + suffix.size()) return false;
  if (!name.starts_with(prefix) || !name.ends_with(suffix)) return false;
  for (std::size_t i = prefix.size(); i < name.size() - suffix.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
  }
  return true;
}

uint64_t shard_file_number(const std::string& name) {
  if (!is_shard_file_name(name)) return 0;
  return std::strtoull(name.c_str() + std::string_view("shard-").size(), nullptr, 10);
}

}  // namespace imgpack::format
