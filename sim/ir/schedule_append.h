// Building one schedule out of others: the LLM phases (a decoder layer repeated), the sharded
// compiler (each step once per device, joined by collectives). Ids are renumbered per prefix so
// they stay unique, buffers are suffixed per copy, and dependencies are re-pointed.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/ir/schedule.h"

namespace npusim {

// A command id's prefix and number: "DI12" -> ("DI", 12).
std::pair<std::string, std::uint64_t> split_id(const std::string& id);

struct AppendOptions {
  // Applied to layer, loc, program and buffer names; none when empty.
  std::function<std::string(const std::string&)> rename;
  std::optional<std::uint32_t> device;  // every command's, when set
  // What the part's commands that depend on nothing wait for (indices into the output).
  std::vector<std::uint32_t> root_deps;
  // When set, the part's commands use these programs of the output (appended by an earlier
  // copy of the same part) instead of appending its own.
  std::optional<std::uint32_t> program_base;
  bool add_layer_views = true;
  // When not empty, every command's layer and loc (a collective's reduction steps).
  std::string layer, loc;
};

struct AppendedPart {
  std::uint32_t first = 0;           // the output index of the part's first command
  std::uint32_t program_base = 0;    // where the part's programs are in the output
  std::vector<std::uint32_t> sinks;  // output indices of the part's commands nothing depends on
};

class ScheduleAppender {
 public:
  explicit ScheduleAppender(Schedule& out) : out_(out) {}

  AppendedPart append(const Schedule& part, const AppendOptions& options);
  // One command built by hand; its `id` is its prefix ("DH"), numbered on here.
  std::uint32_t add(Command command);
  std::uint32_t add_program(Program program);

 private:
  Schedule& out_;
  std::map<std::string, std::uint64_t> next_;  // per id prefix, the next free number
  std::uint32_t copies_ = 0;
};

}  // namespace npusim
