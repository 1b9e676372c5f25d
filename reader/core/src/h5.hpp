// A thin, exception-safe layer over the HDF5 C API.
//
// Handle owns one hid_t of any kind and closes it with the matching H5?close.
// File wraps an open file with typed helpers that read and write whole 1-D
// datasets and attributes, turning every failure into an imgpack::Error naming
// the file, the object and the HDF5 call ("index.h5: H5Dopen2(/samples/path): ...").
//
// HDF5 (Debian's thread-safe build) serialises every call behind one global
// lock, so this layer is for metadata and bulk writes, never a per-record path.
// Handles are not shared between threads.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "files.hpp"
#include "imgpack/format.hpp"

namespace imgpack::h5 {

namespace detail {
class GlobalHeaps;
}

// Turns off HDF5's printing of its error stack to stderr for the calling
// thread (HDF5 keeps that setting per thread). Every entry point in this file
// calls it; code that calls HDF5 directly from another thread calls it first.
void silence_errors();

// What HDF5's current error stack says was wrong (its innermost message), or
// when the operating system refused a call, what failed with the system's
// reason ("file write failed (No space left on device)"); "" if empty.
std::string last_error_message();

// A hold on the process's fork barrier, which every File takes while it is
// open. HDF5's thread-safe build guards every call with one global lock, and
// a child forked while another thread held it would find it locked forever:
// a fork() waits (pthread_atfork) until no File is open in another thread,
// and a File opened meanwhile waits for the fork. Move-only. A File is used
// and closed on the thread that opened it.
class ForkPass {
 public:
  ForkPass() = default;
  // Waits while a fork is under way, unless this thread holds a pass already
  // (it would wait for itself).
  static ForkPass take();
  ~ForkPass() { release(); }
  ForkPass(ForkPass&& other) noexcept : held_(std::exchange(other.held_, false)) {}
  ForkPass& operator=(ForkPass&& other) noexcept {
    if (this != &other) {
      release();
      held_ = std::exchange(other.held_, false);
    }
    return *this;
  }
  ForkPass(const ForkPass&) = delete;
  ForkPass& operator=(const ForkPass&) = delete;
  void release() noexcept;

 private:
  bool held_ = false;
};

// How many passes are held now in the process (for tests).
uint64_t fork_passes_held();

class Handle {
 public:
  Handle() = default;
  explicit Handle(hid_t id) : id_(id) {}
  ~Handle() { reset(); }
  Handle(Handle&& other) noexcept : id_(other.release()) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = other.release();
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  hid_t get() const { return id_; }
  explicit operator bool() const { return id_ >= 0; }
  hid_t release() {
    hid_t id = id_;
    id_ = H5I_INVALID_HID;
    return id;
  }
  // Closes now; returns the status of the close (negative on failure).
  herr_t close();
  void reset() { (void)close(); }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

// The native HDF5 type for a C++ arithmetic type.
template <class T>
hid_t native_type() {
  if constexpr (std::is_same_v<T, uint8_t>)
    return H5T_NATIVE_UINT8;
  else if constexpr (std::is_same_v<T, int8_t>)
    return H5T_NATIVE_INT8;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return H5T_NATIVE_UINT16;
  else if constexpr (std::is_same_v<T, int16_t>)
    return H5T_NATIVE_INT16;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return H5T_NATIVE_UINT32;
  else if constexpr (std::is_same_v<T, int32_t>)
    return H5T_NATIVE_INT32;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return H5T_NATIVE_UINT64;
  else if constexpr (std::is_same_v<T, int64_t>)
    return H5T_NATIVE_INT64;
  else if constexpr (std::is_same_v<T, float>)
    return H5T_NATIVE_FLOAT;
  else if constexpr (std::is_same_v<T, double>)
    return H5T_NATIVE_DOUBLE;
  else
    static_assert(sizeof(T) == 0, "no HDF5 native type for T");
}

// An open HDF5 file. Move-only; not for concurrent use.
//
// Reading a damaged file throws imgpack::Error; it never crashes. HDF5 checks
// the checksums of its 1.10 metadata itself; the one unchecksummed kind that
// HDF5 trusts, the global heap holding variable-length strings, is checked
// by File before a file opened read-only has a string read from it.
class File {
 public:
  // Opens read-only. Errors name the file; a locking failure (NFS) suggests
  // HDF5_USE_FILE_LOCKING=FALSE.
  static File open_read(const std::filesystem::path& path);
  // Opens for reading and writing.
  static File open_write(const std::filesystem::path& path);
  // Opens for reading and writing a file that a writer killed while it had
  // it open left marked as open for writing in its superblock (which makes
  // every other open fail), clearing the mark as h5clear does.
  static File open_write_clearing_mark(const std::filesystem::path& path);
  // Creates (truncating) with the format's settings: HDF5 1.10 object format
  // bounds, and every allocation of at least `alignment_threshold` bytes
  // aligned to 4096.
  static File create(const std::filesystem::path& path,
                     uint64_t alignment_threshold = format::kAlignmentThreshold);

