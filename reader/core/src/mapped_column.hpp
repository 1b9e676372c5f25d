// A numeric 1-D dataset viewed in place in a mapping of its file, or read
// where it cannot be (internal to imgpack::core).
#pragma once

#include <memory>
#include <string>

#include "h5.hpp"
#include "imgpack/column.hpp"
#include "mapped_region.hpp"

namespace imgpack::detail {

// Dataset `name` of `file` as a Column: with `mapping` (the whole file `file`
// has open, mapped read-only, which the column keeps alive), a view of its
// elements where they lie contiguous, little-endian and aligned for T;
// otherwise (or without a mapping) read into owned values. Throws as
// h5::File::read() does.
template <class T>
Column<T> mapped_or_read(const h5::File& file, const std::string& name,
                         const std::shared_ptr<const MappedRegion>& mapping) {
  if (mapping) {
    if (auto offset = file.contiguous_offset<T>(name, mapping->size());
        offset && *offset % alignof(T) == 0) {
      const auto* data = reinterpret_cast<const T*>(mapping->data() + *offset);
      return Column<T>::view({data, file.length(name)}, mapping);
    }
  }
  return Column<T>(file.read<T>(name));
}

}  // namespace imgpack::detail
