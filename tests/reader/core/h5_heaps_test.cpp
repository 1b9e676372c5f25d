// h5::File's checks of HDF5 global heap collections, the unchecksummed
// metadata that holds variable-length strings (reader/src/h5_heaps.cpp).
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <stdexcept>

#include "h5.hpp"
#include "imgpack/error.hpp"
#include "test_support.hpp"

namespace imgpack::h5 {
namespace {

namespace fs = std::filesystem;

// The variable-length UTF-8 string type that h5py writes a str as.
Handle library_string_type() {
  Handle type(H5Tcopy(H5T_C_S1));
  if (!type || H5Tset_size(type.get(), H5T_VARIABLE) < 0 ||
      H5Tset_cset(type.get(), H5T_CSET_UTF8) < 0) {
    throw std::runtime_error("cannot make a string type");
  }
  return type;
}

// Writes the scalar string attribute `name` of `location`, as the library's
// defaults (and h5py) do.
void write_string_attribute(hid_t location, const std::string& name, const std::string& value) {
  const Handle type = library_string_type();
  const Handle scalar(H5Screate(H5S_SCALAR));
  const Handle attribute(
      H5Acreate2(location, name.c_str(), type.get(), scalar.get(), H5P_DEFAULT, H5P_DEFAULT));
  const char* raw = value.c_str();
  if (!attribute || H5Awrite(attribute.get(), type.get(), static_cast<const void*>(&raw)) < 0) {
    throw std::runtime_error("cannot write attribute " + name);
  }
}

uint64_t collection_offset(const std::string& bytes, std::size_t nth = 0) {
  for (std::size_t at = 0; at + 4 <= bytes.size(); at += 4096) {
    if (bytes.compare(at, 4, "GCOL") == 0 && nth-- == 0) return at;
  }
  ADD_FAILURE() << "no global heap collection";
  return 0;
}

uint64_t dataset_offset(const fs::path& file, const std::string& name) {
  File f = File::open_read(file);
  Handle dataset = f.open_dataset(name);
  return H5Dget_offset(dataset.get());
}

std::string read_error(const fs::path& file, bool attribute) {
  try {
    File f = File::open_read(file);
    if (attribute) {
      f.read_string_attr("/", "note");
    } else {
      f.read_strings("/names");
    }
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class GlobalHeapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    File file = File::create(path_);
    file.write_attr("/", "note", std::string("first object"));
    file.write_strings("/names", {"alpha", "beta", "", "gamma"});
    file.close();
    bytes_ = test::read_bytes(path_);
  }
  void damage(uint64_t offset, uint8_t mask) {
    std::string damaged = bytes_;
    damaged[offset] = static_cast<char>(damaged[offset] ^ mask);
    test::write_bytes(path_, damaged);
  }
  test::TempDir dir_;
  fs::path path_ = dir_ / "t.h5";
  std::string bytes_;
};

TEST_F(GlobalHeapTest, IntactFileReads) {
  File f = File::open_read(path_);
  EXPECT_EQ(f.read_string_attr("/", "note"), "first object");
  EXPECT_EQ(f.read_strings("/names"), (std::vector<std::string>{"alpha", "beta", "", "gamma"}));
}

TEST_F(GlobalHeapTest, DamagedObjectSizeIsAnErrorNotACrash) {
  // Object 1 ("first object", 12 bytes) becomes 12 + 256: HDF5 would copy
  // 268 bytes into a 12-byte buffer.
  const uint64_t gcol = collection_offset(bytes_);
  ASSERT_EQ(bytes_[gcol + 16], 1);
  damage(gcol + 16 + 8 + 1, 0x01);
  for (bool attribute : {true, false}) {
    const std::string error = read_error(path_, attribute);
    EXPECT_NE(
        error.find("t.h5: global heap collection at byte " + std::to_string(gcol) + " is damaged"),
        std::string::npos)
        << error;
  }
}

TEST_F(GlobalHeapTest, DamagedSizeWithinItsPaddingIsCaught) {
  // 12 -> 13 keeps the object's 16-byte slot: its last byte is now padding, a NUL.
  const uint64_t gcol = collection_offset(bytes_);
  damage(gcol + 16 + 8, 0x01);
  EXPECT_NE(read_error(path_, true).find("ends in a NUL byte"), std::string::npos)
      << read_error(path_, true);
  // 12 -> 8 moves the next object header into the string's bytes.
  damage(gcol + 16 + 8, 0x04);
  EXPECT_NE(read_error(path_, true).find("is damaged"), std::string::npos)
      << read_error(path_, true);
}

TEST_F(GlobalHeapTest, ZeroFreeSpaceSizeDoesNotHang) {
  // HDF5 loops forever on a free-space object of size 0.
  const uint64_t gcol = collection_offset(bytes_);
  std::string damaged = bytes_;
  uint64_t p = gcol + 16;
  while (damaged[p] != 0 || damaged[p + 1] != 0) {  // walk to object 0
    uint64_t size = 0;
    for (int i = 7; i >= 0; --i) size = (size << 8) | static_cast<uint8_t>(damaged[p + 8 + i]);
    p += 16 + (size + 7) / 8 * 8;
  }
  for (int i = 0; i < 8; ++i) damaged[p + 8 + i] = 0;
  test::write_bytes(path_, damaged);
  EXPECT_NE(read_error(path_, false).find("free space"), std::string::npos)
      << read_error(path_, false);
}

// HDF5 makes no collection smaller than 4096 bytes, and trusts the size it
// finds: one shrunk to 16 read past its table of objects (a file with
// checksummed headers, whose references are left to HDF5, crashed).
TEST_F(GlobalHeapTest, ACollectionSmallerThanHdf5MakesIsDamage) {
  const uint64_t gcol = collection_offset(bytes_);
  std::string damaged = bytes_;
  for (int i = 0; i < 8; ++i) damaged[gcol + 8 + i] = static_cast<char>(i == 0 ? 16 : 0);
  test::write_bytes(path_, damaged);
  for (bool attribute : {true, false}) {
    const std::string error = read_error(path_, attribute);
    EXPECT_NE(error.find("global heap collection at byte " + std::to_string(gcol) +
                         " is damaged: it declares 16 bytes, less than the 4096 of the smallest "
                         "collection HDF5 writes"),
              std::string::npos)
        << error;
  }
}

// A user block (h5py's userblock_size) moves every HDF5 address by its
// size: such a file reads, and its damage is found as in any other (the
// checks used to leave it to HDF5, which crashed on a damaged attribute
// reference). Errors name the byte in the file.
TEST(GlobalHeap, AFileWithAUserBlockIsCheckedToo) {
  test::TempDir dir;
  const fs::path path = dir / "userblock.h5";
  constexpr uint64_t kUserBlock = 512;
  const std::vector<std::string> names = {"alpha", "beta", "gamma"};
  {
    Handle fcpl(H5Pcreate(H5P_FILE_CREATE));
    ASSERT_GE(H5Pset_userblock(fcpl.get(), kUserBlock), 0);
    Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl.get(), H5P_DEFAULT));
    write_string_attribute(file.get(), "note", "first object");
    const Handle type = library_string_type();
    const hsize_t count = names.size();
    const Handle space(H5Screate_simple(1, &count, nullptr));
    const Handle dataset(H5Dcreate2(file.get(), "names", type.get(), space.get(), H5P_DEFAULT,
                                    H5P_DEFAULT, H5P_DEFAULT));
    std::vector<const char*> raw;
    raw.reserve(names.size());
    for (const std::string& name : names) raw.push_back(name.c_str());
    ASSERT_GE(H5Dwrite(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data()), 0);
  }
  {
    File f = File::open_read(path);
    EXPECT_EQ(f.read_string_attr("/", "note"), "first object");
    EXPECT_EQ(f.read_strings("/names"), names);
  }
  const std::string bytes = test::read_bytes(path);
  const std::size_t gcol = bytes.find("GCOL");
  ASSERT_NE(gcol, std::string::npos);
  ASSERT_EQ(bytes[gcol + 16], 1) << "object 1 is not the collection's first";
  auto damaged_error = [&](std::size_t at, uint8_t mask, bool attribute) {
    std::string damaged = bytes;
    damaged[at] = static_cast<char>(damaged[at] ^ mask);
    test::write_bytes(path, damaged);
    return read_error(path, attribute);
  };
  // Object 1's size, 12 -> 268: both readers of the collection refuse it,
  // naming the collection where it lies in the file.
  for (bool attribute : {true, false}) {
    const std::string error = damaged_error(gcol + 16 + 8 + 1, 0x01, attribute);
    EXPECT_NE(error.find("global heap collection at byte " + std::to_string(gcol) + " is damaged"),
              std::string::npos)
        << error;
  }
  // The object index of element 1 of /names, whose references H5Dget_offset
  // places (from the start of the file, the user block included).
  const uint64_t references = dataset_offset(path, "/names");
  ASSERT_GT(references, kUserBlock);
  const std::string error = damaged_error(references + 16 + 12, 0x40, false);
  EXPECT_NE(error.find("/names[1] is damaged"), std::string::npos) << error;
  // The attribute's reference, in the root group's version 1 header: the
  // 8 bytes of the collection's HDF5 address (its offset past the user
  // block) followed by object index 1.
  std::string reference(12, '\0');
  for (int i = 0; i < 8; ++i)
    reference[i] = static_cast<char>(((gcol - kUserBlock) >> (8 * i)) & 0xFF);
  reference[8] = 1;
  const std::size_t at = bytes.find(reference);
  ASSERT_NE(at, std::string::npos);
  const std::string attribute_error = damaged_error(at + 8, 0x40, true);
  EXPECT_NE(attribute_error.find("@note is damaged: it names object 65"), std::string::npos)
      << attribute_error;
}

