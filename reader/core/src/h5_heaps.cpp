#include "h5_heaps.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <set>
#include <span>

#include "h5.hpp"
#include "imgpack/error.hpp"

namespace imgpack::h5::detail {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kCollectionAlignment = 4096;
constexpr uint64_t kHeaderBytes = 16;        // "GCOL", version, reserved, collection size
constexpr uint64_t kObjectHeaderBytes = 16;  // index, references, reserved, object size
constexpr uint64_t kReferenceBytes = 16;     // sequence length, collection address, object index
constexpr uint64_t kScanWindow = uint64_t{1} << 20;  // bytes read at a time looking for collections

uint64_t load_le(const uint8_t* p, int bytes) {
  uint64_t value = 0;
  for (int i = bytes - 1; i >= 0; --i) value = (value << 8) | p[i];
  return value;
}

struct Range {
  uint64_t begin = 0;
  uint64_t end = 0;
};

struct VisitState {
  std::vector<std::string> datasets;
};

herr_t collect_datasets(hid_t, const char* name, const H5O_info_t* info, void* client) {
  if (info->type == H5O_TYPE_DATASET) {
    static_cast<VisitState*>(client)->datasets.emplace_back(name);
  }
  return 0;
}

// The file ranges holding contiguous datasets' raw data, as HDF5 addresses
// (from the end of a user block of `base` bytes): a 4096-byte boundary
// there is pixel or column data, never a collection.
std::vector<Range> raw_data_ranges(hid_t file_id, uint64_t base) {
  VisitState state;
  if (H5Ovisit2(file_id, H5_INDEX_NAME, H5_ITER_NATIVE, collect_datasets, &state, H5O_INFO_BASIC) <
      0) {
    return {};  // the damage, if any, is reported by the read that follows
  }
  std::vector<Range> ranges;
  for (const std::string& name : state.datasets) {
    Handle dataset(H5Dopen2(file_id, name.c_str(), H5P_DEFAULT));
    if (!dataset) continue;
    Handle dcpl(H5Dget_create_plist(dataset.get()));
    if (!dcpl || H5Pget_layout(dcpl.get()) != H5D_CONTIGUOUS) continue;
    // H5Dget_offset counts from the start of the file, user block included.
    const haddr_t offset = H5Dget_offset(dataset.get());
    const hsize_t size = H5Dget_storage_size(dataset.get());
    if (offset == HADDR_UNDEF || offset < base || size == 0) continue;
    ranges.push_back({offset - base, offset - base + size});
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
  return ranges;
}

}  // namespace

GlobalHeaps::GlobalHeaps(hid_t file_id, const fs::path& path)
    : path_(path), fd_(open_for_reading(path)) {
  Handle fcpl(H5Fget_create_plist(file_id));
  std::size_t offset_bytes = 0, length_bytes = 0;
  hsize_t userblock = 0;
  if (!fcpl || H5Pget_sizes(fcpl.get(), &offset_bytes, &length_bytes) < 0 ||
      H5Pget_userblock(fcpl.get(), &userblock) < 0) {
    throw file_error(path, "cannot read its HDF5 file creation properties");
  }
  // The references, collections and object headers checked here are laid
  // out for 8-byte offsets and lengths, HDF5's default; HDF5 would trust a
  // damaged one in any other layout.
  if (offset_bytes != 8 || length_bytes != 8) {
    throw file_error(path, "uses " + std::to_string(offset_bytes) + "-byte file offsets and " +
                               std::to_string(length_bytes) +
                               "-byte lengths; imgpack reads HDF5 files with 8-byte ones, "
                               "HDF5's default (rewrite it with h5py's defaults)");
  }
  // HDF5 addresses count from the end of a user block (h5py's
  // userblock_size), which imgpack never writes.
  base_ = userblock;
  const uint64_t physical_size = fd_.size(path);
  file_size_ = physical_size > base_ ? physical_size - base_ : 0;
  // Every byte outside the raw data is searched, a window at a time: a
  // "GCOL" at a 4096-byte boundary is taken for a collection (imgpack puts
  // each one there), and anywhere else one followed by version 1 and three
  // zero bytes, as HDF5 writes a collection header (other writers, h5py
  // among them, do not align collections; no string imgpack stores holds a
  // NUL byte, so none can look like a header).
  const std::vector<Range> skip = raw_data_ranges(file_id, base_);
  std::size_t next_skip = 0;
  std::vector<uint8_t> window;
  uint64_t address = 0;
  while (address + kHeaderBytes <= file_size_) {
    while (next_skip < skip.size() && skip[next_skip].end <= address) ++next_skip;
    if (next_skip < skip.size() && skip[next_skip].begin <= address) {
      address = skip[next_skip].end;
      continue;
    }
    uint64_t end = std::min(file_size_, address + kScanWindow);
    if (next_skip < skip.size()) end = std::min(end, skip[next_skip].begin);
    // Headers that start before `end`, read whole (they may reach past it).
    window.resize(std::min(file_size_ - address, end - address + kHeaderBytes));
    read(address, window.data(), window.size());
    uint64_t next = end;  // where the next window starts
    for (uint64_t i = 0; i < end - address;) {
      const void* at = ::memmem(&window[i], window.size() - i, "GCOL", 4);
      if (at == nullptr) break;
      i = static_cast<uint64_t>(static_cast<const uint8_t*>(at) - window.data());
      if (i >= end - address || i + kHeaderBytes > window.size()) break;
      const bool aligned = (address + i) % kCollectionAlignment == 0;
      const bool header = window[i + 4] == 1;
      if (!aligned && !header) {
        ++i;
        continue;
      }
      const uint64_t size =
          collection_at(address + i, {}, std::span<const uint8_t>(window).subspan(i)).size;
      if (size >= end - address - i) {  // it reaches past the window
        next = address + i + size;
        break;
      }
      i += size;
    }
    address = next;
  }
}

void GlobalHeaps::read(uint64_t address, void* out, uint64_t length) const {
  read_exact_at(fd_.get(), path_, out, length, base_ + address);
}

std::string GlobalHeaps::byte(uint64_t address) const {
  return "byte " + std::to_string(base_ + address);
}

GlobalHeaps::Collection GlobalHeaps::parse(uint64_t address, const std::string& referrer,
                                           std::span<const uint8_t> have) const {
  const std::string where =
      (referrer.empty() ? "" : referrer + ": ") + "global heap collection at " + byte(address);
  auto damaged = [&](const std::string& problem) {
    return file_error(path_, where + " is damaged: " + problem);
  };
  if (address > file_size_ || file_size_ - address < kHeaderBytes) {
    throw damaged("it lies past the end of the file");
  }
  uint8_t header[kHeaderBytes];
  if (have.size() >= kHeaderBytes) {
    std::memcpy(header, have.data(), kHeaderBytes);
  } else {
    read(address, header, sizeof header);
  }
  if (std::memcmp(header, "GCOL", 4) != 0) throw damaged("no GCOL signature");
  if (header[4] != 1) throw damaged("version " + std::to_string(header[4]));
  Collection collection;
  collection.size = load_le(header + 8, 8);
  // HDF5 makes no collection smaller than 4096 bytes (H5HG_MINSIZE); a
  // smaller size is damage, which HDF5 itself would trust.
  if (collection.size < kCollectionAlignment) {
    throw damaged("it declares " + std::to_string(collection.size) +
                  " bytes, less than the 4096 of the smallest collection HDF5 writes");
  }
  if (collection.size > file_size_ - address) {
    throw damaged("it declares " + std::to_string(collection.size) + " bytes, the file has " +
                  std::to_string(file_size_ - address) + " from there");
  }
  std::vector<uint8_t> read_bytes;
  std::span<const uint8_t> bytes = have.first(std::min<std::size_t>(have.size(), collection.size));
  if (bytes.size() < collection.size) {
    read_bytes.resize(collection.size);
    read(address, read_bytes.data(), read_bytes.size());
    bytes = read_bytes;
  }
  // The walk HDF5 makes when it loads the collection, with the bounds checks
  // it leaves out, and what HDF5 guarantees when it writes one: objects
  // packed from the start, each zero-padded to 8 bytes, and the free space
  // (object 0), if any, last and reaching exactly to the end. A damaged
  // object size that keeps all of that true, and the string NUL-free, is
  // one that shrank to another 8-byte boundary: HDF5 then reads a shorter
  // string, never past its buffer.
  uint64_t p = kHeaderBytes;
  bool free_space_seen = false;
  while (p < collection.size) {
    if (collection.size - p < kObjectHeaderBytes) break;  // too small for an object: free space
    if (free_space_seen)
      throw damaged("an object follows the free space at offset " + std::to_string(p));
    const uint64_t index = load_le(&bytes[p], 2);
    const uint64_t size = load_le(&bytes[p + 8], 8);
    uint64_t need = 0;
    if (index == 0) {  // the free space, its size counting its own header
      need = size;
      free_space_seen = true;
      if (need != collection.size - p) {
        throw damaged("its free space at offset " + std::to_string(p) + " declares " +
                      std::to_string(size) + " bytes, " + std::to_string(collection.size - p) +
                      " remain");
      }
    } else {
      if (size > collection.size) {
        throw damaged("object " + std::to_string(index) + " declares " + std::to_string(size) +
                      " bytes");
      }
      need = kObjectHeaderBytes + (size + 7) / 8 * 8;
    }
    if (need < kObjectHeaderBytes || need > collection.size - p) {
      throw damaged("object " + std::to_string(index) + " at offset " + std::to_string(p) +
                    " ends outside the collection");
    }
    if (index != 0) {
      // Every heap object imgpack writes is a string, stored without its
      // terminator: a trailing NUL means the size grew into the padding,
      // and HDF5 would copy that many bytes into a buffer sized by the
      // string's (intact) length.
      if (size > 0 && bytes[p + kObjectHeaderBytes + size - 1] == 0) {
        throw damaged("object " + std::to_string(index) + " at offset " + std::to_string(p) +
                      " ends in a NUL byte (its size is wrong)");
      }
      for (uint64_t i = p + kObjectHeaderBytes + size; i < p + need; ++i) {
        if (bytes[i] != 0) {
          throw damaged("object " + std::to_string(index) + " at offset " + std::to_string(p) +
                        " is followed by non-zero padding (its size is wrong)");
        }
      }
      if (collection.object_size.size() <= index) collection.object_size.resize(index + 1, -1);
      if (collection.object_size[index] >= 0) {
        throw damaged("object " + std::to_string(index) + " appears twice");
      }
      collection.object_size[index] = static_cast<int64_t>(size);
    }
    p += need;
  }
  return collection;
}

const GlobalHeaps::Collection& GlobalHeaps::collection_at(uint64_t address,
                                                          const std::string& referrer,
                                                          std::span<const uint8_t> have) {
  auto it = collections_.find(address);
  if (it == collections_.end())
    it = collections_.emplace(address, parse(address, referrer, have)).first;
  return it->second;
}

void GlobalHeaps::check_references(hid_t dataset, const std::string& name) {
  // Its datatype, where an unchecksummed (version 1) header holds it.
  H5O_info_t header{};
  if (H5Oget_info2(dataset, &header, H5O_INFO_BASIC | H5O_INFO_HDR) >= 0) {
    constexpr uint16_t kDatatype = 0x03;
    for_each_message(header, name, [&](uint16_t type, std::span<const uint8_t> message) {
      if (type == kDatatype && message.size() >= 8) is_variable_length_type(message, name);
    });
  }
  Handle dcpl(H5Dget_create_plist(dataset));
  Handle space(H5Dget_space(dataset));
  if (!dcpl || !space) return;  // HDF5 reports it
  const hssize_t points = H5Sget_simple_extent_npoints(space.get());
  if (points <= 0) return;  // nothing stored: HDF5 reads no heap
  const auto n = static_cast<uint64_t>(points);
  auto check_all = [&](std::span<const uint8_t> raw, uint64_t first, uint64_t count) {
    for (uint64_t i = 0; i < count; ++i) {
      check_reference(raw.data() + i * kReferenceBytes, name, static_cast<int64_t>(first + i));
    }
  };
  auto damaged = [&](const std::string& problem) {
    return file_error(path_, name + " is damaged: " + problem);
  };
  switch (H5Pget_layout(dcpl.get())) {
    case H5D_CONTIGUOUS: {
      haddr_t offset = H5Dget_offset(dataset);  // from the start of the file
      if (offset == HADDR_UNDEF) return;        // never written: HDF5 reads the fill value
      offset = offset >= base_ ? offset - base_ : file_size_ + 1;
      const uint64_t bytes = H5Dget_storage_size(dataset);
      if (n > file_size_ / kReferenceBytes || bytes != n * kReferenceBytes || offset > file_size_ ||
          bytes > file_size_ - offset) {
        throw damaged(std::to_string(n) + " strings cannot be stored in " + std::to_string(bytes) +
                      " bytes at " + byte(offset));
      }
      std::vector<uint8_t> raw(bytes);
      read(offset, raw.data(), raw.size());
      check_all(raw, 0, n);
      return;
    }
    case H5D_CHUNKED: {
      // A chunk that went through a filter is left to the filter's checksum
      // (deflate's Adler-32, Fletcher-32). One that every filter passed over
      // (HDF5 skips the shuffle of variable-length elements, and marks it so
      // in the chunk's filter mask) lies as unfiltered chunks do, and is read
      // and checked as it lies.
      hsize_t chunk_elements = 0;
      const int filters = H5Pget_nfilters(dcpl.get());
      if (filters < 0 || filters > 32 || H5Sget_simple_extent_ndims(space.get()) != 1 ||
          H5Pget_chunk(dcpl.get(), 1, &chunk_elements) != 1 || chunk_elements == 0) {
        return;
      }
      const uint64_t skipped_all = filters == 32 ? 0xFFFFFFFFU : (uint64_t{1} << filters) - 1;
      std::vector<uint8_t> raw;
      for (uint64_t first = 0; first < n; first += chunk_elements) {
        hsize_t at = first;
        unsigned filter_mask = 0;
        haddr_t address = HADDR_UNDEF;
        hsize_t bytes = 0;
        if (H5Dget_chunk_info_by_coord(dataset, &at, &filter_mask, &address, &bytes) < 0) {
          return;  // HDF5 reports the damaged chunk index when it reads
        }
        if (address == HADDR_UNDEF) continue;                      // never written: the fill value
        if ((filter_mask & skipped_all) != skipped_all) continue;  // filtered
        const uint64_t count = std::min<uint64_t>(chunk_elements, n - first);
        if (bytes != chunk_elements * kReferenceBytes || address > file_size_ ||
            bytes > file_size_ - address) {
          throw damaged("the chunk of elements " + std::to_string(first) + " on at " +
                        byte(address) + " cannot hold " + std::to_string(chunk_elements) +
                        " strings in " + std::to_string(bytes) + " bytes");
        }
        raw.resize(count * kReferenceBytes);
        read(address, raw.data(), raw.size());
        check_all(raw, first, count);
      }
      return;
    }
    case H5D_COMPACT: {
      // The references lie in the object header's layout message (type 8):
      // version 3, class 0 (compact), their size, then the references.
      H5O_info_t info{};
      if (H5Oget_info2(dataset, &info, H5O_INFO_BASIC | H5O_INFO_HDR) < 0) return;
      constexpr uint16_t kLayout = 0x08;
      for_each_message(info, name, [&](uint16_t type, std::span<const uint8_t> message) {
        if (type != kLayout || message.size() < 4 || message[0] != 3 || message[1] != 0) return;
        const uint64_t bytes = load_le(&message[2], 2);
        if (bytes != n * kReferenceBytes || bytes > message.size() - 4) {
          throw damaged(std::to_string(n) + " strings cannot be stored in the " +
                        std::to_string(bytes) + " bytes of its compact layout");
        }
        check_all(message.subspan(4), 0, n);
      });
      return;
    }
    default:
      return;
  }
}

void GlobalHeaps::check_reference(const uint8_t* reference, const std::string& name,
                                  int64_t position) {
  const uint64_t length = load_le(reference, 4);
  const uint64_t address = load_le(reference + 4, 8);
  const uint64_t index = load_le(reference + 12, 4);
  // Null: HDF5 reads no heap object. An empty string that is not null (as
  // h5py writes one: a heap object of no bytes) is read from its object.
  if (address == 0) return;
  // Named only where there is something to say (a table holds millions).
  auto element = [&] { return position < 0 ? name : name + "[" + std::to_string(position) + "]"; };
  const auto known = collections_.find(address);
  const Collection& collection =
      known != collections_.end() ? known->second : collection_at(address, element());
  if (index == 0 || index >= collection.object_size.size() || collection.object_size[index] < 0) {
    throw file_error(path_, element() + " is damaged: it names object " + std::to_string(index) +
                                " of the global heap collection at " + byte(address) +
                                ", which has no such object");
  }
  if (static_cast<uint64_t>(collection.object_size[index]) != length) {
    throw file_error(path_, element() + " is damaged: its length " + std::to_string(length) +
                                " differs from the " +
                                std::to_string(collection.object_size[index]) +
                                " bytes of its heap object");
  }
}

void GlobalHeaps::check_attribute_references(hid_t object, const std::string& name) {
  H5O_info_t info{};
  if (H5Oget_info2(object, &info, H5O_INFO_BASIC | H5O_INFO_HDR) < 0) return;  // HDF5 reports it
  if (!attributes_checked_.insert(info.addr).second) return;
  constexpr uint16_t kAttribute = 0x0C;
  for_each_message(info, name, [&](uint16_t type, std::span<const uint8_t> message) {
    if (type == kAttribute) check_attribute_message(object, message, name);
  });
}

bool GlobalHeaps::is_variable_length_type(std::span<const uint8_t> type,
                                          const std::string& name) const {
  // A datatype message: class (low 4 bits) and version, three bytes of class
  // bits, the size, then the class's properties; a variable-length type's
  // (class 9) are its base type, the same way, whose size a string's
  // (class bits 1) is its character's: 1 byte. HDF5 trusts that size
  // (a damaged one made H5Aread fill gigabytes).
  constexpr uint8_t kVariableLength = 9;
  if ((type[0] & 0x0F) != kVariableLength) return false;
  constexpr uint8_t kString = 1;
  constexpr std::size_t kTypeHeaderBytes = 8;
  if ((type[1] & 0x0F) == kString) {
    if (type.size() < 2 * kTypeHeaderBytes) {
      throw file_error(path_, name + " is damaged: its string type does not fit its message");
    }
    const uint64_t character = load_le(&type[kTypeHeaderBytes + 4], 4);
    if (character != 1) {
      throw file_error(path_, name + " is damaged: its variable-length string type declares " +
                                  std::to_string(character) + "-byte characters");
    }
  }
  return true;
}

bool GlobalHeaps::is_variable_length(hid_t owner, const std::string& attribute) {
  const Handle opened(H5Aopen(owner, attribute.c_str(), H5P_DEFAULT));
  if (!opened) return false;  // HDF5 reports it when it is read
  const Handle type(H5Aget_type(opened.get()));
  if (!type) return false;
  const H5T_class_t type_class = H5Tget_class(type.get());
  return type_class == H5T_VLEN || (type_class == H5T_STRING && H5Tis_variable_str(type.get()) > 0);
}

void GlobalHeaps::for_each_message(
    const H5O_info_t& info, const std::string& name,
    const std::function<void(uint16_t, std::span<const uint8_t>)>& visit) const {
  if (info.hdr.version != 1) return;  // version 2: HDF5 verified its checksums
  // A version 1 header: a 16-byte prefix (version, reserved byte, message
  // count, reference count, size of the first chunk, padding), then chunks
  // of messages, each message 8 bytes of type, size and flags before its
  // data, 8-byte aligned. A continuation message (type 0x10) names the next
  // chunk by address and length.
  auto damaged = [&](const std::string& problem) {
    return file_error(
        path_, name + ": its object header at " + byte(info.addr) + " is damaged: " + problem);
  };
  constexpr uint64_t kPrefixBytes = 16;
  constexpr uint64_t kMessageHeaderBytes = 8;
  constexpr uint16_t kContinuation = 0x10;
  constexpr uint8_t kShared = 0x02;  // the message's data lives elsewhere
  if (info.addr > file_size_ || file_size_ - info.addr < kPrefixBytes) {
    throw damaged("it lies past the end of the file");
  }
  uint8_t prefix[kPrefixBytes];
  read(info.addr, prefix, sizeof prefix);
  std::vector<Range> chunks{{info.addr + kPrefixBytes, info.addr + kPrefixBytes}};
  chunks.front().end += load_le(prefix + 8, 4);
  std::set<uint64_t> seen;  // chunk addresses: HDF5 would loop on one met twice
  std::vector<uint8_t> chunk;
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    const Range range = chunks[c];
    if (range.begin > file_size_ || range.end > file_size_ || range.end < range.begin) {
      throw damaged("a chunk of it lies past the end of the file");
    }
    if (!seen.insert(range.begin).second) throw damaged("its chunks form a loop");
    chunk.resize(range.end - range.begin);
    read(range.begin, chunk.data(), chunk.size());
    for (uint64_t p = 0; p + kMessageHeaderBytes <= chunk.size();) {
      const auto type = static_cast<uint16_t>(load_le(&chunk[p], 2));
      const uint64_t size = load_le(&chunk[p + 2], 2);
      const uint8_t flags = chunk[p + 4];
      p += kMessageHeaderBytes;
      if (size > chunk.size() - p) {
        throw damaged("a message at " + byte(range.begin + p) + " reaches past its chunk");
      }
      const std::span<const uint8_t> data(&chunk[p], size);
      if (type == kContinuation && size >= 16) {
        const uint64_t begin = load_le(data.data(), 8);
        const uint64_t length = load_le(data.data() + 8, 8);
        chunks.push_back({begin, begin + std::min(length, file_size_)});
      } else if ((flags & kShared) == 0) {
        visit(type, data);
      }
      p += size;
    }
  }
}

