#include "sim/compiler/shard/collectives.h"

#include <algorithm>

namespace npusim::shard {
namespace {

class Emitter {
 public:
  Emitter(const CollectiveCommands& c, std::uint32_t devices, const ReductionPart& reduction,
          ScheduleAppender& out)
      : c_(c), devices_(devices), reduction_(reduction), out_(out) {}

  // Device `from` writes `elements` elements into device `to`'s DRAM.
  std::uint32_t transfer(std::uint32_t from, std::uint32_t to, std::uint64_t elements,
                         std::vector<std::uint32_t> deps, const std::string& step) {
    Command cmd;
    cmd.id = "DH";
    cmd.engine = EngineKind::kDevHdma;
    cmd.device = from;
    cmd.peer = to;
    cmd.bytes = elements * c_.element_bytes;
    cmd.deps = std::move(deps);
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

  // Chunk i of the whole tensor when it is cut in `devices` chunks as evenly as elements allow.
  std::uint64_t chunk(std::uint32_t i) const {
    return c_.elements / devices_ + (i < c_.elements % devices_ ? 1 : 0);
  }
  std::uint32_t next(std::uint32_t d) const { return (d + 1) % devices_; }
  std::uint32_t prev(std::uint32_t d) const { return (d + devices_ - 1) % devices_; }

  void ring_all_reduce(Frontier& frontier) {
    const std::uint32_t n = devices_;
    // Reduce-scatter: at step s device d sends chunk (d - s) mod n, which it reduced at step
    // s - 1 (its own partial at step 0), and d + 1 adds it to its partial of that chunk.
    std::vector<std::vector<std::uint32_t>> reduced = frontier;
    for (std::uint32_t s = 0; s + 1 < n; ++s) {
      const std::string step = "reduce_scatter " + std::to_string(s + 1);
      std::vector<std::uint32_t> sent(n);
      for (std::uint32_t d = 0; d < n; ++d) {
        sent[d] = transfer(d, next(d), chunk((d + n - s) % n), reduced[d], step);
      }
      std::vector<std::vector<std::uint32_t>> now(n);
      for (std::uint32_t d = 0; d < n; ++d) {
        std::vector<std::uint32_t> deps = reduced[d];
        deps.push_back(sent[prev(d)]);
        now[d] = reduce(d, chunk((prev(d) + n - s) % n), std::move(deps), step);
      }
      reduced = std::move(now);
    }
    // All-gather: device d now holds chunk (d + 1) mod n reduced, and passes chunks on.
    std::vector<std::uint32_t> received(n);
    for (std::uint32_t s = 0; s + 1 < n; ++s) {
      const std::string step = "all_gather " + std::to_string(s + 1);
      std::vector<std::uint32_t> sent(n);
      for (std::uint32_t d = 0; d < n; ++d) {
        sent[d] =
            transfer(d, next(d), chunk((d + 1 + n - s) % n),
                     s == 0 ? reduced[d] : std::vector<std::uint32_t>{received[prev(d)]}, step);
      }
      received = sent;
    }
    for (std::uint32_t d = 0; d < n; ++d) frontier[d] = {received[prev(d)], received[d]};
  }

  void ring_all_gather(Frontier& frontier) {
    const std::uint32_t n = devices_;
    const std::uint64_t part = c_.elements / n;
    std::vector<std::uint32_t> sent(n);
    for (std::uint32_t s = 0; s + 1 < n; ++s) {
      const std::string step = "all_gather " + std::to_string(s + 1);
      std::vector<std::uint32_t> now(n);
      for (std::uint32_t d = 0; d < n; ++d) {
        now[d] = transfer(d, next(d), part,
                          s == 0 ? frontier[d] : std::vector<std::uint32_t>{sent[prev(d)]}, step);
      }
      sent = std::move(now);
    }
    for (std::uint32_t d = 0; d < n; ++d) frontier[d] = {sent[prev(d)], sent[d]};
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
