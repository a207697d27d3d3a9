// Each command's dependants (the commands that list it among their dependencies), in one flat
// array: the estimator, the trace's topological rank, the schedule's cycle check and the DMA
// queue pass each walk them, and a std::vector per command cost an allocation each (the largest
// share of estimating a schedule while the compiler compares its candidates).
#pragma once

#include <cstdint>
#include <vector>

namespace npusim::profiler {

class Dependants {
 public:
  // `commands`: anything with a `deps` list of indices into it. A dependency past the end (an
  // unchecked workload) is left out.
  template <typename Command>
  explicit Dependants(const std::vector<Command>& commands)
      : first_(commands.size() + 1, 0), waiting_(commands.size(), 0) {
    const std::size_t n = commands.size();
    for (std::size_t i = 0; i < n; ++i) {
      for (const std::uint32_t d : commands[i].deps) {
        if (d >= n) continue;
        ++first_[d + 1];
        ++waiting_[i];
      }
    }
    for (std::size_t i = 0; i < n; ++i) first_[i + 1] += first_[i];
    items_.resize(first_[n]);
    std::vector<std::uint32_t> next(first_.begin(), first_.end() - 1);
    for (std::uint32_t i = 0; i < n; ++i) {
      for (const std::uint32_t d : commands[i].deps) {
        if (d < n) items_[next[d]++] = i;
      }
    }
  }

  // The dependants of command i, in command order.
  struct Range {
    const std::uint32_t* first;
    const std::uint32_t* last;
    const std::uint32_t* begin() const { return first; }
    const std::uint32_t* end() const { return last; }
  };
  Range of(std::uint32_t i) const {
    return {items_.data() + first_[i], items_.data() + first_[i + 1]};
  }

  // How many dependencies each command waits for (those listed here), a copy for the caller to
  // count down as they end.
  std::vector<std::uint32_t> waiting() const { return waiting_; }

 private:
  std::vector<std::uint32_t> first_;  // of(i) is items_[first_[i], first_[i + 1])
  std::vector<std::uint32_t> items_;
  std::vector<std::uint32_t> waiting_;
};

}  // namespace npusim::profiler
