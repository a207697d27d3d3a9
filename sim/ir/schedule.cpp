#include "sim/ir/schedule.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <new>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "profiler/dependants.h"
#include "sim/cost/evaluator.h"
#include "sim/ir/command_stream.h"
#include "sim/ir/schedule_fast.h"
#include "sim/util/flat_index.h"
#include "sim/util/json_stream.h"

namespace npusim {
namespace {

using detail::CommandRefs;
using detail::CommandStream;
using detail::id_follows_convention;
using detail::PendingDep;
using detail::ProgramCheck;

std::vector<TensorInfo> parse_tensors(JsonObject& model, const std::string& key) {
  std::vector<TensorInfo> tensors;
  const Json& list = model.get_array(key, false);
  for (std::size_t i = 0; i < list.size(); ++i) {
    JsonObject t(list[i], model.pointer(key) + "/" + std::to_string(i), model.diagnostics());
    TensorInfo info;
    info.name = t.require_string("name").value_or("");
    info.dtype = t.get_string("dtype", "int8");
    info.layout = t.get_string("layout", "");
    const Json* shape = t.get("shape");
    if (shape && shape->is_array()) {
      for (std::size_t d = 0; d < shape->size(); ++d) {
        const auto dim = json_uint((*shape)[d]);
        if (!dim) {
          model.diagnostics().error(t.pointer("shape") + "/" + std::to_string(d),
                                    "expected a non-negative integer, found " + (*shape)[d].dump());
          continue;
        }
        info.shape.push_back(*dim);
      }
    } else if (shape) {
      model.diagnostics().error(t.pointer("shape"), "expected an array of dimensions");
    }
    t.finish();
    tensors.push_back(std::move(info));
  }
  return tensors;
}

ModelInfo parse_model(JsonObject& top) {
  ModelInfo model;
  const Json* v = top.get("model");
  if (!v) {
    top.diagnostics().error("/model", "missing required field");
    return model;
  }
  JsonObject m(*v, "/model", top.diagnostics());
  model.name = m.require_string("name").value_or("");
  model.batch = m.get_uint("batch", 1, 1, kMaxDimension);
  model.weights_bytes = m.get_uint("weights_bytes", 0, 0, kMaxTransferBytes);
  model.inputs = parse_tensors(m, "inputs");
  model.outputs = parse_tensors(m, "outputs");
  m.finish();
  return model;
}

Shape parse_shape(JsonObject& cmd, const OpInfo& op) {
  const Json* v = cmd.get("shape");
  if (!v) {
    cmd.diagnostics().error(cmd.pointer("shape"),
                            "missing required field for op " + std::string(op.name));
    return {};
  }
  JsonObject s(*v, cmd.pointer("shape"), cmd.diagnostics());
  auto dim = [&](const char* key) { return s.require_uint(key, 1, kMaxDimension).value_or(1); };
  auto opt = [&](const char* key, std::uint64_t fallback, std::uint64_t min) {
    return s.get_uint(key, fallback, min, kMaxDimension);
  };
  Shape shape;
  switch (op.shape) {
    case ShapeKind::kGemm: {
      GemmShape g;
      g.batch = opt("batch", 1, 1);
      g.m = dim("m");
      g.n = dim("n");
      g.k = dim("k");
      shape = g;
      break;
    }
    case ShapeKind::kConv:
    case ShapeKind::kPool:
    case ShapeKind::kGlobalPool: {
      ConvShape c;
      c.batch = opt("batch", 1, 1);
      c.in_h = dim("in_h");
      c.in_w = dim("in_w");
      if (op.shape == ShapeKind::kConv) {
        c.in_c = dim("in_c");
        c.out_c = op.unit == EngineKind::kArray ? dim("out_c") : opt("out_c", c.in_c, 1);
      } else {
        c.in_c = c.out_c = dim("channels");
      }
      if (op.shape == ShapeKind::kGlobalPool) {
        c.kernel_h = c.in_h;
        c.kernel_w = c.in_w;
      } else {
        c.kernel_h = dim("kernel_h");
        c.kernel_w = dim("kernel_w");
        c.stride_h = opt("stride_h", 1, 1);
        c.stride_w = opt("stride_w", 1, 1);
        c.pad_h = opt("pad_h", 0, 0);
        c.pad_w = opt("pad_w", 0, 0);
      }
      if (op.shape == ShapeKind::kConv && op.unit == EngineKind::kArray) {
        c.groups = opt("groups", 1, 1);
        if (c.in_c % c.groups != 0 || c.out_c % c.groups != 0) {
          s.diagnostics().error(s.pointer("groups"), "groups " + std::to_string(c.groups) +
                                                         " must divide in_c and out_c");
          c.groups = 1;
        }
      } else if (op.shape == ShapeKind::kConv && c.out_c % c.in_c != 0) {
        s.diagnostics().error(s.pointer("out_c"),
                              "a depthwise conv's out_c must be a multiple of in_c");
      }
      if (c.in_h + 2 * c.pad_h < c.kernel_h) {
        s.diagnostics().error(s.pointer("kernel_h"), "kernel taller than the padded input");
        c.kernel_h = 1;
      }
      if (c.in_w + 2 * c.pad_w < c.kernel_w) {
        s.diagnostics().error(s.pointer("kernel_w"), "kernel wider than the padded input");
        c.kernel_w = 1;
      }
      shape = c;
      break;
    }
    case ShapeKind::kElements: {
      ElementsShape e;
      e.elements = s.require_uint("elements", 1, kMaxTransferBytes).value_or(1);
      shape = e;
      break;
    }
  }
  s.finish();
  return shape;
}

struct Buffer {
  std::string_view name;  // the allocating command's alloc entry's
  std::uint32_t allocated_by = 0;
  std::uint64_t bytes = 0;
  bool freed = false;
  std::uint32_t freed_by = 0;
  std::uint32_t free_index = 0;  // where in freed_by's free list: /commands/<freed_by>/free/<i>
};

// Buffers by name, in the order they are allocated (a schedule has as many as tiles).
class BufferTable {
 public:
  explicit BufferTable(std::size_t count) : index_(count) { list_.reserve(count); }
  Buffer* find(std::string_view name) { return find(name, hash_name(name)); }
  // False, adding nothing, if a buffer of that name exists.
  bool add(const Buffer& buffer) {
    const std::uint64_t hash = hash_name(buffer.name);
    if (find(buffer.name, hash) != nullptr) return false;
    index_.add(hash, static_cast<std::uint32_t>(list_.size()));
    list_.push_back(buffer);
    return true;
  }
  const std::vector<Buffer>& list() const { return list_; }

