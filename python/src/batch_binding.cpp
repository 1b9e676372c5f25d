// imgpack.Batch and imgpack.Array: a delivered batch, and zero-copy views of
// its images, masks, labels, sample and record ids exported through DLPack.
//
// Every view holds the batch's BatchState; so does every DLPack capsule and
// every tensor a consumer makes from one (the state rides in the
// DLManagedTensor's manager_ctx). The slot returns to the ring when the last
// of them dies, so no live tensor ever sees the slot overwritten.
#include <dlpack/dlpack.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "bindings.hpp"
#include "cuda_device.hpp"

namespace imgpack::python {

using namespace pybind11::literals;

BatchState::BatchState(Batch delivered, std::shared_ptr<std::atomic<std::size_t>> live_count)
    : batch(std::move(delivered)), live(std::move(live_count)) {
  live->fetch_add(1, std::memory_order_relaxed);
}

BatchState::~BatchState() {
  if (!consumer_streams.empty()) {
    try {
      join_streams_into_last(batch.device(), consumer_streams.data(), consumer_streams.size());
      const CurrentDeviceGuard keep(batch.device());
      batch.recycle_after(consumer_streams.back());
    } catch (...) {
      // A failing device cannot order anything any more; the slot goes back as it is.
    }
  }
  batch.release();
  live->fetch_sub(1, std::memory_order_relaxed);
}

void BatchState::add_consumer_stream(void* stream) {
  if (std::find(consumer_streams.begin(), consumer_streams.end(), stream) ==
      consumer_streams.end()) {
    consumer_streams.push_back(stream);
  }
}

std::string device_name(const Device& device) {
  return device.is_cuda() ? "cuda:" + std::to_string(device.index) : "cpu";
}

namespace {

// One array of a batch: where it is, its element type and shape.
struct ArrayView {
  std::shared_ptr<BatchState> state;
  const void* data = nullptr;
  DLDataType dtype{};
  const char* numpy_type = "uint8";
  int ndim = 1;
  std::array<int64_t, 4> shape{};
  Device device;  // the memory's: the images' device, or the host for the id columns

