#include "h5.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "imgpack/error.hpp"
#include "test_support.hpp"

namespace imgpack::h5 {
namespace {

namespace fs = std::filesystem;

// HDF5's thread-safe build holds one global lock in every call: a fork while
// another thread is inside HDF5 would leave the child that lock, locked
// forever. A fork waits until no other thread has a file open; a file open in
// the forking thread itself does not hold it back.
TEST(H5ForkBarrier, AForkWaitsForTheFilesOtherThreadsHaveOpen) {
  if (test::kThreadSanitizer) {
    GTEST_SKIP() << "ThreadSanitizer reports the parent's threads as leaked when a child of a "
                    "multi-threaded fork exits, and exits with its own status";
  }
  test::TempDir dir;
  const std::filesystem::path path = dir / "a.h5";
  {
    h5::File file = h5::File::create(path);
    file.write("/x", std::vector<int32_t>{1, 2, 3});
  }
  ASSERT_EQ(h5::fork_passes_held(), 0u);
  std::atomic<bool> open{false};
  std::atomic<bool> closing{false};
  std::thread reader([&] {
    h5::File file = h5::File::open_read(path);
    open = true;
    // Long enough that a fork not held back would come first.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    closing = true;
    file = h5::File();
  });
  while (!open) std::this_thread::yield();
  EXPECT_EQ(h5::fork_passes_held(), 1u);
  const pid_t pid = ::fork();
  if (pid == 0) {
    // The child reads HDF5 too: its lock is free.
    int status = closing ? 0 : 1;
    try {
      if (h5::File::open_read(path).read<int32_t>("/x") != std::vector<int32_t>{1, 2, 3})
        status = 2;
    } catch (...) {
      status = 3;
    }
    ::_exit(status);
  }
  ASSERT_GT(pid, 0);
  reader.join();
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: forked while another thread had a file open";
  EXPECT_EQ(h5::fork_passes_held(), 0u);

  // This thread's own open file: the fork goes ahead.
  const h5::File mine = h5::File::open_read(path);
  const pid_t again = ::fork();
  if (again == 0) ::_exit(h5::fork_passes_held() == 1 ? 0 : 1);
  ASSERT_GT(again, 0);
  ASSERT_EQ(::waitpid(again, &status, 0), again);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(H5File, RoundTripsVectorsStringsAndAttributes) {
  test::TempDir dir;
  {
    File file = File::create(dir / "t.h5");
    file.write<int32_t>("/a/b/ints", std::vector<int32_t>{1, -2, 3});
    file.write<uint64_t>("/empty", std::vector<uint64_t>{});
    file.write_strings("/names", {"zebra", "", "naïve"});
    file.write_attr("/", "count", int64_t{7});
    file.write_attr("/a", "ratio", 0.25);
    file.write_attr("/a/b/ints", "label", std::string("hello"));
    file.close();
  }
  File file = File::open_read(dir / "t.h5");
  EXPECT_EQ(file.read<int32_t>("/a/b/ints"), (std::vector<int32_t>{1, -2, 3}));
  EXPECT_TRUE(file.read<uint64_t>("/empty").empty());
  EXPECT_EQ(file.read_strings("/names"), (std::vector<std::string>{"zebra", "", "naïve"}));
  EXPECT_EQ(file.read_int_attr("/", "count"), 7);
  EXPECT_DOUBLE_EQ(file.read_double_attr("/a", "ratio"), 0.25);
  EXPECT_EQ(file.read_string_attr("/a/b/ints", "label"), "hello");
  EXPECT_TRUE(file.exists("/a/b"));
  EXPECT_FALSE(file.exists("/a/c/d"));
  EXPECT_EQ(file.list("/a"), (std::vector<std::string>{"b"}));
}

// More than 8 links put a group's links in a fractal heap, whose free-space
// header no read of a dataset touches: check_metadata() reads it, as h5py's
// visititems() does, and names the file when it fails its checksum.
TEST(H5File, CheckMetadataReadsTheFreeSpaceHeadersReadsLeaveAlone) {
  test::TempDir dir;
  {
    File file = File::create(dir / "t.h5");
    for (int i = 0; i < 12; ++i) {
      file.write<int32_t>("/column" + std::to_string(i), std::vector<int32_t>{i});
    }
    file.close();
  }
  File::open_read(dir / "t.h5").check_metadata();
  std::string bytes = test::read_bytes(dir / "t.h5");
  const std::size_t header = bytes.find("FSHD");
  ASSERT_NE(header, std::string::npos);
  bytes[header + 8] ^= 0x10;
  test::write_bytes(dir / "t.h5", bytes);
  File file = File::open_read(dir / "t.h5");
  EXPECT_EQ(file.read<int32_t>("/column11"), std::vector<int32_t>{11});  // reads pass
  try {
    file.check_metadata();
    ADD_FAILURE() << "a flipped free-space header passed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("t.h5"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
  }
}

TEST(H5File, OpenErrorsSayWhatIsWrongWithTheFile) {
  test::TempDir dir;
  {
    File file = File::create(dir / "t.h5");
    file.write<int32_t>("/ints", std::vector<int32_t>(5000, 1));
    file.close();
  }
  std::filesystem::resize_file(dir / "t.h5", 3000);
  try {
    File::open_read(dir / "t.h5");
    ADD_FAILURE() << "a truncated file opened";
  } catch (const Error& e) {
    // HDF5's innermost message, not the generic "unable to open file".
    EXPECT_NE(std::string(e.what()).find("t.h5: cannot open as HDF5: truncated file"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(std::string(e.what()).find("HDF5_USE_FILE_LOCKING"), std::string::npos) << e.what();
  }
}

TEST(H5File, LockConflictSuggestsTurningFileLockingOff) {
  const char* locking = std::getenv("HDF5_USE_FILE_LOCKING");
  if (locking != nullptr && std::string(locking) == "FALSE") {
    GTEST_SKIP() << "HDF5_USE_FILE_LOCKING=FALSE: HDF5 takes no lock to conflict with";
  }
  test::TempDir dir;
  {
    File file = File::create(dir / "t.h5");
    file.close();
  }
  // An exclusive flock on another open file description, as a writer holds.
  const int fd = ::open((dir / "t.h5").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  try {
    File::open_read(dir / "t.h5");
    ADD_FAILURE() << "opened a file locked by another writer";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("HDF5_USE_FILE_LOCKING=FALSE"), std::string::npos)
        << e.what();
  }
  ::close(fd);
}

TEST(H5File, TypeMismatchIsAnError) {
  test::TempDir dir;
  {
    File file = File::create(dir / "t.h5");
    file.write<int32_t>("/x", std::vector<int32_t>{1});
    file.close();
  }
  File file = File::open_read(dir / "t.h5");
  EXPECT_THROW(file.read<uint32_t>("/x"), Error);
  EXPECT_THROW(file.read<int64_t>("/x"), Error);
  EXPECT_THROW(file.read_strings("/x"), Error);
  EXPECT_THROW(file.read<int32_t>("/missing"), Error);
}

// The message of what `read` throws; "" where it throws nothing.
template <class Read>
std::string error_of(Read read) {
  try {
    read();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// An attribute imgpack reads as one value, made an array (as h5py's
// attrs.create(name, array) does): HDF5 wrote every element into the one
// variable, on the stack (SIGSEGV from 16 elements on here). It is refused
// naming the attribute, for every kind read.
TEST(H5File, AnAttributeOfManyValuesIsRefusedForOneRead) {
  test::TempDir dir;
  const fs::path path = dir / "t.h5";
  {
    const Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    const hsize_t count = 64;
    const Handle space(H5Screate_simple(1, &count, nullptr));
    const std::vector<int64_t> numbers(count, 32);
    for (const char* name : {"height", "checksum"}) {
      const Handle type(H5Tcopy(name[0] == 'h' ? H5T_STD_I64LE : H5T_STD_U64LE));
      const Handle attribute(
          H5Acreate2(file.get(), name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT));
      ASSERT_GE(H5Awrite(attribute.get(), H5T_NATIVE_INT64, numbers.data()), 0);
    }
    const Handle text(H5Tcopy(H5T_C_S1));
    ASSERT_GE(H5Tset_size(text.get(), H5T_VARIABLE), 0);
    const std::vector<const char*> strings(count, "rgb");
    const Handle attribute(
        H5Acreate2(file.get(), "color", text.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT));
    ASSERT_GE(H5Awrite(attribute.get(), text.get(), strings.data()), 0);
    const hsize_t one = 1;
    const Handle single(H5Screate_simple(1, &one, nullptr));
    const Handle width(
        H5Acreate2(file.get(), "width", H5T_STD_I64LE, single.get(), H5P_DEFAULT, H5P_DEFAULT));
    ASSERT_GE(H5Awrite(width.get(), H5T_NATIVE_INT64, numbers.data()), 0);
  }
  const File file = File::open_read(path);
  EXPECT_EQ(error_of([&] { file.read_int_attr("/", "height"); }),
            path.string() + ": attribute height on / holds 64 values, where one is expected");
  EXPECT_NE(error_of([&] { file.read_uint64_attr("/", "checksum"); }).find("holds 64 values"),
            std::string::npos);
  EXPECT_NE(error_of([&] { file.read_double_attr("/", "height"); }).find("holds 64 values"),
            std::string::npos);
  EXPECT_NE(error_of([&] { file.read_string_attr("/", "color"); }).find("holds 64 values"),
            std::string::npos);
  EXPECT_EQ(file.read_int_attr("/", "width"), 32) << "an array of one value is one value";
}

// Strings stored as ASCII (HDF5's default character set; h5py's
// string_dtype("ascii")) read as they are: HDF5 has no conversion between
// ASCII and UTF-8, and refused the read ("no appropriate function for
// conversion path").
TEST(H5File, AsciiStringsRead) {
  test::TempDir dir;
  const fs::path path = dir / "ascii.h5";
  {
    const Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    const Handle type(H5Tcopy(H5T_C_S1));
    ASSERT_GE(H5Tset_size(type.get(), H5T_VARIABLE), 0);
    ASSERT_EQ(H5Tget_cset(type.get()), H5T_CSET_ASCII);
    const Handle scalar(H5Screate(H5S_SCALAR));
    const Handle attribute(
        H5Acreate2(file.get(), "note", type.get(), scalar.get(), H5P_DEFAULT, H5P_DEFAULT));
    const char* note = "plain text";
    ASSERT_GE(H5Awrite(attribute.get(), type.get(), static_cast<const void*>(&note)), 0);
    const hsize_t count = 2;
    const Handle space(H5Screate_simple(1, &count, nullptr));
    const Handle dataset(H5Dcreate2(file.get(), "names", type.get(), space.get(), H5P_DEFAULT,
                                    H5P_DEFAULT, H5P_DEFAULT));
    const std::array<const char*, 2> names = {"alpha", "beta"};
    ASSERT_GE(H5Dwrite(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, names.data()), 0);
  }
  const File file = File::open_read(path);
  EXPECT_EQ(file.read_string_attr("/", "note"), "plain text");
  EXPECT_EQ(file.read_strings("/names"), (std::vector<std::string>{"alpha", "beta"}));
}

// What a file refers to elsewhere (a link to another file, directly or
// behind a soft link; data in external storage) is refused naming it:
// imgpack reads, maps and writes only what its own file holds.
TEST(H5File, ObjectsHeldByOtherFilesAreRefusedNamingThem) {
  test::TempDir dir;
  {
    File other = File::create(dir / "other.h5");
    other.write<int32_t>("/g/x", std::vector<int32_t>{1, 2, 3});
    other.close();
    File file = File::create(dir / "t.h5");
    file.write<int32_t>("/own", std::vector<int32_t>{4, 5});
    ASSERT_GE(
        H5Lcreate_external("other.h5", "/g/x", file.id(), "/linked", H5P_DEFAULT, H5P_DEFAULT), 0);
    ASSERT_GE(H5Lcreate_external("other.h5", "/g", file.id(), "/group", H5P_DEFAULT, H5P_DEFAULT),
              0);
    ASSERT_GE(H5Lcreate_soft("/group/x", file.id(), "/soft", H5P_DEFAULT, H5P_DEFAULT), 0);
    // A dataset whose data is the raw file data.bin.
    test::write_bytes(dir / "data.bin", std::string(8, '\1'));
    Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
    ASSERT_GE(H5Pset_external(dcpl.get(), "data.bin", 0, 8), 0);
    const hsize_t dims[] = {2};
    Handle space(H5Screate_simple(1, dims, nullptr));
    Handle stored(H5Dcreate2(file.id(), "/external", H5T_STD_I32LE, space.get(), H5P_DEFAULT,
                             dcpl.get(), H5P_DEFAULT));
    ASSERT_TRUE(stored);
    file.close();
  }
  const File file = File::open_read(dir / "t.h5");
  EXPECT_EQ(file.read<int32_t>("/own"), (std::vector<int32_t>{4, 5}));
  std::string error = error_of([&] { file.read<int32_t>("/linked"); });
  EXPECT_NE(error.find("t.h5: /linked is a link to another file"), std::string::npos) << error;
  error = error_of([&] { file.read<int32_t>("/group/x"); });
  EXPECT_NE(error.find("t.h5: /group is a link to another file"), std::string::npos) << error;
  error = error_of([&] { file.read<int32_t>("/soft"); });  // to /group/x
  EXPECT_NE(error.find("t.h5: /group is a link to another file"), std::string::npos) << error;
  error = error_of([&] { file.read<int32_t>("/external"); });
  EXPECT_NE(error.find("t.h5: /external keeps its data in other files"), std::string::npos)
      << error;
}

// A dataset that declares more elements than its storage holds (never
// written, or chunks left out) is refused before a read allocates for it;
// compressed data within what compression gives reads.
TEST(H5File, DatasetsDeclaringMoreThanTheyStoreAreRefusedBeforeAllocating) {
  test::TempDir dir;
  constexpr hsize_t kDeclared = hsize_t{1} << 34;  // 64 GiB of int32, were it allocated
  {
    File file = File::create(dir / "t.h5");
    const hsize_t dims[] = {kDeclared};
    const hsize_t unlimited[] = {H5S_UNLIMITED};
    Handle space(H5Screate_simple(1, dims, unlimited));
    Handle chunked(H5Pcreate(H5P_DATASET_CREATE));
    const hsize_t chunk[] = {1024};
    ASSERT_GE(H5Pset_chunk(chunked.get(), 1, chunk), 0);
    Handle sparse(H5Dcreate2(file.id(), "/sparse", H5T_STD_I32LE, space.get(), H5P_DEFAULT,
                             chunked.get(), H5P_DEFAULT));
    ASSERT_TRUE(sparse);
    Handle fixed_space(H5Screate_simple(1, dims, nullptr));
    Handle unwritten(H5Dcreate2(file.id(), "/unwritten", H5T_STD_I32LE, fixed_space.get(),
                                H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    ASSERT_TRUE(unwritten);
    // 1 MiB of zeros, deflated: far smaller on disk, and whole.
    const hsize_t zeros_dims[] = {hsize_t{1} << 18};
    Handle zeros_space(H5Screate_simple(1, zeros_dims, nullptr));
    Handle deflated(H5Pcreate(H5P_DATASET_CREATE));
    const hsize_t zeros_chunk[] = {hsize_t{1} << 16};
    ASSERT_GE(H5Pset_chunk(deflated.get(), 1, zeros_chunk), 0);
    ASSERT_GE(H5Pset_deflate(deflated.get(), 9), 0);
    Handle zeros(H5Dcreate2(file.id(), "/zeros", H5T_STD_I32LE, zeros_space.get(), H5P_DEFAULT,
                            deflated.get(), H5P_DEFAULT));
    const std::vector<int32_t> values(zeros_dims[0], 0);
    ASSERT_GE(H5Dwrite(zeros.get(), H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()),
              0);
    ASSERT_LT(H5Dget_storage_size(zeros.get()), values.size() * sizeof(int32_t) / 100);
    file.close();
  }
  const File file = File::open_read(dir / "t.h5");
  for (const char* name : {"/sparse", "/unwritten"}) {
    const std::string error = error_of([&] { file.read<int32_t>(name); });
    EXPECT_NE(error.find(std::string("t.h5: ") + name + " declares 17179869184 elements"),
              std::string::npos)
        << error;
    EXPECT_NE(error_of([&] { file.read_shaped<int32_t>(name, {kDeclared}); }).find("declares"),
              std::string::npos);
  }
  EXPECT_EQ(file.read<int32_t>("/zeros"), std::vector<int32_t>(hsize_t{1} << 18, 0));
}

TEST(H5File, OpeningAForeignFileNamesIt) {
  test::TempDir dir;
  test::write_bytes(dir / "not.h5", "this is not HDF5");
  try {
    File::open_read(dir / "not.h5");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not.h5"), std::string::npos) << e.what();
  }
}

TEST(H5File, CreatedFilesAreByteIdentical) {
  test::TempDir dir;
  for (const char* name : {"a.h5", "b.h5"}) {
    // HDF5 stores times with one-second resolution: make them differ.
    if (std::string(name) == "b.h5") std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    File file = File::create(dir / name);
    file.write<int32_t>("/g/x", std::vector<int32_t>{1, 2, 3});
    file.write_attr("/g", "k", std::string("v"));
    file.close();
  }
  EXPECT_EQ(test::read_bytes(dir / "a.h5"), test::read_bytes(dir / "b.h5"));
}

// A table of another element type is named with what it holds and what was
// expected, so that a program writing the format sees what to change.
TEST(H5File, AnElementTypeOtherThanReadIsNamedWithTheExpectedOne) {
  test::TempDir dir;
  {
    File file = File::create(dir / "t.h5");
    file.write<int64_t>("/labels", std::vector<int64_t>{1, 2, 3});
    file.write<float>("/scores", std::vector<float>{1.0F});
    file.write_strings("/names", {"a"});
    file.close();
  }
  const File file = File::open_read(dir / "t.h5");
  EXPECT_NE(error_of([&] {
              file.read<int32_t>("/labels");
            }).find("t.h5: /labels has an unexpected element type: int64, expected int32"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              file.read<uint64_t>("/scores");
            }).find("/scores has an unexpected element type: float32, expected uint64"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              file.read<double>("/names");
            }).find("/names has an unexpected element type: strings, expected float64"),
            std::string::npos);
  EXPECT_EQ(file.read<int64_t>("/labels"), (std::vector<int64_t>{1, 2, 3}));
}

// A chunked dataset may declare dimensions whose product passes 64 bits (its
// chunks are never written): refused, not read as the wrapped count (0 here).
TEST(H5File, DimensionsWhoseProductPasses64BitsAreRefused) {
  test::TempDir dir;
  constexpr hsize_t kSide = hsize_t{1} << 32U;
  {
    File file = File::create(dir / "t.h5");
    const std::array<hsize_t, 2> dims = {kSide, kSide};
    const std::array<hsize_t, 2> chunk = {1, 1};
    Handle space(H5Screate_simple(2, dims.data(), nullptr));
    Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
    ASSERT_GE(H5Pset_chunk(dcpl.get(), 2, chunk.data()), 0);
    Handle dataset(H5Dcreate2(file.id(), "/x", H5T_STD_U8LE, space.get(), H5P_DEFAULT, dcpl.get(),
                              H5P_DEFAULT));
    ASSERT_GE(dataset.get(), 0);
  }
  const File file = File::open_read(dir / "t.h5");
  EXPECT_NE(error_of([&] {
              file.read_shaped<uint8_t>("/x", {kSide, kSide});
            }).find("t.h5: /x declares more elements than 64 bits count"),
            std::string::npos);
}

// Where a file's variable-length strings point: the offset of its first
// global heap collection, and the offset of each stored reference to it
// (length u32, heap address u64, object index u32, little-endian), in file
// order.
struct StringReferences {
  std::size_t heap = std::string::npos;
  std::vector<std::size_t> references;
};

uint64_t u64_at(const std::string& bytes, std::size_t pos) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = value << 8 | static_cast<uint8_t>(bytes[pos + i]);
  return value;
}

StringReferences string_references(const std::string& bytes) {
  StringReferences found;
  found.heap = bytes.find("GCOL");
  if (found.heap == std::string::npos) return found;
  for (std::size_t pos = 0; pos + 16 <= found.heap; ++pos) {
    if (u64_at(bytes, pos + 4) == found.heap) found.references.push_back(pos);
  }
  return found;
}

// A string that points into the middle of the file's heap collection: the
// global heap check refuses it before HDF5 reads the strings (HDF5 itself
// would fail part-way through the read, after converting the first three),
// with an Error naming the dataset.
TEST(H5File, AStringPointingInsideAHeapCollectionIsAnErrorNamingTheDataset) {
  test::TempDir dir;
  {
    File file = File::create(dir / "t.h5");
    file.write_strings("/names", {"alpha", "bravo", "charlie", "delta", "echo"});
    file.close();
  }
  std::string bytes = test::read_bytes(dir / "t.h5");
  const auto [heap, references] = string_references(bytes);
  ASSERT_NE(heap, std::string::npos);
  ASSERT_EQ(references.size(), 5u);
  // The fourth points 8 bytes into the heap, where no collection starts.
  bytes[references[3] + 4] = static_cast<char>(static_cast<uint8_t>(bytes[references[3] + 4]) + 8);
  ASSERT_EQ(u64_at(bytes, references[3] + 4), heap + 8);
  test::write_bytes(dir / "t.h5", bytes);

  File file = File::open_read(dir / "t.h5");
  try {
    file.read_strings("/names");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/names[3]: global heap collection"), std::string::npos)
        << e.what();
  }
}

// Strings whose references all point at one long string (no writer shares
// them) would make a small file's read allocate many times its size: refused
// naming the dataset.
TEST(H5File, StringsSharingWhatTheyPointAtAreRefusedBeforeTheyTakeMemory) {
  test::TempDir dir;
  std::vector<std::string> names(50, "b");
  names[0] = std::string(4000, 'x');
  {
    File file = File::create(dir / "t.h5");
    file.write_strings("/names", names);
    file.close();
  }
  EXPECT_EQ(File::open_read(dir / "t.h5").read_strings("/names"), names);
  std::string bytes = test::read_bytes(dir / "t.h5");
  const auto [heap, references] = string_references(bytes);
  ASSERT_NE(heap, std::string::npos);
  ASSERT_EQ(references.size(), names.size());
  for (std::size_t i = 1; i < references.size(); ++i) {
    bytes.replace(references[i], 16, bytes, references[0], 16);
  }
  test::write_bytes(dir / "t.h5", bytes);
  ASSERT_LT(bytes.size(), names.size() * 4000);

  const File file = File::open_read(dir / "t.h5");
  const std::string error = error_of([&] { file.read_strings("/names"); });
  EXPECT_NE(error.find("t.h5: /names's 50 strings take more bytes than the file holds"),
            std::string::npos)
      << error;
}

// A soft link whose target goes through a link to another file is refused
// before HDF5 opens that file: here a FIFO, which would block the open.
TEST(H5File, ALinkToAnotherFileBehindASoftLinkIsRefusedUnopened) {
  test::TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  {
    File file = File::create(dir / "t.h5");
    file.write<int32_t>("/own", std::vector<int32_t>{1});
    ASSERT_GE(H5Lcreate_external((dir / "fifo").c_str(), "/x", file.id(), "/far", H5P_DEFAULT,
                                 H5P_DEFAULT),
              0);
    ASSERT_GE(H5Lcreate_soft("/far/y", file.id(), "/soft", H5P_DEFAULT, H5P_DEFAULT), 0);
    ASSERT_GE(H5Lcreate_soft("soft", file.id(), "/relative", H5P_DEFAULT, H5P_DEFAULT), 0);
    ASSERT_GE(H5Lcreate_soft("/own", file.id(), "/good", H5P_DEFAULT, H5P_DEFAULT), 0);
    ASSERT_GE(H5Lcreate_soft("/loop", file.id(), "/loop", H5P_DEFAULT, H5P_DEFAULT), 0);
    file.close();
  }
  const File file = File::open_read(dir / "t.h5");
  for (const char* name : {"/soft", "/relative"}) {
    const std::string error = error_of([&] { file.read<int32_t>(name); });
    EXPECT_NE(error.find("t.h5: /far is a link to another file"), std::string::npos) << error;
  }
  EXPECT_EQ(file.read<int32_t>("/good"), std::vector<int32_t>{1});
  EXPECT_NE(error_of([&] { file.read<int32_t>("/loop"); }).find("soft links (a loop)"),
            std::string::npos);
}

// A count taken before the data is read (inspect's number of groups) is
// checked against the storage: a dimension that says more than the file
// holds (a damaged one, or a dataset never written) is an error, not a
// vector of billions.
TEST(H5File, StoredLengthRefusesWhatTheStorageCannotHold) {
  test::TempDir dir;
  const auto path = dir / "declared.h5";
  {
    Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    const hsize_t dims[1] = {1000};
    Handle space(H5Screate_simple(1, dims, nullptr));
    Handle never(H5Dcreate2(file.get(), "never", H5T_STD_U64LE, space.get(), H5P_DEFAULT,
                            H5P_DEFAULT, H5P_DEFAULT));
    ASSERT_TRUE(never);
  }
  File f = File::open_read(path);
  EXPECT_EQ(f.length("never"), 1000U);
  try {
    (void)f.stored_length("never", sizeof(uint64_t));
    FAIL() << "a dataset never written passed for 1000 elements";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("never declares 1000 elements, but its storage"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace imgpack::h5
