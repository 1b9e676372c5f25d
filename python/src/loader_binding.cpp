// imgpack.Loader: the reader's Loader with PyTorch's vocabulary, waiting with
// the interpreter lock released and Ctrl-C honoured; its epoch iterator; and
// imgpack.Pairs, the (images, labels) view frameworks iterate.
#include <pybind11/pybind11.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "cuda_device.hpp"
#include "imgpack/error.hpp"
#include "loader_options.hpp"

namespace imgpack::python {

namespace {

using namespace pybind11::literals;

// How long next() waits between checks for a signal (Ctrl-C).
constexpr std::chrono::milliseconds kSignalCheckInterval{20};

class PyLoader {
 public:
  // The epochs set_epoch() takes and iterations read: each has a next,
  // which the loader starts reading before the epoch ends.
  static constexpr uint64_t kLastEpoch = UINT64_MAX - 1;

  PyLoader(Dataset dataset, const LoaderOptions& options) : dataset_(std::move(dataset)) {
    without_gil([&] {
      const CurrentDeviceGuard keep(options.device);
      loader_ = std::make_unique<Loader>(dataset_, options);
    });
  }

  // Joins the reader threads with the interpreter lock held: they never need
  // it, and a destructor may run while the interpreter shuts down.
  ~PyLoader() = default;
  PyLoader(const PyLoader&) = delete;
  PyLoader& operator=(const PyLoader&) = delete;

  // Stops the reader threads (each finishes at most one chunk). Batches and
  // tensors already taken stay valid.
  void close() {
    if (!loader_) return;
    if (busy_) throw std::runtime_error("Loader.close() while another thread waits in it");
    std::unique_ptr<Loader> loader = std::move(loader_);
    without_gil([&] { loader.reset(); });
  }

  void set_epoch(uint64_t epoch) {
    Loader& loader = open_loader();
    {
      const Busy busy(busy_);
      without_gil([&] { loader.set_epoch(epoch); });
    }
    epoch_ = epoch;
    next_epoch_ = epoch;
    started_ = true;
    ++generation_;
  }

  // Starts the epoch an iteration reads: the one set_epoch() named, else the
  // one after the last iterated. Returns the iteration's generation.
  uint64_t begin_iteration() {
    Loader& loader = open_loader();
    if (!started_ && next_epoch_ > kLastEpoch) {
      throw py::value_error("the loader has read epoch " + std::to_string(kLastEpoch) +
                            ", the last it reads (set_epoch() starts another)");
    }
    if (!started_) {
      const Busy busy(busy_);
      without_gil([&] { loader.set_epoch(next_epoch_); });
    }
    epoch_ = next_epoch_;
    next_epoch_ = epoch_ + 1;
    started_ = false;
    return ++generation_;
  }

  // What an iteration holds while it may go on: state() sees it end.
  std::shared_ptr<const void> hold_iteration() {
    auto held = std::make_shared<int>(0);
    iteration_ = held;
    return held;
  }

  // The next batch of the iteration `generation`, or nullptr at the end of the epoch.
  std::shared_ptr<BatchState> next(uint64_t generation) {
    Loader& loader = open_loader();
    if (generation != generation_) {
      throw std::runtime_error(
          "this iterator is stale: the loader started another epoch since (iter() or "
          "set_epoch()); iterate the loader again");
    }
    const Busy busy(busy_);
    for (;;) {
      if (without_gil([&] { return loader.wait_for_next(kSignalCheckInterval); })) break;
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    }
    std::optional<Batch> batch;
    try {
      batch = without_gil([&] {
        const CurrentDeviceGuard keep(loader.options().device);
        return loader.next();  // ready: returns at once
      });
    } catch (const SlotsHeldError& e) {
      throw Error(std::string(e.what()) +
                  " [in Python a Batch holds its slot while it, or any Array or tensor taken "
                  "from it, is alive: keep copies (tensor.clone()) of what you keep, or raise "
                  "prefetch]");
    }
    if (!batch) return nullptr;
    return std::make_shared<BatchState>(std::move(*batch), live_);
  }

