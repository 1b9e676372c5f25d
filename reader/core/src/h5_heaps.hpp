// Validation of HDF5 global heap collections (internal to imgpack's HDF5 layer).
//
// Variable-length data (every string imgpack stores) lives in global heap
// collections ("GCOL"), the one kind of HDF5 1.10 metadata without a
// checksum. HDF5 trusts them: a damaged object size, or a damaged object
// index in a string dataset's heap reference, makes H5Dread or H5Aread copy
// out of bounds (SIGSEGV), and a zero free-space size loops forever. Before
// h5::File reads a variable-length string it has GlobalHeaps check, with
// plain reads of the file, that every collection HDF5 may load is well
// formed and that every reference points at an object of the right size.
// The checks assume what imgpack and HDF5's defaults write: 8-byte file
// offsets and lengths (a file with others is refused) and strings as the
// only variable-length data (a heap object ending in a NUL byte is taken
// for damage). A user block (h5py's userblock_size) moves every address.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "files.hpp"

namespace imgpack::h5::detail {

class GlobalHeaps {
 public:
  // Finds and checks every collection of the open file `file_id` at `path`,
  // searching every byte outside the raw data of its contiguous datasets: a
  // "GCOL" signature on a 4096-byte boundary (imgpack's alignment puts each
  // collection there), or anywhere with a collection header's version and
  // reserved bytes after it (other writers, h5py among them, align none).
  // Throws imgpack::Error naming the file and the damaged collection, or
  // for a file whose offsets or lengths are not of 8 bytes.
  GlobalHeaps(hid_t file_id, const std::filesystem::path& path);

  // Checks the heap references of variable-length dataset `name` (open as
  // `dataset`): each non-empty one must name an object that exists and
  // holds exactly the referenced length. Contiguous, compact and unfiltered
  // chunked layouts are checked; a filtered chunk is left to its filter
  // (deflate's Adler-32, Fletcher-32). Throws imgpack::Error naming the
  // file, the dataset and the element.
  void check_references(hid_t dataset, const std::string& name);

  // Checks the heap references held by the variable-length attributes of
  // object `name` (open as `object`) as check_references does, when its
  // header is of version 1: the one kind without a checksum, which HDF5's
  // defaults (and so h5py) write. A version 2 header, as imgpack writes,
  // HDF5 checks itself. Throws imgpack::Error naming the file, the object
  // and the attribute, for a damaged reference or a header that is not
  // what HDF5 writes.
  void check_attribute_references(hid_t object, const std::string& name);

 private:
  struct Collection {
    uint64_t size = 0;
    std::vector<int64_t> object_size;  // by object index; -1 = no such object
  };
  // `referrer` names what points to the collection in errors ("" for none);
  // `have`, the file's bytes from `address` on where they were read already
  // (any number of them).
  const Collection& collection_at(uint64_t address, const std::string& referrer = {},
                                  std::span<const uint8_t> have = {});
  Collection parse(uint64_t address, const std::string& referrer,
                   std::span<const uint8_t> have) const;
  // Reads `length` bytes at HDF5 address `address` (past the user block).
  void read(uint64_t address, void* out, uint64_t length) const;
  // "byte N": where HDF5 address `address` lies in the file, for errors.
  std::string byte(uint64_t address) const;
  // One stored reference (sequence length, collection address, object
  // index): element `position` of `name` (-1: `name` is a scalar).
  void check_reference(const uint8_t* reference, const std::string& name, int64_t position);
  // One attribute message of object `name`, open as `owner`.
  void check_attribute_message(hid_t owner, std::span<const uint8_t> message,
                               const std::string& object);
  // Whether the datatype encoded in `type` (of attribute or dataset `name`)
  // is variable-length; throws imgpack::Error naming the file and `name`
  // for a string type whose characters are not of one byte.
  bool is_variable_length_type(std::span<const uint8_t> type, const std::string& name) const;
  // Whether attribute `attribute` of `owner`, whose datatype is shared (a
  // committed type stored elsewhere), is of a variable-length type.
  static bool is_variable_length(hid_t owner, const std::string& attribute);
  // Calls `visit` with the type and data of each unshared message of the
  // version 1 object header `info` describes (of object `name`), following
  // its continuation chunks; nothing for a version 2 header.
  void for_each_message(const H5O_info_t& info, const std::string& name,
                        const std::function<void(uint16_t, std::span<const uint8_t>)>& visit) const;

  std::filesystem::path path_;
  FileDescriptor fd_;
  uint64_t base_ = 0;       // the user block's size: where HDF5 address 0 lies
  uint64_t file_size_ = 0;  // from HDF5 address 0 to the end of the file
  std::map<uint64_t, Collection> collections_;
  std::set<uint64_t> attributes_checked_;  // object header addresses
};

}  // namespace imgpack::h5::detail
