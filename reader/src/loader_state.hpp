// The fingerprint behind LoaderState and the check restore() makes
// (internal to the reader; LoaderState itself is in loader.hpp).
#pragma once

#include <cstdint>

#include "imgpack/epoch_order.hpp"
#include "imgpack/loader.hpp"

namespace imgpack::detail {

// The state of a loader reading `order` with `options` at the start of
// epoch 0: the fingerprint and topology filled in, nothing consumed.
LoaderState initial_loader_state(const EpochOrder& order, const LoaderOptions& options);

// Throws imgpack::UsageError naming every fingerprint field in which `saved`
// differs from `here` (a state of this loader), with both values; first
// imgpack::Error where `saved` is of another generation of the same dataset
// (saying which, and to reopen the old data or start a new epoch). The
// topology (world size, batch size) may differ.
void require_same_fingerprint(const LoaderState& saved, const LoaderState& here);

}  // namespace imgpack::detail