 private:
  Buffer* find(std::string_view name, std::uint64_t hash) {
    const std::uint32_t* at =
        index_.find(hash, [&](std::uint32_t b) { return list_[b].name == name; });
    return at ? &list_[*at] : nullptr;
  }
  FlatIndex index_;
  std::vector<Buffer> list_;
};

// The command's device, and no multi-device key on a command of one device's engines.
void parse_device(JsonObject& c, Command& cmd, const HwConfig& config, Diagnostics& diag) {
  cmd.device = static_cast<std::uint32_t>(c.get_uint("device", 0, 0, 1u << 20));
  if (cmd.device >= config.devices.count) {
    diag.error(c.pointer("device"), "device " + std::to_string(cmd.device) +
                                        " out of range: the config '" + config.name + "' has " +
                                        std::to_string(config.devices.count) +
                                        " device(s) (devices.count)");
    cmd.device = 0;
  }
  if (!is_multi_device(cmd.engine)) {
    for (const char* key : {"direction", "peer", "peers"}) {
      if (c.get(key))
        diag.error(c.pointer(key), std::string(key) + " applies to " +
                                       (std::string(key) == "peers"  ? "SYNC commands only"
                                        : std::string(key) == "peer" ? "DEV_HDMA commands only"
                                                                     : "EXT_HDMA commands only"));
    }
  }
}

// A SYNC's peers: other devices of the config, each once.
void parse_sync(JsonObject& c, Command& cmd, const HwConfig& config, Diagnostics& diag) {
  const std::string op = c.get_string("op", "SYNC");
  if (op != "SYNC") diag.error(c.pointer("op"), "a SYNC command's op must be SYNC");
  const Json& peers = c.get_array("peers", true);
  for (std::size_t p = 0; p < peers.size(); ++p) {
    const std::string pp = c.pointer("peers") + "/" + std::to_string(p);
    const bool device_number = peers[p].is_number_integer() && peers[p].get<std::int64_t>() >= 0 &&
                               peers[p].get<std::uint64_t>() < config.devices.count;
    if (!device_number) {
      diag.error(pp, "expected a device in [0, " + std::to_string(config.devices.count - 1) +
                         "], found " + peers[p].dump());
      continue;
    }
    const auto peer = static_cast<std::uint32_t>(peers[p].get<std::uint64_t>());
    if (peer == cmd.device ||
        std::find(cmd.peers.begin(), cmd.peers.end(), peer) != cmd.peers.end()) {
      diag.error(pp, "device " + std::to_string(peer) +
                         (peer == cmd.device ? " is the SYNC's own device" : " is listed twice"));
      continue;
    }
    cmd.peers.push_back(peer);
  }
  if (peers.empty() && c.has("peers")) diag.error(c.pointer("peers"), "a SYNC needs a peer");
  for (const char* key : {"slice", "shape", "bytes", "direction", "peer"}) {
    if (c.get(key)) diag.error(c.pointer(key), std::string(key) + " does not apply to SYNC");
  }
}

// EXT_HDMA's direction, DEV_HDMA's peer (a device linked to the command's own).
void parse_link_fields(JsonObject& c, Command& cmd, const HwConfig& config, Diagnostics& diag) {
  if (cmd.engine == EngineKind::kExtHdma) {
    const std::string direction = c.require_string("direction").value_or("to_device");
    if (direction != "to_device" && direction != "to_host") {
      diag.error(c.pointer("direction"),
                 "expected \"to_device\" or \"to_host\", found \"" + direction + "\"");
    }
    cmd.to_device = direction != "to_host";
    if (c.get("peer")) diag.error(c.pointer("peer"), "peer applies to DEV_HDMA commands only");
  } else if (cmd.engine == EngineKind::kDevHdma) {
    const std::uint64_t peer = c.require_uint("peer", 0, 1u << 20).value_or(cmd.device);
    if (c.has("peer") && !config.devices.linked(cmd.device, static_cast<std::uint32_t>(peer))) {
      diag.error(c.pointer("peer"),
                 peer == cmd.device
                     ? "a DEV_HDMA's peer must be another device"
                     : "devices " + std::to_string(cmd.device) + " and " + std::to_string(peer) +
                           " have no direct link in the " + topology_name(config.devices.topology) +
                           " of " + std::to_string(config.devices.count) +
                           " device(s) (devices.topology)");
    }
    cmd.peer = static_cast<std::uint32_t>(std::min<std::uint64_t>(peer, 1u << 20));
    if (c.get("direction"))
      diag.error(c.pointer("direction"), "direction applies to EXT_HDMA commands only");
  }
}

Command parse_command(const Json& value, std::size_t index, const HwConfig& config,
                      Diagnostics& diag, CommandRefs& refs) {
  const std::string ptr = "/commands/" + std::to_string(index);
  JsonObject c(value, ptr, diag);
  Command cmd;
  cmd.id = c.require_string("id").value_or("");
  const std::string engine = c.require_string("engine").value_or("");
  if (engine == "DMA_IN") {
    cmd.engine = EngineKind::kDmaIn;
  } else if (engine == "DMA_OUT") {
    cmd.engine = EngineKind::kDmaOut;
  } else if (engine == "SLICE") {
    cmd.engine = EngineKind::kArray;  // the op decides below
  } else if (engine == "HOST") {
    cmd.engine = EngineKind::kHost;
  } else if (engine == "EXT_HDMA") {
    cmd.engine = EngineKind::kExtHdma;
  } else if (engine == "DEV_HDMA") {
    cmd.engine = EngineKind::kDevHdma;
  } else if (engine == "SYNC") {
    cmd.engine = EngineKind::kSync;
  } else {
    if (c.has("engine")) {
      diag.error(c.pointer("engine"), "unknown engine '" + engine +
                                          "' (expected DMA_IN, DMA_OUT, SLICE, HOST, EXT_HDMA, "
                                          "DEV_HDMA or SYNC)");
    }
    // Nothing else about the command can be checked without its engine.
    for (const char* key : {"device", "slice", "op", "shape", "bytes", "direction", "peer", "peers",
                            "deps", "layer", "loc", "program", "alloc", "free"})
      c.get(key);
    return cmd;
  }
  if (!cmd.id.empty() && c.has("engine") && !id_follows_convention(cmd.id, cmd.engine)) {
    diag.error(c.pointer("id"), "id '" + cmd.id +
                                    "' does not follow the convention DI<n> (DMA_IN), DO<n> "
                                    "(DMA_OUT), S<n> (SLICE), H<n> (HOST), EH<n> (EXT_HDMA), "
                                    "DH<n> (DEV_HDMA), DS<n> (SYNC) for engine " +
                                    engine);
  }
  parse_device(c, cmd, config, diag);
  if (on_slice(cmd.engine)) {
    cmd.slice = static_cast<std::uint32_t>(c.require_uint("slice", 0, 1u << 20).value_or(0));
    if (c.has("slice") && cmd.slice >= config.slices.count) {
      diag.error(c.pointer("slice"), "slice " + std::to_string(cmd.slice) +
                                         " out of range: the config '" + config.name + "' has " +
                                         std::to_string(config.slices.count) + " slice(s)");
      cmd.slice = 0;
    }
    const std::string op = c.require_string("op").value_or("");
    cmd.op = find_op(op);
    if (cmd.op == op_table().size()) {
      if (c.has("op"))
        diag.error(c.pointer("op"), "unknown op '" + op + "' (known: " + known_op_names() + ")");
      cmd.op = 0;
      c.get("shape");
    } else {
      cmd.shape = parse_shape(c, op_table()[cmd.op]);
    }
    cmd.engine = op_table()[cmd.op].unit;
    if (c.get("bytes")) diag.error(c.pointer("bytes"), "bytes applies to DMA commands only");
  } else if (cmd.engine == EngineKind::kHost) {
    const std::string op = c.get_string("op", "Host");
    if (op != "Host") diag.error(c.pointer("op"), "a HOST command's op must be Host");
    const Json* shape = c.get("shape");
    if (shape == nullptr) {
      diag.error(c.pointer("shape"),
                 "missing required field (a HOST command's shape is {\"elements\": N})");
    } else {
      JsonObject s(*shape, c.pointer("shape"), diag);
      cmd.elements = s.require_uint("elements", 0, kMaxTransferBytes).value_or(0);
      s.finish();
    }
    if (c.get("slice")) diag.error(c.pointer("slice"), "slice applies to SLICE commands only");
    if (c.get("bytes")) diag.error(c.pointer("bytes"), "bytes applies to DMA commands only");
  } else if (cmd.engine == EngineKind::kSync) {
    parse_sync(c, cmd, config, diag);
  } else {
    cmd.bytes = c.require_uint("bytes", 1, kMaxTransferBytes).value_or(1);
    parse_link_fields(c, cmd, config, diag);
    if (cmd.engine != EngineKind::kSync && c.get("peers"))
      diag.error(c.pointer("peers"), "peers applies to SYNC commands only");
    const std::string op = c.get_string("op", engine);
    if (op != engine)
      diag.error(c.pointer("op"), "a " + engine + " command's op must be " + engine);
    if (c.get("slice")) diag.error(c.pointer("slice"), "slice applies to SLICE commands only");
    if (c.get("shape")) diag.error(c.pointer("shape"), "shape applies to SLICE commands only");
  }
  cmd.layer = c.get_string("layer", "");
  cmd.loc = c.get_string("loc", "");
  const std::uint64_t program =
      c.get_uint("program", 0, 0, std::numeric_limits<std::uint64_t>::max());
  if (program != 0)
    refs.programs.push_back({static_cast<std::uint32_t>(index), diag.size(), program});

  const Json& deps = c.get_array("deps", false);
  for (std::size_t d = 0; d < deps.size(); ++d) {
    if (!deps[d].is_string()) {
      diag.error(c.pointer("deps") + "/" + std::to_string(d),
                 "expected a command id, found " + deps[d].dump());
      continue;
    }
    refs.add_dep(static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(d),
                 deps[d].get_ref<const std::string&>());
  }

  const Json& allocs = c.get_array("alloc", false);
  for (std::size_t a = 0; a < allocs.size(); ++a) {
    JsonObject alloc(allocs[a], c.pointer("alloc") + "/" + std::to_string(a), diag);
    auto name = alloc.require_string("buffer");
    if (name && name->empty()) {
      diag.error(alloc.pointer("buffer"), "a buffer needs a name");
      name.reset();
    }
    const auto bytes = alloc.require_uint("bytes", 1, kMaxTransferBytes);
    // A placeholder keeps the indices of later entries, so that pointers stay right.
    cmd.alloc.push_back({name.value_or(""), bytes.value_or(0)});
    alloc.finish();
  }
  const Json& frees = c.get_array("free", false);
  for (std::size_t f = 0; f < frees.size(); ++f) {
    if (!frees[f].is_string() || frees[f].get<std::string>().empty()) {
      diag.error(c.pointer("free") + "/" + std::to_string(f),
                 "expected a buffer name, found " + frees[f].dump());
      cmd.free.emplace_back();
      continue;
    }
    cmd.free.push_back(frees[f].get<std::string>());
  }
  c.finish();
  return cmd;
}

// Finds one dependency cycle among the commands Kahn's algorithm could not order, and names it.
std::string describe_cycle(const std::vector<Command>& commands,
                           const std::vector<std::uint32_t>& indegree) {
  // Every unordered command has an unordered dependency; walking deps from one must revisit.
  std::uint32_t at = 0;
  while (indegree[at] == 0) ++at;
  std::vector<int> seen_at(commands.size(), -1);
  std::vector<std::uint32_t> path;
  while (seen_at[at] < 0) {
    seen_at[at] = static_cast<int>(path.size());
    path.push_back(at);
    for (std::uint32_t d : commands[at].deps) {
      if (d < commands.size() && indegree[d] > 0) {
        at = d;
        break;
      }
    }
  }
  std::string text;
  for (std::size_t i = static_cast<std::size_t>(seen_at[at]); i < path.size(); ++i) {
    text += commands[path[i]].id + " -> ";
  }
  return text + commands[at].id;
}

// Returns each command's position in a topological order, or an empty vector (and a problem
// naming one cycle) if the dependencies are cyclic.
std::vector<std::uint32_t> topological_positions(const std::vector<Command>& commands,
                                                 Diagnostics& diag) {
  // Schedules as the compiler emits them (and most written by hand) list every dependency before
  // its dependant: then their own order is topological, with no graph walk.
  bool in_order = true;
  for (std::uint32_t i = 0; i < commands.size() && in_order; ++i) {
    for (const std::uint32_t d : commands[i].deps) in_order = in_order && d < i;
  }
  if (in_order) {
    std::vector<std::uint32_t> position(commands.size());
    std::iota(position.begin(), position.end(), 0u);
    return position;
  }
  const profiler::Dependants dependants(commands);
  std::vector<std::uint32_t> indegree = dependants.waiting();  // unfinished dependencies
  std::vector<std::uint32_t> ready;
  for (std::uint32_t i = 0; i < commands.size(); ++i) {
    if (indegree[i] == 0) ready.push_back(i);
  }
  std::vector<std::uint32_t> position(commands.size());
  std::uint32_t ordered = 0;
  while (!ready.empty()) {
    const std::uint32_t i = ready.back();
    ready.pop_back();
    position[i] = ordered++;
    for (const std::uint32_t j : dependants.of(i)) {
      if (--indegree[j] == 0) ready.push_back(j);
    }
  }
  if (ordered < commands.size()) {
    diag.error("/commands", "dependency cycle: " + describe_cycle(commands, indegree));
    return {};
  }
  return position;
}

// Whether `later` is `earlier` or depends on it, directly or not. Searches back from `later`,
// skipping commands that come before `earlier` in topological order: none of those can depend
// on it, so the search stays among the few commands between the two.
bool depends_on(const std::vector<Command>& commands, const std::vector<std::uint32_t>& position,
                std::uint32_t later, std::uint32_t earlier, std::vector<std::uint32_t>& stamp,
                std::uint32_t epoch, std::vector<std::uint32_t>& stack) {
  stack.assign(1, later);
  while (!stack.empty()) {
    const std::uint32_t at = stack.back();
    stack.pop_back();
    if (at == earlier) return true;
    for (std::uint32_t d : commands[at].deps) {
      if (d == earlier) return true;
      if (d < position.size() && position[d] > position[earlier] && stamp[d] != epoch) {
        stamp[d] = epoch;
        stack.push_back(d);
      }
    }
  }
  return false;
}

// A buffer must be freed by its allocator or by a command that (transitively) depends on it;
// otherwise the free could come first and the occupancy would be meaningless.
void check_buffer_order(const std::vector<Command>& commands,
                        const std::vector<std::uint32_t>& position, const BufferTable& buffers,
                        Diagnostics& diag) {
  std::vector<std::uint32_t> stamp(commands.size(), 0), stack;
  std::uint32_t epoch = 0;
  std::vector<const Buffer*> wrong;
  for (const Buffer& b : buffers.list()) {
    if (!b.freed) continue;
    if (!depends_on(commands, position, b.freed_by, b.allocated_by, stamp, ++epoch, stack)) {
      wrong.push_back(&b);
    }
  }
  std::sort(wrong.begin(), wrong.end(),
            [](const Buffer* a, const Buffer* b) { return a->name < b->name; });
  for (const Buffer* entry : wrong) {
    const Buffer& b = *entry;
    diag.error("/commands/" + std::to_string(b.freed_by) + "/free/" + std::to_string(b.free_index),
               "buffer '" + std::string(b.name) + "' is freed by " + commands[b.freed_by].id +
                   ", which does not depend on " + commands[b.allocated_by].id +
                   " that allocates it");
  }
}

// Devices meet only where the schedule says so: a command may wait for one on another device
// through a SYNC that joins both devices, or for a DEV_HDMA that writes to its device. HOST
// commands belong to no device.
bool crosses_devices_legally(const Command& dependant, const Command& dep) {
  if (dependant.device == dep.device || dependant.engine == EngineKind::kHost ||
      dep.engine == EngineKind::kHost) {
    return true;
  }
  const auto joins = [](const Command& sync, std::uint32_t device) {
    return std::find(sync.peers.begin(), sync.peers.end(), device) != sync.peers.end();
  };
  if (dep.engine == EngineKind::kSync && joins(dep, dependant.device)) return true;
  if (dependant.engine == EngineKind::kSync && joins(dependant, dep.device)) return true;
  return dep.engine == EngineKind::kDevHdma && dep.peer == dependant.device;
}

void check_device_edges(const std::vector<Command>& commands, Diagnostics& diag) {
  for (std::uint32_t i = 0; i < commands.size(); ++i) {
    const Command& cmd = commands[i];
    for (std::size_t k = 0; k < cmd.deps.size(); ++k) {
      const Command& dep = commands[cmd.deps[k]];
      if (crosses_devices_legally(cmd, dep)) continue;
      diag.error("/commands/" + std::to_string(i) + "/deps/" + std::to_string(k),
                 cmd.id + " on device " + std::to_string(cmd.device) + " depends on " + dep.id +
                     " on device " + std::to_string(dep.device) +
                     ": devices wait for each other only through a SYNC that lists both or a "
                     "DEV_HDMA that writes to the waiting device");
    }
  }
}

// Builds the schedule's JSON document as nlohmann's DOM parser does, except the top-level
// "commands" array: each of its elements is built alone, handed to a CommandStream and dropped.
class ScheduleSax final : public JsonSaxHandler {
 public:
  explicit ScheduleSax(CommandStream& stream) : stream_(stream) {}
  const Json& root() const { return root_; }
  // Whether the document's "commands" (the last one, if the key is repeated) went to the stream.
  bool streamed() const { return streamed_; }

