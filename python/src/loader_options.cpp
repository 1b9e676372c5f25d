#include "loader_options.hpp"

#include <pybind11/stl.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "imgpack/error.hpp"

namespace imgpack::python {

namespace {

// An integer argument within [low, high]: an int, or what stands for one
// (__index__: numpy's integers, a 0-d integer tensor); bool is not an
// integer here.
template <class T>
T integer(const py::object& value, const char* name, T low = std::numeric_limits<T>::min(),
          T high = std::numeric_limits<T>::max()) {
  const std::string_view type = Py_TYPE(value.ptr())->tp_name;
  auto refuse = [&] {
    return py::type_error(std::string(name) + " must be an int, not " +
                          std::string(py::str(py::type::of(value).attr("__name__"))));
  };
  // An array or tensor stands for an int only with no dimension and an
  // integer dtype (a bool tensor's __index__ gives 0 or 1, a 1-element one's
  // its element).
  const bool array_like = py::hasattr(value, "ndim") && py::hasattr(value, "dtype");
  if (py::isinstance<py::bool_>(value) || type == "numpy.bool_" || type == "numpy.bool" ||
      PyIndex_Check(value.ptr()) == 0 ||
      (array_like &&
       (value.attr("ndim").cast<py::int_>().cast<int64_t>() != 0 ||
        std::string(py::str(value.attr("dtype"))).find("bool") != std::string::npos))) {
    throw refuse();
  }
  const auto number = py::reinterpret_steal<py::int_>(PyNumber_Index(value.ptr()));
  if (!number) {  // a float tensor has __index__, and refuses
    PyErr_Clear();
    throw refuse();
  }
  const bool too_low = number < py::int_(low);
  const bool too_high = number > py::int_(high);
  if (too_low || too_high) {
    // Past the type's largest value, its bound is the one to name.
    const std::string range =
        high != std::numeric_limits<T>::max()
            ? "between " + std::to_string(low) + " and " + std::to_string(high)
        : too_low ? "at least " + std::to_string(low)
                  : "at most " + std::to_string(high);
    throw UsageError(std::string(name) + " must be " + range + ", not " +
                     std::string(py::str(static_cast<const py::object&>(number))));
  }
  return number.cast<T>();
}

// numpy arrays and torch tensors as the lists they hold, for the sequence
// casts (a tensor's elements are tensors, which they do not take).
py::object as_list(const py::object& value) {
  return py::hasattr(value, "tolist") ? value.attr("tolist")() : value;
}

std::string text(const py::object& value, const char* name) {
  if (!py::isinstance<py::str>(value)) {
    throw py::type_error(std::string(name) + " must be a str, not " +
                         std::string(py::str(py::type::of(value).attr("__name__"))));
  }
  return value.cast<std::string>();
}

bool flag(const py::object& value, const char* name) {
  if (!py::isinstance<py::bool_>(value)) {
    throw py::type_error(std::string(name) + " must be True or False");
  }
  return value.cast<bool>();
}

// mean or std: None, or one number per channel.
std::vector<float> per_channel(const py::object& value, const char* name, uint32_t channels) {
  if (value.is_none()) return {};
  std::vector<float> values;
  try {
    values = as_list(value).cast<std::vector<float>>();
  } catch (const py::cast_error&) {
    throw py::type_error(std::string(name) + " must be a sequence of numbers, one per channel");
  }
  if (values.size() != channels) {
    throw UsageError(std::string(name) + " needs " + std::to_string(channels) +
                     " values (one per channel), got " + std::to_string(values.size()));
  }
  return values;
}

// `value` as a real number (a new reference): a float, an int, NumPy's
// scalars (numbers.Real knows them), or what a 0-d array or tensor holds;
// nullptr, with no error set, for anything else (not complex, not an array
// of one element). Python code runs here (numbers.Real's isinstance, item()),
// so the references held meanwhile are raw: a daemon thread that interpreter
// exit ends inside it (see ExitGuard) has nothing to release on its way out.
PyObject* real_number(PyObject* value) {
  if (PyFloat_CheckExact(value) || PyLong_CheckExact(value) || PyBool_Check(value)) {
    Py_INCREF(value);
    return value;
  }
  PyObject* numbers = PyImport_ImportModule("numbers");
  if (numbers == nullptr) throw py::error_already_set();
  PyObject* real = PyObject_GetAttrString(numbers, "Real");
  Py_DECREF(numbers);
  if (real == nullptr) throw py::error_already_set();
  int is_real = PyObject_IsInstance(value, real);
  PyObject* number = value;
  Py_INCREF(number);
  if (is_real == 0 && PyObject_HasAttrString(value, "item") != 0) {
    PyObject* ndim = PyObject_GetAttrString(value, "ndim");
    PyObject* zero = PyLong_FromLong(0);
    const int scalar = ndim == nullptr ? 0 : PyObject_RichCompareBool(zero, ndim, Py_EQ);
    Py_DECREF(zero);
    Py_XDECREF(ndim);
    PyErr_Clear();  // no ndim, or one that does not compare: not a scalar
    if (scalar == 1) {
      Py_DECREF(number);
      number = PyObject_CallMethod(value, "item", nullptr);
      is_real = number == nullptr ? -1 : PyObject_IsInstance(number, real);
    }
  }
  Py_DECREF(real);
  if (is_real == 1) return number;
  Py_XDECREF(number);
  if (is_real < 0) throw py::error_already_set();
  return nullptr;
}

// A probability in [0, 1].
double probability(const py::object& value, const char* name) {
  PyObject* number = real_number(value.ptr());
  if (number == nullptr) {
    throw py::type_error(std::string(name) + " must be a real number, not " +
                         Py_TYPE(value.ptr())->tp_name);
  }
  const double p = PyFloat_AsDouble(number);
  Py_DECREF(number);
  if (p == -1.0 && PyErr_Occurred() != nullptr) PyErr_Clear();  // too large for a double
  if (!(p >= 0 && p <= 1)) {
    throw UsageError(std::string(name) + " must be between 0 and 1, not " +
                     std::string(py::str(value)));
  }
  return p;
}

// crop: None, a side (square window) or (height, width).
void crop_size(const py::object& value, CropOptions& crop) {
  if (value.is_none()) return;
  if (PyIndex_Check(value.ptr()) != 0) {  // an int, or what stands for one
    crop.height = crop.width = integer<uint32_t>(value, "crop", 1);
    return;
  }
  if (!py::isinstance<py::tuple>(value) && !py::isinstance<py::list>(value)) {
    throw py::type_error("crop must be None, an int or (height, width)");
  }
  const py::sequence sides(value);
  if (sides.size() != 2) throw UsageError("crop must be (height, width)");
  crop.height = integer<uint32_t>(sides[0], "crop height", 1);
  crop.width = integer<uint32_t>(sides[1], "crop width", 1);
}

}  // namespace

LoaderOptions loader_options(const LoaderArguments& a, uint32_t channels) {
  LoaderOptions o;
  o.selection.split = a.split.is_none() ? std::string() : text(a.split, "split");
  if (!a.split.is_none() && o.selection.split.empty()) {
    throw UsageError("split='' names no split: give a stored split's name, or None for none");
  }
  o.selection.fold = integer<int32_t>(a.fold, "fold");
  o.selection.role = parse_role(text(a.role, "role"));
  // Said without what they apply to, they would be ignored without a word.
  if (o.selection.split.empty() && o.selection.fold != 0) {
    throw UsageError("fold=" + std::to_string(o.selection.fold) +
                     " needs a split to choose from (split=NAME)");
  }
  o.selection.variants = parse_variant_policy(text(a.variants, "variants"));
  o.batch_size = integer<std::size_t>(a.batch_size, "batch_size", 1);
  o.last_batch = parse_last_batch(text(a.last_batch, "last_batch"));
  if (flag(a.drop_last, "drop_last")) {
    if (o.last_batch == LastBatch::pad) {
      throw UsageError("drop_last=True contradicts last_batch='pad'");
    }
    o.last_batch = LastBatch::drop;
  }
  o.order.mode = parse_order_mode(text(a.order, "order"));
  o.order.seed = integer<uint64_t>(a.seed, "seed");
  o.order.window_shards = integer<uint32_t>(a.window_shards, "window_shards", 1);
  o.order.world_size = integer<uint32_t>(a.world_size, "world_size", 1);
  o.order.rank = integer<uint32_t>(a.rank, "rank");
  if (o.order.rank >= o.order.world_size) {
    throw UsageError("rank " + std::to_string(o.order.rank) + " is not below world_size " +
                     std::to_string(o.order.world_size));
  }
  o.order.rank_policy = parse_rank_policy(text(a.rank_policy, "rank_policy"));
  o.threads = a.threads.is_none() ? 0 : integer<unsigned>(a.threads, "threads", 0, 1024);
  o.prefetch = integer<std::size_t>(a.prefetch, "prefetch", 1, 4096);
  // "cpu", "cuda", "cuda:N", or a torch.device (whose str() is one of those).
  o.device = parse_device(py::str(a.device).cast<std::string>());
  o.pin_host_memory = flag(a.pin_memory, "pin_memory");
  // True/False, or "auto", "on", "off".
  if (py::isinstance<py::bool_>(a.direct_upload)) {
    o.direct_upload = a.direct_upload.cast<bool>() ? DirectUpload::on : DirectUpload::off;
  } else {
    o.direct_upload = parse_direct_upload(text(a.direct_upload, "direct_upload"));
  }
  o.output = parse_output_format(text(a.output, "output"));
  const std::vector<float> mean = per_channel(a.mean, "mean", channels);
  const std::vector<float> stddev = per_channel(a.std, "std", channels);
  if (o.output == OutputFormat::uint8_nhwc && (!mean.empty() || !stddev.empty())) {
    throw UsageError("mean and std normalize float output: pass output='float32' or 'float16'");
  }
  for (std::size_t c = 0; c < mean.size(); ++c) o.mean[c] = mean[c];
  for (std::size_t c = 0; c < stddev.size(); ++c) o.stddev[c] = stddev[c];
  o.order.sampling = parse_sampling(text(a.sampling, "sampling"));
  if (!a.weights.is_none()) {
    try {
      o.order.weights = as_list(a.weights).cast<std::vector<double>>();
    } catch (const py::cast_error&) {
      throw py::type_error("weights must be a sequence of numbers, one per sample");
    }
  }
  if (!a.epoch_length.is_none()) {
    o.order.epoch_length = integer<uint64_t>(a.epoch_length, "epoch_length", 1);
  }
  crop_size(a.crop, o.crop);
  o.crop.mode = parse_crop_mode(text(a.crop_mode, "crop_mode"));
  if (o.crop.mode != CropMode::automatic && o.crop.height == 0) {
    throw UsageError("crop_mode applies to a crop: give crop=(height, width) too");
  }
  o.crop.hflip = probability(a.hflip, "hflip");
  o.crop.vflip = probability(a.vflip, "vflip");
  o.verify_checksums = flag(a.verify_checksums, "verify_checksums");
  o.read_path = parse_read_path(text(a.read_path, "read_path"));
  o.reads_in_flight = integer<unsigned>(a.reads_in_flight, "reads_in_flight", 1, 4096);
  o.direct_io = parse_direct_io(text(a.direct_io, "direct_io"));
  return o;
}

}  // namespace imgpack::python