  std::size_t elements() const {
    std::size_t n = 1;
    for (int i = 0; i < ndim; ++i)
      n *= static_cast<std::size_t>(shape[static_cast<std::size_t>(i)]);
    return n;
  }
  std::size_t nbytes() const { return elements() * dtype.bits / 8; }
  std::array<int64_t, 4> strides() const {  // compact, row-major, in elements
    std::array<int64_t, 4> s{};
    int64_t step = 1;
    for (int i = ndim - 1; i >= 0; --i) {
      s[static_cast<std::size_t>(i)] = step;
      step *= shape[static_cast<std::size_t>(i)];
    }
    return s;
  }
  DLDevice dl_device() const {
    return device.is_cuda() ? DLDevice{kDLCUDA, device.index} : DLDevice{kDLCPU, 0};
  }
};

ArrayView images_view(const std::shared_ptr<BatchState>& state) {
  const Batch& b = state->batch;
  ArrayView v;
  v.state = state;
  v.data = b.data();
  v.device = b.device();
  v.ndim = 4;
  const auto n = static_cast<int64_t>(b.size());
  const int64_t h = b.height(), w = b.width(), c = b.channels();
  switch (b.format()) {
    case OutputFormat::uint8_nhwc:
      v.dtype = {kDLUInt, 8, 1};
      v.numpy_type = "uint8";
      v.shape = {n, h, w, c};
      break;
    case OutputFormat::float32_nchw:
      v.dtype = {kDLFloat, 32, 1};
      v.numpy_type = "float32";
      v.shape = {n, c, h, w};
      break;
    case OutputFormat::float16_nchw:
      v.dtype = {kDLFloat, 16, 1};
      v.numpy_type = "float16";
      v.shape = {n, c, h, w};
      break;
  }
  return v;
}

// The masks: uint8 [N, H, W] where the images are, in the same slot.
ArrayView masks_view(const std::shared_ptr<BatchState>& state) {
  const Batch& b = state->batch;
  ArrayView v;
  v.state = state;
  v.data = b.masks();
  v.device = b.device();
  v.ndim = 3;
  v.dtype = {kDLUInt, 8, 1};
  v.numpy_type = "uint8";
  v.shape = {static_cast<int64_t>(b.size()), b.height(), b.width(), 0};
  return v;
}

ArrayView column_view(const std::shared_ptr<BatchState>& state, const void* data, DLDataType dtype,
                      const char* numpy_type) {
  ArrayView v;
  v.state = state;
  v.data = data;
  v.dtype = dtype;
  v.numpy_type = numpy_type;
  v.ndim = 1;
  v.shape = {static_cast<int64_t>(state->batch.size()), 0, 0, 0};
  v.device = Device::host();
  return v;
}

// A host table of `columns` entries per image: [N, columns].
ArrayView rows_view(const std::shared_ptr<BatchState>& state, const void* data, std::size_t columns,
                    DLDataType dtype, const char* numpy_type) {
  ArrayView v = column_view(state, data, dtype, numpy_type);
  v.ndim = 2;
  v.shape[1] = static_cast<int64_t>(columns);
  return v;
}

// A host array of the batch's boxes: `rows` x the rest of `dims` (at most 3 in all).
ArrayView box_view(const std::shared_ptr<BatchState>& state, const void* data,
                   std::initializer_list<int64_t> dims, DLDataType dtype, const char* numpy_type) {
  ArrayView v = column_view(state, data, dtype, numpy_type);
  v.ndim = static_cast<int>(dims.size());
  std::copy(dims.begin(), dims.end(), v.shape.begin());
  return v;
}

// --- DLPack ---------------------------------------------------------------------------------

// A DLManagedTensor and what it points to; its manager_ctx is this object.
struct ExportedTensor {
  DLManagedTensor managed{};
  std::shared_ptr<BatchState> owner;
  std::array<int64_t, 4> shape{};
  std::array<int64_t, 4> strides{};
};

void delete_exported(DLManagedTensor* self) {
  delete static_cast<ExportedTensor*>(self->manager_ctx);
}

constexpr const char* kCapsuleName = "dltensor";

// A capsule that no consumer took still owns its tensor. A consumer renames
// the capsule "used_dltensor" and calls the deleter itself when done.
void destroy_capsule(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, kCapsuleName) == 0) return;
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
  PyErr_Restore(type, value, traceback);
}

// The consumer's stream of a __dlpack__ call on CUDA memory, by the protocol:
// None: the legacy default stream; 1: legacy default; 2: per-thread default;
// -1: the consumer synchronizes itself (std::nullopt); other: a cudaStream_t.
std::optional<void*> consumer_stream(const py::object& stream) {
  if (stream.is_none()) return nullptr;  // CUDA's stream 0: the legacy default stream
  const auto value = stream.cast<long long>();
  if (value == -1) return std::nullopt;
  if (value == 0) {
    throw py::value_error(
        "__dlpack__: stream 0 is ambiguous in the DLPack protocol; pass 1 for the legacy "
        "default stream, 2 for the per-thread default stream, or the stream's handle");
  }
  if (value < -1) throw py::value_error("__dlpack__: invalid stream " + std::to_string(value));
  // The protocol passes the stream handle as an integer.
  // NOLINTNEXTLINE(performance-no-int-to-ptr)
  return reinterpret_cast<void*>(
      static_cast<intptr_t>(value));  // NOLINT(performance-no-int-to-ptr)
}

