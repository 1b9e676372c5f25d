// The thin RAII layer over libhdf5 (h5.hpp): files, datasets, attributes and
// strings with every call checked. About 500 lines: one wrapper per HDF5
// operation the format needs, each short.
#include "h5.hpp"

#include <pthread.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>
#include <new>
#include <string_view>
#include <vector>

#include "files.hpp"
#include "h5_heaps.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"

namespace imgpack::h5 {

namespace {

// HDF5 registers an atexit handler that closes files still open. After a
// failed write (a full disk) a file can stay open in a state in which that
// handler crashes (1.10.8: SIGSEGV in H5F__close_cb), turning a clean error
// exit into a segfault. imgpack closes every file it opens itself, so it asks
// the library not to install the handler; this must happen before HDF5
// initialises, hence a static initialiser.
const bool kNoAtexit = [] { return H5dont_atexit() >= 0; }();

}  // namespace

void silence_errors() {
  // The thread-safe HDF5 keeps the error stack, and whether to print it, per
  // thread: every thread that calls HDF5 must turn printing off itself.
  thread_local bool silenced = false;
  if (!silenced) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    silenced = true;
  }
}

namespace {

struct ErrorSummary {
  std::string innermost;  // what was wrong ("truncated file: eof = ...")
  std::string failed;     // what the operating system refused ("file write failed")
  std::string system;     // and its reason ("No space left on device")
};

// Walking downward, the last entry visited is the innermost.
herr_t summarise_error(unsigned, const H5E_error2_t* err, void* client) {
  auto* summary = static_cast<ErrorSummary*>(client);
  if (err->desc == nullptr || err->desc[0] == '\0') return 0;
  std::string_view desc = err->desc;
  summary->innermost = desc;
  // The sec2 driver says "file write failed: time = ..., errno = 28,
  // error message = 'No space left on device', ...".
  constexpr std::string_view kMarker = "error message = '";
  if (auto at = desc.find(kMarker); at != std::string_view::npos) {
    auto begin = at + kMarker.size();
    auto end = desc.find('\'', begin);
    summary->system = desc.substr(begin, end == std::string_view::npos ? end : end - begin);
    summary->failed = desc.substr(0, desc.find_first_of(":,"));
  }
  return 0;
}

herr_t collect_names(hid_t, const char* name, const H5L_info_t*, void* client) {
  static_cast<std::vector<std::string>*>(client)->emplace_back(name);
  return 0;
}

std::string parent_of(const std::string& name) {
  auto slash = name.find_last_of('/');
  if (slash == std::string::npos || slash == 0) return "/";
  return name.substr(0, slash);
}

}  // namespace

std::string last_error_message() {
  ErrorSummary summary;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, summarise_error, &summary);
  // The innermost entry says what was wrong, except when the operating system
  // refused a call: then HDF5 dumps the call's arguments, of which only what
  // failed and the system's reason are worth reading.
  if (summary.system.empty()) return summary.innermost;
  return summary.failed + " (" + summary.system + ")";
}

herr_t Handle::close() {
  if (id_ < 0) return 0;
  silence_errors();
  hid_t id = release();
  switch (H5Iget_type(id)) {
    case H5I_FILE:
      return H5Fclose(id);
    case H5I_GROUP:
      return H5Gclose(id);
    case H5I_DATASET:
      return H5Dclose(id);
    case H5I_DATASPACE:
      return H5Sclose(id);
    case H5I_DATATYPE:
      return H5Tclose(id);
    case H5I_ATTR:
      return H5Aclose(id);
    case H5I_GENPROP_LST:
      return H5Pclose(id);
    default:
      return H5Idec_ref(id);
  }
}

Handle group_creation_plist() {
  silence_errors();
  Handle plist(H5Pcreate(H5P_GROUP_CREATE));
  if (!plist || H5Pset_obj_track_times(plist.get(), false) < 0) {
    throw Error("HDF5: cannot create a group property list: " + last_error_message());
  }
  return plist;
}

Handle dataset_creation_plist() {
  silence_errors();
  Handle plist(H5Pcreate(H5P_DATASET_CREATE));
  if (!plist || H5Pset_obj_track_times(plist.get(), false) < 0) {
    throw Error("HDF5: cannot create a dataset property list: " + last_error_message());
  }
  return plist;
}

hid_t File::check(hid_t id, const char* call, const std::string& object) const {
  if (id < 0) {
    std::string message = path_.string() + ": " + call + "(" + object + ") failed";
    std::string detail = last_error_message();
    if (!detail.empty()) message += ": " + detail;
    throw Error(message);
  }
  return id;
}

void File::check_status(herr_t status, const char* call, const std::string& object) const {
  if (status < 0) check(H5I_INVALID_HID, call, object);
}

