// Writes the seed corpus of loader_state_fuzzer into OUT_DIR: the states a
// loader of each topology saved before every batch of an epoch and after
// its last, as bytes and as JSON, each behind the selector byte that
// restores it on every topology.
#include <vector>

#include "fuzz_seeds.hpp"
#include "imgpack/loader.hpp"
#include "loader_state_fixture.hpp"

int main(int argc, char** argv) {
  return imgpack::fuzz::seeds_main(argc, argv, "write_loader_state_fuzz_seeds", [](auto& seeds) {
    for (const imgpack::fuzz::Topology& saved : imgpack::fuzz::kTopologies) {
      imgpack::Loader loader(imgpack::fuzz::loader_state_dataset(),
                             imgpack::fuzz::loader_state_options(saved));
      loader.set_epoch(2);
      std::vector<imgpack::LoaderState> states{loader.state()};
      while (loader.next()) states.push_back(loader.state());
      for (const imgpack::LoaderState& state : states) {
        const std::vector<uint8_t> bytes = state.to_bytes();
        for (char topology = 0; topology < 4; ++topology) {
          seeds.write(static_cast<char>(topology << 1),
                      {reinterpret_cast<const char*>(bytes.data()), bytes.size()});
          seeds.write(static_cast<char>((topology << 1) | 1), state.to_json());
        }
      }
    }
  });
}
