// The `imgpack` Python module: datasets, loaders and zero-copy batches over
// imgpack::reader. See python/imgpack.pyi for the API in one place.
#include <pybind11/pybind11.h>

#include <cstring>
#include <exception>
#include <set>
#include <string>

#include "bindings.hpp"
#include "imgpack/error.hpp"
#include "imgpack/upload_backend.hpp"
#include "imgpack/version.hpp"

namespace imgpack::python {

void register_errors(py::module_& m) {
  // Static: the translator below outlives this call.
  static py::exception<Error> error_type(m, "Error", PyExc_RuntimeError);
  error_type.doc() =
      "A failure imgpack reports: a damaged or foreign dataset file, a failed read or device "
      "call.\n\nThe message names what failed and where (the file, the record), e.g. "
      "'data/shard-00003.h5: row 17 (sample 212) does not match its stored checksum'. A "
      "subclass of RuntimeError. Invalid arguments raise ValueError instead.";
  // pybind11 takes a void(*)(std::exception_ptr): the parameter stays by value.
  // NOLINTNEXTLINE(performance-unnecessary-value-param)
  py::register_exception_translator([](std::exception_ptr thrown) {
    // A message naming a file whose name is not UTF-8 keeps those bytes as
    // \xNN: PyErr_SetString would lose the whole message to a decode error.
    const auto raise = [](PyObject* type, const char* what) {
      PyObject* message = PyUnicode_DecodeUTF8(what, static_cast<Py_ssize_t>(std::strlen(what)),
                                               "backslashreplace");
      if (message == nullptr) return;  // the decode's own error is raised
      PyErr_SetObject(type, message);
      Py_DECREF(message);
    };
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const UsageError& e) {
      raise(PyExc_ValueError, e.what());
    } catch (const Error& e) {
      raise(error_type.ptr(), e.what());
    }
  });
}

namespace {

// The __new__ functions guard_new() installed, to tell them from a
// subclass's own.
std::set<PyObject*>& guards() {
  static std::set<PyObject*> installed;
  return installed;
}

// Points `type`'s __new__ at a function that refuses to make a `type` (a
// subclass it makes with `make`, as a subclass's own __new__ asks through
// super()), and its slot, which type(...) calls, at `make`: only an
// explicit TYPE.__new__(TYPE) meets the refusal.
void guard_new(const py::handle& cls, newfunc make, const std::string& how_to_make) {
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  const std::string message = std::string(type->tp_name) + ".__new__() alone makes no usable " +
                              type->tp_name + ": " + how_to_make;
  const py::cpp_function refuse(
      [type, make, message](const py::handle& subtype, const py::args& args,
                            const py::kwargs& kwargs) -> py::object {
        if (subtype.ptr() == reinterpret_cast<PyObject*>(type)) throw py::type_error(message);
        PyObject* made =
            make(reinterpret_cast<PyTypeObject*>(subtype.ptr()), args.ptr(), kwargs.ptr());
        if (made == nullptr) throw py::error_already_set();
        return py::reinterpret_steal<py::object>(made);
      },
      py::call_guard<ExitGuard>());
  guards().insert(refuse.ptr());
  refuse.inc_ref();  // kept for the interpreter's life, as the class is
  // Setting __new__ points the type's slot at it; type(...) reads the slot,
  // so it is put back.
  py::setattr(cls, "__new__", py::staticmethod(refuse));
  type->tp_new = make;
}

// Whether `subclass.__new__` is a guard: the first class after it in its
// MRO that defines __new__ defines one of guards(), not its own.
bool inherits_a_guard(const py::handle& subclass) {
  const py::tuple mro = subclass.attr("__mro__");
  for (std::size_t i = 1; i < mro.size(); ++i) {
    const py::dict defined = mro[i].attr("__dict__");
    if (!defined.contains("__new__")) continue;
    const py::object found = defined["__new__"];
    return py::isinstance(found, py::module_::import("builtins").attr("staticmethod")) &&
           guards().count(found.attr("__func__").ptr()) > 0;
  }
  return false;
}

}  // namespace

