#include "upload_choice.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "imgpack/error.hpp"

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

UploadPath open_upload_path(const Dataset& dataset, const LoaderOptions& options,
                            UploadBackend& backend, uint64_t memory) {
  UploadContext context;
  context.device_memory = backend.separate_device_memory();
  context.memory = memory;
  for (std::size_t k = 0; k < dataset.num_shards(); ++k) {
    context.dataset_bytes += dataset.shard_images(k).size() + dataset.shard_masks(k).size();
  }
  UploadPath path{choose_upload(options, context), {}};
  if (!path.choice.direct) return path;
  for (std::size_t k = 0; k < dataset.num_shards(); ++k) {
    const std::span<const uint8_t> images = dataset.shard_images(k);
    if (images.empty()) continue;
    try {
      path.registrations.push_back(backend.register_host(images.data(), images.size()));
      const std::span<const uint8_t> masks = dataset.shard_masks(k);
      if (!masks.empty()) {
        path.registrations.push_back(backend.register_host(masks.data(), masks.size()));
      }
    } catch (const Error& e) {
      const std::string why = "cannot register for direct upload: " + std::string(e.what());
      if (options.direct_upload == DirectUpload::on) throw file_error(dataset.shard_path(k), why);
      return {
          {false, "staged (direct_upload auto): " + dataset.shard_path(k).string() + ": " + why},
          {}};
    }
  }
  return path;
}

unsigned choose_threads(const LoaderOptions& o, bool device_memory, bool direct, unsigned cores) {
  if (o.threads != 0) return o.threads;
  constexpr unsigned kDefault = 2;     // fills a page-cached host loop and direct upload
  constexpr unsigned kMostStaged = 8;  // beyond which staging gained little (loader.hpp)
  if (!device_memory || direct) return kDefault;
  return std::clamp(cores / 2, kDefault, kMostStaged);
}

}  // namespace imgpack::detail
