#include "upload_choice.hpp"

#include <algorithm>
#include <cstdio>

namespace imgpack::detail {

namespace {

std::string gib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f GiB", static_cast<double>(bytes) / (1ULL << 30));
  return text;
}

}  // namespace

UploadChoice choose_upload(const LoaderOptions& o, const UploadContext& context) {
  if (!context.device_memory) return {false, "host delivery: nothing to upload"};
  switch (o.direct_upload) {
    case DirectUpload::on:
      return {true, "direct_upload on"};
    case DirectUpload::off:
      return {false, "direct_upload off"};
    case DirectUpload::automatic:
      break;
  }
  const char* auto_staged = "staged (direct_upload auto): ";
  if (!o.crop.is_identity()) {
    return {false, std::string(auto_staged) + "online crop or flip cuts each record on the host"};
  }
  if (o.verify_checksums) {
    return {false, std::string(auto_staged) + "verify_checksums hashes each record on the host"};
  }
  if (o.read_path == ReadPath::read) {
    return {false, std::string(auto_staged) + "read_path read reads the records on the host"};
  }
  if (o.direct_io == DirectIo::on) {
    return {false, std::string(auto_staged) + "direct_io on reads the records past the page cache"};
  }
  if (context.dataset_bytes > context.memory / 2) {
    return {false, std::string(auto_staged) + "the shards (" + gib(context.dataset_bytes) +
                       ") do not fit in half the memory the page cache may use (" +
                       gib(context.memory) + "), and registering them would pin all of it"};
  }
  return {true, "direct (direct_upload auto): the shards (" + gib(context.dataset_bytes) +
                    ") fit in half the memory the page cache may use (" + gib(context.memory) +
                    ") and nothing needs the host to touch the records"};
}

unsigned choose_threads(const LoaderOptions& o, bool device_memory, bool direct, unsigned cores) {
  if (o.threads != 0) return o.threads;
  constexpr unsigned kDefault = 2;     // fills a page-cached host loop and direct upload
  constexpr unsigned kMostStaged = 8;  // beyond which staging gained little (loader.hpp)
  if (!device_memory || direct) return kDefault;
  return std::clamp(cores / 2, kDefault, kMostStaged);
}

}  // namespace imgpack::detail