// Files laid out with 4-byte offsets and lengths (H5Pset_sizes; no writer
// uses them by default) are refused: their references and headers are laid
// out otherwise, and HDF5 trusts them.
TEST(GlobalHeap, AFileWithFourByteOffsetsIsRefused) {
  test::TempDir dir;
  const fs::path path = dir / "small-offsets.h5";
  {
    Handle fcpl(H5Pcreate(H5P_FILE_CREATE));
    ASSERT_GE(H5Pset_sizes(fcpl.get(), 4, 4), 0);
    Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl.get(), H5P_DEFAULT));
    write_string_attribute(file.get(), "note", "first object");
  }
  const std::string error = read_error(path, true);
  EXPECT_NE(error.find("small-offsets.h5: uses 4-byte file offsets and 4-byte lengths; imgpack "
                       "reads HDF5 files with 8-byte ones"),
            std::string::npos)
      << error;
}

TEST_F(GlobalHeapTest, DamagedReferenceNamesTheElement) {
  const uint64_t names = dataset_offset(path_, "/names");
  damage(names + 16 + 12, 0x40);  // element 1's object index
  EXPECT_NE(read_error(path_, false).find("t.h5: /names[1] is damaged"), std::string::npos)
      << read_error(path_, false);
  damage(names + 16 + 0, 0x02);  // element 1's length: 4 -> 6
  EXPECT_NE(read_error(path_, false).find("/names[1] is damaged: its length 6"), std::string::npos)
      << read_error(path_, false);
}

