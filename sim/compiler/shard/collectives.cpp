#include "sim/compiler/shard/collectives.h"

#include <algorithm>
#include <optional>

namespace npusim::shard {
namespace {

class Emitter {
 public:
  Emitter(const CollectiveCommands& c, std::uint32_t devices, const ReductionPart& reduction,
          ScheduleAppender& out)
      : c_(c), devices_(devices), reduction_(reduction), out_(out) {}

  // Device `from` writes `elements` elements into device `to`'s DRAM.
  std::uint32_t transfer(std::uint32_t from, std::uint32_t to, std::uint64_t elements,
                         const std::vector<std::uint32_t>& deps, const std::string& step) {
    Command cmd;
    cmd.id = "DH";
    cmd.engine = EngineKind::kDevHdma;
    cmd.device = from;
    cmd.peer = to;
    cmd.bytes = elements * c_.element_bytes;
    cmd.deps = deps;
    cmd.layer = c_.layer;
    cmd.loc = step;
    cmd.program = c_.program;
    return out_.add(std::move(cmd));
  }

  // Device `on` adds a received chunk of `elements` elements to its own; returns the sinks.
  std::vector<std::uint32_t> reduce(std::uint32_t on, std::uint64_t elements,
                                    std::vector<std::uint32_t> deps, const std::string& step) {
    AppendOptions options;
    options.device = on;
    options.root_deps = std::move(deps);
    options.program_base = c_.program;
    options.add_layer_views = false;
    options.layer = c_.layer;
    options.loc = step;
    return out_.append(reduction_(elements), options).sinks;
  }

  // Chunk i of the whole tensor when it is cut in `devices` chunks as evenly as elements allow
  // (ring all-reduce), or part i of a split tensor (ring all-gather).
  std::uint64_t chunk(std::uint32_t i) const {
    if (c_.kind == CollectiveKind::kAllGather) return c_.elements / devices_;
    return c_.elements / devices_ + (i < c_.elements % devices_ ? 1 : 0);
  }
  std::uint32_t next(std::uint32_t d) const { return (d + 1) % devices_; }
  std::uint32_t prev(std::uint32_t d) const { return (d + devices_ - 1) % devices_; }

  // A device's part in a ring collective: what its next transfer waits for, and every transfer it
  // sent or received (what waits for the collective's end on it).
  struct RingDevice {
    std::vector<std::uint32_t> ready;
    std::vector<std::uint32_t> done;
  };

  // One ring step: device d sends chunk chunk_of(d) to d + 1 when the chunk has elements. Returns
  // per device the transfer it received, if any.
  template <typename ChunkOf>
  std::vector<std::optional<std::uint32_t>> ring_step(std::vector<RingDevice>& ring,
                                                      ChunkOf chunk_of, const std::string& step) {
    const std::uint32_t n = devices_;
    std::vector<std::optional<std::uint32_t>> received(n);
    for (std::uint32_t d = 0; d < n; ++d) {
      const std::uint64_t elements = chunk(chunk_of(d));
      if (elements == 0) continue;  // a tensor of fewer elements than devices
      const std::uint32_t sent = transfer(d, next(d), elements, ring[d].ready, step);
      ring[d].done.push_back(sent);
      ring[next(d)].done.push_back(sent);
      received[next(d)] = sent;
    }
    return received;
  }