  // The loader's position, for a checkpoint: where the next iteration
  // starts. An iteration left before its end (a break, a cap on the steps
  // of an epoch) is over: the next one reads the next epoch, so that is the
  // position saved, and a run resumed from it goes on as this one would.
  LoaderState state() {
    Loader& loader = open_loader();
    if (!started_ && iteration_.expired() && next_epoch_ <= kLastEpoch &&
        loader.batches_left() > 0) {
      const Busy busy(busy_);
      without_gil([&] { loader.set_epoch(next_epoch_); });  // as the next iteration would
      started_ = true;
    }
    return loader.state();
  }

  // Continues from `state`: the next iteration reads the rest of the saved
  // epoch (as does set_epoch() of that epoch right after).
  void restore(const LoaderState& state) {
    Loader& loader = open_loader();
    if (state.epoch > kLastEpoch) {
      throw py::value_error("the state is at epoch " + std::to_string(state.epoch) +
                            ", past the last a loader reads, " + std::to_string(kLastEpoch));
    }
    {
      const Busy busy(busy_);
      without_gil([&] { loader.restore(state); });
    }
    epoch_ = state.epoch;
    if (loader.batches_left() == 0) {
      // Saved at the end of its epoch: the next iteration is the next epoch,
      // as it would have been without the interruption.
      next_epoch_ = state.epoch + 1;
      started_ = false;
    } else {
      next_epoch_ = state.epoch;
      started_ = true;
    }
    ++generation_;
  }

  Loader& open_loader() const {
    if (!loader_) throw std::runtime_error("the Loader is closed");
    return *loader_;
  }
  const Dataset& dataset() const { return dataset_; }
  uint64_t epoch() const { return epoch_; }
  bool closed() const { return loader_ == nullptr; }

 private:
  // Marks the loader in use by one thread: a second thread gets an error
  // instead of racing the first inside the (single-consumer) Loader.
  class Busy {
   public:
    explicit Busy(std::atomic<bool>& flag) : flag_(flag) {
      if (flag_.exchange(true)) {
        throw std::runtime_error("the Loader is in use by another thread (use one per thread)");
      }
    }
    ~Busy() { flag_ = false; }
    Busy(const Busy&) = delete;
    Busy& operator=(const Busy&) = delete;

   private:
    std::atomic<bool>& flag_;
  };

  Dataset dataset_;
  std::unique_ptr<Loader> loader_;
  std::shared_ptr<std::atomic<std::size_t>> live_ = std::make_shared<std::atomic<std::size_t>>(0);
  std::atomic<bool> busy_{false};
  uint64_t epoch_ = 0;                   // of the current (or last) iteration, or as set
  uint64_t next_epoch_ = 0;              // what the next iteration reads
  bool started_ = false;                 // set_epoch(next_epoch_) already issued to the Loader
  uint64_t generation_ = 0;              // bumped by every iteration start and set_epoch()
  std::weak_ptr<const void> iteration_;  // the last iteration's, while its iterator lives
};

// One epoch's iteration over a loader.
struct EpochIterator {
  explicit EpochIterator(std::shared_ptr<PyLoader> of)
      : loader(std::move(of)),
        generation(loader->begin_iteration()),
        held(loader->hold_iteration()) {}

