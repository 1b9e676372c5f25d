// The pieces of the `imgpack` Python module (internal to python/src/).
//
// The module is a thin layer over imgpack::reader: it translates types and
// errors, releases the interpreter lock around every wait, and exports batch
// memory zero-copy through DLPack. Each register_* function adds one part to
// the module; module.cpp calls them in order.
#pragma once

#include <cxxabi.h>
#include <pybind11/pybind11.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "imgpack/loader.hpp"

namespace imgpack::python {

namespace py = pybind11;

// A dataset's text (a path, a class name) as a Python str. A dataset stores
// names as their bytes: UTF-8, or the bytes of a name in another encoding (a
// Latin-1 file name) as they are. Bytes that are not UTF-8 become surrogate
// escapes, as os.fsdecode() gives file names, and os.fsencode() gives the
// bytes back; strict decoding would raise UnicodeDecodeError on them.
inline py::str text(std::string_view bytes) {
  PyObject* decoded =
      PyUnicode_DecodeUTF8(bytes.data(), static_cast<Py_ssize_t>(bytes.size()), "surrogateescape");
  if (decoded == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(decoded);
}

// A path given from Python (str, bytes or os.PathLike) as the bytes the file
// system takes, as os.fsencode() gives them (surrogate escapes turned back
// into the bytes they stand for); a TypeError for anything else. Through the
// C API rather than os.fsencode: Python code run here, inside a call, is where
// a daemon thread may be ended at interpreter exit (see restore_thread).
inline std::string file_path(const py::handle& path) {
  PyObject* encoded = nullptr;
  if (PyUnicode_FSConverter(path.ptr(), &encoded) == 0) throw py::error_already_set();
  const py::bytes bytes = py::reinterpret_steal<py::bytes>(encoded);
  return bytes;
}

inline py::list texts(const std::vector<std::string>& values) {
  py::list list(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) list[i] = text(values[i]);
  return list;
}

// Takes the interpreter lock back for a thread that released it. At
// interpreter exit, a daemon thread asking for the lock is ended by
// pthread_exit, whose unwinding passes through pybind11's frames, which free
// the call's arguments (a keyword dict) without the lock: a fatal error. A
// thread that finds the interpreter finalizing waits here instead until the
// process ends, as Python 3.14's daemon threads do. Finalizing can begin
// between the check and the call: the thread's end (pthread_exit's forced
// unwinding) is then caught here, and the thread waits the same way, never
// reaching pybind11's frames.
inline void restore_thread(PyThreadState* state) {
#if PY_VERSION_HEX >= 0x030D0000
  const bool finalizing = Py_IsFinalizing() != 0;
#else
  const bool finalizing = _Py_IsFinalizing() != 0;
#endif
  if (finalizing) {
    for (;;) ::pause();
  }
  try {
    PyEval_RestoreThread(state);
  } catch (abi::__forced_unwind&) {
    // Never rethrown and never left: the process ends around this thread.
    for (;;) ::pause();
  }
}

// Where a call that interpreter exit ends stops unwinding. A daemon thread
// that runs Python code inside a call (an argument's item() or __index__, a
// finalizer the collector starts) can be ended there as well, by the same
// pthread_exit, when the interpreter is finalizing: its unwinding would reach
// pybind11's frames, which free the call's arguments without the lock (a
// fatal error or a crash). Every bound function carries this guard (see
// Class and def_function). Made with the lock held, it finds at its end that
// this thread no longer holds the lock only in that case, and the thread then
// waits here until the process ends.
class ExitGuard {
 public:
  ExitGuard() : state_(PyThreadState_Get()) {}
  ~ExitGuard() {
#if PY_VERSION_HEX >= 0x030D0000
    PyThreadState* const current = PyThreadState_GetUnchecked();
#else
    PyThreadState* const current = _PyThreadState_UncheckedGet();
#endif
    if (current != state_) {
      for (;;) ::pause();
    }
  }
  ExitGuard(const ExitGuard&) = delete;
  ExitGuard& operator=(const ExitGuard&) = delete;

 private:
  PyThreadState* state_;
};

// py::class_ whose functions and properties all carry ExitGuard. The
// definitions it does not guard are not offered.
template <class T, class... Options>
class Class : public py::class_<T, Options...> {
  using Base = py::class_<T, Options...>;

 public:
  using Base::Base;

  template <class... Args>
  Class& def(Args&&... args) {
    Base::def(std::forward<Args>(args)..., py::call_guard<ExitGuard>());
    return *this;
  }

  template <class Getter, class... Extra>
  Class& def_property_readonly(const char* name, const Getter& get, const Extra&... extra) {
    Base::def_property_readonly(
        name, py::cpp_function(py::method_adaptor<T>(get), py::call_guard<ExitGuard>()),
        py::return_value_policy::reference_internal, extra...);
    return *this;
  }

  template <class... Args>
  Class& def_static(Args&&...) = delete;
  template <class... Args>
  Class& def_property(Args&&...) = delete;
  template <class... Args>
  Class& def_property_static(Args&&...) = delete;
  template <class... Args>
  Class& def_readonly(Args&&...) = delete;
  template <class... Args>
  Class& def_readwrite(Args&&...) = delete;
};

// A module-level function that carries ExitGuard.
template <class Function, class... Extra>
void def_function(py::module_& m, const char* name, Function&& function, const Extra&... extra) {
  m.def(name, std::forward<Function>(function), py::call_guard<ExitGuard>(), extra...);
}

// Runs `work()` with the interpreter lock released, takes the lock back and
// returns what `work` returned (or throws what it threw). The lock is taken
// back in plain code, never in a destructor: a daemon thread ended at
// interpreter exit (see restore_thread) unwinds through every frame, and
// reaching a noexcept one (such as py::gil_scoped_release's destructor) is
// std::terminate.
template <class Work>
auto without_gil(Work&& work) -> std::invoke_result_t<Work&> {
  using Result = std::invoke_result_t<Work&>;
  PyThreadState* state = PyEval_SaveThread();
  std::exception_ptr error;
  if constexpr (std::is_void_v<Result>) {
    try {
      work();
    } catch (...) {
      error = std::current_exception();
    }
    restore_thread(state);
    if (error) std::rethrow_exception(error);
  } else {
    std::optional<Result> result;
    try {
      result.emplace(work());
    } catch (...) {
      error = std::current_exception();
    }
    restore_thread(state);
    if (error) std::rethrow_exception(error);
    return std::move(*result);
  }
}

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
// Makes `cls.__new__(cls)` raise TypeError, naming `how_to_make`, while
// `cls(...)` and Python subclasses are made as before (a subclass's own
// __new__ refused alike). pybind11 (2.10, as Debian ships it) lets Python
// make an object by __new__ alone, whose C++ value no constructor has made;
// the first method called on it then reads raw memory, and the interpreter
// dies. Called once per class, after every register_* above.
void refuse_bare_new(const py::handle& cls, const char* how_to_make);

// A Python Batch wrapping a delivered batch.
py::object wrap_batch(const std::shared_ptr<BatchState>& state);

}  // namespace imgpack::python
