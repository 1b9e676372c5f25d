// growth_helper remove DATASET SAMPLE...
//   Commits the next generation of DATASET's index with those samples removed
//   (test::remove_samples(): what a removal writes), for the Python tests of
//   generations until the CLI makes them.
// growth_helper state-v1 < STATE > STATE_V1
//   Rewrites loader state bytes (Loader.state()) of generation 0 as version 1
//   wrote them, before states named a generation: the Python tests check that
//   such a checkpoint still restores.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "imgpack/checksum.hpp"
#include "synthetic_dataset.hpp"

namespace {

constexpr std::string_view kHeader = "imgpack loader state\n";

void replace_once(std::string& text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  if (at == std::string::npos) throw std::runtime_error("no " + from + " in the state");
  text.replace(at, from.size(), to);
}

int state_v1() {
  const std::string bytes{std::istreambuf_iterator<char>(std::cin), {}};
  const std::size_t json_at = kHeader.size() + 17;  // 16 hex digits and a newline
  if (bytes.compare(0, kHeader.size(), kHeader) != 0 || bytes.size() < json_at) {
    throw std::runtime_error("not loader state bytes");
  }
  std::string json = bytes.substr(json_at);
  replace_once(json, R"("imgpack_loader_state":2)", R"("imgpack_loader_state":1)");
  replace_once(json, R"("generation":0,)", "");
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(imgpack::checksum(json.data(), json.size())));
  std::cout << kHeader << hex << '\n' << json;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (args.size() >= 2 && args[0] == "remove") {
      std::vector<int64_t> samples;
      for (std::size_t i = 2; i < args.size(); ++i) samples.push_back(std::stoll(args[i]));
      imgpack::test::remove_samples(args[1], samples);
      return 0;
    }
    if (args.size() == 1 && args[0] == "state-v1") return state_v1();
    std::fprintf(stderr, "usage: growth_helper remove DATASET SAMPLE... | state-v1\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "growth_helper: %s\n", e.what());
    return 1;
  }
}