  std::shared_ptr<PyLoader> loader;
  uint64_t generation = 0;
  std::shared_ptr<const void> held;  // PyLoader::hold_iteration()
  bool done = false;
};

// (convert(batch.images), convert(batch.labels)) for every batch of every iteration.
struct Pairs {
  std::shared_ptr<PyLoader> loader;
  py::object convert;
};

struct PairsIterator {
  EpochIterator batches;
  py::object convert;
};

py::object next_batch(EpochIterator& it) {
  if (it.done) throw py::stop_iteration();
  std::shared_ptr<BatchState> state = it.loader->next(it.generation);
  if (!state) {
    it.done = true;
    throw py::stop_iteration();
  }
  return wrap_batch(state);
}

Dataset dataset_of(const py::object& dataset_or_path) {
  if (py::isinstance<Dataset>(dataset_or_path)) return dataset_or_path.cast<Dataset>();
  const std::string dir = file_path(dataset_or_path);
  return without_gil([&] { return Dataset::open(dir); });
}

py::dict stats_dict(const LoaderStats& s) {
  py::dict d;
  d["batches"] = s.batches;
  d["images"] = s.images;
  d["padding"] = s.padding;
  d["bytes"] = s.bytes;
  d["consumer_seconds"] = s.consumer_seconds;
  d["wait_seconds"] = s.wait_seconds;
  d["starvation"] = s.starvation();
  d["reader_busy_seconds"] = s.reader_busy_seconds;
  d["upload_busy_seconds"] = s.upload_busy_seconds;
  d["read_ahead_batches"] = s.read_ahead_batches;
  d["records_read"] = s.records_read;
  d["prefetched_bytes"] = s.prefetched_bytes;
  d["prefetch_cached_shards"] = s.prefetch_cached_shards;
  d["added_slots"] = s.added_slots;
  d["threads"] = s.threads;
  d["direct_upload"] = s.direct_upload;
  d["upload"] = s.upload;
  return d;
}

// --- Checkpoints: state() bytes and state_dict() --------------------------------------------

py::bytes bytes_of(const LoaderState& state) {
  const std::vector<uint8_t> bytes = state.to_bytes();
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

LoaderState state_of_bytes(const py::bytes& bytes) {
  const std::string_view view(bytes);
  return LoaderState::from_bytes(
      std::span(reinterpret_cast<const uint8_t*>(view.data()), view.size()));
}

// state_dict()'s "format"; the dict also holds "version" (the state's own
// version), every member of LoaderState::to_json() by its name, and "state":
// the state() bytes in base64, which load_state_dict() restores.
constexpr const char* kStateDictFormat = "imgpack.loader_state";
// The version member of LoaderState::to_json(), "version" in the dict.
constexpr const char* kStateJsonVersion = "imgpack_loader_state";

py::dict state_dict_of(const LoaderState& state) {
  const py::dict fields = py::module_::import("json").attr("loads")(text(state.to_json()));
  py::dict d;
  d["format"] = kStateDictFormat;
  d["version"] = fields[kStateJsonVersion];
  for (const auto& [key, value] : fields) {
    if (!py::str(key).equal(py::str(kStateJsonVersion))) d[key] = value;
  }
  d["state"] =
      py::module_::import("base64").attr("b64encode")(bytes_of(state)).attr("decode")("ascii");
  return d;
}

[[noreturn]] void refuse_state_dict(const std::string& problem) {
  throw Error("load_state_dict(): " + problem);
}

std::string repr_of(const py::handle& value) { return py::repr(value).cast<std::string>(); }

// set_epoch()'s argument: an integer (an int, or what has __index__, as
// numpy's integers; not a bool) from 0 to 2**64 - 2, so that the epoch after
// it is one too. TypeError or ValueError saying which.
uint64_t epoch_argument(const py::handle& value) {
  if (PyBool_Check(value.ptr()) != 0 || PyIndex_Check(value.ptr()) == 0) {
    throw py::type_error("set_epoch(epoch): epoch must be an int, not " +
                         std::string(py::str(py::type::of(value).attr("__name__"))) + " (" +
                         repr_of(value) + ")");
  }
  const auto number = py::reinterpret_steal<py::int_>(PyNumber_Index(value.ptr()));
  if (!number) throw py::error_already_set();
  const py::int_ zero(0);
  const py::int_ last(PyLoader::kLastEpoch);
  if (number < zero || number > last) {
    throw py::value_error("set_epoch(epoch): epoch must be in 0.." +
                          std::to_string(last.cast<uint64_t>()) + ", not " + repr_of(number));
  }
  return number.cast<uint64_t>();
}

// The state a state_dict() dict carries. Its "state" bytes are the
// authority; every other member must be there and equal, type and value, to
// what state_dict() makes of those bytes, so a dict edited by hand or
// damaged is refused (imgpack::Error naming the member) instead of restored
// into a position other than its fields say.
LoaderState state_of_dict(const py::handle& object) {
  if (!py::isinstance<py::dict>(object)) {
    throw py::type_error(
        "load_state_dict() takes the dict Loader.state_dict() returned, not " +
        std::string(py::str(py::type::of(object).attr("__name__"))) +
        (py::isinstance<py::bytes>(object) ? " (Loader.restore() takes state() bytes)" : ""));
  }
  const auto d = py::reinterpret_borrow<py::dict>(object);
  if (!d.contains("format") || !d.contains("state")) {
    refuse_state_dict("the dict has no " +
                      std::string(d.contains("format") ? "'state'" : "'format'") +
                      " member: not a Loader.state_dict(), or damaged");
  }
  const py::object format = d["format"];
  if (!py::isinstance<py::str>(format) || !format.equal(py::str(kStateDictFormat))) {
    refuse_state_dict("'format' is " + repr_of(format) + ", not '" + kStateDictFormat + "'");
  }
  const py::object encoded = d["state"];
  if (!py::isinstance<py::str>(encoded)) {
    refuse_state_dict("'state' is " + std::string(py::str(py::type::of(encoded).attr("__name__"))) +
                      ", not a base64 str");
  }
  py::bytes bytes;
  try {
    bytes = py::module_::import("base64").attr("b64decode")(encoded, "validate"_a = true);
  } catch (const py::error_already_set& e) {
    refuse_state_dict("'state' is not base64 (" + std::string(py::str(e.value())) + ")");
  }
  LoaderState state = [&] {
    try {
      return state_of_bytes(bytes);
    } catch (const Error& e) {  // damaged bytes
      refuse_state_dict(std::string("'state': ") + e.what());
    }
  }();

  py::dict expected = state_dict_of(state);
  // A dict of version 1 (saved before generations: no 'generation') is
  // compared with what version 1 wrote; its state is of generation 0.
  const py::object version = d.contains("version") ? d["version"] : py::object(py::none());
  if (py::isinstance<py::int_>(version) && version.equal(py::int_(1)) &&
      !d.contains("generation")) {
    expected["version"] = 1;
    PyDict_DelItemString(expected.ptr(), "generation");
  }
  std::string missing;
  for (const auto& [key, value] : expected) {
    if (!d.contains(key)) missing += (missing.empty() ? "" : ", ") + repr_of(key);
  }
  if (!missing.empty()) refuse_state_dict("the dict lacks " + missing + " (damaged)");
  for (const auto& [key, value] : d) {
    if (!expected.contains(key)) refuse_state_dict("unknown member " + repr_of(key));
    if (py::str(key).equal(py::str("state"))) continue;
    const py::object want = expected[key];
    if (!py::type::of(value).is(py::type::of(want)) || !value.equal(want)) {
      refuse_state_dict(repr_of(key) + " is " + repr_of(value) + " but the saved state says " +
                        repr_of(want) +
                        " (a dict edited by hand? its members must agree with 'state')");
    }
  }
  return state;
}

std::string loader_repr(const PyLoader& l) {
  if (l.closed()) return "<imgpack.Loader (closed)>";
  const Loader& loader = l.open_loader();
  const LoaderOptions& o = loader.options();
  return "<imgpack.Loader '" + l.dataset().path().string() + "'" +
         (o.selection.split.empty()
              ? std::string()
              : " split=" + o.selection.split + " fold=" + std::to_string(o.selection.fold)) +
         " role=" + std::string(role_name(o.selection.role)) +
         " batch_size=" + std::to_string(o.batch_size) + " " +
         std::to_string(loader.batches_per_epoch()) + " batches/epoch on " + device_name(o.device) +
         " epoch=" + std::to_string(l.epoch()) + ">";
}

constexpr const char* kLoaderDoc =
    R"(Batches of a dataset in a seeded order, prefetched by C++ reader threads.

Loader(dataset, *, split=None, fold=0, role="all", variants="auto",
       batch_size=256, last_batch="partial", drop_last=False,
       order="random", seed=0, window_shards=4,
       rank=0, world_size=1, rank_policy="pad",
       threads=None, prefetch=4, device="cpu", pin_memory=False,
       direct_upload="auto", output="uint8", mean=None, std=None,
       crop=None, crop_mode="auto", hflip=0.0, vflip=0.0,
       sampling="uniform", weights=None, epoch_length=None,
       verify_checksums=False, read_path="auto", reads_in_flight=16,
       direct_io="auto")

    loader = imgpack.Loader("dataset/", split="cv5", fold=0, role="train",
                            batch_size=256, device="cuda:0", output="float32",
                            mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))
    for epoch in range(epochs):
        loader.set_epoch(epoch)              # as with DistributedSampler
        for batch in loader:                 # one epoch
            x = torch.from_dlpack(batch.images)          # zero-copy
            y = torch.from_dlpack(batch.labels).long()   # labels are int32
            ...

dataset: an imgpack.Dataset, or a path to open.
Selection: split (name of a stored split; None: every sample, role must be
  "all"), fold, role ("train", "val", "test", "all"), variants ("auto":
  training reads one augmented variant per sample per epoch, rotating,
  everything else the clean one; "clean", "rotate", "all").
Batches: batch_size; last_batch: what happens to a short last batch:
  "partial" (deliver it short), "drop", or "pad" (repeat records of the
  epoch, counted by Batch.padding); drop_last=True is last_batch="drop".
Order: order ("random", "sequential", "shard-window" with window_shards
  shards per window), seed. The order of an epoch is a pure function of
  (seed, epoch, selection, rank, world_size): the C++ reader, imgpack bench
  and every run deliver the same batches, whatever threads and prefetch.
Distributed: rank of world_size takes every world_size-th position of the
  epoch; rank_policy "pad" gives every rank ceil(N / world_size) records
  (padding repeats), "drop" floor(N / world_size).
Pipeline: threads reader threads (None or 0: chosen by the loader, as
  stats()["threads"] says: 2, or for staged upload to a GPU half the cores
  this process may use, 2 to 8) fill a ring of prefetch slots, at most
  prefetch batches ahead of you; a Batch holds its slot while it or
  anything taken from it (an Array, a tensor) lives. A loop that keeps
  batches alive (labels kept as views for metrics, say) makes the ring grow
  rather than stop: up to 2 x prefetch batches may be kept alive besides
  the loop variable's when you ask for the next, the ring adding up to
  prefetch + 2 slots (stats()["added_slots"]; each as large as the first
  ones, see ring_bytes). One batch more raises imgpack.Error: keep clones
  of what you keep longer, or raise prefetch.
Device: "cpu", "cuda", "cuda:N" or a torch.device; pin_memory allocates
  host slots with cudaHostAlloc (host delivery); direct_upload: "auto"
  (default; direct where the shards fit in half the memory and nothing
  needs the host to touch the records: no crop or flip, no
  verify_checksums), True or "on" (the GPU copies records straight from
  the page cache, pinning the dataset; CUDA only) or False or "off" (reader
  threads stage them in pinned memory). stats()["upload"] says which and
  why.
Output: "uint8" (N, H, W, C as stored), "float32" or "float16" (N, C, H, W,
  (x / 255 - mean[c]) / std[c], converted on the GPU for device delivery);
  mean and std one value per channel, torchvision's convention.
Crop and flip, online: crop (an int for a square, or (height, width); at most
  the dataset's size) cuts a window of every record while the reader threads
  copy it, crop_mode "random" (the default for roles "train" and "all") or
  "center" (for "val" and "test"); hflip and vflip mirror each record with
  that probability. Windows and flips are a pure function of (seed, epoch,
  sample, variant): new every epoch, the same for any threads, ranks or
  resume point. Batches then hold crop-sized images. Not with direct_upload.
verify_checksums: compare every record read with its stored checksum; a
  mismatch raises imgpack.Error naming the shard and row.
read_path: how records leave the shard files. "mapped" copies from the
  memory mapping (memory speed when the page cache holds them); "read" reads
  every record from its file, reads_in_flight of them in flight per reader
  thread (io_uring), which a disk needs to reach its bandwidth; "auto" (the
  default) reads what the page cache does not hold and copies what it does,
  per chunk of a batch, so a dataset larger than memory is read and a cached
  one copied. With order "sequential", or "shard-window" on a dataset the
  page cache can hold, "auto" instead reads whole shards into memory ahead of
  the reader threads, in large requests, a window at a time
  (stats()["prefetched_bytes"]).
direct_io: whether those reads bypass the page cache (O_DIRECT): "auto" when
  the dataset is larger than the memory the page cache may use (physical
  memory or the process's memory cgroup limit), "on", "off".

Sampling: sampling "uniform" (every record once per epoch), "class-balanced"
  (every class equally likely at each position, with replacement) or
  "weighted" (record of sample s with probability weights[s]; one weight per
  sample of the dataset); epoch_length: draws per epoch (default: the
  selection's records).
Checkpoints: state_dict() returns a dict of plain values (str and int) to
  store with the model; load_state_dict(d) on a new Loader with the same
  options continues mid-epoch. With the same world_size and batch_size the
  rest of the epoch is byte for byte what the uninterrupted run would have
  delivered; on any other world_size or batch_size the epoch's remaining
  positions are dealt over the new ranks, each delivered once:
    torch.save({"model": model.state_dict(), "loader": loader.state_dict()}, path)
    ...
    checkpoint = torch.load(path)
    loader.load_state_dict(checkpoint["loader"])
    for epoch in range(loader.epoch, epochs):
        loader.set_epoch(epoch)      # keeps the restored position
        for batch in loader: ...
  state() and restore(bytes) do the same with the state as bytes.
Epochs: `for batch in loader` reads one epoch: the one set_epoch() named
last, else the one after the previous iteration (0 first), so plain
re-iteration sees a new order each epoch. len(loader) is batches per epoch.

Waiting: next() releases the interpreter lock while it waits and checks
for signals every 20 ms, so Ctrl-C raises KeyboardInterrupt at once.
Errors: imgpack.Error (a RuntimeError) naming the file and record for
damaged data; ValueError for invalid arguments or an unknown split.
Threads: use a Loader from one thread at a time; Batches, Arrays and
tensors may be used and dropped anywhere. close() (or leaving a `with`
block, or dropping the loader) stops the reader threads promptly and frees
the ring; batches already taken stay valid, each keeping its own slot.
)";

}  // namespace

void register_loader(py::module_& m) {
  Class<EpochIterator>(m, "_EpochIterator", "One epoch of a Loader (iter(loader)).")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &next_batch);

  Class<PairsIterator>(m, "_PairsIterator", "One epoch of a Pairs (iter(pairs)).")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", [](PairsIterator& it) {
        py::object batch = next_batch(it.batches);
        return py::make_tuple(it.convert(batch.attr("images")), it.convert(batch.attr("labels")));
      });

