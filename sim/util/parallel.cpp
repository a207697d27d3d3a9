#include "sim/util/parallel.h"

#include <cstdlib>
#include <string>

namespace npusim {

unsigned worker_threads() {
  // Read each time (a compile asks once per group), so that a test can compare thread counts.
  if (const char* env = std::getenv("NPUSIM_THREADS"); env != nullptr && *env != '\0') {
    try {
      const unsigned long n = std::stoul(env);
      if (n >= 1 && n <= 256) return static_cast<unsigned>(n);
    } catch (const std::exception&) {  // not a number: the hardware's count
    }
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace npusim