namespace {

// The fork barrier: how many passes are held, whether a fork waits for them
// to be released, and how many this thread holds. Never destroyed (a fork
// may come while the process exits); a forked child, whose only thread is
// the one that forked, starts with a new one.
struct ForkBarrier {
  std::mutex mutex;
  std::condition_variable changed;
  uint64_t held = 0;
  unsigned forking = 0;  // threads in fork() now
};
std::atomic<ForkBarrier*> barrier{nullptr};
thread_local uint64_t held_here = 0;

void before_fork() {
  ForkBarrier& b = *barrier.load();
  std::unique_lock lock(b.mutex);
  ++b.forking;
  // This thread's own passes: it is calling fork(), not HDF5.
  b.changed.wait(lock, [&] { return b.held == held_here; });
  (void)lock.release();  // held across the fork
}

void after_fork_in_parent() {
  ForkBarrier& b = *barrier.load();
  --b.forking;
  b.mutex.unlock();
  b.changed.notify_all();
}

void after_fork_in_child() {
  // The old barrier's waiters were other threads, which the child has not.
  auto* fresh = new ForkBarrier();
  fresh->held = held_here;
  barrier.store(fresh);
}

// Installs the barrier and its fork handlers once, without a static's init
// guard: a fork while another thread held such a guard would leave the child
// waiting on it forever. Where two threads race here, one barrier wins and the
// other is dropped unused.
ForkBarrier& fork_barrier() {
  ForkBarrier* current = barrier.load();
  if (current != nullptr) return *current;
  auto* made = new ForkBarrier();
  if (!barrier.compare_exchange_strong(current, made)) {
    delete made;
    return *current;
  }
  ::pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
  return *made;
}

// Installed as the library is loaded, before its threads (or a program's)
// open files; fork_barrier() installs it first where another static
// initializer opens a file earlier.
[[maybe_unused]] const ForkBarrier& installed_at_load = fork_barrier();

}  // namespace

ForkPass ForkPass::take() {
  ForkBarrier& b = fork_barrier();
  std::unique_lock lock(b.mutex);
  if (held_here == 0) b.changed.wait(lock, [&] { return b.forking == 0; });
  ++b.held;
  ++held_here;
  ForkPass pass;
  pass.held_ = true;
  return pass;
}

void ForkPass::release() noexcept {
  if (!held_) return;
  held_ = false;
  ForkBarrier& b = fork_barrier();
  {
    const std::lock_guard lock(b.mutex);
    --b.held;
    if (held_here > 0) --held_here;
  }
  b.changed.notify_all();
}

uint64_t fork_passes_held() {
  ForkBarrier& b = fork_barrier();
  const std::lock_guard lock(b.mutex);
  return b.held;
}

File File::open_read(const std::filesystem::path& path) {
  ForkPass pass = ForkPass::take();
  silence_errors();
  // HDF5's own message for a missing file is a dump of open(2)'s arguments.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw system_error(path, "cannot open", errno);
  // Not a FIFO either: HDF5 would block opening it.
  if (!S_ISREG(st.st_mode)) throw file_error(path, "not a regular file");
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS));
  errno = 0;
  hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get());
  if (id < 0) {
    const int error = errno;
    if (is_resource_shortage(error)) throw_resource_shortage(path, "cannot open", error);
    std::string detail = last_error_message();
    std::string message = path.string() + ": cannot open as HDF5";
    if (!detail.empty()) message += ": " + detail;
    if (detail.find("unable to lock") != std::string::npos ||
        detail.find("No locks") != std::string::npos) {
      message += " (on file systems without flock, e.g. NFS, set HDF5_USE_FILE_LOCKING=FALSE)";
    }
    throw Error(message);
  }
  return File(std::move(pass), Handle(id), path);
}

File File::open_write(const std::filesystem::path& path) {
  ForkPass pass = ForkPass::take();
  silence_errors();
  hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  if (id < 0) {
    throw Error(path.string() + ": cannot open for writing: " + last_error_message());
  }
  return File(std::move(pass), Handle(id), path);
}

File File::open_write_clearing_mark(const std::filesystem::path& path) {
  ForkPass pass = ForkPass::take();
  silence_errors();
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS));
  hbool_t clear = 1;
  if (!fapl || H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V110, H5F_LIBVER_V110) < 0 ||
      H5Pset(fapl.get(), "clear_status_flags", &clear) < 0) {
    throw Error(path.string() + ": cannot set file access properties: " + last_error_message());
  }
  hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl.get());
  if (id < 0) {
    throw Error(path.string() + ": cannot open for writing: " + last_error_message());
  }
  return File(std::move(pass), Handle(id), path);
}

