#include "profiler/timeline.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace npusim::profiler {

namespace {

struct LayerKey {
  std::uint32_t iteration;
  std::string_view layer;  // into the workload
  bool operator==(const LayerKey& o) const { return iteration == o.iteration && layer == o.layer; }
};
struct LayerKeyHash {
  std::size_t operator()(const LayerKey& k) const {
    return std::hash<std::string_view>{}(k.layer) * 31 + k.iteration;
  }
};

}  // namespace

namespace {

// `{iteration}_{layer}_{k}`.
std::string command_name(const CommandInfo& c, std::uint32_t k) {
  const std::string_view layer = c.layer.empty() ? c.op_type : c.layer;
  char digits[24];
  std::string name;
  name.reserve(layer.size() + 16);
  name.append(digits, std::to_chars(digits, digits + sizeof digits, c.iteration).ptr);
  name += '_';
  name += layer;
  name += '_';
  name.append(digits, std::to_chars(digits, digits + sizeof digits, k).ptr);
  return name;
}

}  // namespace

std::vector<std::string> command_names(const Workload& workload) {
  std::unordered_map<LayerKey, std::uint32_t, LayerKeyHash> next;  // (iteration, layer) -> k
  std::vector<std::string> names;
  names.reserve(workload.commands.size());
  for (const CommandInfo& c : workload.commands) {
    const std::string_view layer = c.layer.empty() ? c.op_type : c.layer;
    names.push_back(command_name(c, next[LayerKey{c.iteration, layer}]++));
  }
  return names;
}

std::vector<std::string> command_names(const Workload& workload,
                                       const std::vector<std::size_t>& indices) {
  std::unordered_map<LayerKey, std::uint32_t, LayerKeyHash> next;  // (iteration, layer) -> k
  std::vector<std::uint32_t> k(workload.commands.size());
  std::size_t last = 0;
  for (std::size_t i : indices) last = std::max(last, i + 1);
  for (std::size_t i = 0; i < last; ++i) {
    const CommandInfo& c = workload.commands[i];
    k[i] = next[LayerKey{c.iteration, c.layer.empty() ? c.op_type : c.layer}]++;
  }
  std::vector<std::string> names;
  names.reserve(indices.size());
  for (std::size_t i : indices) names.push_back(command_name(workload.commands[i], k[i]));
  return names;
}

std::string device_prefix(std::uint32_t device) { return "DEV" + std::to_string(device) + "."; }

Cycles Timeline::total_cycles() const {
  Cycles last = 0;
  for (const CommandTiming& t : commands) last = std::max(last, t.end);
  return last;
}

TimelineRecorder::TimelineRecorder(std::size_t command_count) {
  timeline_.commands.resize(command_count);
}

void TimelineRecorder::command_started(std::uint32_t command, Cycles at, std::uint32_t unit) {
  CommandTiming& t = timeline_.commands.at(command);
  t.start = at;
  t.unit = unit;
}

void TimelineRecorder::dram_burst(const BurstRecord& burst) { timeline_.dram.add(burst); }

void DramActivity::add(const BurstRecord& burst) {
  const Cycles latency = burst.done - burst.arrival;
  bursts += 1;
  bytes += burst.bytes;
  total_latency_cycles += latency;
  max_latency_cycles = std::max(max_latency_cycles, latency);
  std::size_t bucket = 0;
  for (Cycles l = latency; l > 0; l >>= 1) ++bucket;  // bit width: 0 -> 0, [2^(k-1), 2^k) -> k
  latency_histogram[std::min(bucket, kHistogramBuckets - 1)] += 1;
}

void TimelineRecorder::command_finished(std::uint32_t command, Cycles at) {
  timeline_.commands.at(command).end = at;
}

double Clock::to_us(Cycles cycles) const {
  // cycles / (khz * 1e3) s = cycles * 1e3 / khz us.
  return static_cast<double>(cycles) * 1000.0 / static_cast<double>(khz);
}

std::uint64_t Clock::to_us_rounded(Cycles cycles) const {
  // round(cycles * 1000 / khz) = floor((2 * cycles * 1000 + khz) / (2 * khz)), in 128 bits so that
  // no cycle count representable in 64 bits can overflow.
  __extension__ using U128 = unsigned __int128;
  const U128 num = U128{cycles} * 2000u + khz;
  return static_cast<std::uint64_t>(num / (U128{khz} * 2u));
}

}  // namespace npusim::profiler
