// OUT/report.json: what a conversion did (internal to imgpack::pack).
#pragma once

#include <cstdint>

#include "conversion/conversion_plan.hpp"
#include "imgpack/convert.hpp"

namespace imgpack {

struct ConversionTimings {
  double plan_s = 0;     // scanning and planning
  double convert_s = 0;  // the pipeline
  double total_s = 0;
  unsigned threads = 0;
  uint64_t converted_inputs = 0;  // inputs this run processed (not kept from a resumed one)
};

// Writes OUT/report.json crash-safely: counts, every skipped input with its
// reason (paths relative to SRC), what a resume kept, timings and the
// options, and for a run that failed (`failure` not empty) why. Paths that
// are not valid UTF-8 are written with replacement characters. Throws
// imgpack::Error naming the file if it cannot be written.
void write_report(const ConvertOptions& options, const ConversionPlan& plan,
                  const std::string& created_by, const ConvertResult& result,
                  const ConversionTimings& timings, const std::string& failure = "");

}  // namespace imgpack
