// Several devices: the links (EXT_HDMA, DEV_HDMA), SYNC, the schedule's checks across devices,
// and a cross-device deadlock. Runs in npusim_platform_tests, one process per test (SystemC
// elaborates once per process); platform_test.cpp sets SystemC's process state.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "profiler/stats.h"
#include "sim/estimator/estimator.h"
#include "sim/ir/engines.h"
#include "sim/ir/schedule_writer.h"
#include "sim/platform/platform.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"

#include <sstream>

namespace npusim {
namespace {

using ::testing::HasSubstr;

// Two devices on a ring, 1 GHz, 10 GB/s per link direction and 100 ns latency: a byte takes
// 0.1 cycle on a link and the latency is 100 cycles. Everything else at its default
// (dispatch_cycles 4, 16 vector lanes, Add at 1 cycle per element per lane).
const std::vector<std::string> kTwoDevices = {
    "devices.count=2", "clock_mhz=1000", "devices.link_gbps=10", "devices.link_latency_ns=100"};

Json schedule_v2(Json commands) {
  return Json{{"format", "npusim-schedule"},
              {"version", 2},
              {"model", {{"name", "t"}}},
              {"commands", std::move(commands)}};
}

Json dev_hdma(const std::string& id, std::uint32_t device, std::uint32_t peer, std::uint64_t bytes,
              Json deps = Json::array()) {
  return {{"id", id},     {"engine", "DEV_HDMA"}, {"device", device},
          {"peer", peer}, {"bytes", bytes},       {"deps", std::move(deps)}};
}

Json add(const std::string& id, std::uint32_t device, std::uint64_t elements, Json deps) {
  return {{"id", id},
          {"engine", "SLICE"},
          {"device", device},
          {"slice", 0},
          {"op", "Add"},
          {"shape", {{"elements", elements}}},
          {"deps", std::move(deps)}};
}

Schedule parse(const Json& commands, const HwConfig& config) {
  return parse_schedule(schedule_v2(commands), "s.json", config);
}

TEST(MultiDevice, TwoDeviceAllReduceTakesTheHandComputedCycles) {
  // A ring all-reduce of 8192 bytes (4096 fp16 elements) on 2 devices: reduce-scatter (each
  // device sends the half it does not own, 4096 B, and adds the half it receives), then
  // all-gather (each sends its reduced half), then a SYNC on device 0 that both devices' last
  // transfers reach.
  //   a 4096-byte transfer: ceil(4096 * 0.1) = 410 cycles on the link + 100 latency = 510
  //   the Add of 2048 elements: ceil(2048 * 1 / 16) = 128 cycles
  //   DH0 (dev 0 -> 1) and DH1 (dev 1 -> 0): different link directions, 4 + 510 = [4, 514)
  //   S0 on dev 0 after DH1 and S1 on dev 1 after DH0: 514 + 4 = [518, 646)
  //   DH2 (dev 0 -> 1) after S0, DH3 (dev 1 -> 0) after S1: 646 + 4 = [650, 1160)
  //   DS0, SYNC on dev 0 with peer 1, after DH2 and DH3: 1160 + 4 = [1164, 1264), the latency.
  const HwConfig config = parse_hw_config("{}", "cfg", kTwoDevices);
  const Json commands = {
      dev_hdma("DH0", 0, 1, 4096),
      dev_hdma("DH1", 1, 0, 4096),
      add("S0", 0, 2048, {"DH1"}),
      add("S1", 1, 2048, {"DH0"}),
      dev_hdma("DH2", 0, 1, 4096, {"S0"}),
      dev_hdma("DH3", 1, 0, 4096, {"S1"}),
      {{"id", "DS0"}, {"engine", "SYNC"}, {"device", 0}, {"peers", {1}}, {"deps", {"DH2", "DH3"}}},
  };
  const Schedule s = parse(commands, config);
  const profiler::Timeline est = estimate(s, config);
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> expected = {
      {4, 514}, {4, 514}, {518, 646}, {518, 646}, {650, 1160}, {650, 1160}, {1164, 1264}};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(est.commands[i].start, expected[i].first) << s.commands[i].id;
    EXPECT_EQ(est.commands[i].end, expected[i].second) << s.commands[i].id;
  }
  // Nothing contends (each link direction carries one transfer at a time): the simulation is the
  // estimate, command for command.
  const profiler::Timeline sim = simulate(s, config);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(sim.commands[i].start, expected[i].first) << s.commands[i].id;
    EXPECT_EQ(sim.commands[i].end, expected[i].second) << s.commands[i].id;
  }
  EXPECT_EQ(sim.total_cycles(), 1264u);
}