File File::create(const std::filesystem::path& path, uint64_t alignment_threshold) {
  ForkPass pass = ForkPass::take();
  silence_errors();
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS));
  if (!fapl || H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V110, H5F_LIBVER_V110) < 0 ||
      H5Pset_alignment(fapl.get(), std::max<uint64_t>(alignment_threshold, 1), format::kAlignment) <
          0) {
    throw Error(path.string() + ": cannot set file access properties: " + last_error_message());
  }
  // The root group is created from the file creation properties: no times there either.
  Handle fcpl(H5Pcreate(H5P_FILE_CREATE));
  if (!fcpl || H5Pset_obj_track_times(fcpl.get(), false) < 0) {
    throw Error(path.string() + ": cannot set file creation properties: " + last_error_message());
  }
  hid_t id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl.get(), fapl.get());
  if (id < 0) throw Error(path.string() + ": cannot create: " + last_error_message());
  return File(std::move(pass), Handle(id), path);
}

void File::close() {
  if (!handle_) return;
  check_status(H5Fflush(handle_.get(), H5F_SCOPE_LOCAL), "H5Fflush", "/");
  check_status(handle_.close(), "H5Fclose", "/");
}

bool File::exists(const std::string& object) const {
  if (object == "/") return true;
  // Walked one link at a time, soft links resolved here: H5Lexists fails
  // (rather than returning false) when a parent is missing, and a link to
  // another file must be refused before anything follows it, behind a soft
  // link too (HDF5 would open that file, which may be anything: a FIFO
  // blocks).
  constexpr int kMostSoftLinks = 40;
  std::vector<std::string> rest;  // the components still to walk, the next last
  const auto push = [&rest](std::string_view path) {
    std::vector<std::string> parts;
    std::size_t begin = 0;
    while (begin <= path.size()) {
      const std::size_t slash = std::min(path.find('/', begin), path.size());
      const std::string_view part = path.substr(begin, slash - begin);
      if (!part.empty() && part != ".") parts.emplace_back(part);
      begin = slash + 1;
    }
    rest.insert(rest.end(), parts.rbegin(), parts.rend());
  };
  push(object);
  std::string at;  // the path walked so far, through hard links only ("" = the root)
  int soft_links = 0;
  while (!rest.empty()) {
    const std::string next = at + "/" + rest.back();
    rest.pop_back();
    if (H5Lexists(id(), next.c_str(), H5P_DEFAULT) <= 0) return false;
    H5L_info_t link{};
    if (H5Lget_info(id(), next.c_str(), &link, H5P_DEFAULT) < 0) return false;
    if (link.type == H5L_TYPE_HARD) {
      at = next;
      continue;
    }
    if (link.type != H5L_TYPE_SOFT) {
      throw Error(path_.string() + ": " + next +
                  " is a link to another file (an external link); an imgpack file holds its "
                  "objects itself");
    }
    if (++soft_links > kMostSoftLinks) {
      throw Error(path_.string() + ": " + object + " goes through more than " +
                  std::to_string(kMostSoftLinks) + " soft links (a loop)");
    }
    std::string target(link.u.val_size, '\0');
    if (H5Lget_val(id(), next.c_str(), target.data(), target.size(), H5P_DEFAULT) < 0) {
      return false;
    }
    target.resize(std::strlen(target.c_str()));
    if (target.starts_with('/')) at.clear();  // else from the link's own group
    push(target);
  }
  return H5Oexists_by_name(id(), at.empty() ? "/" : at.c_str(), H5P_DEFAULT) > 0;
}

void File::check_held_here(hid_t object, const std::string& name) const {
  // exists() walked the name through hard links only: the object is this
  // file's. A dataset's data may still lie elsewhere.
  if (H5Iget_type(object) != H5I_DATASET) return;
  Handle dcpl(check(H5Dget_create_plist(object), "H5Dget_create_plist", name));
  if (H5Pget_layout(dcpl.get()) == H5D_VIRTUAL || H5Pget_external_count(dcpl.get()) != 0) {
    throw Error(path_.string() + ": " + name +
                " keeps its data in other files (a virtual dataset or external storage); an "
                "imgpack file holds its data itself");
  }
}

void File::check_declared_size(hid_t dataset, const std::string& name, uint64_t n,
                               size_t size) const {
  // Deflate, the filter h5py and HDF5 offer everywhere, shrinks data at most
  // about 1032-fold; beyond twice that, no filter made the data this small.
  constexpr uint64_t kMostCompression = 2048;
  Handle dcpl(check(H5Dget_create_plist(dataset), "H5Dget_create_plist", name));
  const bool filtered = H5Pget_nfilters(dcpl.get()) > 0;
  const uint64_t stored = H5Dget_storage_size(dataset);
  const uint64_t can_hold =
      filtered ? (stored > UINT64_MAX / kMostCompression ? UINT64_MAX : stored * kMostCompression)
               : stored;
  if (n > can_hold / size) {
    throw Error(path_.string() + ": " + name + " declares " + std::to_string(n) +
                " elements, but its storage in the file holds " + std::to_string(stored) +
                " bytes" + (filtered ? ", compressed" : "") + " (never written or cut short)");
  }
}