// An attribute message: version, flags (version 2 and 3; two bits for a
// shared datatype or dataspace), the sizes of its name, datatype and
// dataspace, an encoding byte (version 3), then those three (each padded to
// 8 bytes in version 1) and the data. Data of a variable-length datatype
// (class 9) is one 16-byte heap reference per element.
void GlobalHeaps::check_attribute_message(hid_t owner, std::span<const uint8_t> message,
                                          const std::string& object) {
  if (message.size() < 8) return;
  const uint8_t version = message[0];
  constexpr uint8_t kSharedType = 0x01;
  constexpr uint8_t kSharedSpace = 0x02;
  if (version < 1 || version > 3 || (version > 1 && (message[1] & kSharedSpace) != 0)) return;
  // A shared (committed) datatype is stored elsewhere: HDF5 says what it is.
  const bool shared_type = version > 1 && (message[1] & kSharedType) != 0;
  auto padded = [&](uint64_t size) { return version == 1 ? (size + 7) / 8 * 8 : size; };
  const uint64_t name_size = load_le(&message[2], 2);
  const uint64_t type_size = load_le(&message[4], 2);
  const uint64_t space_size = load_le(&message[6], 2);
  const uint64_t name_at = version == 3 ? 9 : 8;
  const uint64_t type_at = name_at + padded(name_size);
  const uint64_t space_at = type_at + padded(type_size);
  const uint64_t data_at = space_at + padded(space_size);
  if (data_at > message.size() || type_size < 8 || space_size < 4) return;
  const std::size_t name_length =
      std::find(&message[name_at], &message[name_at] + name_size, 0) - &message[name_at];
  const std::string attribute_name(reinterpret_cast<const char*>(&message[name_at]), name_length);
  const std::string attribute = object + "@" + attribute_name;
  if (shared_type) {
    if (!is_variable_length(owner, attribute_name)) return;
  } else {
    if (!is_variable_length_type(message.subspan(type_at, type_size), attribute)) return;
  }
  // The dataspace: version, rank, flags, then (version 1) five reserved
  // bytes or (version 2) a type byte, 2 meaning null; then the dimensions.
  const uint8_t space_version = message[space_at];
  const uint64_t rank = message[space_at + 1];
  if (space_version == 2 && message[space_at + 3] == 2) return;  // null: no data
  const uint64_t dims_at = space_at + (space_version == 1 ? 8 : 4);
  if (dims_at + rank * 8 > message.size()) {
    throw file_error(path_, attribute + " is damaged: its dataspace does not fit its message");
  }
  uint64_t elements = 1;
  for (uint64_t d = 0; d < rank; ++d) {
    const uint64_t extent = load_le(&message[dims_at + d * 8], 8);
    if (extent != 0 && elements > (message.size() - data_at) / kReferenceBytes / extent) {
      elements = UINT64_MAX;
      break;
    }
    elements *= extent;
  }
  if (elements > (message.size() - data_at) / kReferenceBytes) {
    throw file_error(path_, attribute + " is damaged: its dataspace declares more strings than " +
                                "its message holds");
  }
  for (uint64_t i = 0; i < elements; ++i) {
    check_reference(&message[data_at + i * kReferenceBytes], attribute,
                    rank == 0 ? -1 : static_cast<int64_t>(i));
  }
}

}  // namespace imgpack::h5::detail