  bool null() override { return value(nullptr); }
  bool boolean(bool v) override { return value(v); }
  bool number_integer(number_integer_t v) override { return value(v); }
  bool number_unsigned(number_unsigned_t v) override { return value(v); }
  bool number_float(number_float_t v, const string_t& /*text*/) override { return value(v); }
  bool string(string_t& v) override { return value(std::move(v)); }
  bool start_object(std::size_t /*size*/) override { return open(Json::object()); }
  bool start_array(std::size_t /*size*/) override {
    if (commands_key_ && depth() == 1 && stack_.size() == 1) {
      *slot_ = Json::array();  // what JsonObject sees; the commands themselves are streamed
      if (!enter()) return false;
      in_commands_ = true;
      streamed_ = true;
      return true;
    }
    return open(Json::array());
  }
  bool key(string_t& k) override {
    if (depth() == 1 && stack_.size() == 1) {
      commands_key_ = k == "commands";
      if (commands_key_) {  // a repeated key replaces the earlier value, as in a document
        streamed_ = false;
        stream_.clear();
      }
    }
    slot_ = &(*stack_.back())[k];
    return true;
  }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }

 private:
  // An element of the commands array is being built when it sits at depth 2.
  bool at_command() const { return in_commands_ && depth() == 2; }
  Json* put(Json&& v) {
    if (at_command()) {
      command_ = std::move(v);
      return &command_;
    }
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Json& parent = *stack_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return &parent.back();
    }
    *slot_ = std::move(v);
    return slot_;
  }
  bool value(Json&& v) {
    put(std::move(v));
    if (at_command()) stream_.add(command_);
    return true;
  }
  bool open(Json&& container) {
    Json* at = put(std::move(container));
    if (!enter()) return false;
    stack_.push_back(at);
    return true;
  }
  bool close() {
    leave();
    if (in_commands_ && depth() == 1) {  // the commands array itself
      in_commands_ = false;
      return true;
    }
    stack_.pop_back();
    if (at_command()) stream_.add(command_);
    return true;
  }

