// The conversion's serial stage on its own: one thread hands records, in
// order, to the DatasetWriter that writes them into shards (what the
// pipeline's last filter does for every record), timed against the same
// thread writing the same bytes to a plain file and syncing it (the
// storage's own rate, which bounds any conversion's: every byte a conversion
// writes is on the storage before it ends). "writer_adds" times the add() calls alone,
// the time the stage holds the pipeline; "writer_with_finish" adds the
// commit of the last shard and the wait for every shard's fsync. Alternated
// rounds, each into a new dataset
// directory under DIR (removed afterwards, outside the timing; the writer's
// time includes its final fsyncs). Prints, per
// round kind, records per second (median, min, max over the rounds) and the
// ratio of the writer's rate to the plain file's, as JSON lines.
//
// The rate of this stage bounds a conversion's whatever its threads: at 16
// threads the decoders of 500x375 JPEGs produce about 8,000 records a second.
//
// usage: imgpack_shard_write DIR [--records N] [--size S] [--rounds R]
//                                [--shard-size MIB]
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "conversion/shard_writer.hpp"
#include "files.hpp"
#include "imgpack/dataset_index.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Options {
  fs::path dir;
  uint64_t records = 3000;
  uint32_t size = 224;
  int rounds = 5;
  uint64_t shard_mib = 1024;
};

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: imgpack_shard_write DIR [--records N] [--size S] [--rounds R] "
               "[--shard-size MIB]\n");
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options options;
  if (argc < 2) usage();
  options.dir = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage();
    const char* value = argv[++i];
    if (flag == "--records") {
      options.records = std::strtoull(value, nullptr, 10);
    } else if (flag == "--size") {
      options.size = static_cast<uint32_t>(std::strtoul(value, nullptr, 10));
    } else if (flag == "--rounds") {
      options.rounds = std::atoi(value);
    } else if (flag == "--shard-size") {
      options.shard_mib = std::strtoull(value, nullptr, 10);
    } else {
      usage();
    }
  }
  if (options.records == 0 || options.size == 0 || options.rounds <= 0 || options.shard_mib == 0) {
    usage();
  }
  return options;
}

// A few distinct records, so consecutive ones are not the same bytes in cache.
std::vector<std::vector<uint8_t>> make_records(imgpack::RecordShape shape) {
  std::vector<std::vector<uint8_t>> records(8);
  uint32_t state = 12345;
  for (auto& record : records) {
    record.resize(shape.bytes());
    for (uint8_t& byte : record) {
      state = state * 1664525u + 1013904223u;
      byte = static_cast<uint8_t>(state >> 24);
    }
  }
  return records;
}

struct WriterTimes {
  double adds = 0;   // the add() calls: what the pipeline's last stage spends
  double whole = 0;  // and the last shard committed, every shard in place
};

WriterTimes time_writer(const Options& options, imgpack::RecordShape shape,
                        const std::vector<std::vector<uint8_t>>& records, const fs::path& out) {
  fs::create_directories(out);
  const auto start = Clock::now();
  imgpack::DatasetWriter writer(out, shape, options.shard_mib << 20, "bench", options.records);
  for (uint64_t i = 0; i < options.records; ++i) {
    writer.add(records[i % records.size()].data(), i, 0, static_cast<int64_t>(i), 0);
  }
  const auto added = Clock::now();
  imgpack::DatasetIndex index;
  writer.finish(index);
  const auto end = Clock::now();
  return {std::chrono::duration<double>(added - start).count(),
          std::chrono::duration<double>(end - start).count()};
}

// The storage's own rate: the same records gathered into 4 MiB writes to a
// plain file, then one fsync (what the writer's bytes cost the storage, with
// no HDF5, staging policy or background syncs).
double time_plain_file(const Options& options, imgpack::RecordShape shape,
                       const std::vector<std::vector<uint8_t>>& records, const fs::path& file) {
  constexpr uint64_t kBufferBytes = uint64_t{4} << 20;
  const uint64_t slots = std::max<uint64_t>(1, kBufferBytes / shape.bytes());
  std::vector<uint8_t> buffer(slots * shape.bytes(), 1);
  const auto start = Clock::now();
  imgpack::FileDescriptor fd(file, O_WRONLY | O_CREAT | O_TRUNC);
  uint64_t offset = 0;
  uint64_t gathered = 0;
  const auto write_out = [&] {
    imgpack::write_all_at(fd.get(), file, buffer.data(), gathered * shape.bytes(), offset);
    offset += gathered * shape.bytes();
    gathered = 0;
  };
  for (uint64_t i = 0; i < options.records; ++i) {
    std::memcpy(buffer.data() + gathered * shape.bytes(), records[i % records.size()].data(),
                shape.bytes());
    if (++gathered == slots) write_out();
  }
  if (gathered > 0) write_out();
  if (::fsync(fd.get()) != 0) {
    std::perror("fsync");
    std::exit(1);
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void print(const char* what, std::vector<double> rates, double ratio_median) {
  std::sort(rates.begin(), rates.end());
  std::printf(
      "{\"what\": \"%s\", \"records_per_s_median\": %.0f, \"min\": %.0f, \"max\": %.0f, "
      "\"ratio_to_plain_file_median\": %.3f}\n",
      what, rates[rates.size() / 2], rates.front(), rates.back(), ratio_median);
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  const imgpack::RecordShape shape{options.size, options.size, 3};
  const auto records = make_records(shape);
  std::vector<double> add_rates;
  std::vector<double> writer_rates;
  std::vector<double> plain_rates;
  std::vector<double> add_ratios;
  std::vector<double> ratios;
  for (int round = 0; round < options.rounds; ++round) {
    const fs::path out = options.dir / ("shard-write-" + std::to_string(round));
    std::error_code ec;
    fs::remove_all(out, ec);
    const fs::path plain = options.dir / ("shard-write-" + std::to_string(round) + ".plain");
    const double plain_s = time_plain_file(options, shape, records, plain);
    fs::remove(plain, ec);
    const WriterTimes write = time_writer(options, shape, records, out);
    fs::remove_all(out, ec);
    const auto n = static_cast<double>(options.records);
    add_rates.push_back(n / write.adds);
    writer_rates.push_back(n / write.whole);
    plain_rates.push_back(n / plain_s);
    add_ratios.push_back(plain_s / write.adds);
    ratios.push_back(plain_s / write.whole);
  }
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  print("plain_file", plain_rates, 1.0);
  print("writer_adds", add_rates, median(add_ratios));
  print("writer_with_finish", writer_rates, median(ratios));
  return 0;
}