Handle File::open_dataset(const std::string& name) const {
  if (!exists(name)) throw Error(path_.string() + ": missing dataset " + name);
  Handle dataset(check(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), "H5Dopen2", name));
  check_held_here(dataset.get(), name);
  return dataset;
}

Handle File::open_group(const std::string& name) const {
  if (!exists(name)) throw Error(path_.string() + ": missing group " + name);
  Handle group(check(H5Gopen2(id(), name.c_str(), H5P_DEFAULT), "H5Gopen2", name));
  check_held_here(group.get(), name);
  return group;
}

Handle File::create_group(const std::string& name) {
  if (name == "/") return Handle(check(H5Gopen2(id(), "/", H5P_DEFAULT), "H5Gopen2", name));
  std::string parent = parent_of(name);
  if (parent != "/" && !exists(parent)) create_group(parent);
  if (exists(name)) return open_group(name);
  Handle gcpl = group_creation_plist();
  return Handle(check(H5Gcreate2(id(), name.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT),
                      "H5Gcreate2", name));
}

void File::unlink(const std::string& name) {
  check_status(H5Ldelete(id(), name.c_str(), H5P_DEFAULT), "H5Ldelete", name);
}

std::vector<uint64_t> File::shape(const std::string& name) const {
  const Handle dataset = open_dataset(name);
  return shape_of(dataset.get(), name);
}

std::vector<uint64_t> File::shape_of(hid_t dataset, const std::string& name) const {
  Handle space(check(H5Dget_space(dataset), "H5Dget_space", name));
  int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) check(H5I_INVALID_HID, "H5Sget_simple_extent_ndims", name);
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  if (rank > 0)
    check_status(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr),
                 "H5Sget_simple_extent_dims", name);
  return {dims.begin(), dims.end()};
}

uint64_t File::length(const std::string& name) const {
  std::vector<uint64_t> dims = shape(name);
  if (dims.size() != 1) {
    throw Error(path_.string() + ": " + name + " has rank " + std::to_string(dims.size()) +
                ", expected 1");
  }
  return dims[0];
}

uint64_t File::stored_length(const std::string& name, size_t element_bytes) const {
  const uint64_t n = length(name);
  if (n > 0) check_declared_size(open_dataset(name).get(), name, n, element_bytes);
  return n;
}

File::CheckedRead File::open_for_read(const std::string& name,
                                      const std::vector<uint64_t>* expected, size_t size,
                                      int is_signed, bool is_float) const {
  CheckedRead read{open_dataset(name), 0};
  const std::vector<uint64_t> dims = shape_of(read.dataset.get(), name);
  if (expected != nullptr) {
    if (dims != *expected) {
      auto text = [](const std::vector<uint64_t>& d) {
        std::string t = "[";
        for (std::size_t i = 0; i < d.size(); ++i) t += (i ? ", " : "") + std::to_string(d[i]);
        return t + "]";
      };
      throw Error(path_.string() + ": " + name + " has shape " + text(dims) + ", expected " +
                  text(*expected));
    }
  } else if (dims.size() != 1) {
    throw Error(path_.string() + ": " + name + " has rank " + std::to_string(dims.size()) +
                ", expected 1");
  }
  read.elements = 1;
  for (uint64_t d : dims) {
    if (d != 0 && read.elements > UINT64_MAX / d) {
      throw Error(path_.string() + ": " + name + " declares more elements than 64 bits count");
    }
    read.elements *= d;
  }
  check_element_type(read.dataset.get(), name, size, is_signed, is_float);
  if (read.elements > 0) check_declared_size(read.dataset.get(), name, read.elements, size);
  return read;
}

namespace {

// For a read of `dataset` that failed: the filter in its pipeline that this
// HDF5 lacks (h5py's LZF is a plugin of h5py's own, and HDF5's message is
// about plugin folders), described for the error; "" where none is missing.
std::string missing_filter(hid_t dataset) {
  Handle dcpl(H5Dget_create_plist(dataset));
  const int filters = dcpl ? H5Pget_nfilters(dcpl.get()) : 0;
  for (int i = 0; i < filters; ++i) {
    unsigned flags = 0;
    std::size_t values = 0;
    std::array<char, 64> name{};
    const H5Z_filter_t filter = H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags,
                                               &values, nullptr, name.size(), name.data(), nullptr);
    if (filter >= 0 && H5Zfilter_avail(filter) <= 0) {
      return "is stored through HDF5 filter " + std::to_string(filter) + " (" +
             std::string(name.data()) +
             "), which this HDF5 cannot decode; rewrite it without that filter (h5py: "
             "compression=\"gzip\" or none)";
    }
  }
  return "";
}

}  // namespace