  CommandStream& stream_;
  Json root_;
  std::vector<Json*> stack_;   // the containers being built, innermost last
  Json* slot_ = nullptr;       // where the value after a key goes
  Json command_;               // the command being built
  bool commands_key_ = false;  // the last top-level key was "commands"
  bool in_commands_ = false;
  bool streamed_ = false;
};

// The schedule from its document; its commands come from `streamed` when the document's
// "commands" array was streamed past, or else from the document.
Schedule assemble_schedule(const Json& root, CommandStream* streamed, const std::string& origin,
                           const HwConfig& config);

}  // namespace

namespace detail {
namespace {

// The id prefix of an engine's commands, after the RBLN profiler's names for the device engines.
const char* id_prefix(EngineKind engine) {
  switch (engine) {
    case EngineKind::kDmaIn:
      return "DI";
    case EngineKind::kDmaOut:
      return "DO";
    case EngineKind::kHost:
      return "H";
    case EngineKind::kExtHdma:
      return "EH";
    case EngineKind::kDevHdma:
      return "DH";
    case EngineKind::kSync:
      return "DS";
    case EngineKind::kArray:
    case EngineKind::kVector:
      break;
  }
  return "S";
}

}  // namespace

bool id_follows_convention(const std::string& id, EngineKind engine) {
  const std::string prefix = id_prefix(engine);
  if (id.size() <= prefix.size() || id.compare(0, prefix.size(), prefix) != 0) return false;
  // Digits with no leading zero (S7 and S07 would be one command to a reader), at most 12 of
  // them, so that renumbering for --iterations cannot overflow.
  const std::string digits = id.substr(prefix.size());
  return std::all_of(digits.begin(), digits.end(),
                     [](char ch) { return ch >= '0' && ch <= '9'; }) &&
         digits.size() <= 12 && (digits.size() == 1 || digits[0] != '0');
}

namespace {

constexpr std::string_view kIdPrefixes[] = {"", "DI", "DO", "S", "H", "EH", "DH", "DS"};
constexpr int kIdNumberBits = 40;  // 12 decimal digits

}  // namespace

std::uint64_t id_key(std::string_view id) {
  for (std::uint64_t code = 1; code < std::size(kIdPrefixes); ++code) {
    const std::string_view prefix = kIdPrefixes[code];
    if (id.size() <= prefix.size() || id.substr(0, prefix.size()) != prefix) continue;
    const std::string_view digits = id.substr(prefix.size());
    if (digits.size() > 12 || (digits.size() > 1 && digits[0] == '0')) return 0;
    std::uint64_t number = 0;
    for (char ch : digits) {
      if (ch < '0' || ch > '9') return 0;
      number = number * 10 + static_cast<std::uint64_t>(ch - '0');
    }
    return code << kIdNumberBits | number;
  }
  return 0;
}

void CommandRefs::add_dep(std::uint32_t command, std::uint32_t position, std::string_view id) {
  std::uint64_t key = id_key(id);
  if (key == 0) {
    key = kOddId + odd_ids.size();
    odd_ids.emplace_back(id);
  }
  deps.push_back({command, position, key});
}

std::string CommandRefs::dep_id(const PendingDep& dep) const {
  if ((dep.id & kOddId) != 0) return odd_ids[dep.id - kOddId];
  const std::uint64_t number = dep.id & ((std::uint64_t{1} << kIdNumberBits) - 1);
  return std::string(kIdPrefixes[dep.id >> kIdNumberBits]) + std::to_string(number);
}

void CommandStream::add(const Json& value) {
  const std::size_t index = count_++;
  if (index >= kMaxCommands) return;  // counted only: the count is reported alone
  commands_.push_back(parse_command(value, index, config_, diag_, refs_));
}

void CommandStream::add_checked(Command&& command, std::uint64_t program, const std::string* deps,
                                std::size_t dep_count) {
  const std::size_t index = count_++;
  if (index >= kMaxCommands) return;
  if (program != 0)
    refs_.programs.push_back({static_cast<std::uint32_t>(index), diag_.size(), program});
  for (std::size_t d = 0; d < dep_count; ++d)
    refs_.add_dep(static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(d), deps[d]);
  commands_.push_back(std::move(command));
}

void CommandStream::reserve(std::size_t commands) {
  try {
    commands_.reserve(std::min<std::size_t>(commands, kMaxCommands));
  } catch (const std::bad_alloc&) {
  }
}

void CommandStream::clear() {
  count_ = 0;
  commands_.clear();
  refs_ = {};
  diag_.clear();
}

}  // namespace detail