// A file another writer made with the HDF5 library's defaults, as h5py
// does (an index.h5 edited as docs/FORMAT.md allows, or written by a
// program of the user's): its collections are not on 4096-byte boundaries,
// and a damaged one is found all the same.
TEST(GlobalHeap, UnalignedCollectionsAreCheckedToo) {
  test::TempDir dir;
  const fs::path path = dir / "h5py-like.h5";
  {
    Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    write_string_attribute(file.get(), "note", "first object");
  }
  const std::string bytes = test::read_bytes(path);
  const std::size_t gcol = bytes.find("GCOL");
  ASSERT_NE(gcol, std::string::npos);
  ASSERT_NE(gcol % 4096, 0U) << "the library's defaults aligned the collection";
  {
    File f = File::open_read(path);
    EXPECT_EQ(f.read_string_attr("/", "note"), "first object");
  }
  std::string damaged = bytes;
  damaged[gcol + 16 + 8 + 1] ^= 0x01;  // object 1's size: 12 -> 268
  test::write_bytes(path, damaged);
  try {
    File f = File::open_read(path);
    f.read_string_attr("/", "note");
    FAIL() << "a damaged collection was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("global heap collection at byte " + std::to_string(gcol) +
                                         " is damaged"),
              std::string::npos)
        << e.what();
  }
}

