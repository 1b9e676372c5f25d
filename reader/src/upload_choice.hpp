// Whether a loader uploads directly (the device's copy engine reads the
// records from the shard mappings) or staged (reader threads copy them into
// pinned host memory first), and why: LoaderOptions::direct_upload decided
// once, when the loader is made (internal to the reader).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "imgpack/dataset.hpp"
#include "imgpack/loader.hpp"
#include "imgpack/upload_backend.hpp"

namespace imgpack::detail {

struct UploadChoice {
  bool direct = false;
  std::string reason;  // one line, for LoaderStats and imgpack bench
};

// What the choice depends on besides the options.
struct UploadContext {
  bool device_memory = false;  // the device has memory of its own (CUDA)
  uint64_t dataset_bytes = 0;  // every record's pixels and mask, as registering pins them
  uint64_t memory = 0;         // what the page cache may use (memory_for_page_cache())
};

// DirectUpload::on: direct (the options' checks refuse what it cannot do);
// off: staged. automatic: direct only when the output goes to a device with
// memory of its own, nothing needs the host to touch the records (no crop
// or flip, no checksum verification, no ReadPath::read, no O_DIRECT), and the
// shards fit in half the memory the page cache may use: registering pins
// every page of them for the loader's life, where the kernel can reclaim
// none, so the rest stays for the training program and the page cache.
// Never throws.
UploadChoice choose_upload(const LoaderOptions& options, const UploadContext& context);

// The choice carried out for a loader of `options` over `dataset`, which
// delivers through `backend`: for direct upload, every shard's pixels and
// masks registered with the device (the registrations are to be kept for the
// loader's life). Where the choice was automatic, a shard the device refuses
// to register means staged upload instead, saying why; with
// DirectUpload::on it is an imgpack::Error naming the shard.
struct UploadPath {
  UploadChoice choice;
  std::vector<std::unique_ptr<HostRegistration>> registrations;
};
UploadPath open_upload_path(const Dataset& dataset, const LoaderOptions& options,
                            UploadBackend& backend, uint64_t memory);

// The reader threads to run: LoaderOptions::threads, or where it is 0 the
// automatic choice that LoaderOptions::threads documents, for a loader that
// delivers to a device with memory of its own (`device_memory`) directly or
// staged (`direct`), on a process that may run on `cores` cores.
unsigned choose_threads(const LoaderOptions& options, bool device_memory, bool direct,
                        unsigned cores);

}  // namespace imgpack::detail