const char* schedule_engine_name(EngineKind kind) {
  switch (kind) {
    case EngineKind::kDmaIn:
      return "DMA_IN";
    case EngineKind::kDmaOut:
      return "DMA_OUT";
    case EngineKind::kArray:
    case EngineKind::kVector:
      return "SLICE";
    case EngineKind::kHost:
      return "HOST";
    case EngineKind::kExtHdma:
      return "EXT_HDMA";
    case EngineKind::kDevHdma:
      return "DEV_HDMA";
    case EngineKind::kSync:
      return "SYNC";
  }
  return "?";
}

Schedule parse_schedule(const Json& root, const std::string& origin, const HwConfig& config) {
  return assemble_schedule(root, nullptr, origin, config);
}

namespace {

Schedule assemble_schedule(const Json& root, CommandStream* streamed, const std::string& origin,
                           const HwConfig& config) {
  Diagnostics diag(origin);
  Schedule sched;
  sched.file = origin;
  JsonObject top(root, "", diag);
  const std::string format = top.require_string("format").value_or("");
  if (top.has("format") && format != "npusim-schedule") {
    diag.error("/format", "expected \"npusim-schedule\", found \"" + format + "\"");
  }
  const auto version = top.require_uint("version", 0, 1000);
  if (version && *version != 1 && *version != 2) {
    diag.error("/version", "unsupported version " + std::to_string(*version) +
                               " (this npusim reads versions 1 and 2)");
  }
  sched.model = parse_model(top);

  if (const Json* target = top.get("target")) {
    JsonObject t(*target, "/target", diag);
    sched.target_config = t.get_string("config", "");
    sched.target_slices = static_cast<std::uint32_t>(t.get_uint("slices", 0, 0, 1024));
    t.finish();
  }

  const Json& programs = top.get_array("programs", false);
  for (std::size_t p = 0; p < programs.size(); ++p) {
    JsonObject prog(programs[p], "/programs/" + std::to_string(p), diag);
    sched.programs.push_back(
        {prog.require_string("name").value_or(""), prog.get_string("loc", "")});
    prog.finish();
  }
  if (sched.programs.empty()) sched.programs.push_back({sched.model.name, ""});

  const Json& layers = top.get_array("layers", false);
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const std::string ptr = "/layers/" + std::to_string(l);
    JsonObject layer(layers[l], ptr, diag);
    LayerView v;
    v.name = layer.require_string("name").value_or("");
    if (const Json* gemm = layer.get("gemm")) {
      JsonObject g(*gemm, ptr + "/gemm", diag);
      v.on_array = true;
      v.gemm.batch = g.get_uint("batch", 1, 1, kMaxDimension);
      v.gemm.m = g.require_uint("m", 1, kMaxDimension).value_or(1);
      v.gemm.n = g.require_uint("n", 1, kMaxDimension).value_or(1);
      v.gemm.k = g.require_uint("k", 1, kMaxDimension).value_or(1);
      g.finish();
    }
    layer.finish();
    sched.layers.push_back(std::move(v));
  }
  const Json& commands = top.get_array("commands", true);
  const std::size_t count = streamed ? streamed->count() : commands.size();
  if (count > kMaxCommands) {
    diag.error("/commands", std::to_string(count) + " commands exceed the limit of " +
                                std::to_string(kMaxCommands));
    diag.throw_if_any();
  }
  CommandStream from_document(origin, config);
  CommandStream& stream = streamed ? *streamed : from_document;
  for (const Json& command : commands) stream.add(command);
  sched.commands = std::move(stream.commands());
  // The commands' problems, each program problem where the command's check put it.
  const std::vector<Problem>& problems = stream.diagnostics().problems();
  const std::vector<ProgramCheck>& checks = stream.refs().programs;
  std::size_t next_program = 0;
  for (std::size_t p = 0; p <= problems.size(); ++p) {
    for (; next_program < checks.size() && checks[next_program].problem_at == p; ++next_program) {
      const ProgramCheck& check = checks[next_program];
      if (check.value < sched.programs.size()) {
        sched.commands[check.command].program = static_cast<std::uint32_t>(check.value);
      } else {
        diag.error("/commands/" + std::to_string(check.command) + "/program",
                   "value " + std::to_string(check.value) + " out of range [0, " +
                       std::to_string(sched.programs.size() - 1) + "]");
      }
    }
    if (p < problems.size()) diag.error(problems[p].where, problems[p].message);
  }
  top.finish();