// A version 1 object header (the library's defaults, as h5py writes) has
// no checksum: a damaged object index in a string attribute's heap
// reference made H5Aread read past HDF5's table of heap objects (SIGSEGV).
// Every reference of every string attribute is checked before the read,
// in the header's first chunk and in its continuation chunks.
TEST(GlobalHeap, DamagedAttributeReferencesInUnchecksummedHeadersAreErrors) {
  test::TempDir dir;
  const fs::path path = dir / "h5py-like.h5";
  constexpr int kAttributes = 24;  // more than the first chunk holds: continuations
  {
    Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    Handle group(H5Gcreate2(file.get(), "g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    for (int i = 0; i < kAttributes; ++i) {
      write_string_attribute(group.get(), "a" + std::to_string(i), "value " + std::to_string(i));
    }
    H5O_info_t info{};
    ASSERT_GE(H5Oget_info2(group.get(), &info, H5O_INFO_HDR), 0);
    ASSERT_EQ(info.hdr.version, 1U);
    ASSERT_GT(info.hdr.nchunks, 1U);
  }
  {
    File f = File::open_read(path);
    for (int i = 0; i < kAttributes; ++i) {
      EXPECT_EQ(f.read_string_attr("/g", "a" + std::to_string(i)), "value " + std::to_string(i));
    }
  }
  // Each stored reference: length, the collection's address, object index.
  const std::string bytes = test::read_bytes(path);
  const std::size_t gcol = bytes.find("GCOL");
  ASSERT_NE(gcol, std::string::npos);
  std::string address(8, '\0');
  for (int i = 0; i < 8; ++i) address[i] = static_cast<char>((gcol >> (8 * i)) & 0xFF);
  std::vector<std::size_t> references;
  auto le = [&](std::size_t at, int n) {
    uint64_t value = 0;
    for (int i = n - 1; i >= 0; --i) value = (value << 8) | static_cast<uint8_t>(bytes[at + i]);
    return value;
  };
  for (std::size_t at = bytes.find(address); at != std::string::npos;
       at = bytes.find(address, at + 1)) {
    // "value N" is 7 or 8 bytes long, and HDF5 numbers the objects from 1.
    const bool reference = at >= 4 && at + 12 <= bytes.size() && le(at - 4, 4) >= 7 &&
                           le(at - 4, 4) <= 8 && le(at + 8, 4) >= 1 && le(at + 8, 4) <= kAttributes;
    if (reference) references.push_back(at + 8);  // the object index
  }
  // Moving messages into a continuation chunk leaves stale copies behind,
  // which HDF5 no longer reads: damage there changes nothing.
  ASSERT_GE(references.size(), static_cast<std::size_t>(kAttributes));
  std::size_t refused = 0;
  for (const std::size_t at : references) {
    for (const uint32_t index : {uint32_t{300}, uint32_t{0xFFFFFFFF}}) {
      std::string damaged = bytes;
      for (int i = 0; i < 4; ++i) damaged[at + i] = static_cast<char>((index >> (8 * i)) & 0xFF);
      test::write_bytes(path, damaged);
      try {
        File f = File::open_read(path);
        for (int i = 0; i < kAttributes; ++i) {
          EXPECT_EQ(f.read_string_attr("/g", "a" + std::to_string(i)),
                    "value " + std::to_string(i));
        }
      } catch (const Error& e) {
        ++refused;
        const std::string what = e.what();
        EXPECT_NE(what.find("h5py-like.h5: /g@a"), std::string::npos) << what;
        EXPECT_NE(what.find("it names object " + std::to_string(index) +
                            " of the global heap collection at byte " + std::to_string(gcol) +
                            ", which has no such object"),
                  std::string::npos)
            << what;
      }
    }
  }
  EXPECT_EQ(refused, 2U * kAttributes);  // every live reference, both damages
}

// String tables as another writer may lay them out (h5py's chunks=True,
// maxshape, or HDF5's compact layout): a damaged object index in any of
// them is an error naming the element, not a read past HDF5's table.
// An empty string that is not null (a heap object of no bytes, as the
// library's defaults and h5py write "") is read from its object: a damaged
// object index there is an error too, not a read past HDF5's table.
TEST(GlobalHeap, DamagedReferencesToEmptyStringsAreErrors) {
  test::TempDir dir;
  const fs::path path = dir / "empty.h5";
  {
    Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    write_string_attribute(file.get(), "created", "");
  }
  EXPECT_EQ(File::open_read(path).read_string_attr("/", "created"), "");
  const std::string bytes = test::read_bytes(path);
  const std::size_t gcol = bytes.find("GCOL");
  ASSERT_NE(gcol, std::string::npos) << "the empty string was stored as a null reference";
  // The reference: length 0, the collection's address, then the object index.
  std::string reference(4, '\0');
  for (int i = 0; i < 8; ++i) reference += static_cast<char>((gcol >> (8 * i)) & 0xFF);
  // The one naming object 1 (the collection's only object): other metadata
  // may hold the same twelve bytes.
  std::size_t at = bytes.find(reference);
  while (at != std::string::npos && bytes.compare(at + 12, 4, std::string("\x01\0\0\0", 4)) != 0) {
    at = bytes.find(reference, at + 1);
  }
  ASSERT_NE(at, std::string::npos);
  std::string damaged = bytes;
  for (int i = 12; i < 16; ++i) damaged[at + i] = static_cast<char>(0xFF);
  test::write_bytes(path, damaged);
  try {
    File::open_read(path).read_string_attr("/", "created");
    FAIL() << "a damaged reference to an empty string was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("empty.h5: /@created is damaged: it names object "
                                         "4294967295"),
              std::string::npos)
        << e.what();
  }
}

