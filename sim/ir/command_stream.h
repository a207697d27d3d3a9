// Internal to the schedule loader (schedule.cpp, schedule_fast.cpp): commands read one at a time,
// from a parsed document, from a file streamed past the SAX parser, or by the fast reader, with
// their problems in order. What needs the whole schedule (ids, programs) is left in refs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/config/hw_config.h"
#include "sim/ir/schedule.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace npusim::detail {

// A conventional id (DI<n>, DO<n>, S<n>, H<n>, EH<n>, DH<n>, DS<n>; see id_follows_convention)
// as a number, one per id: its prefix's code (1 to 7) above its digits' value. 0 for any other
// string.
std::uint64_t id_key(std::string_view id);

// A dependency by id, resolved once every id is known: /commands/<command>/deps/<position>.
struct PendingDep {
  std::uint32_t command = 0;
  std::uint32_t position = 0;
  std::uint64_t id = 0;  // its id_key, or kOddId + its index in CommandRefs::odd_ids
};
inline constexpr std::uint64_t kOddId = std::uint64_t{1} << 63;

// A command's program, checked once the number of programs is known (a file may list the programs
// after the commands). Its problem, if any, goes where the command's check of it would have put
// it: before the problem numbered `problem_at` of the command problems.
struct ProgramCheck {
  std::uint32_t command = 0;
  std::size_t problem_at = 0;
  std::uint64_t value = 0;
};

struct CommandRefs {
  std::vector<PendingDep> deps;
  std::vector<std::string> odd_ids;  // dependency ids that follow no convention, as written
  std::vector<ProgramCheck> programs;
  void add_dep(std::uint32_t command, std::uint32_t position, std::string_view id);
  // The id as written in the file.
  std::string dep_id(const PendingDep& dep) const;
};

// The timeline.csv id convention: DI<n> for DMA_IN, DO<n> for DMA_OUT, S<n> for slice ops, H<n>
// for the host, EH<n>, DH<n> and DS<n> for EXT_HDMA, DEV_HDMA and SYNC; <n> without leading
// zeros, at most 12 digits.
bool id_follows_convention(const std::string& id, EngineKind engine);

class CommandStream {
 public:
  CommandStream(const std::string& origin, const HwConfig& config)
      : config_(config), diag_(origin) {}
  // One command as a JSON value, checked field by field: the exact path, whose problems are the
  // loader's messages.
  void add(const Json& value);
  // A command the fast reader read and found free of problems, exactly as add() would have made
  // it from the same text: `program` and `deps` (ids, in order) are left to resolve as add()
  // leaves them.
  void add_checked(Command&& command, std::uint64_t program, const std::string* deps,
                   std::size_t dep_count);
  // Room for about `commands` commands, so that a long schedule is not moved as it grows. Only
  // what is used is touched, so a generous guess costs address space, not memory; with too
  // little address space for it, the vector grows as usual.
  void reserve(std::size_t commands);
  void clear();
  std::size_t count() const { return count_; }
  const HwConfig& config() const { return config_; }
  std::vector<Command>& commands() { return commands_; }
  const CommandRefs& refs() const { return refs_; }
  const Diagnostics& diagnostics() const { return diag_; }

 private:
  const HwConfig& config_;
  std::size_t count_ = 0;
  std::vector<Command> commands_;
  CommandRefs refs_;
  Diagnostics diag_;
};

}  // namespace npusim::detail