  // Commands by id: conventional ids (nearly all) by their id_key in a flat index, others by
  // their text.
  FlatIndex by_key(sched.commands.size());
  std::unordered_map<std::string, std::uint32_t> by_odd_id;
  const auto any = [](std::uint32_t) { return true; };  // id keys are exact
  for (std::uint32_t i = 0; i < sched.commands.size(); ++i) {
    const std::string& id = sched.commands[i].id;
    if (id.empty()) continue;
    const std::uint64_t key = detail::id_key(id);
    std::optional<std::uint32_t> first;
    if (key != 0) {
      if (const std::uint32_t* at = by_key.find(key, any)) {
        first = *at;
      } else {
        by_key.add(key, i);
      }
    } else if (auto [it, inserted] = by_odd_id.emplace(id, i); !inserted) {
      first = it->second;
    }
    if (first) {
      diag.error("/commands/" + std::to_string(i) + "/id",
                 "duplicate id '" + id + "', first used at /commands/" + std::to_string(*first));
    }
  }
  const CommandRefs& refs = stream.refs();
  for (const PendingDep& dep : refs.deps) {
    const std::uint32_t i = dep.command;
    Command& cmd = sched.commands[i];
    const auto ptr = [&] {
      return "/commands/" + std::to_string(i) + "/deps/" + std::to_string(dep.position);
    };
    std::optional<std::uint32_t> target;
    if ((dep.id & detail::kOddId) == 0) {
      if (const std::uint32_t* at = by_key.find(dep.id, any)) target = *at;
    } else if (auto it = by_odd_id.find(refs.dep_id(dep)); it != by_odd_id.end()) {
      target = it->second;
    }
    if (!target) {
      diag.error(ptr(), "unknown command id '" + refs.dep_id(dep) + "'");
    } else if (*target == i) {
      diag.error(ptr(), "command '" + refs.dep_id(dep) + "' depends on itself");
    } else if (std::find(cmd.deps.begin(), cmd.deps.end(), *target) != cmd.deps.end()) {
      diag.error(ptr(), "duplicate dependency '" + refs.dep_id(dep) + "'");
    } else {
      cmd.deps.push_back(*target);
    }
  }
  if (version == 1) {
    // Devices came with version 2: a version-1 file that names them was written for another reader.
    for (std::uint32_t i = 0; i < sched.commands.size(); ++i) {
      const Command& cmd = sched.commands[i];
      if (cmd.device == 0 && !is_multi_device(cmd.engine)) continue;
      diag.error("/commands/" + std::to_string(i) + (cmd.device != 0 ? "/device" : "/engine"),
                 "devices and the EXT_HDMA, DEV_HDMA and SYNC engines need \"version\": 2");
      break;
    }
  }
  finalize_schedule(sched, config, diag);
  diag.throw_if_any();
  return sched;
}

}  // namespace

