#include "cpu_affinity.hpp"

#include <sched.h>

#include <algorithm>
#include <thread>

namespace imgpack::detail {

unsigned cores_available() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) {
    return static_cast<unsigned>(CPU_COUNT(&set));
  }
  return std::max(1U, std::thread::hardware_concurrency());
}

}  // namespace imgpack::detail
