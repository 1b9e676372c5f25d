// The checks of LoaderOptions against each other and the dataset (see
// require_valid_options() in loader_core.hpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>

#include "imgpack/error.hpp"
#include "loader_core.hpp"
#include "record_window.hpp"

namespace imgpack::detail {

void require_valid_options(const Dataset& dataset, const LoaderOptions& o) {
  if (!dataset) throw UsageError("Loader: the dataset is not open");
  if (o.batch_size == 0) throw UsageError("batch size must be at least 1");
  // A state names the global batch, batch_size x world_size, in 64 bits.
  if (o.order.world_size > 0 &&
      o.batch_size > std::numeric_limits<uint64_t>::max() / o.order.world_size) {
    throw UsageError("batch size " + std::to_string(o.batch_size) + " x world size " +
                     std::to_string(o.order.world_size) + " does not fit in 64 bits");
  }
  if (o.threads > 1024) throw UsageError("threads must be between 0 (automatic) and 1024");
  if (o.prefetch == 0 || o.prefetch > 4096) {
    throw UsageError("prefetch must be between 1 and 4096 slots");
  }
  if (o.reads_in_flight == 0 || o.reads_in_flight > 4096) {
    throw UsageError("reads in flight must be between 1 and 4096 per reader thread");
  }
  const bool direct = o.direct_upload == DirectUpload::on;
  if (direct && !o.crop.is_identity()) {
    throw UsageError(
        "direct upload copies whole records to the device; crop and flip need the reader "
        "threads' copy (turn one of them off)");
  }
  if (direct && o.read_path == ReadPath::read) {
    throw UsageError(
        "direct upload copies from the shard mappings; ReadPath::read reads with pread (turn "
        "one of them off)");
  }
  if (direct && !o.device.is_cuda()) {
    throw UsageError("direct upload needs a CUDA device (it copies from the mapping to the GPU)");
  }
  check_crop(o.crop, {dataset.height(), dataset.width(), dataset.channels()});
  if (o.output != OutputFormat::uint8_nhwc) {
    for (uint32_t c = 0; c < dataset.channels(); ++c) {
      if (!(o.stddev[c] > 0) || !std::isfinite(o.stddev[c])) {
        throw UsageError("stddev must be positive and finite for every channel, got " +
                         std::to_string(o.stddev[c]) + " for channel " + std::to_string(c));
      }
      if (!std::isfinite(o.mean[c])) {
        throw UsageError("mean must be finite for every channel, got " + std::to_string(o.mean[c]) +
                         " for channel " + std::to_string(c) +
                         " (it would make every pixel of the batch NaN)");
      }
      // The values furthest from the mean, pixel 0 or 255, must be numbers
      // of the output format: a tiny stddev made them inf.
      const double mean = o.mean[c];
      const double furthest = std::max(std::fabs(mean), std::fabs(1.0 - mean)) / o.stddev[c];
      const bool half = o.output == OutputFormat::float16_nchw;
      const double largest = half ? 65504.0 : std::numeric_limits<float>::max();
      if (!(furthest <= largest)) {
        std::ostringstream text;
        text << "stddev " << o.stddev[c] << " with mean " << o.mean[c] << " for channel " << c
             << " gives values up to " << furthest << ", past the largest "
             << (half ? "float16" : "float32") << " (" << largest << "): the batch would hold inf";
        throw UsageError(text.str());
      }
    }
  }
}

}  // namespace imgpack::detail
