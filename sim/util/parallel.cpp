#include "sim/util/parallel.h"

#include <atomic>

#include <sched.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "sim/util/error.h"

namespace npusim {

namespace {

constexpr unsigned long kMaxThreads = 256;

// NPUSIM_THREADS: nullopt when unset or empty; 0 when it is no count from 1 to kMaxThreads.
std::optional<unsigned> threads_setting() {
  const char* env = std::getenv("NPUSIM_THREADS");
  if (env == nullptr || *env == '\0') return std::nullopt;
  const std::string text = env;
  if (text.find_first_not_of("0123456789") != std::string::npos || text.size() > 3) return 0u;
  const unsigned long n = std::stoul(text);
  return n >= 1 && n <= kMaxThreads ? static_cast<unsigned>(n) : 0u;
}

}  // namespace

unsigned worker_threads() {
  // Read each time (a compile asks once per group), so that a test can compare thread counts.
  if (const std::optional<unsigned> n = threads_setting(); n && *n > 0) return *n;
  // The cores this process may run on (its affinity: taskset, cpusets). A CPU quota (docker
  // --cpus, cgroup cpu.max) leaves the affinity whole: set NPUSIM_THREADS there.
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) {
    return static_cast<unsigned>(CPU_COUNT(&set));
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

namespace {
std::atomic<unsigned> helper_threads_in_use{0};
}  // namespace

unsigned acquire_helper_threads(unsigned wanted) {
  const unsigned limit = worker_threads() - 1;
  unsigned in_use = helper_threads_in_use.load();
  for (;;) {
    const unsigned take = std::min(wanted, limit > in_use ? limit - in_use : 0u);
    if (take == 0) return 0;
    if (helper_threads_in_use.compare_exchange_weak(in_use, in_use + take)) return take;
  }
}

void release_helper_threads(unsigned count) { helper_threads_in_use -= count; }

bool helper_thread_free() { return helper_threads_in_use.load() + 1 < worker_threads(); }

void check_threads_setting() {
  if (threads_setting() == 0u) {
    throw InputError("", "NPUSIM_THREADS",
                     "'" + std::string(std::getenv("NPUSIM_THREADS")) +
                         "' is not a thread count (1 to " + std::to_string(kMaxThreads) + ")");
  }
}

}  // namespace npusim
