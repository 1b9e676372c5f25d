// imgpack.Dataset and imgpack.Split: a validated dataset and its index, with
// the sample table as read-only numpy arrays viewing the index in memory.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstddef>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "imgpack/dataset.hpp"

namespace imgpack::python {

namespace {

using namespace pybind11::literals;

// A read-only numpy view of `values` (in the dataset's mapping of its index,
// or in its memory), which live as long as `dataset` does.
template <class T>
py::array read_only_view(const Dataset& dataset, const Column<T>& values) {
  // The capsule keeps a handle on the dataset (and so its index) alive.
  py::capsule owner(new Dataset(dataset), [](void* p) { delete static_cast<Dataset*>(p); });
  py::array_t<T> array({values.size()}, {sizeof(T)}, values.data(), owner);
  array.attr("setflags")("write"_a = false);
  return array;
}

// The same for a table of `columns` per sample: [S, columns]; None without columns.
template <class T>
py::object read_only_rows(const Dataset& dataset, const Column<T>& values, std::size_t columns) {
  if (columns == 0) return py::none();
  py::capsule owner(new Dataset(dataset), [](void* p) { delete static_cast<Dataset*>(p); });
  const auto rows = static_cast<py::ssize_t>(values.size() / columns);
  py::array_t<T> array(
      {rows, static_cast<py::ssize_t>(columns)},
      {static_cast<py::ssize_t>(columns * sizeof(T)), static_cast<py::ssize_t>(sizeof(T))},
      values.data(), owner);
  array.attr("setflags")("write"_a = false);
  return array;
}

py::array string_array(const std::vector<std::string>& values) {
  return py::module_::import("numpy").attr("array")(texts(values), "dtype"_a = "O");
}

// One named split of a dataset, by position in the index (which the handle keeps alive).
struct SplitView {
  Dataset dataset;
  std::size_t position = 0;
  const Split& split() const { return dataset.index().splits[position]; }
};

std::string split_repr(const SplitView& v) {
  const Split& s = v.split();
  return "<imgpack.Split '" + s.name + "' kind=" + s.kind + " folds=" + std::to_string(s.folds) +
         " seed=" + std::to_string(s.seed) + (s.stratified ? " stratified" : "") +
         (s.grouped ? " grouped" : "") + ">";
}

constexpr const char* kDatasetDoc = R"(A packed imgpack dataset, opened and validated.

Dataset(path, *, verify_checksums=False)

Opening reads index.h5 and checks every shard (format, uuid, shapes,
layout, sizes) once; afterwards the pixels are memory-mapped and no file is
read until a Loader copies records. A missing, truncated, foreign or damaged
file raises imgpack.Error naming the file and the problem. With
verify_checksums=True every record is also read and compared with its stored
checksum (slow: reads the whole dataset).

A Dataset is a cheap handle: Loaders made from it share its mappings.

    ds = imgpack.Dataset("dataset/")
    len(ds)              # source samples (images before augmentation)
    ds.shape             # (height, width, channels) of every record
    ds.classes[ds.sample_labels[0]]
    ds.splits["cv5"].folds
)";

}  // namespace

