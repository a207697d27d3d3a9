// One channel of an EXT_HDMA or DEV_HDMA engine: it moves its transfer over a link that other
// engines share (the host link, or one direction of a device-to-device link). The link decides in
// closed form when the data arrives, queueing behind the transfers that took its lanes first, so
// the channel wakes once per transfer.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "sim/config/hw_config.h"
#include "sim/cost/link.h"
#include "sim/platform/command_unit.h"

namespace npusim::platform {

// The links of a system of devices: the host link and, per ordered pair of linked devices, one
// direction of their link.
class Links {
 public:
  explicit Links(const HwConfig& config);
  cost::LinkState& host() { return host_; }
  cost::LinkState& between(std::uint32_t from, std::uint32_t to);

 private:
  std::uint32_t devices_;
  cost::LinkState host_;
  std::vector<std::unique_ptr<cost::LinkState>> device_;  // from * devices + to; null if unlinked
};

class LinkChannel final : public CommandUnit {
 public:
  LinkChannel(const sc_core::sc_module_name& name, const Schedule& schedule, Scoreboard& scoreboard,
              cost::QueueDispatcher& dispatcher, std::uint32_t channel, sc_core::sc_event& freed,
              Links& links);

 protected:
  void execute(const Command& command) override;

 private:
  Links& links_;
};

}  // namespace npusim::platform