TEST(MultiDevice, LinkBoundDeviceFiguresAndCollectiveTimeOfTheAllReduce) {
  // The all-reduce above, with device 0's Add named as the compiler names a collective's
  // commands ("collective." ...) and device 1's Add not: DEV_HDMA and SYNC count as collective
  // whatever their layer, other commands only by that name.
  const HwConfig config = parse_hw_config("{}", "cfg", kTwoDevices);
  Json s0 = add("S0", 0, 2048, {"DH1"});
  s0["layer"] = "collective.all_reduce.0";
  const Json commands = {
      dev_hdma("DH0", 0, 1, 4096),
      dev_hdma("DH1", 1, 0, 4096),
      s0,
      add("S1", 1, 2048, {"DH0"}),
      dev_hdma("DH2", 0, 1, 4096, {"S0"}),
      dev_hdma("DH3", 1, 0, 4096, {"S1"}),
      {{"id", "DS0"}, {"engine", "SYNC"}, {"device", 0}, {"peers", {1}}, {"deps", {"DH2", "DH3"}}},
  };
  const Schedule s = parse(commands, config);
  const profiler::Workload w = make_workload(s, config);
  ASSERT_TRUE(profiler::has_multi_device_engines(w));
  // Link bound: each direction carries 2 x 4096 = 8192 bytes at 0.1 cycle per byte:
  // ceil(819.2) = 820 cycles, + 100 latency = 920. No EXT_HDMA: the host link's bound is 0. The
  // vector bound is one Add per device, 128: the device link binds.
  const profiler::Bounds b = profiler::compute_bounds(w);
  EXPECT_EQ(b.device_link_cycles, 920u);
  EXPECT_EQ(b.host_link_cycles, 0u);
  EXPECT_EQ(b.vector_cycles, 128u);
  EXPECT_EQ(b.binding(), profiler::BoundResource::kDeviceLink);
  EXPECT_STREQ(profiler::binding_name(b), "device_link");
  // Per device, from the timeline of the first test (estimate = simulation):
  //   device 0: DH0 [4, 514), S0 [518, 646), DH2 [650, 1160), DS0 [1164, 1264)
  //     busy = collective = 510 + 128 + 510 + 100 = 1248; compute 128
  //   device 1: DH1 [4, 514), S1 [518, 646), DH3 [650, 1160)
  //     busy = 510 + 128 + 510 = 1148; collective (S1 is not named so) = 510 + 510 = 1020
  //   each sends 8192 bytes and receives 8192; no EXT_HDMA.
  for (const profiler::Timeline& t : {estimate(s, config), simulate(s, config)}) {
    const std::vector<profiler::DeviceStats> d = profiler::compute_device_stats(w, t);
    ASSERT_EQ(d.size(), 2u);
    EXPECT_EQ(d[0].busy_cycles, 1248u);
    EXPECT_EQ(d[0].compute_busy_cycles, 128u);
    EXPECT_EQ(d[0].collective_cycles, 1248u);
    EXPECT_EQ(d[0].commands, 4u);
    EXPECT_EQ(d[1].busy_cycles, 1148u);
    EXPECT_EQ(d[1].compute_busy_cycles, 128u);
    EXPECT_EQ(d[1].collective_cycles, 1020u);
    for (const profiler::DeviceStats& v : d) {
      EXPECT_EQ(v.dev_hdma_sent_bytes, 8192u);
      EXPECT_EQ(v.dev_hdma_received_bytes, 8192u);
      EXPECT_EQ(v.ext_hdma_to_device_bytes, 0u);
      EXPECT_EQ(v.ext_hdma_to_host_bytes, 0u);
    }
  }
}

