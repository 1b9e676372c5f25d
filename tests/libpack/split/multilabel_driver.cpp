// Test driver for the multi-label property test
// (multilabel_property_test.py): reads split requests and prints the parts
// and their measures, so that hundreds of layouts are checked against the
// paper's algorithm in one process.
//
// usage: multilabel_driver [FILE]   (standard input without FILE)
//
// Every request is four lines:
//   S L K SEED         samples, labels, parts, seed
//   K fractions
//   S * L label values, row-major (0 or 1)
//   S group ids (-1 = none), or the single word "none"
// and gets two lines: S part ids, then "LD ED" as multilabel_quality()
// measures them (17 significant digits); or one line "error: MESSAGE" for a
// request that iterative_stratification() rejects.
#include <cstdint>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "imgpack/error.hpp"
#include "split/multilabel_split.hpp"

namespace {

std::string run(std::size_t columns, const std::vector<uint8_t>& values,
                const std::vector<int32_t>& groups, const std::vector<double>& fractions,
                uint64_t seed) {
  const imgpack::LabelRows labels = imgpack::LabelRows::from_dense(values, columns);
  const std::vector<int32_t> parts =
      imgpack::iterative_stratification(labels, groups, fractions, seed);
  const imgpack::MultilabelQuality q = imgpack::multilabel_quality(labels, parts, fractions);
  std::ostringstream out;
  for (std::size_t i = 0; i < parts.size(); ++i) out << (i ? " " : "") << parts[i];
  out << "\n" << std::setprecision(17) << q.label_distribution << " " << q.examples_distribution;
  return out.str();
}

}  // namespace

int main(int argc, char** argv) {
  std::ifstream file;
  if (argc > 1) {
    file.open(argv[1]);
    if (!file) {
      std::cerr << "multilabel_driver: cannot open " << argv[1] << "\n";
      return 1;
    }
  }
  std::istream& in = argc > 1 ? file : std::cin;
  std::size_t samples = 0, columns = 0, parts = 0;
  uint64_t seed = 0;
  while (in >> samples >> columns >> parts >> seed) {
    std::vector<double> fractions(parts);
    for (double& f : fractions) in >> f;
    std::vector<uint8_t> values(samples * columns);
    for (uint8_t& v : values) {
      int value = 0;
      in >> value;
      v = static_cast<uint8_t>(value);
    }
    std::vector<int32_t> groups;
    std::string word;
    in >> word;
    if (word != "none") {
      groups.resize(samples);
      if (samples > 0) groups[0] = std::stoi(word);
      for (std::size_t i = 1; i < samples; ++i) in >> groups[i];
    }
    if (!in) {
      std::cerr << "multilabel_driver: truncated request\n";
      return 1;
    }
    try {
      std::cout << run(columns, values, groups, fractions, seed) << "\n";
    } catch (const imgpack::Error& e) {
      std::cout << "error: " << e.what() << "\n";
    }
  }
  return 0;
}