TEST(GlobalHeap, DamagedReferencesInChunkedAndCompactTablesAreErrors) {
  test::TempDir dir;
  const fs::path path = dir / "layouts.h5";
  const std::vector<std::string> layouts = {"contiguous", "chunked", "compact"};
  const std::vector<std::string> values = {"string 0", "string 1", "string 2", "string 3",
                                           "string 4", "string 5", "string 6", "string 7"};
  {
    Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    const Handle type = library_string_type();
    const hsize_t n = values.size(), unlimited = H5S_UNLIMITED, chunk = 3;
    std::vector<const char*> raw(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) raw[i] = values[i].c_str();
    for (const std::string& layout : layouts) {
      Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
      if (layout == "chunked") {
        ASSERT_GE(H5Pset_chunk(dcpl.get(), 1, &chunk), 0);
      } else if (layout == "compact") {
        ASSERT_GE(H5Pset_layout(dcpl.get(), H5D_COMPACT), 0);
      }
      Handle space(H5Screate_simple(1, &n, layout == "chunked" ? &unlimited : nullptr));
      Handle dataset(H5Dcreate2(file.get(), layout.c_str(), type.get(), space.get(), H5P_DEFAULT,
                                dcpl.get(), H5P_DEFAULT));
      ASSERT_GE(H5Dwrite(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data()), 0);
    }
  }
  auto read_all = [&] {
    File f = File::open_read(path);
    for (const std::string& layout : layouts) EXPECT_EQ(f.read_strings("/" + layout), values);
  };
  read_all();
  const std::string bytes = test::read_bytes(path);
  const std::size_t gcol = bytes.find("GCOL");
  ASSERT_NE(gcol, std::string::npos);
  std::string address(8, '\0');
  for (int i = 0; i < 8; ++i) address[i] = static_cast<char>((gcol >> (8 * i)) & 0xFF);
  std::map<std::string, int> refused;
  for (std::size_t at = bytes.find(address); at != std::string::npos;
       at = bytes.find(address, at + 1)) {
    if (at < 4 || bytes[at - 4] != static_cast<char>(values[0].size()))
      continue;  // not a reference
    std::string damaged = bytes;
    for (int i = 8; i < 12; ++i) damaged[at + i] = static_cast<char>(0xFF);  // object index
    test::write_bytes(path, damaged);
    try {
      read_all();  // a stale copy HDF5 no longer reads
    } catch (const Error& e) {
      const std::string what = e.what();
      const std::size_t slash = what.find("layouts.h5: /");
      ASSERT_NE(slash, std::string::npos) << what;
      const std::string table = what.substr(slash + 13, what.find('[', slash) - slash - 13);
      ++refused[table];
      EXPECT_NE(what.find("is damaged: it names object 4294967295"), std::string::npos) << what;
    }
  }
  for (const std::string& layout : layouts) {
    EXPECT_EQ(refused[layout], static_cast<int>(values.size())) << layout;
  }
}