py::object export_dlpack(const ArrayView& v, const py::object& stream, const py::object& dl_device,
                         const py::object& copy) {
  const DLDevice here = v.dl_device();
  if (!dl_device.is_none()) {
    const auto wanted = dl_device.cast<std::pair<int, int>>();
    if (wanted.first != static_cast<int>(here.device_type) || wanted.second != here.device_id) {
      throw py::buffer_error("__dlpack__: the array lives on " + device_name(v.device) +
                             " and imgpack exports views only (dl_device differs)");
    }
  }
  if (!copy.is_none() && copy.cast<bool>()) {
    throw py::buffer_error("__dlpack__: imgpack exports views of the batch only (copy=True)");
  }
  if (v.device.is_cuda()) {
    if (std::optional<void*> s = consumer_stream(stream)) {
      const CurrentDeviceGuard keep(v.device);
      v.state->batch.wait_on_stream(*s);  // the consumer's work runs after the upload
      v.state->add_consumer_stream(*s);   // the slot is reused only after that work
    }
  }
  auto exported = std::make_unique<ExportedTensor>();
  exported->owner = v.state;
  exported->shape = v.shape;
  exported->strides = v.strides();
  DLTensor& t = exported->managed.dl_tensor;
  t.data = const_cast<void*>(v.data);  // DLPack has no const; consumers may write, as with any view
  t.device = here;
  t.ndim = v.ndim;
  t.dtype = v.dtype;
  t.shape = exported->shape.data();
  t.strides = exported->strides.data();
  t.byte_offset = 0;
  exported->managed.manager_ctx = exported.get();
  exported->managed.deleter = &delete_exported;
  // Owned by the capsule from here on, then by the consumer that takes it.
  ExportedTensor* owned = exported.release();
  PyObject* capsule = PyCapsule_New(&owned->managed, kCapsuleName, &destroy_capsule);
  if (capsule == nullptr) {
    delete owned;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(capsule);
}

py::tuple shape_tuple(const ArrayView& v) {
  py::tuple t(static_cast<std::size_t>(v.ndim));
  for (int i = 0; i < v.ndim; ++i) {
    t[static_cast<std::size_t>(i)] = v.shape[static_cast<std::size_t>(i)];
  }
  return t;
}

// A numpy array viewing host memory, keeping the batch alive.
py::array host_numpy(const ArrayView& v) {
  if (v.device.is_cuda()) {
    throw py::type_error("this array lives on " + device_name(v.device) +
                         "; take it with torch.from_dlpack (or copy it to the host first)");
  }
  auto* keep = new std::shared_ptr<BatchState>(v.state);
  py::capsule owner(keep, [](void* p) { delete static_cast<std::shared_ptr<BatchState>*>(p); });
  const std::size_t item = v.dtype.bits / 8;
  std::vector<py::ssize_t> shape, strides;
  const std::array<int64_t, 4> s = v.strides();
  for (int i = 0; i < v.ndim; ++i) {
    shape.push_back(v.shape[static_cast<std::size_t>(i)]);
    strides.push_back(s[static_cast<std::size_t>(i)] * static_cast<py::ssize_t>(item));
  }
  return py::array(py::dtype(v.numpy_type), shape, strides, v.data, owner);
}

std::string array_repr(const ArrayView& v) {
  std::string dims;
  for (int i = 0; i < v.ndim; ++i) {
    dims += (i ? ", " : "") + std::to_string(v.shape[static_cast<std::size_t>(i)]);
  }
  return std::string("<imgpack.Array ") + v.numpy_type + "[" + dims + "] on " +
         device_name(v.device) + ">";
}

constexpr const char* kArrayDoc = R"(A zero-copy view of one array of a Batch, for DLPack consumers.

    images = torch.from_dlpack(batch.images)    # no copy; CUDA tensor for device batches
    labels = numpy.from_dlpack(batch.labels)    # or numpy.asarray(batch.labels)

The memory is the loader's slot. The Array, every capsule made by
__dlpack__ and every tensor made from one keep the slot out of the ring
until the last of them is gone: the loader never writes over memory a live
tensor can see. So a kept tensor holds a slot: the loader adds slots for up
to 2 x prefetch batches kept alive besides the one in use (see Loader), and
refuses one more; keep
.clone()s of what you keep across more batches, or raise `prefetch`.

On CUDA, __dlpack__(stream=s) follows the DLPack stream protocol: stream s
waits for the batch's upload before any work queued on it later, and the
slot is reused only after the work queued on s before the last reference
died. torch.from_dlpack passes the current stream. Writing into an exported
tensor changes the batch for every other view of it.
)";

