#include "sim/util/parallel.h"

#include <sched.h>

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
  // The cores this process may run on (its affinity: taskset, cpusets). A CPU quota (docker
  // --cpus, cgroup cpu.max) leaves the affinity whole: set NPUSIM_THREADS there.
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) {
    return static_cast<unsigned>(CPU_COUNT(&set));
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace npusim