  void ring_all_reduce(Frontier& frontier) {
    const std::uint32_t n = devices_;
    std::vector<RingDevice> ring(n);
    for (std::uint32_t d = 0; d < n; ++d) ring[d].ready = frontier[d];
    // Reduce-scatter: at step s device d sends chunk (d - s) mod n, which it reduced at step
    // s - 1 (its own partial at step 0), and d + 1 adds it to its partial of that chunk.
    for (std::uint32_t s = 0; s + 1 < n; ++s) {
      const std::string step = "reduce_scatter " + std::to_string(s + 1);
      const auto received = ring_step(
          ring, [&](std::uint32_t d) { return (d + n - s) % n; }, step);
      for (std::uint32_t d = 0; d < n; ++d) {
        if (!received[d]) continue;
        std::vector<std::uint32_t> deps = ring[d].ready;
        deps.push_back(*received[d]);
        ring[d].ready = reduce(d, chunk((prev(d) + n - s) % n), std::move(deps), step);
      }
    }
    // All-gather: device d now holds chunk (d + 1) mod n reduced, and passes chunks on, each
    // after receiving it.
    for (std::uint32_t s = 0; s + 1 < n; ++s) {
      const std::string step = "all_gather " + std::to_string(s + 1);
      const auto received = ring_step(
          ring, [&](std::uint32_t d) { return (d + 1 + n - s) % n; }, step);
      for (std::uint32_t d = 0; d < n; ++d) {
        if (received[d]) ring[d].ready = {*received[d]};
      }
    }
    finish_ring(ring, frontier);
  }

  void ring_all_gather(Frontier& frontier) {
    const std::uint32_t n = devices_;
    std::vector<RingDevice> ring(n);
    for (std::uint32_t d = 0; d < n; ++d) ring[d].ready = frontier[d];
    // Step s: device d passes on part (d - s) mod n, its own at step 0.
    for (std::uint32_t s = 0; s + 1 < n; ++s) {
      const std::string step = "all_gather " + std::to_string(s + 1);
      const auto received = ring_step(
          ring, [&](std::uint32_t d) { return (d + n - s) % n; }, step);
      for (std::uint32_t d = 0; d < n; ++d) {
        if (received[d]) ring[d].ready = {*received[d]};
      }
    }
    finish_ring(ring, frontier);
  }

  // Each device's next command waits for every transfer it took part in and for its last
  // reduction.
  static void finish_ring(std::vector<RingDevice>& ring, Frontier& frontier) {
    for (std::size_t d = 0; d < ring.size(); ++d) {
      std::vector<std::uint32_t>& f = ring[d].done;
      f.insert(f.end(), ring[d].ready.begin(), ring[d].ready.end());
      std::sort(f.begin(), f.end());
      f.erase(std::unique(f.begin(), f.end()), f.end());
      frontier[d] = std::move(f);
    }
  }

  // Every leaf sends to device 0; device 0 adds the partials (all-reduce) or holds every part
  // (all-gather), then sends the whole back to each leaf.
  void root_and_leaves(Frontier& frontier) {
    const bool reduce_sums = c_.kind == CollectiveKind::kAllReduce;
    const std::uint64_t part = reduce_sums ? c_.elements : c_.elements / devices_;
    std::vector<std::uint32_t> gathered = frontier[0];
    for (std::uint32_t leaf = 1; leaf < devices_; ++leaf) {
      const std::uint32_t sent = transfer(leaf, 0, part, frontier[leaf], "to root");
      if (!reduce_sums) {
        gathered.push_back(sent);
        continue;
      }
      std::vector<std::uint32_t> deps = std::move(gathered);
      deps.push_back(sent);
      gathered = reduce(0, c_.elements, std::move(deps), "reduce at root");
    }
    const std::uint64_t back = reduce_sums ? c_.elements : c_.elements - part;
    for (std::uint32_t leaf = 1; leaf < devices_; ++leaf) {
      frontier[leaf] = {transfer(0, leaf, back, gathered, "from root")};
    }
    frontier[0] = std::move(gathered);
  }

 private:
  const CollectiveCommands& c_;
  std::uint32_t devices_;
  const ReductionPart& reduction_;
  ScheduleAppender& out_;
};

}  // namespace

void emit_collective(const CollectiveCommands& c, const DevicesConfig& devices,
                     const ReductionPart& reduction, ScheduleAppender& out, Frontier& frontier) {
  Emitter e(c, devices.count, reduction, out);
  if (devices.topology != Topology::kRing) {
    e.root_and_leaves(frontier);
  } else if (c.kind == CollectiveKind::kAllReduce) {
    e.ring_all_reduce(frontier);
  } else {
    e.ring_all_gather(frontier);
  }
}

}  // namespace npusim::shard