constexpr const char* kBatchDoc = R"(One batch delivered by a Loader.

    images     Array: uint8 [N, H, W, C], or float32/float16 [N, C, H, W]
               normalized, on the loader's device
    masks      Array: uint8 [N, H, W] segmentation labels, on the images'
               device and cut with the images' crop and flips, from the same
               slot; None for a dataset without masks
    labels     Array: int32 [N] (host memory), -1 = unlabeled
    multilabel Array: uint8 [N, C] (host memory), 1 where the image has
               multi-label class c (Dataset.multilabel_classes); None
               without multi-label classes
    targets    Array: float32 [N, T] (host memory), numeric targets
               (Dataset.target_names), NaN = no value; None without targets
    boxes      Array: float32 [B, 4] (host memory), every box of the batch
               (x0, y0, x1, y1 in the delivered image's pixels, moved with
               its crop and flips); image i owns rows box_offsets[i] ..
               box_offsets[i + 1]; None for a dataset without boxes
    box_classes, box_crowd   Array: int32 [B] (Dataset.box_classes), uint8 [B]
    box_offsets Array: int64 [N + 1]
    keypoints  Array: float32 [B, K, 3] (x, y, visibility); None without
    samples    Array: int64 [N] (host memory), source sample ids (rows of
               Dataset.sample_paths)
    records    Array: uint64 [N] (host memory), record ids
    padding    the last `padding` entries repeat records delivered earlier
               in the epoch (rank and last-batch padding): leave them out of
               metrics
    epoch, index   the epoch and the batch's number within it

len(batch) is N. The batch holds its slot of the loader's ring until it and
every Array and tensor taken from it are gone (see imgpack.Array).
)";

}  // namespace

py::object wrap_batch(const std::shared_ptr<BatchState>& state) { return py::cast(state); }

