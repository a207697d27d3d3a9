// The links between NPUs and to the host: the host link (EXT_HDMA, host DRAM <-> a device's DRAM,
// shared by every device) and the device-to-device links (DEV_HDMA, one per direction of each
// linked pair). A link has lanes (channels); a transfer takes the lane that frees first, holds it
// while its bytes cross at the lane's rate in exact rational time, and its data arrives one
// latency after its last byte has crossed. The estimator costs a transfer on an idle link
// (link_transfer_cycles); the SystemC platform shares a LinkState between the engines that use
// the link, so that transfers queue for its lanes.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/config/hw_config.h"
#include "sim/cost/memory.h"

namespace npusim::cost {

struct LinkTiming {
  // `mbps` per lane (10^6 bytes/s) and `latency_ps` on `config`'s clock, with `lanes` lanes.
  LinkTiming(const HwConfig& config, std::uint64_t mbps, std::uint64_t latency_ps,
             std::uint32_t lanes);
  // A lane moves bytes no faster than a device's DRAM reads or writes them: its rate is the
  // link's or dram.bandwidth_gbps, the lower (the link does not yet take DRAM bandwidth from the
  // device's other traffic).
  static LinkTiming host(const HwConfig& config);    // the host link
  static LinkTiming device(const HwConfig& config);  // one direction of a device-to-device link
  std::uint64_t mbps = 0;                            // per lane, 10^6 bytes/s
  Ticks ticks_per_cycle = 1;
  Ticks ticks_per_byte = 1;
  Cycles latency_cycles = 0;
  std::uint32_t lanes = 1;
  bool ideal = false;  // ideal_memory: transfers take no cycles
};

// Cycles of a transfer of `bytes` on an idle link: its bytes' time rounded up to a cycle, plus
// the latency (0 with ideal memory).
Cycles link_transfer_cycles(std::uint64_t bytes, const LinkTiming& link);

// When each lane of a link is next free.
class LinkState {
 public:
  explicit LinkState(const LinkTiming& timing);
  // A transfer of `bytes` that may start at cycle `start`: it takes the lane that frees first
  // (the lowest on ties) and returns the cycle its data has arrived.
  Cycles transfer(Cycles start, std::uint64_t bytes);

 private:
  LinkTiming timing_;
  std::vector<Ticks> free_at_;
};

}  // namespace npusim::cost