void refuse_bare_new(const py::handle& cls, const char* how_to_make) {
  const newfunc make = reinterpret_cast<PyTypeObject*>(cls.ptr())->tp_new;
  const std::string how(how_to_make);
  guard_new(cls, make, how);
  // Each Python subclass alike, as it is made, unless it (or a class
  // between) has a __new__ of its own, which its author answers for. Its
  // __init__ is checked by pybind11's metaclass when it is called. Then the
  // next __init_subclass__ in its MRO, as every one should call.
  const py::object base = py::reinterpret_borrow<py::object>(cls);
  const py::cpp_function guard_subclass(
      [make, how, base](const py::handle& subclass, const py::kwargs& kwargs) {
        if (!py::dict(subclass.attr("__dict__")).contains("__new__") &&
            inherits_a_guard(subclass)) {
          guard_new(subclass, make, how);
        }
        py::module_::import("builtins")
            .attr("super")(base, subclass)
            .attr("__init_subclass__")(**kwargs);
      },
      py::call_guard<ExitGuard>());
  py::setattr(cls, "__init_subclass__",
              py::module_::import("builtins").attr("classmethod")(guard_subclass));
}

}  // namespace imgpack::python

PYBIND11_MODULE(imgpack, m) {
  namespace py = pybind11;
  using namespace imgpack::python;
  m.doc() =
      "imgpack: read packed image datasets into PyTorch (or any DLPack consumer) at memory "
      "speed.\n\n"
      "    import imgpack, torch\n"
      "    loader = imgpack.Loader(\"dataset/\", split=\"cv5\", fold=0, role=\"train\",\n"
      "                            batch_size=256, output=\"float32\",\n"
      "                            mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))\n"
      "    for epoch in range(10):\n"
      "        loader.set_epoch(epoch)\n"
      "        for batch in loader:\n"
      "            images = torch.from_dlpack(batch.images)   # zero-copy view of the slot\n"
      "            labels = torch.from_dlpack(batch.labels).long()\n"
      "\n"
      "Dataset opens and validates a dataset; Loader delivers its batches in a seeded order "
      "computed by the same C++ reader as imgpack's tools; Batch.images and Batch.labels are "
      "Arrays exported with DLPack. Loader.state_dict() and load_state_dict() checkpoint the "
      "position within an epoch beside a model's state (torch.save, json.dumps), as torchdata "
      "and Lightning expect. Errors are imgpack.Error (a RuntimeError naming the file) and "
      "ValueError for invalid arguments.";
  m.attr("__version__") = imgpack::kVersionString;
  // The modules the bindings call into, imported now rather than at first
  // use: a fork while another thread imports one leaves the child waiting on
  // that module's import lock forever.
  for (const char* used : {"numbers", "json", "base64", "os"}) py::module_::import(used);
  register_errors(m);
  register_dataset(m);
  register_batch(m);
  register_loader(m);
  refuse_bare_new(m.attr("Dataset"), "open a dataset with imgpack.Dataset(path)");
  refuse_bare_new(m.attr("Loader"), "make a loader with imgpack.Loader(dataset, ...)");
  refuse_bare_new(m.attr("Split"), "Dataset.splits[name] gives a split");
  refuse_bare_new(m.attr("Pairs"), "Loader.pairs(convert) gives one");
  refuse_bare_new(m.attr("Batch"), "a Loader delivers batches");
  refuse_bare_new(m.attr("Array"), "a Batch's images and labels are arrays");
  refuse_bare_new(m.attr("_EpochIterator"), "iter(loader) gives one");
  refuse_bare_new(m.attr("_PairsIterator"), "iter(pairs) gives one");
  def_function(
      m, "cuda_device_count", &imgpack::cuda_device_count,
      "Number of CUDA devices a Loader can deliver to: 0 when imgpack was built without CUDA "
      "or no device or driver is present.");
  def_function(m, "built_with_cuda", &imgpack::built_with_cuda,
               "True when this build of imgpack contains the CUDA upload path.");
}