  Class<Pairs>(m, "Pairs",
               "The loader as an iterable of (convert(batch.images), convert(batch.labels)), "
               "with len() = batches per epoch: what Lightning or a plain loop over "
               "(inputs, targets) expects.\n\n"
               "    train_data = loader.pairs(torch.from_dlpack)\n\n"
               "Each iteration reads the loader's next epoch, as iterating the loader does; "
               "state_dict() and load_state_dict() are the loader's, so a framework that "
               "checkpoints its iterables saves the loader's position.")
      .def("__iter__",
           [](const Pairs& p) {
             return PairsIterator{EpochIterator(p.loader), p.convert};
           })
      .def("__len__", [](const Pairs& p) { return p.loader->open_loader().batches_per_epoch(); })
      .def(
          "state_dict", [](const Pairs& p) { return state_dict_of(p.loader->state()); },
          "The loader's state_dict(): a framework that checkpoints the iterables it is given "
          "(Lightning) saves the loader's position with the model.")
      .def(
          "load_state_dict",
          [](const Pairs& p, const py::object& state_dict) {
            p.loader->restore(state_of_dict(state_dict));
          },
          "state_dict"_a, "The loader's load_state_dict(): the next iteration continues there.");

  Class<PyLoader, std::shared_ptr<PyLoader>>(m, "Loader", kLoaderDoc)
      .def(
          py::init(
              [](const py::object& dataset_or_path, const py::object& split, const py::object& fold,
                 const py::object& role, const py::object& variants, const py::object& batch_size,
                 const py::object& last_batch, const py::object& drop_last, const py::object& order,
                 const py::object& seed, const py::object& window_shards, const py::object& rank,
                 const py::object& world_size, const py::object& rank_policy,
                 const py::object& threads, const py::object& prefetch, const py::object& device,
                 const py::object& pin_memory, const py::object& direct_upload,
                 const py::object& output, const py::object& mean, const py::object& std,
                 const py::object& crop, const py::object& crop_mode, const py::object& hflip,
                 const py::object& vflip, const py::object& sampling, const py::object& weights,
                 const py::object& epoch_length, const py::object& verify_checksums,
                 const py::object& read_path, const py::object& reads_in_flight,
                 const py::object& direct_io) {
                Dataset dataset = dataset_of(dataset_or_path);
                const LoaderArguments args{split,
                                           fold,
                                           role,
                                           variants,
                                           batch_size,
                                           last_batch,
                                           drop_last,
                                           order,
                                           seed,
                                           window_shards,
                                           rank,
                                           world_size,
                                           rank_policy,
                                           threads,
                                           prefetch,
                                           device,
                                           pin_memory,
                                           direct_upload,
                                           output,
                                           mean,
                                           std,
                                           crop,
                                           crop_mode,
                                           hflip,
                                           vflip,
                                           sampling,
                                           weights,
                                           epoch_length,
                                           verify_checksums,
                                           read_path,
                                           reads_in_flight,
                                           direct_io};
                const LoaderOptions options = loader_options(args, dataset.channels());
                return std::make_shared<PyLoader>(std::move(dataset), options);
              }),
          "dataset"_a, py::kw_only(), "split"_a = py::none(), "fold"_a = 0, "role"_a = "all",
          "variants"_a = "auto", "batch_size"_a = 256, "last_batch"_a = "partial",
          "drop_last"_a = false, "order"_a = "random", "seed"_a = 0, "window_shards"_a = 4,
          "rank"_a = 0, "world_size"_a = 1, "rank_policy"_a = "pad", "threads"_a = py::none(),
          "prefetch"_a = 4, "device"_a = "cpu", "pin_memory"_a = false, "direct_upload"_a = "auto",
          "output"_a = "uint8", "mean"_a = py::none(), "std"_a = py::none(), "crop"_a = py::none(),
          "crop_mode"_a = "auto", "hflip"_a = 0.0, "vflip"_a = 0.0, "sampling"_a = "uniform",
          "weights"_a = py::none(), "epoch_length"_a = py::none(), "verify_checksums"_a = false,
          "read_path"_a = "auto", "reads_in_flight"_a = 16, "direct_io"_a = "auto")
      .def(
          "__iter__", [](const std::shared_ptr<PyLoader>& l) { return EpochIterator(l); },
          "Reads one epoch: the one set_epoch() named, else the one after the last iterated.")
      .def(
          "__len__", [](const PyLoader& l) { return l.open_loader().batches_per_epoch(); },
          "Batches per epoch (for this rank, after the last-batch policy).")
      .def(
          "state_dict", [](PyLoader& l) { return state_dict_of(l.state()); },
          "Where the loader is, for a checkpoint, as a dict of plain values (str and int: "
          "json.dumps and torch.save(weights_only=True) take it as it is): 'format' "
          "('imgpack.loader_state'), 'version', the epoch and 'consumed' (global positions "
          "of the epoch the batches taken so far cover, on every rank), the world_size and "
          "batch_size it was saved with, the fingerprint of the dataset (its uuid and "
          "'generation': Dataset.generation), selection, order and batch options, and 'state': "
          "the state() bytes in base64. It is where the next iteration starts: after an iteration "
          "left before its end (a break), the start of the next epoch, as the next iteration "
          "reads it. Rank 0's dict serves every rank. torchdata's StatefulDataLoader and "
          "Lightning call this name.")
      .def(
          "load_state_dict",
          [](PyLoader& l, const py::object& state_dict) { l.restore(state_of_dict(state_dict)); },
          "state_dict"_a,
          "Continues from a state_dict(): the next iteration delivers the rest of the saved "
          "epoch. With the saved world_size and batch_size those are, byte for byte, the "
          "batches an uninterrupted run would have delivered from that step; with any other "
          "world_size or batch_size, the epoch's remaining positions dealt over the new ranks, "
          "each delivered once. imgpack.Error for a state of another generation of the dataset "
          "(appended to or with samples removed since: reopen the old data to continue that "
          "epoch, or start a new epoch without the state); ValueError naming every option that "
          "differs from the saved ones; imgpack.Error for a damaged dict (a member missing, of "
          "another type, or disagreeing with its 'state'); TypeError for something other than "
          "a dict.")
      .def(
          "state", [](PyLoader& l) { return bytes_of(l.state()); },
          "The state of state_dict() as bytes (imgpack::LoaderState::to_bytes(), which the C++ "
          "reader reads too): the epoch and the positions the batches taken so far cover on "
          "every rank, with a fingerprint of the dataset, selection, order and batch options. "
          "Rank 0's copy serves every rank.")
      .def(
          "restore", [](PyLoader& l, const py::bytes& state) { l.restore(state_of_bytes(state)); },
          "state"_a,
          "load_state_dict() for state() bytes: continues from them, on the same or another "
          "world_size and batch_size. imgpack.Error for a state of another generation of the "
          "dataset; ValueError naming every option that differs from the saved ones; "
          "imgpack.Error for damaged bytes.")
      .def(
          "set_epoch",
          [](PyLoader& l, const py::handle& epoch) { l.set_epoch(epoch_argument(epoch)); },
          "epoch"_a,
          "Sets the epoch the next iteration reads, and starts reading it now. Batches of an "
          "earlier epoch not yet taken are dropped; those taken stay valid. TypeError for "
          "what is no int, ValueError for an epoch outside 0..2**64 - 2.")
      .def(
          "pairs",
          [](const std::shared_ptr<PyLoader>& l, py::object convert) {
            return Pairs{l, std::move(convert)};
          },
          "convert"_a,
          "An iterable of (convert(images), convert(labels)) per batch with len(), e.g. "
          "loader.pairs(torch.from_dlpack) for frameworks that iterate (inputs, targets).")
      .def(
          "stats", [](const PyLoader& l) { return stats_dict(l.open_loader().stats()); },
          "Counters since construction or reset_stats(): batches, images (padding included), "
          "padding, bytes, consumer_seconds (first next() to the latest), wait_seconds (time "
          "spent waiting for batches), starvation (wait / consumer time: 0 = never waited), "
          "reader_busy_seconds, upload_busy_seconds, read_ahead_batches (batches of an epoch "
          "read before it started: the reader goes on into the next epoch at the end of one), "
          "records_read (records read from their files rather than copied from the mapping; "
          "read_path), prefetched_bytes and prefetch_cached_shards (shards read ahead in "
          "shard-window and sequential order, and those found in memory already), "
          "added_slots (slots the ring added, beyond prefetch, for batches kept alive: 0 to "
          "prefetch + 2; like prefetched_bytes and prefetch_cached_shards, reset_stats() "
          "leaves it), direct_upload (True when the device's copy engine reads the records "
          "from the page cache) and upload (how batches reach the device and why, one line; "
          "both chosen when the loader was made).")
      .def(
          "reset_stats", [](PyLoader& l) { l.open_loader().reset_stats(); },
          "Zeroes the counters of stats().")
      .def("close", &PyLoader::close,
           "Stops the reader threads (promptly: each finishes at most one chunk) and frees the "
           "ring. Batches and tensors already taken stay valid, each keeping its own slot; "
           "using the loader afterwards raises RuntimeError.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PyLoader& l, const py::args&) { l.close(); })
      .def_property_readonly(
          "dataset", [](const PyLoader& l) { return l.dataset(); }, "The dataset it reads.")
      .def_property_readonly("epoch", &PyLoader::epoch,
                             "The epoch being (or last) iterated, or the one set_epoch() named.")
      .def_property_readonly(
          "batch_size", [](const PyLoader& l) { return l.open_loader().options().batch_size; },
          "Entries per batch (the last one may be shorter with last_batch='partial').")
      .def_property_readonly(
          "images_per_epoch", [](const PyLoader& l) { return l.open_loader().images_per_epoch(); },
          "Entries per epoch for this rank, padding included.")
      .def_property_readonly(
          "device", [](const PyLoader& l) { return device_name(l.open_loader().device()); },
          "Where batches are delivered: 'cpu' or 'cuda:N'.")
      .def_property_readonly(
          "output",
          [](const PyLoader& l) {
            return std::string(output_format_name(l.open_loader().options().output));
          },
          "'uint8', 'float32' or 'float16'.")
      .def_property_readonly(
          "ring_bytes",
          [](const PyLoader& l) {
            return py::make_tuple(l.open_loader().ring_host_bytes(),
                                  l.open_loader().ring_device_bytes());
          },
          "(host bytes, device bytes) of slot memory the ring holds.")
      .def_property_readonly("closed", &PyLoader::closed, "Whether close() was called.")
      .def("__repr__", [](const PyLoader& l) { return text(loader_repr(l)); });
}

}  // namespace imgpack::python
