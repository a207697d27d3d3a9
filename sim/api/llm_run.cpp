#include "sim/api/llm_run.h"

#include <algorithm>
#include <map>
#include <string>
#include <string_view>

#include "sim/api/iterations.h"
#include "sim/compiler/compiler.h"
#include "sim/ir/schedule_append.h"
#include "sim/util/error.h"

namespace npusim::api {
namespace {

constexpr std::string_view kLayers = "layers.";

// `text` with every "layers.<j>." made "layers.<j + offset>.": copy k of a part of n layers is
// layers k·n to k·n + n - 1.
std::string rename_layers(const std::string& text, std::uint64_t offset) {
  if (offset == 0 || text.find(kLayers) == std::string::npos) return text;
  std::string out;
  std::size_t from = 0;
  for (std::size_t at; (at = text.find(kLayers, from)) != std::string::npos;) {
    std::size_t end = at + kLayers.size();
    while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
    out.append(text, from, at + kLayers.size() - from);
    if (end > at + kLayers.size() && end < text.size() && text[end] == '.') {
      out += std::to_string(
          std::stoull(text.substr(at + kLayers.size(), end - at - kLayers.size())) + offset);
      from = end;
    } else {
      from = at + kLayers.size();
    }
  }
  return out.append(text, from, std::string::npos);
}

// On several devices only the embedded tokens come from the host and only the logits go back:
// the hidden state between parts and the KV caches stay in the devices' DRAM.
Schedule compile_llm_part(const LlmSpec& spec, const LlmPhase& phase, const HwConfig& config,
                          LlmPart part) {
  if (config.host.upload_weights) {
    // Every part of every phase would load its weights again; a run of an LLM starts warm.
    throw InputError(spec.source_file, "",
                     "host.upload_weights is not supported for npusim-llm models: their weights "
                     "stay in device DRAM across the phases (docs/multi-device.md)");
  }
  const Graph graph = build_llm_graph(spec, phase, part);
  CompileOptions options;
  options.host_io.inputs.emplace();
  options.host_io.outputs.emplace();
  if (part == LlmPart::kWhole || part == LlmPart::kPrologue) {
    options.host_io.inputs->insert("embeddings");
  }
  if (part == LlmPart::kWhole || part == LlmPart::kHead) {
    options.host_io.outputs->insert(graph.tensors[graph.outputs.back()].name);
  }
  return compile_schedule(graph, config, options);
}

}  // namespace

LlmPhasePlan compile_llm_phase(const LlmSpec& spec, const LlmPhase& phase, const HwConfig& config) {
  LlmPhasePlan plan;
  if (!spec.replay) {
    plan.parts.push_back({compile_llm_part(spec, phase, config, LlmPart::kWhole), 1});
    return plan;
  }
  if (llm_has_prologue(spec)) {
    plan.parts.push_back({compile_llm_part(spec, phase, config, LlmPart::kPrologue), 1});
  }
  plan.parts.push_back({compile_llm_part(spec, phase, config, LlmPart::kLayer),
                        static_cast<std::uint32_t>(spec.layers / spec.replay_layers),
                        spec.replay_layers});
  plan.parts.push_back({compile_llm_part(spec, phase, config, LlmPart::kHead), 1});
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
  // Each copy waits for everything before it: every command of the copy before that nothing
  // depends on.
  ScheduleAppender appender(out);
  std::vector<std::uint32_t> sinks;
  for (const auto& part : plan.parts) {
    for (std::uint32_t k = 0; k < part.copies; ++k) {
      AppendOptions options;
      const std::uint64_t offset = std::uint64_t{k} * part.layers;
      options.rename = [offset](const std::string& s) { return rename_layers(s, offset); };
      options.root_deps = std::move(sinks);
      sinks = appender.append(part.schedule, options).sinks;
    }
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