TEST(MultiDevice, TheHostLinkBoundCountsEveryDevicesTransfers) {
  // As below: 16 GB/s on one channel at 1 GHz is 0.0625 cycle per byte, latency 1000 cycles.
  // Two loads of 16000 bytes: ceil(32000 * 0.0625) = 2000 + 1000 = 3000 cycles; the simulation
  // takes 3004 (4 of dispatch), never less.
  const HwConfig config = parse_hw_config(
      "{}", "cfg",
      {"devices.count=2", "clock_mhz=1000", "host.link_gbps=16", "dram.bandwidth_gbps=100",
       "host.link_channels=1", "host.link_latency_ns=1000"});
  Json commands = Json::array();
  for (int d = 0; d < 2; ++d) {
    commands.push_back({{"id", "EH" + std::to_string(d)},
                        {"engine", "EXT_HDMA"},
                        {"device", d},
                        {"direction", "to_device"},
                        {"bytes", 16000}});
  }
  const Schedule s = parse(commands, config);
  const profiler::Workload w = make_workload(s, config);
  const profiler::Bounds b = profiler::compute_bounds(w);
  EXPECT_EQ(b.host_link_cycles, 3000u);
  EXPECT_EQ(b.device_link_cycles, 0u);
  EXPECT_EQ(b.binding(), profiler::BoundResource::kHostLink);
  EXPECT_GE(simulate(s, config).total_cycles(), b.host_link_cycles);
  const std::vector<profiler::DeviceStats> d =
      profiler::compute_device_stats(w, estimate(s, config));
  EXPECT_EQ(d[0].ext_hdma_to_device_bytes, 16000u);
  EXPECT_EQ(d[1].ext_hdma_to_device_bytes, 16000u);
  EXPECT_EQ(d[0].collective_cycles, 0u);  // loads are not collectives
}

TEST(MultiDevice, TransfersOnOneLinkDirectionQueueInTheSimulation) {
  // Device 0's DEV_HDMA has 2 channels, so DH0 starts at 4 and DH1 at 8 (one dispatcher), both
  // to device 1 over the same link direction, which has one lane. Alone each takes 510 cycles
  // (above): the estimate ends them at 514 and 518. In the simulation DH1's bytes wait for DH0's:
  // DH0 holds the lane over [4, 413.6), DH1 over [413.6, 823.2), so DH1's data arrives at
  // ceil(823.2) + 100 = 924.
  const HwConfig config = parse_hw_config("{}", "cfg", kTwoDevices);
  const Schedule s = parse({dev_hdma("DH0", 0, 1, 4096), dev_hdma("DH1", 0, 1, 4096)}, config);
  const profiler::Timeline est = estimate(s, config);
  EXPECT_EQ(est.commands[0].end, 514u);
  EXPECT_EQ(est.commands[1].end, 518u);
  const profiler::Timeline sim = simulate(s, config);
  EXPECT_EQ(sim.commands[0].start, 4u);
  EXPECT_EQ(sim.commands[1].start, 8u);
  EXPECT_EQ(sim.commands[0].end, 514u);
  EXPECT_EQ(sim.commands[1].end, 924u);
}

TEST(MultiDevice, ALinkMovesNoFasterThanDram) {
  // Links of 32 GB/s between devices whose DRAM gives 12.8 GB/s, at 1 GHz: the transfer moves
  // 12.8 bytes per cycle, 4096 / 12.8 = 320 cycles, + 100 latency: [4, 424) in the estimate and
  // the simulation alike.
  const HwConfig config =
      parse_hw_config("{}", "cfg",
                      {"devices.count=2", "clock_mhz=1000", "devices.link_gbps=32",
                       "devices.link_latency_ns=100", "dram.bandwidth_gbps=12.8"});
  const Schedule s = parse(Json::array({dev_hdma("DH0", 0, 1, 4096)}), config);
  EXPECT_EQ(estimate(s, config).commands[0].end, 424u);
  EXPECT_EQ(simulate(s, config).commands[0].end, 424u);
}