void register_batch(py::module_& m) {
  Class<ArrayView>(m, "Array", kArrayDoc)
      .def(
          "__dlpack__",
          [](const ArrayView& v, const py::object& stream, const py::object& /*max_version*/,
             const py::object& dl_device,
             const py::object& copy) { return export_dlpack(v, stream, dl_device, copy); },
          py::kw_only(), "stream"_a = py::none(), "max_version"_a = py::none(),
          "dl_device"_a = py::none(), "copy"_a = py::none(),
          "Exports the array as a DLPack capsule (unversioned, DLPack 0.6) sharing the batch's "
          "memory. `stream` follows the protocol for CUDA memory (None or 1: legacy default "
          "stream, 2: per-thread default stream, -1: no synchronization, other: a "
          "cudaStream_t); it is ignored for host memory. copy=True and another dl_device raise "
          "BufferError: imgpack exports views only.")
      .def(
          "__dlpack_device__",
          [](const ArrayView& v) {
            const DLDevice d = v.dl_device();
            return py::make_tuple(static_cast<int>(d.device_type), d.device_id);
          },
          "(device type, device id) by DLPack's numbering: (1, 0) for host memory, (2, N) for "
          "cuda:N.")
      .def(
          "__array__",
          [](const ArrayView& v, const py::object& dtype, const py::object& copy) {
            py::object array = host_numpy(v);
            const bool converts =
                !dtype.is_none() && !py::dtype::from_args(dtype).equal(array.attr("dtype"));
            // NumPy 2's protocol: copy=False promises a view, so a conversion
            // that needs a copy is refused rather than made silently.
            if (converts && !copy.is_none() && !copy.cast<bool>()) {
              throw py::value_error(
                  "imgpack.Array.__array__: copy=False, but a " +
                  py::str(array.attr("dtype")).cast<std::string>() + " array viewed as " +
                  py::str(py::dtype::from_args(dtype)).cast<std::string>() + " needs a copy");
            }
            if (converts) return array.attr("astype")(dtype);
            if (!copy.is_none() && copy.cast<bool>()) array = array.attr("copy")();
            return array;
          },
          "dtype"_a = py::none(), py::kw_only(), "copy"_a = py::none(),
          "A numpy view of host memory (numpy.asarray(array)); TypeError for device memory. "
          "copy=True returns a copy; copy=False a view, or ValueError where `dtype` needs a "
          "conversion (NumPy 2's protocol).")
      .def_property_readonly("shape", &shape_tuple, "The array's shape (tuple of int).")
      .def_property_readonly(
          "dtype", [](const ArrayView& v) { return py::dtype(v.numpy_type); },
          "Its element type, as a numpy dtype.")
      .def_property_readonly(
          "device", [](const ArrayView& v) { return device_name(v.device); },
          "Where the memory is: 'cpu' or 'cuda:N'.")
      .def_property_readonly("nbytes", &ArrayView::nbytes, "Bytes of the array.")
      .def("__len__", [](const ArrayView& v) { return v.shape[0]; })
      .def("__repr__", &array_repr);

  Class<BatchState, std::shared_ptr<BatchState>>(m, "Batch", kBatchDoc)
      .def_property_readonly(
          "images", [](const std::shared_ptr<BatchState>& s) { return images_view(s); },
          "The images (imgpack.Array) on the loader's device.")
      .def_property_readonly(
          "masks",
          [](const std::shared_ptr<BatchState>& s) -> py::object {
            if (!s->batch.has_masks()) return py::none();
            return py::cast(masks_view(s));
          },
          "The segmentation masks (imgpack.Array of uint8 [N, H, W] labels) where the images "
          "are, each cut with its image's crop and flips; None without masks. Zero-copy like "
          "images: torch.from_dlpack(batch.masks).long() gives cross-entropy targets.")
      .def_property_readonly(
          "labels",
          [](const std::shared_ptr<BatchState>& s) {
            return column_view(s, s->batch.labels().data(), DLDataType{kDLInt, 32, 1}, "int32");
          },
          "Labels (imgpack.Array of int32, host memory); -1 = unlabeled.")
      .def_property_readonly(
          "multilabel",
          [](const std::shared_ptr<BatchState>& s) -> py::object {
            if (s->batch.multilabel_classes() == 0) return py::none();
            return py::cast(rows_view(s, s->batch.multilabel().data(),
                                      s->batch.multilabel_classes(), DLDataType{kDLUInt, 8, 1},
                                      "uint8"));
          },
          "Multi-label targets (imgpack.Array of uint8 [N, C], host memory; 1 = the image has "
          "class c of Dataset.multilabel_classes); None without multi-label classes. "
          "torch.from_dlpack(batch.multilabel).float() gives BCE targets.")
      .def_property_readonly(
          "targets",
          [](const std::shared_ptr<BatchState>& s) -> py::object {
            if (s->batch.num_targets() == 0) return py::none();
            return py::cast(rows_view(s, s->batch.targets().data(), s->batch.num_targets(),
                                      DLDataType{kDLFloat, 32, 1}, "float32"));
          },
          "Numeric targets (imgpack.Array of float32 [N, T], host memory; columns as "
          "Dataset.target_names, NaN = no value); None without targets.")
      .def_property_readonly(
          "boxes",
          [](const std::shared_ptr<BatchState>& s) -> py::object {
            if (!s->batch.has_boxes()) return py::none();
            const auto b = static_cast<int64_t>(s->batch.num_boxes());
            return py::cast(box_view(s, s->batch.boxes().data(), {b, 4},
                                     DLDataType{kDLFloat, 32, 1}, "float32"));
          },
          "The batch's boxes (imgpack.Array of float32 [B, 4], host memory: x0, y0, x1, y1 in "
          "the delivered image's pixels, moved with its crop and flips); image i owns rows "
          "box_offsets[i] to box_offsets[i + 1]. None without boxes. "
          "torch.from_dlpack(batch.boxes).split(counts) gives one tensor per image.")
      .def_property_readonly(
          "box_classes",
          [](const std::shared_ptr<BatchState>& s) -> py::object {
            if (!s->batch.has_boxes()) return py::none();
            const auto b = static_cast<int64_t>(s->batch.num_boxes());
            return py::cast(box_view(s, s->batch.box_classes().data(), {b},
                                     DLDataType{kDLInt, 32, 1}, "int32"));
          },
          "Each box's class (imgpack.Array of int32 [B]; Dataset.box_classes names them); None "
          "without boxes.")
      .def_property_readonly(
          "box_crowd",
          [](const std::shared_ptr<BatchState>& s) -> py::object {
            if (!s->batch.has_boxes()) return py::none();
            const auto b = static_cast<int64_t>(s->batch.num_boxes());
            return py::cast(
                box_view(s, s->batch.box_crowd().data(), {b}, DLDataType{kDLUInt, 8, 1}, "uint8"));
          },
          "1 for a box that marks a crowd (COCO iscrowd), else 0 (imgpack.Array of uint8 [B]); "
          "None without boxes.")
      .def_property_readonly(
          "box_offsets",
          [](const std::shared_ptr<BatchState>& s) -> py::object {
            if (!s->batch.has_boxes()) return py::none();
            const auto n = static_cast<int64_t>(s->batch.size()) + 1;
            return py::cast(box_view(s, s->batch.box_offsets().data(), {n},
                                     DLDataType{kDLInt, 64, 1}, "int64"));
          },
          "Where each image's boxes are (imgpack.Array of int64 [N + 1]): image i owns rows "
          "box_offsets[i] to box_offsets[i + 1] of boxes, box_classes, box_crowd and "
          "keypoints. None without boxes.")
      .def_property_readonly(
          "keypoints",
          [](const std::shared_ptr<BatchState>& s) -> py::object {
            if (!s->batch.has_boxes() || s->batch.num_keypoints() == 0) return py::none();
            const auto b = static_cast<int64_t>(s->batch.num_boxes());
            const auto k = static_cast<int64_t>(s->batch.num_keypoints());
            return py::cast(box_view(s, s->batch.keypoints().data(), {b, k, 3},
                                     DLDataType{kDLFloat, 32, 1}, "float32"));
          },
          "Each box's keypoints (imgpack.Array of float32 [B, K, 3]: x, y in the delivered "
          "image's pixels, visibility 0 = none (also outside the image), 1 = hidden, 2 = "
          "visible; a flip swaps Dataset.keypoint_flip pairs). None without keypoints.")
      .def_property_readonly(
          "samples",
          [](const std::shared_ptr<BatchState>& s) {
            return column_view(s, s->batch.samples().data(), DLDataType{kDLInt, 64, 1}, "int64");
          },
          "Source sample ids (imgpack.Array of int64, host memory).")
      .def_property_readonly(
          "records",
          [](const std::shared_ptr<BatchState>& s) {
            return column_view(s, s->batch.records().data(), DLDataType{kDLUInt, 64, 1}, "uint64");
          },
          "Record ids (imgpack.Array of uint64, host memory).")
      .def_property_readonly(
          "padding", [](const std::shared_ptr<BatchState>& s) { return s->batch.padding(); },
          "How many of the last entries are padding (repeats of records delivered earlier).")
      .def_property_readonly(
          "epoch", [](const std::shared_ptr<BatchState>& s) { return s->batch.epoch(); },
          "The epoch the batch belongs to.")
      .def_property_readonly(
          "index", [](const std::shared_ptr<BatchState>& s) { return s->batch.index(); },
          "The batch's number within its epoch (0, 1, ...).")
      .def_property_readonly(
          "device",
          [](const std::shared_ptr<BatchState>& s) { return device_name(s->batch.device()); },
          "Where the images are: 'cpu' or 'cuda:N'.")
      .def("__len__", [](const std::shared_ptr<BatchState>& s) { return s->batch.size(); })
      .def("__repr__", [](const std::shared_ptr<BatchState>& s) {
        const Batch& b = s->batch;
        return "<imgpack.Batch epoch=" + std::to_string(b.epoch()) +
               " index=" + std::to_string(b.index()) + " size=" + std::to_string(b.size()) +
               " padding=" + std::to_string(b.padding()) +
               " images=" + array_repr(images_view(s)).substr(15);
      });
}

}  // namespace imgpack::python
