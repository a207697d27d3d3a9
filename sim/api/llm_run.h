// A language model's phase as the schedules it runs (docs/llm.md, "Replay"). With replay (the
// default), a phase is compiled as its parts: the prologue (learned positions), decoder layer 0
// and the head. Each part starts when the one before has finished, so every decoder layer starts
// on an idle NPU with empty local memory and runs exactly as layer 0 did: the layer is compiled,
// estimated and simulated once and its timeline replayed for layers 1 to L-1. Without replay
// the whole model is one schedule, with layers overlapping where the compiler lets them.
#pragma once

#include <cstdint>
#include <vector>

#include "profiler/timeline.h"
#include "sim/config/hw_config.h"
#include "sim/frontend/llm.h"
#include "sim/ir/schedule.h"

namespace npusim::api {

struct LlmPhasePlan {
  struct Part {
    Schedule schedule;
    std::uint32_t copies = 1;  // run back to back: the decoder layers
    std::uint64_t layers = 0;  // decoder layers in one copy (replay_layers; 0 in the others)
  };
  std::vector<Part> parts;
};

LlmPhasePlan compile_llm_phase(const LlmSpec& spec, const LlmPhase& phase, const HwConfig& config);

// The phase as one schedule: every copy of every part in order, each starting when the one
// before has finished (its commands that depend on nothing wait for every command of the one
// before that nothing depends on). Copy k of a part of n decoder layers names its layers, programs
// and buffers "layers.<k·n + j>." where the part's say "layers.<j>."; ids are numbered on.
Schedule assemble_llm_phase(const LlmPhasePlan& plan);

// The assembled schedule's timeline from one timeline per part: copy k of a part is the part's
// timeline shifted to start where the copy before it ended.
profiler::Timeline replay_llm_phase(const LlmPhasePlan& plan,
                                    const std::vector<profiler::Timeline>& per_part);

}  // namespace npusim::api
