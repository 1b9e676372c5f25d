// The pieces of the `imgpack` Python module (internal to python/src/).
//
// The module is a thin layer over imgpack::reader: it translates types and
// errors, releases the interpreter lock around every wait, and exports batch
// memory zero-copy through DLPack. Each register_* function adds one part to
// the module; module.cpp calls them in order.
#pragma once

#include <pybind11/pybind11.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "imgpack/loader.hpp"

namespace imgpack::python {

namespace py = pybind11;

// One delivered batch and everything that reads it: the Python Batch, each
// Array taken from it and each DLPack capsule or tensor made from those hold
// a reference. The slot returns to the loader's ring when the last one dies
// (on whatever thread drops it), after the work queued on every CUDA stream
// that a tensor was exported to. Touches no Python object: a consumer may
// free its tensor without the interpreter lock.
struct BatchState {
  BatchState(Batch delivered, std::shared_ptr<std::atomic<std::size_t>> live_count);
  ~BatchState();
  BatchState(const BatchState&) = delete;
  BatchState& operator=(const BatchState&) = delete;

  // Records that work on `stream` (a cudaStream_t) reads the batch; called
  // with the interpreter lock held, never after the last reference is gone.
  void add_consumer_stream(void* stream);

  Batch batch;
  std::vector<void*> consumer_streams;
  std::shared_ptr<std::atomic<std::size_t>> live;  // the loader's count of live batches
};

// "cpu" or "cuda:N", as PyTorch names devices.
std::string device_name(const Device& device);

// imgpack.Error, and the translation of imgpack::Error (-> imgpack.Error) and
// imgpack::UsageError (-> ValueError).
void register_errors(py::module_& m);
void register_dataset(py::module_& m);
// imgpack.Array and imgpack.Batch.
void register_batch(py::module_& m);
// imgpack.Loader, its epoch iterator and imgpack.Pairs.
void register_loader(py::module_& m);

// A Python Batch wrapping a delivered batch.
py::object wrap_batch(const std::shared_ptr<BatchState>& state);

}  // namespace imgpack::python
