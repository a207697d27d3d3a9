#include "sim/api/llm_run.h"

#include <algorithm>
#include <map>

#include "sim/api/iterations.h"
#include "sim/compiler/compiler.h"

namespace npusim::api {
namespace {

constexpr const char* kLayer0 = "layers.0.";

// `text` with every "layers.0." made "layers.<k>.".
std::string rename_layer(const std::string& text, std::uint32_t k) {
  if (k == 0 || text.find(kLayer0) == std::string::npos) return text;
  const std::string to = "layers." + std::to_string(k) + ".";
  std::string out;
  std::size_t from = 0;
  for (std::size_t at; (at = text.find(kLayer0, from)) != std::string::npos;) {
    out.append(text, from, at - from).append(to);
    from = at + std::char_traits<char>::length(kLayer0);
  }
  return out.append(text, from, std::string::npos);
}

// Appends one copy of `part` to `out`, after everything already in it.
class Appender {
 public:
  explicit Appender(Schedule& out) : out_(out) {}

  void append(const Schedule& part, std::uint32_t k) {
    const auto base = static_cast<std::uint32_t>(out_.commands.size());
    const auto program_base = static_cast<std::uint32_t>(out_.programs.size());
    for (const Program& p : part.programs) {
      out_.programs.push_back({rename_layer(p.name, k), rename_layer(p.loc, k)});
    }
    std::map<std::string, std::uint64_t> used;  // per id prefix, the numbers this copy takes
    for (const Command& source : part.commands) {
      Command c = source;
      const auto [prefix, number] = split_id(c.id);
      std::uint64_t& next = next_[prefix];
      c.id = prefix + std::to_string(next + number);
      used[prefix] = std::max(used[prefix], number + 1);
      c.program += program_base;
      for (std::uint32_t& d : c.deps) d += base;
      if (c.deps.empty()) c.deps = sinks_;
      c.layer = rename_layer(c.layer, k);
      c.loc = rename_layer(c.loc, k);
      for (BufferAlloc& a : c.alloc) a.buffer = rename_layer(a.buffer, k) + suffix();
      for (std::string& f : c.free) f = rename_layer(f, k) + suffix();
      out_.commands.push_back(std::move(c));
    }
    for (const auto& [prefix, count] : used) next_[prefix] += count;
    for (const LayerView& v : part.layers) {
      LayerView copy = v;
      copy.name = rename_layer(v.name, k);
      out_.layers.push_back(std::move(copy));
    }
    // The next copy waits for this one's sinks.
    std::vector<bool> has_dependant(part.commands.size(), false);
    for (const Command& c : part.commands) {
      for (std::uint32_t d : c.deps) has_dependant[d] = true;
    }
    sinks_.clear();
    for (std::uint32_t i = 0; i < part.commands.size(); ++i) {
      if (!has_dependant[i]) sinks_.push_back(base + i);
    }
    ++copies_;
  }

 private:
  // Buffers are unique across a schedule; a part's names may repeat in another part (the head's
  // and the layer's compilers number buffers alike).
  std::string suffix() const { return "@" + std::to_string(copies_); }

  Schedule& out_;
  std::map<std::string, std::uint64_t> next_;
  std::vector<std::uint32_t> sinks_;
  std::uint32_t copies_ = 0;
};

}  // namespace

LlmPhasePlan compile_llm_phase(const LlmSpec& spec, const LlmPhase& phase, const HwConfig& config) {
  LlmPhasePlan plan;
  if (!spec.replay) {
    plan.parts.push_back(
        {compile_schedule(build_llm_graph(spec, phase, LlmPart::kWhole), config), 1});
    return plan;
  }
  if (llm_has_prologue(spec)) {
    plan.parts.push_back(
        {compile_schedule(build_llm_graph(spec, phase, LlmPart::kPrologue), config), 1});
  }
  plan.parts.push_back({compile_schedule(build_llm_graph(spec, phase, LlmPart::kLayer), config),
                        static_cast<std::uint32_t>(spec.layers)});
  plan.parts.push_back({compile_schedule(build_llm_graph(spec, phase, LlmPart::kHead), config), 1});
  return plan;
}

Schedule assemble_llm_phase(const LlmPhasePlan& plan) {
  if (plan.parts.size() == 1 && plan.parts[0].copies == 1) return plan.parts[0].schedule;
  const Schedule& first = plan.parts.front().schedule;
  Schedule out;
  out.file = first.file;
  out.target_config = first.target_config;
  out.target_slices = first.target_slices;
  out.model = first.model;
  out.model.outputs = plan.parts.back().schedule.model.outputs;
  out.model.weights_bytes = 0;
  std::size_t commands = 0;
  for (const auto& part : plan.parts) {
    out.model.weights_bytes += part.schedule.model.weights_bytes * part.copies;
    commands += part.schedule.commands.size() * part.copies;
  }
  out.commands.reserve(commands);
  Appender appender(out);
  for (const auto& part : plan.parts) {
    for (std::uint32_t k = 0; k < part.copies; ++k) appender.append(part.schedule, k);
  }
  return out;
}

profiler::Timeline replay_llm_phase(const LlmPhasePlan& plan,
                                    const std::vector<profiler::Timeline>& per_part) {
  profiler::Timeline out;
  profiler::Cycles offset = 0;
  for (std::size_t p = 0; p < plan.parts.size(); ++p) {
    const profiler::Timeline& t = per_part[p];
    const profiler::Cycles length = t.total_cycles();
    for (std::uint32_t k = 0; k < plan.parts[p].copies; ++k) {
      for (const profiler::CommandTiming& c : t.commands) {
        out.commands.push_back({c.start + offset, c.end + offset, c.unit});
      }
      offset += length;
    }
    // DRAM activity: every copy's bursts, as the part's.
    const profiler::DramActivity& d = t.dram;
    const std::uint64_t n = plan.parts[p].copies;
    out.dram.bursts += d.bursts * n;
    out.dram.bytes += d.bytes * n;
    out.dram.total_latency_cycles += d.total_latency_cycles * n;
    out.dram.max_latency_cycles = std::max(out.dram.max_latency_cycles, d.max_latency_cycles);
    for (std::size_t b = 0; b < d.latency_histogram.size(); ++b) {
      out.dram.latency_histogram[b] += d.latency_histogram[b] * n;
    }
  }
  return out;
}

}  // namespace npusim::api
