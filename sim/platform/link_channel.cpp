#include "sim/platform/link_channel.h"

#include <stdexcept>

#include "sim/platform/sc_time.h"

namespace npusim::platform {

Links::Links(const HwConfig& config)
    : devices_(config.devices.count),
      host_(cost::LinkTiming::host(config)),
      device_(std::size_t{devices_} * devices_) {
  const cost::LinkTiming timing = cost::LinkTiming::device(config);
  for (std::uint32_t from = 0; from < devices_; ++from) {
    for (std::uint32_t to = 0; to < devices_; ++to) {
      if (config.devices.linked(from, to)) {
        device_[std::size_t{from} * devices_ + to] = std::make_unique<cost::LinkState>(timing);
      }
    }
  }
}

cost::LinkState& Links::between(std::uint32_t from, std::uint32_t to) {
  // The schedule's checks admit DEV_HDMA only between linked devices.
  if (from >= devices_ || to >= devices_ || !device_[std::size_t{from} * devices_ + to]) {
    throw std::logic_error("no link from device " + std::to_string(from) + " to " +
                           std::to_string(to));
  }
  return *device_[std::size_t{from} * devices_ + to];
}

LinkChannel::LinkChannel(const sc_core::sc_module_name& name, const Schedule& schedule,
                         Scoreboard& scoreboard, cost::QueueDispatcher& dispatcher,
                         std::uint32_t channel, sc_core::sc_event& freed, Links& links)
    : CommandUnit(name, schedule, scoreboard, dispatcher, channel, freed), links_(links) {}

void LinkChannel::execute(const Command& command) {
  cost::LinkState& link = command.engine == EngineKind::kExtHdma
                              ? links_.host()
                              : links_.between(command.device, command.peer);
  const cost::Cycles done = link.transfer(now_cycles(), command.bytes);
  wait(until_cycle(done));
}

}  // namespace npusim::platform
