// Internal to the schedule loader: the fast reader of schedule files. It reads the common,
// well-formed file directly into Commands (no JSON value per command), about 20x faster than
// building each command as a JSON value and checking it field by field. It gives up on anything
// else, so that the exact path (schedule.cpp) reports it with its messages and JSON pointers:
//   - a command with anything unexpected (an unknown key, a wrong type, a value out of range,
//     a string escape it does not decode, any problem the loader would report) is parsed as a
//     JSON value from its text and checked by the exact path, in its place;
//   - anything else (malformed JSON, a repeated top-level key, "commands" missing or not an
//     array, deep nesting, a file it cannot read) makes it return false, and the whole file is
//     read again by the exact path.
// So a file loads exactly as the exact path loads it; tests/schedule_stream_test.cpp checks that.
#pragma once

#include <cstddef>
#include <string>

#include "sim/ir/command_stream.h"
#include "sim/util/json_reader.h"

namespace npusim::detail {

struct FastReadResult {
  bool read = false;               // false: the exact path must read the whole file
  std::size_t exact_commands = 0;  // commands handed to the exact path one by one
};

// Reads the schedule file at `path` into `stream` (its commands) and `root` (the document without
// its commands: "commands" is an empty array), as ScheduleSax does. On false, `stream` and `root`
// hold partial results: clear them.
FastReadResult read_schedule_fast(const std::string& path, CommandStream& stream, Json& root);

// The exact path alone (nlohmann's SAX parser, each command built as a JSON value), for tests
// that compare it with the fast reader.
Schedule load_schedule_exact(const std::string& path, const HwConfig& config);

}  // namespace npusim::detail