void register_dataset(py::module_& m) {
  Class<SplitView>(m, "Split",
                   "A named cross-validation split stored in the dataset (imgpack split).\n\n"
                   "Fold f's validation samples are assign == f, its training samples the "
                   "other non-negative folds, the test set assign == -1. A holdout split "
                   "has folds == 2 and is used through fold 0 (0 = validation).")
      .def_property_readonly(
          "name", [](const SplitView& v) { return text(v.split().name); }, "The split's name.")
      .def_property_readonly(
          "kind", [](const SplitView& v) { return v.split().kind; },
          "random, stratified, group, stratified-group or holdout.")
      .def_property_readonly(
          "folds", [](const SplitView& v) { return v.split().folds; }, "Number of folds.")
      .def_property_readonly(
          "seed", [](const SplitView& v) { return v.split().seed; }, "The seed it was made with.")
      .def_property_readonly(
          "stratified", [](const SplitView& v) { return v.split().stratified; },
          "Whether class proportions were balanced across the parts.")
      .def_property_readonly(
          "grouped", [](const SplitView& v) { return v.split().grouped; },
          "Whether groups were kept whole (never on two sides).")
      .def_property_readonly(
          "test_fraction", [](const SplitView& v) { return v.split().test_fraction; },
          "Fraction of samples set aside as the test set (fold -1).")
      .def_property_readonly(
          "val_fraction", [](const SplitView& v) { return v.split().val_fraction; },
          "Validation fraction of a holdout split (0 for k-fold kinds).")
      .def_property_readonly(
          "created", [](const SplitView& v) { return v.split().created; },
          "When it was made (ISO 8601 UTC).")
      .def_property_readonly(
          "assign", [](const SplitView& v) { return read_only_view(v.dataset, v.split().assign); },
          "Per source sample: its fold (0..folds-1) or -1 for the test set; int16, read-only.")
      .def("__repr__", [](const SplitView& v) { return text(split_repr(v)); });

  Class<Dataset>(m, "Dataset", kDatasetDoc)
      .def(py::init([](const py::object& path, bool verify_checksums) {
             const std::string dir = file_path(path);
             DatasetOpenOptions options;
             options.verify_checksums = verify_checksums;
             return without_gil([&] { return Dataset::open(dir, options); });
           }),
           "path"_a, py::kw_only(), "verify_checksums"_a = false,
           "Opens and validates the dataset in directory `path` (str or os.PathLike).")
      .def("__len__", &Dataset::num_samples,
           "Number of source samples (rows of the sample table: removed samples included).")
      .def_property_readonly(
          "path", [](const Dataset& d) { return text(d.path().string()); },
          "The dataset directory (os.fsencode() gives its bytes).")
      .def_property_readonly(
          "shape",
          [](const Dataset& d) { return py::make_tuple(d.height(), d.width(), d.channels()); },
          "(height, width, channels) of every record (stored uint8, HWC).")
      .def_property_readonly("num_samples", &Dataset::num_samples,
                             "Number of source samples (rows of the sample table, sample ids: "
                             "removed samples included, num_removed of them).")
      .def_property_readonly(
          "num_removed", [](const Dataset& d) { return d.index().num_removed(); },
          "Samples removed from the dataset since its conversion: no Loader delivers them.")
      .def_property_readonly("generation", &Dataset::generation,
                             "The generation of the index this handle opened: 0 as converted, "
                             "one more per append, removal or compaction since. It stays the "
                             "one opened; open the dataset again to see a later one. "
                             "Loader.state_dict() names it.")
      .def_property_readonly("num_records", &Dataset::num_records,
                             "Number of records (samples x stored variants).")
      .def_property_readonly("num_shards", &Dataset::num_shards, "Number of shard files.")
      .def_property_readonly(
          "variants", [](const Dataset& d) { return d.index().variants; },
          "Records stored per sample: the clean one and variants - 1 augmented.")
      .def_property_readonly(
          "color", [](const Dataset& d) { return d.index().color; }, "'rgb' or 'gray'.")
      .def_property_readonly(
          "uuid", [](const Dataset& d) { return d.index().uuid; }, "The dataset's uuid.")
      .def_property_readonly(
          "classes", [](const Dataset& d) { return texts(d.index().class_names); },
          "Class names by label (list of str).")
      .def_property_readonly(
          "groups",
          [](const Dataset& d) { return texts(without_gil([&] { return d.group_names(); })); },
          "Group names by group id (list of str), read from index.h5 on each access.")
      .def_property_readonly("has_masks", &Dataset::has_masks,
                             "Whether every record has a segmentation mask (Batch.masks).")
      .def_property_readonly(
          "mask_fill",
          [](const Dataset& d) -> py::object {
            if (!d.has_masks()) return py::none();
            return py::int_(d.mask_fill());
          },
          "The mask label of areas outside the source image (255 by default: the usual "
          "ignore_index), or None without masks.")
      .def_property_readonly(
          "mask_classes", [](const Dataset& d) { return texts(d.index().mask_class_names); },
          "Mask label names by label (list of str; empty when the conversion named none).")
      .def_property_readonly(
          "splits",
          [](const Dataset& d) {
            py::dict splits;
            for (std::size_t i = 0; i < d.index().splits.size(); ++i) {
              splits[text(d.index().splits[i].name)] = SplitView{d, i};
            }
            return splits;
          },
          "The stored splits by name (dict of str -> Split).")
      .def_property_readonly(
          "sample_paths",
          [](const Dataset& d) {
            const std::vector<std::string> paths = without_gil([&] { return d.sample_paths(); });
            return string_array(paths);
          },
          "Per sample: its source path relative to the converted directory (object array of str),\n"
          "read from index.h5 on each access: keep the array rather than asking again.")
      .def(
          "sample_path",
          [](const Dataset& d, int64_t s) {
            if (s < 0 || static_cast<uint64_t>(s) >= d.num_samples()) {
              throw py::index_error("sample " + std::to_string(s) + " of " +
                                    std::to_string(d.num_samples()) + " (ids 0.." +
                                    std::to_string(d.num_samples()) + "-1)");
            }
            return text(without_gil([&] { return d.sample_path(static_cast<uint64_t>(s)); }));
          },
          "sample"_a, "The source path of one sample, read from index.h5 without the others.")
      .def_property_readonly(
          "sample_labels",
          [](const Dataset& d) { return read_only_view(d, d.index().sample_label); },
          "Per sample: its label (int32, -1 = unlabeled), read-only.")
      .def_property_readonly(
          "sample_groups",
          [](const Dataset& d) { return read_only_view(d, d.index().sample_group); },
          "Per sample: its group id (int32, -1 = none), read-only.")
      .def_property_readonly(
          "multilabel_classes", [](const Dataset& d) { return texts(d.index().multilabel_names); },
          "The multi-label class names, by column of sample_multilabel (list of str; empty "
          "without multi-label classes).")
      .def_property_readonly(
          "sample_multilabel",
          [](const Dataset& d) {
            return read_only_rows(d, d.index().sample_multilabel,
                                  d.index().multilabel_names.size());
          },
          "Per sample: its multi-hot row over multilabel_classes (uint8 [S, C], 1 = has the "
          "class), read-only; None without multi-label classes.")
      .def_property_readonly(
          "target_names", [](const Dataset& d) { return texts(d.index().target_names); },
          "The numeric target names, by column of sample_targets (list of str; empty without "
          "targets).")
      .def_property_readonly(
          "sample_targets",
          [](const Dataset& d) {
            return read_only_rows(d, d.index().sample_targets, d.index().target_names.size());
          },
          "Per sample: its numeric targets (float32 [S, T], NaN = no value), read-only; None "
          "without targets.")
      .def_property_readonly("has_boxes", &Dataset::has_boxes,
                             "Whether every record carries its object boxes (Batch.boxes).")
      .def_property_readonly(
          "box_classes", [](const Dataset& d) { return texts(d.index().box_class_names); },
          "The box class names, by id (Batch.box_classes; list of str, empty without boxes).")
      .def_property_readonly(
          "keypoint_names", [](const Dataset& d) { return texts(d.index().keypoint_names); },
          "The keypoint names, by index along Batch.keypoints' second axis (list of str; empty "
          "without keypoints).")
      .def_property_readonly(
          "keypoint_flip", [](const Dataset& d) { return d.index().keypoint_flip; },
          "Per keypoint, the keypoint it becomes under a horizontal flip (list of int; its own "
          "index where it has no pair).")
      .def_property_readonly(
          "keypoint_skeleton",
          [](const Dataset& d) {
            const std::vector<int32_t>& ends = d.index().keypoint_skeleton;
            std::vector<std::pair<int32_t, int32_t>> pairs;
            for (std::size_t e = 0; e + 1 < ends.size(); e += 2)
              pairs.emplace_back(ends[e], ends[e + 1]);
            return pairs;
          },
          "The pairs of keypoints (indices, from 0) that the skeleton joins, as the COCO "
          "categories gave it (list of (int, int); empty where none was given).")
      .def("__repr__", [](const Dataset& d) {
        return text("<imgpack.Dataset '" + d.path().string() + "' " +
                    std::to_string(d.num_samples()) + " samples, " +
                    std::to_string(d.num_records()) + " records of " + std::to_string(d.height()) +
                    "x" + std::to_string(d.width()) + "x" + std::to_string(d.channels()) + ">");
      });
}

}  // namespace imgpack::python
