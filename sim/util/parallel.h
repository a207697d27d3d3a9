// Runs independent jobs on the machine's cores, results in job order: the compiler's cost
// search emits and estimates its shortlisted mappings this way. Deterministic: each job is a
// pure function of its index, and the results (or the first job's error, by index) come back as
// a sequential loop would give them.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

#include "sim/util/heap_pages.h"

namespace npusim {

// Threads parallel_map uses at most: the cores this process may run on, or NPUSIM_THREADS when
// set (1: run sequentially, as when many simulations share the cores in a sweep).
unsigned worker_threads();
// Throws InputError naming NPUSIM_THREADS when it is set to anything but a count from 1 to 256
// (the CLI checks it first: worker_threads alone would use the cores' count instead).
void check_threads_setting();

// The helper threads parallel_map may start, shared by every call in the process, nested (a job
// that calls parallel_map) or concurrent: worker_threads() - 1 in all, so that no more than
// worker_threads() threads run at once (each call's caller works too). Returns how many of
// `wanted` the caller may start (0 when none is free: the call then runs its jobs itself).
unsigned acquire_helper_threads(unsigned wanted);
void release_helper_threads(unsigned count);
// Whether a helper thread is free now (parallel_map would get one if it started).
bool helper_thread_free();

// fn(0), ..., fn(n - 1), each once, on up to worker_threads() threads.
template <typename Fn>
auto parallel_map(std::size_t n, Fn fn) -> std::vector<decltype(fn(std::size_t{0}))> {
  using Result = decltype(fn(std::size_t{0}));
  std::vector<std::optional<Result>> results(n);
  std::vector<std::exception_ptr> errors(n);
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t i = next++; i < n; i = next++) {
      try {
        results[i].emplace(fn(i));
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  const std::size_t wanted = std::min<std::size_t>(worker_threads(), n);
  const unsigned helpers =
      wanted > 1 ? acquire_helper_threads(static_cast<unsigned>(wanted - 1)) : 0u;
  std::vector<std::thread> pool;
  pool.reserve(helpers);
  for (unsigned t = 0; t < helpers; ++t) {
    try {
      pool.emplace_back([&] {
        use_huge_pages_in_this_thread();
        work();
      });
    } catch (const std::system_error&) {  // no more threads (EAGAIN): the ones there do the rest
      break;
    }
  }
  work();
  for (std::thread& t : pool) t.join();
  release_helper_threads(helpers);
  std::vector<Result> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (errors[i]) std::rethrow_exception(errors[i]);
    out.push_back(std::move(*results[i]));
  }
  return out;
}

// Runs each job once, on up to worker_threads() threads; returns when all have ended, then
// throws the first job's error (by position), if any.
inline void parallel_invoke(const std::vector<std::function<void()>>& jobs) {
  parallel_map(jobs.size(), [&](std::size_t i) {
    jobs[i]();
    return true;
  });
}

}  // namespace npusim