TEST(MultiDevice, TheHostLinkIsSharedByEveryDevice) {
  // host.link_channels=1 at 16 GB/s, 1 GHz: 0.0625 cycle per byte; latency 1000 ns = 1000
  // cycles. Each device loads 16000 bytes (1000 cycles on the link) at cycle 4. Alone: 4 + 1000 +
  // 1000 = 2004. Sharing the one lane, the second waits: [1004, 2004) on the lane, + 1000 = 3004.
  // The EXT_HDMA engines have host.link_channels channels.
  const HwConfig config = parse_hw_config(
      "{}", "cfg",
      {"devices.count=2", "clock_mhz=1000", "host.link_gbps=16", "dram.bandwidth_gbps=100",
       "host.link_channels=1", "host.link_latency_ns=1000"});
  const Json commands = {
      {{"id", "EH0"},
       {"engine", "EXT_HDMA"},
       {"device", 0},
       {"direction", "to_device"},
       {"bytes", 16000}},
      {{"id", "EH1"},
       {"engine", "EXT_HDMA"},
       {"device", 1},
       {"direction", "to_device"},
       {"bytes", 16000}},
  };
  const Schedule s = parse(commands, config);
  const profiler::Timeline est = estimate(s, config);
  EXPECT_EQ(est.commands[0].end, 2004u);
  EXPECT_EQ(est.commands[1].end, 2004u);
  const profiler::Timeline sim = simulate(s, config);
  EXPECT_EQ(sim.commands[0].end + sim.commands[1].end, 2004u + 3004u);  // one of them waits
  EXPECT_EQ(std::max(sim.commands[0].end, sim.commands[1].end), 3004u);
}

TEST(MultiDevice, ADeadlockAcrossDevicesIsDetectedAndExplained) {
  // One DEV_HDMA channel per device. Device 0's queue: DH0 (waits for DH3), DH2. Device 1's
  // queue: DH1 (waits for DH2), DH3. No dependency cycle, but each queue's head waits for a
  // command behind the other queue's head.
  const HwConfig config =
      parse_hw_config("{}", "cfg", {"devices.count=2", "devices.dma_channels=1"});
  const Schedule s = parse({dev_hdma("DH0", 0, 1, 64, {"DH3"}), dev_hdma("DH2", 0, 1, 64),
                            dev_hdma("DH1", 1, 0, 64, {"DH2"}), dev_hdma("DH3", 1, 0, 64)},
                           config);
  try {
    estimate(s, config);
    ADD_FAILURE() << "no deadlock";
  } catch (const SimulationError& e) {
    EXPECT_THAT(e.what(), HasSubstr("DEV0.DEV_HDMA holds DH0, waiting for DH3 (queued on "
                                    "DEV1.DEV_HDMA behind 1 command(s))"));
    EXPECT_THAT(e.what(), HasSubstr("DEV1.DEV_HDMA holds DH1, waiting for DH2 (queued on "
                                    "DEV0.DEV_HDMA behind 1 command(s))"));
  }
  try {
    simulate(s, config);
    ADD_FAILURE() << "no deadlock";
  } catch (const SimulationError& e) {
    EXPECT_THAT(e.what(), HasSubstr("DEV0.DEV_HDMA holds DH0, waiting for DH3"));
  }
}