  File() = default;
  ~File() = default;  // members in reverse: the file closed, then its fork pass released
  File(File&&) noexcept = default;
  // Closes this file before its fork pass goes (a member-wise assignment
  // would release the pass first, and a fork could come while HDF5 closes it).
  File& operator=(File&& other) noexcept {
    if (this != &other) {
      heaps_.reset();
      handle_.reset();
      handle_ = std::move(other.handle_);
      path_ = std::move(other.path_);
      heaps_ = std::move(other.heaps_);
      pass_ = std::move(other.pass_);
    }
    return *this;
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  hid_t id() const { return handle_.get(); }
  const std::filesystem::path& path() const { return path_; }
  // Flushes and closes, throwing on failure (the destructor closes silently).
  void close();

  // Whether `object` (a path from the root) names an object, its soft links
  // followed here; throws naming the link where the path goes through a
  // link to another file (an external link) or more than 40 soft links.
  bool exists(const std::string& object) const;
  Handle open_dataset(const std::string& name) const;
  Handle open_group(const std::string& name) const;
  // Creates the group and any missing parents, without creation times.
  Handle create_group(const std::string& name);
  void unlink(const std::string& name);

  // Number of elements of a 1-D dataset; throws if it is not 1-D.
  uint64_t length(const std::string& name) const;
  // The same, for a count used before the dataset is read (to size what is
  // made from it): throws where its storage in the file cannot hold that
  // many elements of at least `element_bytes` (check_declared_size()).
  uint64_t stored_length(const std::string& name, size_t element_bytes) const;
  std::vector<uint64_t> shape(const std::string& name) const;

  // Whole 1-D datasets. read() checks the stored class and size match T.
  template <class T>
  std::vector<T> read(const std::string& name) const {
    return read_checked<T>(name, nullptr);
  }
  template <class T>
  void write(const std::string& name, std::span<const T> values) {
    write_raw(name, native_type<T>(), values.data(), values.size());
  }
  template <class T>
  void write(const std::string& name, const std::vector<T>& values) {
    write<T>(name, std::span<const T>(values));
  }
  // Whole datasets of any rank, their elements in row-major order. read_shaped()
  // checks the stored shape is `expected` (before allocating anything) and the
  // stored class and size match T.
  template <class T>
  std::vector<T> read_shaped(const std::string& name, const std::vector<uint64_t>& expected) const {
    return read_checked<T>(name, &expected);
  }
  // `values` holds the product of `shape` elements.
  template <class T>
  void write_shaped(const std::string& name, std::span<const T> values,
                    const std::vector<uint64_t>& shape) {
    write_raw(name, native_type<T>(), values.data(), shape);
  }
  std::vector<std::string> read_strings(const std::string& name) const;
  void write_strings(const std::string& name, const std::vector<std::string>& values);

  // Where the elements of 1-D dataset `name` lie in the file, when they can
  // be used in place (memory-mapped): contiguous, allocated, not external,
  // little-endian, exactly length() * sizeof(T) bytes that end inside the
  // file's `file_size` bytes; std::nullopt where they cannot (read() them
  // instead). Throws, as read() does, for an element type other than T's.
  template <class T>
  std::optional<uint64_t> contiguous_offset(const std::string& name, uint64_t file_size) const {
    return contiguous_offset_raw(name, sizeof(T), std::is_signed_v<T> ? 1 : 0,
                                 std::is_floating_point_v<T>, file_size);
  }

  // The descriptor HDF5 reads the open file through (its default sec2
  // driver), for mapping or identifying the very file HDF5 opened; -1 under
  // another driver. Owned by HDF5: valid until the file is closed.
  int descriptor() const;
  // Which file HDF5 has open (st_dev, st_ino of its descriptor).
  FileIdentity identity() const;

  // Reads what h5py's visititems() and h5stat read of every object besides
  // its contents: the header and the sizes of its B-trees and heaps, free-
  // space headers included. The reads above never touch a fractal heap's
  // free-space header, so a bit flipped there passes them while h5py refuses
  // the file. Throws imgpack::Error naming the file, saying kMetadataDamaged
  // and HDF5's reason.
  void check_metadata() const;
  static constexpr const char* kMetadataDamaged = "HDF5 metadata beside the tables is damaged";

  // Attributes on the object at `object` ("/" for the root).
  bool has_attr(const std::string& object, const std::string& attr) const;
  int64_t read_int_attr(const std::string& object, const std::string& attr) const;
  double read_double_attr(const std::string& object, const std::string& attr) const;
  std::string read_string_attr(const std::string& object, const std::string& attr) const;
  void write_attr(const std::string& object, const std::string& attr, int64_t value);
  void write_attr(const std::string& object, const std::string& attr, double value);
  void write_attr(const std::string& object, const std::string& attr, const std::string& value);
  // An unsigned 64-bit attribute (checksums), stored as H5T_STD_U64LE; the
  // reader refuses any other type.
  uint64_t read_uint64_attr(const std::string& object, const std::string& attr) const;
  void write_uint64_attr(const std::string& object, const std::string& attr, uint64_t value);

  // Names of the links directly inside a group, in name order.
  std::vector<std::string> list(const std::string& group) const;

  // Throws "PATH: CALL(OBJECT) failed: HDF5 message" if id < 0, else returns it.
  hid_t check(hid_t id, const char* call, const std::string& object) const;
  void check_status(herr_t status, const char* call, const std::string& object) const;

 private:
  File(ForkPass pass, Handle handle, std::filesystem::path path)
      : pass_(std::move(pass)), handle_(std::move(handle)), path_(std::move(path)) {}
  // A dataset opened for a whole read, and its number of elements once
  // open_for_read() has checked them.
  struct CheckedRead {
    Handle dataset;
    uint64_t elements = 0;
  };
  // Opens dataset `name` once and checks, before anything is allocated for
  // it: its shape (`*expected`, or rank 1 where `expected` is null), its
  // element type (this class, size and sign), and that its storage in the
  // file can hold what it declares (check_declared_size()).
  CheckedRead open_for_read(const std::string& name, const std::vector<uint64_t>* expected,
                            size_t size, int is_signed, bool is_float) const;
  void read_raw(const CheckedRead& read, const std::string& name, hid_t mem_type, void* out) const;
  template <class T>
  std::vector<T> read_checked(const std::string& name,
                              const std::vector<uint64_t>* expected) const {
    const CheckedRead read = open_for_read(name, expected, sizeof(T), std::is_signed_v<T> ? 1 : 0,
                                           std::is_floating_point_v<T>);
    std::vector<T> out(read.elements);
    read_raw(read, name, native_type<T>(), out.data());
    return out;
  }
  // The dimensions of an open dataset.
  std::vector<uint64_t> shape_of(hid_t dataset, const std::string& name) const;
  void write_raw(const std::string& name, hid_t mem_type, const void* data, uint64_t n);
  void write_raw(const std::string& name, hid_t mem_type, const void* data,
                 const std::vector<uint64_t>& shape);
  // Throws naming the dataset where its data lies in other files (a virtual
  // dataset's sources, external storage); exists() refuses links to other
  // files. imgpack reads and maps only what its own file holds, and writes
  // to no other.
  void check_held_here(hid_t object, const std::string& name) const;
  // Throws naming the dataset where its `n` elements of `size` bytes are more
  // than its storage in the file can hold (never written, cut short, or more
  // than any compression gives): no read then allocates for what a small
  // file only declares.
  void check_declared_size(hid_t dataset, const std::string& name, uint64_t n, size_t size) const;
  // Throws unless the dataset's element type is of this class, size and sign.
  void check_element_type(hid_t dataset, const std::string& name, size_t size, int is_signed,
                          bool is_float) const;
  std::optional<uint64_t> contiguous_offset_raw(const std::string& name, size_t size, int is_signed,
                                                bool is_float, uint64_t file_size) const;
  // Attribute `attr` of `object`, which must exist and hold exactly one value
  // (scalar or of one element); throws Error naming the file otherwise.
  Handle open_attr(const std::string& object, const std::string& attr) const;
  Handle create_attr(const std::string& object, const std::string& attr, hid_t type);

  // The checked global heaps, made on the first string read (read-only files only).
  detail::GlobalHeaps* heaps() const;

  ForkPass pass_;  // first: released after the file is closed
  Handle handle_;
  std::filesystem::path path_;
  mutable std::shared_ptr<detail::GlobalHeaps> heaps_;
};

// Property lists for new objects: no creation/modification times, so output
// is byte-identical across runs.
Handle group_creation_plist();
Handle dataset_creation_plist();

}  // namespace imgpack::h5