// A shuffle (h5py's shuffle=True), which HDF5 skips for variable-length
// elements and marks so in each chunk: such chunks lie as unfiltered ones,
// without a checksum, and are checked as they are.
TEST(GlobalHeap, DamagedReferencesInShuffledChunksAreErrors) {
  test::TempDir dir;
  const fs::path path = dir / "shuffled.h5";
  const std::vector<std::string> values = {"a", "bb", "ccc", "dddd", "e", "ff", "ggg", "hhhh"};
  const hsize_t n = values.size();
  {
    Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    const Handle type = library_string_type();
    Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
    ASSERT_GE(H5Pset_chunk(dcpl.get(), 1, &n), 0);
    ASSERT_GE(H5Pset_shuffle(dcpl.get()), 0);
    Handle space(H5Screate_simple(1, &n, nullptr));
    Handle dataset(H5Dcreate2(file.get(), "names", type.get(), space.get(), H5P_DEFAULT, dcpl.get(),
                              H5P_DEFAULT));
    std::vector<const char*> raw(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) raw[i] = values[i].c_str();
    ASSERT_GE(H5Dwrite(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data()), 0);
  }
  haddr_t chunk = HADDR_UNDEF;
  {
    File f = File::open_read(path);
    EXPECT_EQ(f.read_strings("/names"), values);
    Handle dataset = f.open_dataset("/names");
    const hsize_t origin = 0;
    unsigned mask = 0;
    hsize_t bytes = 0;
    ASSERT_GE(H5Dget_chunk_info_by_coord(dataset.get(), &origin, &mask, &chunk, &bytes), 0);
    ASSERT_EQ(bytes, n * 16);
    ASSERT_EQ(mask, 1U) << "HDF5 shuffled variable-length elements";
  }
  // Element 5's object index, bytes 12 to 15 of its 16.
  std::string damaged = test::read_bytes(path);
  for (uint64_t b = 12; b < 16; ++b)
    damaged[chunk + uint64_t{5} * 16 + b] = static_cast<char>(0xFF);
  test::write_bytes(path, damaged);
  try {
    File::open_read(path).read_strings("/names");
    FAIL() << "a damaged reference in a shuffled chunk was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shuffled.h5: /names[5] is damaged: it names object "
                                         "4294967295"),
              std::string::npos)
        << e.what();
  }
}

// A variable-length string type holds its character's type, whose size
// HDF5 trusts: in an unchecksummed (version 1) header a damaged one made
// H5Aread or H5Dread fill gigabytes (a hang). Both are refused naming it.
TEST(GlobalHeap, DamagedCharacterSizesOfStringTypesAreErrors) {
  test::TempDir dir;
  const fs::path path = dir / "h5py-like.h5";
  {
    Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    write_string_attribute(file.get(), "note", "first object");
    const Handle type = library_string_type();
    const hsize_t count = 2;
    const Handle space(H5Screate_simple(1, &count, nullptr));
    const Handle dataset(H5Dcreate2(file.get(), "names", type.get(), space.get(), H5P_DEFAULT,
                                    H5P_DEFAULT, H5P_DEFAULT));
    const std::array<const char*, 2> raw = {"alpha", "beta"};
    ASSERT_GE(H5Dwrite(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data()), 0);
  }
  const std::string bytes = test::read_bytes(path);
  // Each string type: version 1, class 9 (variable-length), string, then
  // its size (16) and its character's type, whose size is the 4 bytes at 12.
  const std::string type_start("\x19\x01", 2);
  std::vector<std::size_t> types;
  for (std::size_t at = bytes.find(type_start); at != std::string::npos;
       at = bytes.find(type_start, at + 1)) {
    if (at + 16 <= bytes.size() && bytes.compare(at + 4, 4, std::string("\x10\0\0\0", 4)) == 0 &&
        bytes.compare(at + 12, 4, std::string("\x01\0\0\0", 4)) == 0) {
      types.push_back(at);
    }
  }
  ASSERT_EQ(types.size(), 2U) << "the attribute's and the dataset's string types";
  for (const std::size_t at : types) {
    std::string damaged = bytes;
    damaged[at + 15] = static_cast<char>(0xDE);
    test::write_bytes(path, damaged);
    const std::string attribute = read_error(path, true);
    const std::string dataset = read_error(path, false);
    const std::string& error = attribute.find("@note") != std::string::npos ? attribute : dataset;
    EXPECT_NE(error.find("is damaged: its variable-length string type declares 3724541953-byte "
                         "characters"),
              std::string::npos)
        << attribute << " / " << dataset;
  }
}