std::string load_error(const Json& doc, const std::vector<std::string>& overrides) {
  const HwConfig config = parse_hw_config("{}", "cfg", overrides);
  try {
    parse_schedule(doc, "s.json", config);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(MultiDevice, TheLoaderChecksDevicesPeersAndEdges) {
  const std::vector<std::string> ring4 = {"devices.count=4"};
  // Device out of range.
  EXPECT_THAT(load_error(schedule_v2({dev_hdma("DH0", 4, 0, 64)}), ring4),
              HasSubstr("/commands/0/device: device 4 out of range"));
  // No direct link between 0 and 2 in a ring of 4.
  EXPECT_THAT(load_error(schedule_v2({dev_hdma("DH0", 0, 2, 64)}), ring4),
              HasSubstr("/commands/0/peer: devices 0 and 2 have no direct link in the ring of 4"));
  // ... but there is one when fully connected, and in a tree between the root and a leaf.
  EXPECT_EQ(load_error(schedule_v2({dev_hdma("DH0", 0, 2, 64)}),
                       {"devices.count=4", "devices.topology=full"}),
            "");
  EXPECT_THAT(load_error(schedule_v2({dev_hdma("DH0", 1, 2, 64)}),
                         {"devices.count=4", "devices.topology=tree"}),
              HasSubstr("devices 1 and 2 have no direct link in the tree of 4"));
  // A SYNC may not list its own device, and needs peers.
  EXPECT_THAT(load_error(schedule_v2({{{"id", "DS0"}, {"engine", "SYNC"}, {"peers", {0}}}}), ring4),
              HasSubstr("/commands/0/peers/0: device 0 is the SYNC's own device"));
  EXPECT_THAT(load_error(schedule_v2({{{"id", "DS0"}, {"engine", "SYNC"}}}), ring4),
              HasSubstr("/commands/0/peers: missing required field"));
  // Devices wait for each other only through a SYNC or a DEV_HDMA into the waiting device.
  EXPECT_THAT(
      load_error(schedule_v2({add("S0", 0, 16, Json::array()), add("S1", 1, 16, {"S0"})}), ring4),
      HasSubstr("/commands/1/deps/0: S1 on device 1 depends on S0 on device 0"));
  EXPECT_THAT(
      load_error(schedule_v2({dev_hdma("DH0", 0, 1, 64), add("S1", 3, 16, {"DH0"})}), ring4),
      HasSubstr("S1 on device 3 depends on DH0 on device 0"));
  // Version 1 has no devices.
  Json v1 = schedule_v2({dev_hdma("DH0", 0, 1, 64)});
  v1["version"] = 1;
  EXPECT_THAT(load_error(v1, ring4), HasSubstr("/commands/0/engine: devices and the EXT_HDMA"));
  // One device: device 1 does not exist.
  EXPECT_THAT(load_error(schedule_v2({add("S0", 1, 16, Json::array())}), {}),
              HasSubstr("device 1 out of range: the config 'cfg' has 1 device(s)"));
}

TEST(MultiDevice, WrittenSchedulesReadBackTheSame) {
  // The writer writes version 2 and every device field; reading it back gives the same commands.
  const HwConfig config = parse_hw_config("{}", "cfg", {"devices.count=2"});
  const Json commands = {
      {{"id", "EH0"},
       {"engine", "EXT_HDMA"},
       {"device", 1},
       {"direction", "to_host"},
       {"bytes", 100}},
      dev_hdma("DH0", 1, 0, 64, {"EH0"}),
      {{"id", "DS0"}, {"engine", "SYNC"}, {"device", 0}, {"peers", {1}}, {"deps", {"DH0"}}},
  };
  const Schedule s = parse(commands, config);
  std::ostringstream text;
  write_schedule_json(text, s);
  EXPECT_THAT(text.str(), HasSubstr("\"version\": 2"));
  const Schedule back = parse_schedule(parse_json_text(text.str(), "w.json"), "w.json", config);
  ASSERT_EQ(back.commands.size(), 3u);
  EXPECT_EQ(back.commands[0].device, 1u);
  EXPECT_FALSE(back.commands[0].to_device);
  EXPECT_EQ(back.commands[1].peer, 0u);
  EXPECT_EQ(back.commands[2].peers, std::vector<std::uint32_t>{1});
  EXPECT_EQ(back.commands[2].deps, std::vector<std::uint32_t>{1});
  // The engine table: per device its slices, DMA and the three multi-device queues; HOST last.
  const EngineLayout layout(config, back);
  EXPECT_EQ(layout.count(), 2u * (2 * 2 + 2 + 3) + 1);
  EXPECT_EQ(layout.info(layout.of(back.commands[1])).name, "DEV1.DEV_HDMA");
  EXPECT_EQ(layout.info(layout.of(back.commands[2])).name, "DEV0.SYNC");
}

}  // namespace
}  // namespace npusim
