// Refusing tables built from the inputs that could not fit in memory, before
// they are allocated (internal to imgpack::pack).
#pragma once

#include <string>

namespace imgpack {

// Throws UsageError "WHERE: WHAT, would take N GiB, more than half this
// machine's M GiB of memory" where `bytes` (a long double: a product of
// counts read from a file may pass 2^64) is more than half the physical
// memory. A small file can declare such a table (a few thousand rows of
// unique tags; a category of 100,000 keypoints): it is refused saying why,
// where an allocation would fail as a bare "out of memory". Memory cgroups
// and address-space limits are not looked at.
void refuse_past_half_memory(const std::string& where, const std::string& what, long double bytes);

}  // namespace imgpack