void finalize_schedule(Schedule& sched, const HwConfig& config, Diagnostics& diag) {
  if (sched.commands.size() > kMaxCommands) {
    diag.error("/commands", std::to_string(sched.commands.size()) +
                                " commands exceed the limit of " + std::to_string(kMaxCommands));
    return;
  }
  std::size_t allocs = 0;
  for (const Command& cmd : sched.commands) allocs += cmd.alloc.size();
  BufferTable buffers(allocs);
  // Pointers are only built for problems: a schedule has millions of commands and few problems.
  const auto cptr = [](std::uint32_t i) { return "/commands/" + std::to_string(i); };
  for (std::uint32_t i = 0; i < sched.commands.size(); ++i) {
    Command& cmd = sched.commands[i];
    cmd.lram_alloc_bytes = 0;
    for (std::size_t a = 0; a < cmd.alloc.size(); ++a) {
      const BufferAlloc& alloc = cmd.alloc[a];
      if (alloc.buffer.empty() || alloc.bytes == 0) continue;  // already reported by the parser
      const auto aptr = [&] { return cptr(i) + "/alloc/" + std::to_string(a); };
      if (alloc.bytes > config.lram_bytes) {
        diag.error(aptr() + "/bytes", "buffer of " + std::to_string(alloc.bytes) +
                                          " bytes can never fit the local memory of " +
                                          std::to_string(config.lram_bytes) + " bytes");
      }
      Buffer buffer;
      buffer.name = alloc.buffer;
      buffer.allocated_by = i;
      buffer.bytes = alloc.bytes;
      if (!buffers.add(buffer)) {
        diag.error(aptr() + "/buffer", "buffer '" + alloc.buffer + "' is allocated twice");
      }
      cmd.lram_alloc_bytes += alloc.bytes;
    }
  }
  cost::Evaluator evaluator(config, sched.model);
  for (std::uint32_t i = 0; i < sched.commands.size(); ++i) {
    Command& cmd = sched.commands[i];
    cmd.lram_free_bytes = 0;
    for (std::size_t f = 0; f < cmd.free.size(); ++f) {
      const std::string& name = cmd.free[f];
      if (name.empty()) continue;  // already reported by the parser
      const auto fptr = [&] { return cptr(i) + "/free/" + std::to_string(f); };
      Buffer* buffer = buffers.find(name);
      if (buffer == nullptr) {
        diag.error(fptr(), "buffer '" + name + "' is never allocated");
      } else if (buffer->freed) {
        diag.error(fptr(), "buffer '" + name + "' is freed twice");
      } else {
        buffer->freed = true;
        buffer->freed_by = i;
        buffer->free_index = static_cast<std::uint32_t>(f);
        cmd.lram_free_bytes += buffer->bytes;
      }
    }
    if (is_dma(cmd.engine)) {
      const std::uint64_t bursts = evaluator.dma().burst_count(cmd.bytes);
      if (bursts > kMaxBurstsPerTransfer) {
        diag.error(cptr(i) + "/bytes",
                   std::to_string(cmd.bytes) + " bytes make " + std::to_string(bursts) +
                       " bursts of dma.burst_bytes; at most " +
                       std::to_string(kMaxBurstsPerTransfer) +
                       " per transfer (split the transfer or raise dma.burst_bytes)");
        continue;
      }
    }
    try {
      const cost::CommandCost c = evaluator.cost(cmd);
      cmd.compute_cycles = c.compute_cycles;
      cmd.isolated_cycles = c.cycles;
      cmd.macs = c.macs;
      cmd.vector_macs = c.vector_macs;
    } catch (const std::overflow_error&) {
      diag.error(cptr(i) + "/shape",
                 cmd.engine == EngineKind::kHost
                     ? "shape too large: its host cycles exceed 64 bits"
                     : "shape too large: its cycle or MAC count exceeds 64 bits");
    }
  }
  check_device_edges(sched.commands, diag);
  if (!diag.empty()) return;
  const std::vector<std::uint32_t> position = topological_positions(sched.commands, diag);
  if (!diag.empty()) return;
  check_buffer_order(sched.commands, position, buffers, diag);
}

namespace {

// Room for the commands of a file of its size. The shortest command,
// {"id":"S0","engine":"DMA_IN","bytes":1}, takes 40 bytes; written ones take 100 and more.
void reserve_for_file(CommandStream& stream, const std::string& path) {
  std::error_code error;
  const std::uintmax_t bytes = std::filesystem::file_size(path, error);
  if (!error) stream.reserve(static_cast<std::size_t>(bytes / 64));
}

}  // namespace

Schedule detail::load_schedule_exact(const std::string& path, const HwConfig& config) {
  CommandStream stream(path, config);
  reserve_for_file(stream, path);
  ScheduleSax sax(stream);
  sax_parse_json_file(path, sax);
  return assemble_schedule(sax.root(), sax.streamed() ? &stream : nullptr, path, config);
}

Schedule load_schedule(const std::string& path, const HwConfig& config) {
  {
    CommandStream stream(path, config);
    reserve_for_file(stream, path);
    Json root;
    if (detail::read_schedule_fast(path, stream, root).read)
      return assemble_schedule(root, &stream, path, config);
  }
  return detail::load_schedule_exact(path, config);
}

}  // namespace npusim