void File::read_raw(const CheckedRead& read, const std::string& name, hid_t mem_type,
                    void* out) const {
  if (read.elements == 0) return;
  if (H5Dread(read.dataset.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0) {
    const std::string filter = missing_filter(read.dataset.get());
    if (!filter.empty()) throw Error(path_.string() + ": " + name + " " + filter);
    check_status(-1, "H5Dread", name);
  }
}

void File::check_element_type(hid_t dataset, const std::string& name, size_t size, int is_signed,
                              bool is_float) const {
  Handle type(check(H5Dget_type(dataset), "H5Dget_type", name));
  H5T_class_t cls = H5Tget_class(type.get());
  bool ok = is_float ? cls == H5T_FLOAT
                     : cls == H5T_INTEGER &&
                           H5Tget_sign(type.get()) == (is_signed ? H5T_SGN_2 : H5T_SGN_NONE);
  if (!ok || H5Tget_size(type.get()) != size) {
    const auto bits = [](size_t bytes) { return std::to_string(bytes * 8); };
    const auto stored = [&]() -> std::string {
      const size_t bytes = H5Tget_size(type.get());
      if (cls == H5T_FLOAT) return "float" + bits(bytes);
      if (cls == H5T_INTEGER) {
        return (H5Tget_sign(type.get()) == H5T_SGN_NONE ? "uint" : "int") + bits(bytes);
      }
      if (cls == H5T_STRING) return "strings";
      return "another kind of element (HDF5 class " + std::to_string(static_cast<int>(cls)) + ")";
    };
    const std::string expected =
        is_float ? "float" + bits(size) : (is_signed != 0 ? "int" : "uint") + bits(size);
    throw Error(path_.string() + ": " + name + " has an unexpected element type: " + stored() +
                ", expected " + expected);
  }
}

std::optional<uint64_t> File::contiguous_offset_raw(const std::string& name, size_t size,
                                                    int is_signed, bool is_float,
                                                    uint64_t file_size) const {
  const uint64_t n = length(name);
  Handle dataset = open_dataset(name);
  check_element_type(dataset.get(), name, size, is_signed, is_float);
  Handle type(check(H5Dget_type(dataset.get()), "H5Dget_type", name));
  if (H5Tget_order(type.get()) != H5T_ORDER_LE && size > 1) return std::nullopt;
  Handle dcpl(check(H5Dget_create_plist(dataset.get()), "H5Dget_create_plist", name));
  if (H5Pget_layout(dcpl.get()) != H5D_CONTIGUOUS || H5Pget_external_count(dcpl.get()) != 0 ||
      H5Pget_nfilters(dcpl.get()) != 0) {
    return std::nullopt;
  }
  H5D_space_status_t status{};
  if (n == 0 || H5Dget_space_status(dataset.get(), &status) < 0 ||
      status != H5D_SPACE_STATUS_ALLOCATED) {
    return std::nullopt;
  }
  if (n > file_size / size || H5Dget_storage_size(dataset.get()) != n * size) return std::nullopt;
  const haddr_t offset = H5Dget_offset(dataset.get());
  if (offset == HADDR_UNDEF || offset > file_size || n * size > file_size - offset) {
    return std::nullopt;
  }
  return offset;
}

int File::descriptor() const {
  Handle fapl(check(H5Fget_access_plist(id()), "H5Fget_access_plist", "/"));
  if (H5Pget_driver(fapl.get()) != H5FD_SEC2) return -1;
  void* handle = nullptr;
  check_status(H5Fget_vfd_handle(id(), fapl.get(), &handle), "H5Fget_vfd_handle", "/");
  return handle != nullptr ? *static_cast<int*>(handle) : -1;
}

void File::check_metadata() const {
  // Every field but the times: the sizes (H5O_INFO_META_SIZE) are what read
  // the heaps' free-space headers.
  const auto visit = [](hid_t, const char*, const H5O_info_t*, void*) -> herr_t { return 0; };
  if (H5Ovisit2(id(), H5_INDEX_NAME, H5_ITER_NATIVE, visit, nullptr,
                H5O_INFO_BASIC | H5O_INFO_NUM_ATTRS | H5O_INFO_HDR | H5O_INFO_META_SIZE) < 0) {
    std::string detail = last_error_message();
    throw file_error(path_, std::string(kMetadataDamaged) + " (" +
                                (detail.empty() ? "H5Ovisit2 failed" : detail) +
                                "); imgpack's reads do not use it, but h5py's visititems() and "
                                "h5stat refuse the file");
  }
}

FileIdentity File::identity() const {
  struct stat st {};
  const int fd = descriptor();
  if (fd < 0 || ::fstat(fd, &st) != 0) throw system_error(path_, "cannot stat", errno);
  return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

void File::write_raw(const std::string& name, hid_t mem_type, const void* data, uint64_t n) {
  write_raw(name, mem_type, data, std::vector<uint64_t>{n});
}

void File::write_raw(const std::string& name, hid_t mem_type, const void* data,
                     const std::vector<uint64_t>& shape) {
  std::string parent = parent_of(name);
  if (parent != "/") create_group(parent);
  const std::vector<hsize_t> dims(shape.begin(), shape.end());
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  Handle space(check(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
                     "H5Screate_simple", name));
  Handle dcpl = dataset_creation_plist();
  Handle dataset(check(
      H5Dcreate2(id(), name.c_str(), mem_type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
      "H5Dcreate2", name));
  if (n == 0) return;
  check_status(H5Dwrite(dataset.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), "H5Dwrite",
               name);
}

namespace {

Handle utf8_string_type() {
  Handle type(H5Tcopy(H5T_C_S1));
  if (!type || H5Tset_size(type.get(), H5T_VARIABLE) < 0 ||
      H5Tset_cset(type.get(), H5T_CSET_UTF8) < 0) {
    throw Error("HDF5: cannot make a string type: " + last_error_message());
  }
  return type;
}

// The memory type that reads variable-length strings stored as `stored`:
// their bytes as they are, in the stored character set. HDF5 converts
// neither way between ASCII and UTF-8, and both are bytes to imgpack
// (h5py writes ASCII when asked to).
Handle string_read_type(hid_t stored) {
  Handle type = utf8_string_type();
  const H5T_cset_t cset = H5Tget_cset(stored);
  if (cset == H5T_CSET_ASCII && H5Tset_cset(type.get(), cset) < 0) {
    throw Error("HDF5: cannot make a string type: " + last_error_message());
  }
  return type;
}

// The memory HDF5 allocates for the strings of one variable-length read,
// freed when this goes out of scope. When such a read fails part-way (a
// damaged global heap), HDF5 1.10 drops the strings it had already converted
// without freeing them or handing them back; tracking every allocation frees
// them on that path too.
class VlenAllocations {
 public:
  // At most `budget` bytes in all: allocate() fails past it (HDF5's read
  // then fails too), and exceeded() says so.
  explicit VlenAllocations(uint64_t budget) : budget_(budget) {}
  VlenAllocations(const VlenAllocations&) = delete;
  VlenAllocations& operator=(const VlenAllocations&) = delete;
  ~VlenAllocations() {
    for (void* block : blocks_) std::free(block);
  }

  // A dataset transfer property list that allocates through this object.
  Handle transfer_plist() {
    Handle plist(H5Pcreate(H5P_DATASET_XFER));
    if (!plist || H5Pset_vlen_mem_manager(plist.get(), allocate, this, release, this) < 0) {
      throw Error("HDF5: cannot create a transfer property list: " + last_error_message());
    }
    return plist;
  }

 private:
  static void* allocate(size_t size, void* info) {
    auto* self = static_cast<VlenAllocations*>(info);
    if (size > self->budget_ - std::min(self->budget_, self->allocated_)) {
      self->exceeded_ = true;
      return nullptr;
    }
    self->allocated_ += size;
    void* block = std::malloc(size);
    if (block == nullptr) return nullptr;
    try {
      self->blocks_.push_back(block);
    } catch (const std::bad_alloc&) {
      std::free(block);
      return nullptr;
    }
    return block;
  }

  static void release(void* block, void* info) {
    auto& blocks = static_cast<VlenAllocations*>(info)->blocks_;
    auto it = std::find(blocks.rbegin(), blocks.rend(), block);
    if (it != blocks.rend()) blocks.erase(std::next(it).base());
    std::free(block);
  }

  std::vector<void*> blocks_;
  uint64_t budget_;
  uint64_t allocated_ = 0;  // never less on release: the budget is for the whole read
  bool exceeded_ = false;

 public:
  bool exceeded() const { return exceeded_; }
};

}  // namespace

detail::GlobalHeaps* File::heaps() const {
  unsigned intent = 0;
  check_status(H5Fget_intent(id(), &intent), "H5Fget_intent", "/");
  // A file open for writing is one imgpack is writing: its heaps may not be on disk yet.
  if ((intent & H5F_ACC_RDWR) != 0) return nullptr;
  if (!heaps_) heaps_ = std::make_shared<detail::GlobalHeaps>(id(), path_);
  return heaps_.get();
}

std::vector<std::string> File::read_strings(const std::string& name) const {
  Handle dataset = open_dataset(name);
  Handle type(check(H5Dget_type(dataset.get()), "H5Dget_type", name));
  if (H5Tget_class(type.get()) != H5T_STRING || H5Tis_variable_str(type.get()) <= 0) {
    throw Error(path_.string() + ": " + name + " is not a variable-length string dataset");
  }
  if (detail::GlobalHeaps* heaps = this->heaps()) heaps->check_references(dataset.get(), name);
  uint64_t n = length(name);
  // Each string's reference takes several bytes in the dataset's storage.
  if (n > 0) check_declared_size(dataset.get(), name, n, 1);
  std::vector<char*> raw(n, nullptr);
  Handle mem_type = string_read_type(type.get());
  // Each string lies once in the file's heaps: together, no more bytes than
  // the file (and a terminator each). Past that, references share a string,
  // which no writer does: a small file would make the read allocate many
  // times its size.
  hsize_t file_size = 0;
  check_status(H5Fget_filesize(id(), &file_size), "H5Fget_filesize", name);
  VlenAllocations strings(file_size + n);
  if (n > 0) {
    Handle xfer = strings.transfer_plist();
    if (H5Dread(dataset.get(), mem_type.get(), H5S_ALL, H5S_ALL, xfer.get(), raw.data()) < 0) {
      if (strings.exceeded()) {
        throw Error(path_.string() + ": " + name + "'s " + std::to_string(n) +
                    " strings take more bytes than the file holds (" + std::to_string(file_size) +
                    "): they share what they point at, which no writer does");
      }
      const std::string filter = missing_filter(dataset.get());
      if (!filter.empty()) throw Error(path_.string() + ": " + name + " " + filter);
      check(H5I_INVALID_HID, "H5Dread", name);
    }
  }
  std::vector<std::string> out;
  out.reserve(n);
  for (char* s : raw) out.emplace_back(s != nullptr ? s : "");
  return out;
}

void File::write_strings(const std::string& name, const std::vector<std::string>& values) {
  std::string parent = parent_of(name);
  if (parent != "/") create_group(parent);
  std::vector<const char*> raw;
  raw.reserve(values.size());
  for (const std::string& s : values) raw.push_back(s.c_str());
  hsize_t dims[1] = {values.size()};
  Handle type = utf8_string_type();
  Handle space(check(H5Screate_simple(1, dims, nullptr), "H5Screate_simple", name));
  Handle dcpl = dataset_creation_plist();
  Handle dataset(check(
      H5Dcreate2(id(), name.c_str(), type.get(), space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
      "H5Dcreate2", name));
  if (values.empty()) return;
  check_status(H5Dwrite(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data()),
               "H5Dwrite", name);
}

bool File::has_attr(const std::string& object, const std::string& attr) const {
  if (!exists(object)) return false;
  return H5Aexists_by_name(id(), object.c_str(), attr.c_str(), H5P_DEFAULT) > 0;
}

Handle File::open_attr(const std::string& object, const std::string& attr) const {
  if (!has_attr(object, attr)) {
    throw Error(path_.string() + ": missing attribute " + attr + " on " + object);
  }
  Handle a(check(H5Aopen_by_name(id(), object.c_str(), attr.c_str(), H5P_DEFAULT, H5P_DEFAULT),
                 "H5Aopen_by_name", object + "@" + attr));
  // Every attribute imgpack reads holds one value, read into one variable:
  // HDF5 would write every value of an array there.
  Handle space(check(H5Aget_space(a.get()), "H5Aget_space", object + "@" + attr));
  const hssize_t values = H5Sget_simple_extent_npoints(space.get());
  if (values != 1) {
    throw Error(path_.string() + ": attribute " + attr + " on " + object + " holds " +
                std::to_string(values) + " values, where one is expected");
  }
  return a;
}

Handle File::create_attr(const std::string& object, const std::string& attr, hid_t type) {
  if (has_attr(object, attr)) {
    check_status(H5Adelete_by_name(id(), object.c_str(), attr.c_str(), H5P_DEFAULT),
                 "H5Adelete_by_name", object + "@" + attr);
  }
  Handle space(check(H5Screate(H5S_SCALAR), "H5Screate", object + "@" + attr));
  return Handle(check(H5Acreate_by_name(id(), object.c_str(), attr.c_str(), type, space.get(),
                                        H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                      "H5Acreate_by_name", object + "@" + attr));
}

int64_t File::read_int_attr(const std::string& object, const std::string& attr) const {
  Handle a = open_attr(object, attr);
  Handle type(check(H5Aget_type(a.get()), "H5Aget_type", object + "@" + attr));
  if (H5Tget_class(type.get()) != H5T_INTEGER) {
    throw Error(path_.string() + ": attribute " + attr + " on " + object + " is not an integer");
  }
  int64_t value = 0;
  check_status(H5Aread(a.get(), H5T_NATIVE_INT64, &value), "H5Aread", object + "@" + attr);
  return value;
}

double File::read_double_attr(const std::string& object, const std::string& attr) const {
  Handle a = open_attr(object, attr);
  Handle type(check(H5Aget_type(a.get()), "H5Aget_type", object + "@" + attr));
  H5T_class_t cls = H5Tget_class(type.get());
  if (cls != H5T_FLOAT && cls != H5T_INTEGER) {
    throw Error(path_.string() + ": attribute " + attr + " on " + object + " is not a number");
  }
  double value = 0;
  check_status(H5Aread(a.get(), H5T_NATIVE_DOUBLE, &value), "H5Aread", object + "@" + attr);
  return value;
}

std::string File::read_string_attr(const std::string& object, const std::string& attr) const {
  Handle a = open_attr(object, attr);
  Handle type(check(H5Aget_type(a.get()), "H5Aget_type", object + "@" + attr));
  if (H5Tget_class(type.get()) != H5T_STRING) {
    throw Error(path_.string() + ": attribute " + attr + " on " + object + " is not a string");
  }
  if (H5Tis_variable_str(type.get()) > 0) {
    // The attribute's collection and reference must be sound before HDF5 reads them.
    if (detail::GlobalHeaps* heaps = this->heaps()) {
      Handle owner(check(H5Oopen(id(), object.c_str(), H5P_DEFAULT), "H5Oopen", object));
      heaps->check_attribute_references(owner.get(), object);
    }
    Handle mem_type = string_read_type(type.get());
    char* raw = nullptr;
    check_status(H5Aread(a.get(), mem_type.get(), &raw), "H5Aread", object + "@" + attr);
    std::string value = raw != nullptr ? raw : "";
    H5free_memory(raw);
    return value;
  }
  std::size_t size = H5Tget_size(type.get());
  std::string value(size, '\0');
  check_status(H5Aread(a.get(), type.get(), value.data()), "H5Aread", object + "@" + attr);
  value.resize(std::min(value.size(), value.find('\0')));
  return value;
}

void File::write_attr(const std::string& object, const std::string& attr, int64_t value) {
  Handle a = create_attr(object, attr, H5T_STD_I64LE);
  check_status(H5Awrite(a.get(), H5T_NATIVE_INT64, &value), "H5Awrite", object + "@" + attr);
}

void File::write_attr(const std::string& object, const std::string& attr, double value) {
  Handle a = create_attr(object, attr, H5T_IEEE_F64LE);
  check_status(H5Awrite(a.get(), H5T_NATIVE_DOUBLE, &value), "H5Awrite", object + "@" + attr);
}

void File::write_attr(const std::string& object, const std::string& attr,
                      const std::string& value) {
  Handle type = utf8_string_type();
  Handle a = create_attr(object, attr, type.get());
  const char* raw = value.c_str();
  check_status(H5Awrite(a.get(), type.get(), &raw), "H5Awrite", object + "@" + attr);
}

uint64_t File::read_uint64_attr(const std::string& object, const std::string& attr) const {
  Handle a = open_attr(object, attr);
  Handle type(check(H5Aget_type(a.get()), "H5Aget_type", object + "@" + attr));
  if (H5Tget_class(type.get()) != H5T_INTEGER || H5Tget_sign(type.get()) != H5T_SGN_NONE ||
      H5Tget_size(type.get()) != 8) {
    throw Error(path_.string() + ": attribute " + attr + " on " + object +
                " is not an unsigned 64-bit integer");
  }
  uint64_t value = 0;
  check_status(H5Aread(a.get(), H5T_NATIVE_UINT64, &value), "H5Aread", object + "@" + attr);
  return value;
}

void File::write_uint64_attr(const std::string& object, const std::string& attr, uint64_t value) {
  Handle a = create_attr(object, attr, H5T_STD_U64LE);
  check_status(H5Awrite(a.get(), H5T_NATIVE_UINT64, &value), "H5Awrite", object + "@" + attr);
}

std::vector<std::string> File::list(const std::string& group) const {
  Handle g = open_group(group);
  std::vector<std::string> names;
  check_status(H5Literate(g.get(), H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_names, &names),
               "H5Literate", group);
  return names;
}

}  // namespace imgpack::h5
