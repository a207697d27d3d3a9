// Writes a Schedule in its JSON form (docs/schedule.md), one command per line, streamed so that a
// schedule of millions of commands never exists twice in memory. load_schedule reads it back
// to the same schedule.
#pragma once

#include <ostream>

#include "sim/ir/schedule.h"

namespace npusim {

void write_schedule_json(std::ostream& out, const Schedule& schedule);

}  // namespace npusim
