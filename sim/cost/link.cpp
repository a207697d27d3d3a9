#include "sim/cost/link.h"

#include <algorithm>
#include <numeric>

namespace npusim::cost {

LinkTiming::LinkTiming(const HwConfig& config, std::uint64_t mbps_, std::uint64_t latency_ps,
                       std::uint32_t lanes_)
    : mbps(mbps_),
      latency_cycles(config.ps_to_cycles(latency_ps)),
      lanes(lanes_),
      ideal(config.ideal_memory) {
  // As DramTiming: a cycle is 1 / (khz * 1e3) s and a byte 1 / (mbps * 1e6) s, so in ticks of
  // 1 / (khz * mbps * 1e6) s a cycle is mbps * 1000 ticks and a byte khz ticks.
  const Ticks per_cycle = Ticks{mbps} * 1000u;
  const Ticks per_byte = Ticks{config.clock_khz};
  const auto g =
      std::gcd(static_cast<std::uint64_t>(per_cycle), static_cast<std::uint64_t>(per_byte));
  ticks_per_cycle = per_cycle / g;
  ticks_per_byte = per_byte / g;
}

LinkTiming LinkTiming::host(const HwConfig& config) {
  return {config, std::min(config.host.link_mbps, config.dram.bandwidth_mbps),
          config.host.link_latency_ps, config.host.link_channels};
}

LinkTiming LinkTiming::device(const HwConfig& config) {
  return {config, std::min(config.devices.link_mbps, config.dram.bandwidth_mbps),
          config.devices.link_latency_ps, 1};
}

Cycles link_transfer_cycles(std::uint64_t bytes, const LinkTiming& link) {
  if (link.ideal) return 0;
  const Ticks ticks = Ticks{bytes} * link.ticks_per_byte;
  return static_cast<Cycles>((ticks + link.ticks_per_cycle - 1) / link.ticks_per_cycle) +
         link.latency_cycles;
}

LinkState::LinkState(const LinkTiming& timing) : timing_(timing), free_at_(timing.lanes, 0) {}

Cycles LinkState::transfer(Cycles start, std::uint64_t bytes) {
  if (timing_.ideal) return start;
  const auto lane = std::min_element(free_at_.begin(), free_at_.end());
  const Ticks begin = std::max(*lane, Ticks{start} * timing_.ticks_per_cycle);
  *lane = begin + Ticks{bytes} * timing_.ticks_per_byte;
  return static_cast<Cycles>((*lane + timing_.ticks_per_cycle - 1) / timing_.ticks_per_cycle) +
         timing_.latency_cycles;
}

}  // namespace npusim::cost
