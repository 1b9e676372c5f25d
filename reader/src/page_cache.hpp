// The page cache under a shard's mapping: how much of it is resident, reading
// it in, and dropping it (internal to the reader; the CLI's bench --cold uses
// it too).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>

namespace imgpack::detail {

// Bytes of `bytes` (memory of a file mapping) that the page cache holds,
// counted in whole pages (mincore). Throws imgpack::Error naming `path` if
// mincore fails.
uint64_t resident_bytes(std::span<const uint8_t> bytes, const std::filesystem::path& path);

// Reads `bytes` of a file mapping into the page cache and maps them, without
// copying them anywhere (MADV_POPULATE_READ; Linux 5.14 and later, else one
// read per page through the mapping). The kernel's readahead turns a long
// span into large sequential requests. Throws imgpack::Error naming `path`
// if the pages cannot be read (an I/O error, a file shorter than its mapping).
void populate(std::span<const uint8_t> bytes, const std::filesystem::path& path);

// Drops `bytes` of the mapping of the file at `path` from this process's
// page tables and asks the kernel to drop the file's pages from the page
// cache (posix_fadvise DONTNEED over the whole pages of the file's byte range
// `file_offset`, bytes.size()); pages other processes map stay. Throws imgpack::Error naming
// `path` on failure.
void evict(std::span<const uint8_t> bytes, const std::filesystem::path& path, uint64_t file_offset);

}  // namespace imgpack::detail
