#include "sim/ir/synthetic.h"

#include <algorithm>
#include <vector>

#include "sim/util/error.h"

namespace npusim {

Schedule synthetic_schedule(std::uint64_t commands, const HwConfig& config) {
  constexpr std::uint64_t kLoadBytes = 2048;  // 16 x 128 int8 activations
  constexpr std::uint64_t kStoreBytes = 256;  // 16 x 16 int8 results
  constexpr std::uint64_t kTilesPerProgram = 1000;
  const std::uint64_t tiles = std::max<std::uint64_t>(1, commands / 3);
  const std::uint32_t slices = config.slices.count;
  Schedule s;
  s.file = "synthetic";
  s.model.name = "synthetic_" + std::to_string(tiles * 3);
  s.target_config = config.name;
  s.target_slices = slices;
  s.commands.reserve(tiles * 3);
  std::vector<std::vector<std::uint32_t>> stores(slices);  // per slice, the tiles' stores
  const OpId gemm = find_op("Gemm");
  for (std::uint64_t t = 0; t < tiles; ++t) {
    const std::uint32_t slice = static_cast<std::uint32_t>(t % slices);
    const std::uint32_t program = static_cast<std::uint32_t>(t / kTilesPerProgram);
    if (t % kTilesPerProgram == 0) s.programs.push_back({"block" + std::to_string(program), ""});
    const std::string n = std::to_string(t);
    const auto& ring = stores[slice];
    std::vector<std::uint32_t> wait;
    if (ring.size() >= 2) wait.push_back(ring[ring.size() - 2]);

    Command load;
    load.id = "DI" + n;
    load.engine = EngineKind::kDmaIn;
    load.bytes = kLoadBytes;
    load.deps = wait;
    load.program = program;
    load.alloc.push_back({"in" + n, kLoadBytes});
    s.commands.push_back(std::move(load));

    Command compute;
    compute.id = "S" + n;
    compute.engine = EngineKind::kArray;
    compute.slice = slice;
    compute.op = gemm;
    compute.shape = GemmShape{1, 16, 16, 128};
    compute.deps = {static_cast<std::uint32_t>(s.commands.size() - 1)};
    compute.deps.insert(compute.deps.end(), wait.begin(), wait.end());
    compute.program = program;
    compute.alloc.push_back({"out" + n, kStoreBytes});
    compute.free.push_back("in" + n);
    s.commands.push_back(std::move(compute));

    Command store;
    store.id = "DO" + n;
    store.engine = EngineKind::kDmaOut;
    store.bytes = kStoreBytes;
    store.deps = {static_cast<std::uint32_t>(s.commands.size() - 1)};
    store.program = program;
    store.free.push_back("out" + n);
    s.commands.push_back(std::move(store));
    stores[slice].push_back(static_cast<std::uint32_t>(s.commands.size() - 1));
  }
  Diagnostics diag("synthetic");
  finalize_schedule(s, config, diag);
  diag.throw_if_any();
  return s;
}

}  // namespace npusim
