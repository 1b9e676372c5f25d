// Loader keyword arguments -> imgpack::LoaderOptions (internal to python/src/).
#pragma once

#include <pybind11/pybind11.h>

#include "imgpack/loader.hpp"

namespace imgpack::python {

namespace py = pybind11;

// Loader's keyword arguments, as Python passed them.
struct LoaderArguments {
  py::object split, fold, role, variants, batch_size, last_batch, drop_last, order, seed,
      window_shards, rank, world_size, rank_policy, threads, prefetch, device, pin_memory,
      direct_upload, output, mean, std, crop, crop_mode, hflip, vflip, sampling, weights,
      epoch_length, verify_checksums, read_path, reads_in_flight, direct_io;
};

// The options they stand for, given the dataset's channel count. Throws
// imgpack::UsageError (ValueError in Python) naming the argument for values
// of the right type out of range, and py::type_error for the wrong type.
LoaderOptions loader_options(const LoaderArguments& a, uint32_t channels);

}  // namespace imgpack::python