// An attribute whose datatype is shared (a committed type, stored in an
// object of its own) says nothing of it in its message: its heap reference
// was passed over, and HDF5 read a damaged one out of bounds (SIGSEGV).
TEST(GlobalHeap, AttributesOfACommittedStringTypeAreCheckedToo) {
  test::TempDir dir;
  const fs::path path = dir / "committed.h5";
  {
    Handle fapl(H5Pcreate(H5P_FILE_ACCESS));
    ASSERT_GE(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_EARLIEST, H5F_LIBVER_LATEST), 0);
    Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()));
    const Handle type = library_string_type();
    ASSERT_GE(H5Tcommit2(file.get(), "text", type.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), 0);
    const Handle scalar(H5Screate(H5S_SCALAR));
    const Handle attribute(
        H5Acreate2(file.get(), "note", type.get(), scalar.get(), H5P_DEFAULT, H5P_DEFAULT));
    const char* raw = "first object";
    ASSERT_GE(H5Awrite(attribute.get(), type.get(), static_cast<const void*>(&raw)), 0);
  }
  EXPECT_EQ(File::open_read(path).read_string_attr("/", "note"), "first object");
  const std::string bytes = test::read_bytes(path);
  const std::size_t gcol = bytes.find("GCOL");
  ASSERT_NE(gcol, std::string::npos);
  // The reference: length 12, the collection's address, object 1.
  std::string reference("\x0c\0\0\0", 4);
  for (int i = 0; i < 8; ++i) reference += static_cast<char>((gcol >> (8 * i)) & 0xFF);
  reference += std::string("\x01\0\0\0", 4);
  const std::size_t at = bytes.find(reference);
  ASSERT_NE(at, std::string::npos);
  std::string damaged = bytes;
  damaged[at + 15] = 0x40;  // object 1 << 24
  test::write_bytes(path, damaged);
  EXPECT_NE(read_error(path, true).find("/@note is damaged: it names object 1073741825"),
            std::string::npos)
      << read_error(path, true);
}

TEST(GlobalHeap, ManyAndLongStringsAcrossCollections) {
  // More than one collection, one object longer than 4096 bytes made of
  // "GCOL" (so 4096-byte boundaries inside a collection read "GCOL"), and a
  // reference table over 4096 bytes (so it is aligned and skipped).
  test::TempDir dir;
  std::vector<std::string> names;
  names.reserve(2001);
  for (int i = 0; i < 2000; ++i)
    names.push_back("class" + std::to_string(i % 7) + "/image " + std::to_string(i) + ".png");
  std::string decoy;
  for (int i = 0; i < 3000; ++i) decoy += "GCOL";
  names.push_back(decoy);
  {
    File file = File::create(dir / "many.h5");
    file.write_attr("/", "note", decoy);
    file.write_strings("/names", names);
    file.close();
  }
  File f = File::open_read(dir / "many.h5");
  EXPECT_EQ(f.read_strings("/names"), names);
  EXPECT_EQ(f.read_string_attr("/", "note"), decoy);
  EXPECT_GT(collection_offset(test::read_bytes(dir / "many.h5"), 1), 0u);  // a second collection
}

}  // namespace
}  // namespace imgpack::h5
