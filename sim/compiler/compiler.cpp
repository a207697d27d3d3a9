#include "sim/compiler/compiler.h"

#include <algorithm>
#include <deque>
#include <filesystem>
#include <optional>

#include "sim/cost/cost_model.h"
#include "sim/util/error.h"

namespace npusim {
namespace {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

const std::vector<std::string_view> kFusableActivations = {
    "Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Gelu"};

// The schedule op that runs a vector-class graph op.
std::string vector_schedule_op(const std::string& graph_op) {
  if (graph_op == "BatchNormalization") return "BatchNorm";
  if (classify_op(graph_op) == OpClass::kCopy) return "Copy";
  return graph_op;
}

// A layer group: the layers compiled into one slice op per tile.
struct Group {
  std::vector<std::uint32_t> layers;  // indices into Graph::layers; the first is the main one
  std::uint32_t output = 0;           // tensor the group writes
  std::vector<std::uint32_t> extra_constants;  // fused bias tensors loaded with the weights
  std::string name;
  std::string loc;
};

using CommandIndex = std::uint32_t;

// A DMA_OUT that wrote bytes [lo, hi) of a tensor in DRAM.
struct Writer {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  CommandIndex store = 0;
};

// One input piece of a tile: `bytes` moved from DRAM, covering [lo, hi) of `tensor`.
struct Piece {
  std::uint32_t tensor = 0;
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  std::uint64_t bytes = 0;
};

class Compiler {
 public:
  Compiler(const Graph& graph, const HwConfig& config)
      : g_(graph),
        cfg_(config),
        slices_(config.slices.count),
        weight_budget_(config.lram_bytes / 4),
        tile_budget_(config.lram_bytes / (4 * std::uint64_t{config.slices.count})),
        writers_(graph.tensors.size()),
        image_(graph.tensors.size(), false),
        stores_(config.slices.count) {
    for (std::uint32_t l = 0; l < g_.layers.size(); ++l) {
      for (std::uint32_t t : g_.layers[l].inputs) consumers_[t].push_back(l);
    }
    for (std::uint32_t t : g_.inputs) image_[t] = g_.tensors[t].shape.size() == 4;
  }

  std::uint64_t rows_of(std::uint32_t t) const {
    const Tensor& x = g_.tensors[t];
    if (image_[t]) return x.shape[0] * x.shape[2];
    return x.shape.size() >= 2 ? x.elements() / x.shape.back() : 1;
  }

  Schedule run() {
    std::vector<bool> done(g_.layers.size(), false);
    for (std::uint32_t l = 0; l < g_.layers.size(); ++l) {
      if (done[l]) continue;
      const Group group = make_group(l);
      for (std::uint32_t m : group.layers) done[m] = true;
      compile_group(group);
    }
    return finish();
  }

 private:
  // ---- grouping -------------------------------------------------------------------------------
  std::optional<std::uint32_t> sole_consumer(std::uint32_t tensor) const {
    auto it = consumers_.find(tensor);
    if (it == consumers_.end() || it->second.size() != 1) return std::nullopt;
    if (std::find(g_.outputs.begin(), g_.outputs.end(), tensor) != g_.outputs.end()) return std::nullopt;
    return it->second.front();
  }

  Group make_group(std::uint32_t first) {
    Group group;
    group.layers = {first};
    const Layer& head = g_.layers[first];
    group.output = head.outputs.at(0);
    if (classify_op(head.op) == OpClass::kArray) {
      auto next = sole_consumer(group.output);
      if (next && head.op == "Conv" && g_.layers[*next].op == "BatchNormalization") {
        group.layers.push_back(*next);
        group.output = g_.layers[*next].outputs.at(0);
        next = sole_consumer(group.output);
      } else if (next && head.op == "MatMul" && g_.layers[*next].op == "Add" &&
                 g_.layers[*next].inputs.size() == 2) {
        // A bias: the Add's other operand is a constant.
        const Layer& add = g_.layers[*next];
        const std::uint32_t other = add.inputs[0] == group.output ? add.inputs[1] : add.inputs[0];
        if (g_.tensors[other].constant) {
          group.layers.push_back(*next);
          group.extra_constants.push_back(other);
          group.output = add.outputs.at(0);
          next = sole_consumer(group.output);
        }
      }
      if (next && std::find(kFusableActivations.begin(), kFusableActivations.end(),
                            g_.layers[*next].op) != kFusableActivations.end()) {
        group.layers.push_back(*next);
        group.output = g_.layers[*next].outputs.at(0);
      }
    }
    if (group.layers.size() == 1) {
      group.name = head.name;
      group.loc = head.loc;
    } else {
      group.name = "fused(";
      std::string inner;
      for (std::size_t i = 0; i < group.layers.size(); ++i) {
        const Layer& l = g_.layers[group.layers[i]];
        group.name += (i ? "+" : "") + l.name;
        std::string loc = l.loc;
        if (loc.rfind("loc(", 0) == 0 && loc.back() == ')') loc = loc.substr(4, loc.size() - 5);
        inner += (i ? ", " : "") + loc;
      }
      group.name += ")";
      group.loc = "loc(fused[" + inner + "])";
    }
    return group;
  }

  // ---- emission -------------------------------------------------------------------------------
  CommandIndex emit(Command c, const char* prefix, std::uint64_t& counter, const Group& group,
                    std::vector<CommandIndex> deps) {
    c.id = prefix + std::to_string(counter++);
    c.layer = group.name;
    c.loc = group.loc;
    c.program = static_cast<std::uint32_t>(sched_.programs.size() - 1);
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    c.deps = std::move(deps);
    if (sched_.commands.size() >= kMaxCommands) {
      throw InputError(g_.source_file, "layer '" + group.name + "' " + group.loc,
                       "compiling for this config takes more than " + std::to_string(kMaxCommands) +
                           " commands, the most a schedule may have; raise lram_kib");
    }
    sched_.commands.push_back(std::move(c));
    return static_cast<CommandIndex>(sched_.commands.size() - 1);
  }

  static Command dma(EngineType engine, std::uint64_t bytes) {
    Command c;
    c.engine = engine;
    c.bytes = std::max<std::uint64_t>(bytes, 1);
    return c;
  }

  std::string buffer_name() { return "b" + std::to_string(buffers_++); }

  // Writers of [lo, hi) of a tensor: the DMA_OUTs a load of that range must wait for.
  void reader_deps(std::uint32_t tensor, std::uint64_t lo, std::uint64_t hi,
                   std::vector<CommandIndex>& deps) const {
    for (const Writer& w : writers_[tensor]) {
      if (w.lo < hi && lo < w.hi) deps.push_back(w.store);
    }
  }

  // A chunk of constants shared by every slice; at most two are live, so a new chunk waits for
  // the DMA_OUT that freed the one two back. `after` lists the stores it must also wait for (an
  // activation loaded as an operand).
  CommandIndex load_weights(std::uint64_t bytes, const Group& group,
                            std::vector<CommandIndex> after = {}) {
    if (weight_frees_.size() >= 2) after.push_back(weight_frees_[weight_frees_.size() - 2]);
    Command c = dma(EngineType::kDmaIn, bytes);
    weights_buffer_ = buffer_name();
    c.alloc.push_back({weights_buffer_, c.bytes});
    return emit(std::move(c), "DI", di_, group, std::move(after));
  }

  static constexpr CommandIndex kNone = ~CommandIndex{0};

  // One tile on `slice`: load `pieces`, run `op` with `shape`, store `out_bytes` as [out_lo,
  // out_hi) of the group's output. `weights` is the loaded chunk it reads, if any. On the chunk's
  // last tile, `other_readers` lists every other compute that read it: this tile's store then
  // waits for them all and frees the chunk. Returns the compute.
  CommandIndex tile(std::uint32_t slice, const Group& group, const std::vector<Piece>& pieces,
                    const std::string& op, Shape shape, CommandIndex weights,
                    std::uint64_t out_bytes, std::uint64_t out_lo, std::uint64_t out_hi,
                    const std::vector<CommandIndex>* other_readers) {
    // A slice holds two tiles at most: this one's loads wait for the store of the tile two back,
    // which comes after its compute freed that tile's inputs and itself frees its output.
    const std::vector<CommandIndex>& ring = stores_[slice];
    const CommandIndex two_back = ring.size() >= 2 ? ring[ring.size() - 2] : kNone;
    std::vector<CommandIndex> compute_deps;
    std::vector<std::string> in_buffers;
    for (const Piece& p : pieces) {
      if (p.bytes == 0) continue;
      std::vector<CommandIndex> deps;
      reader_deps(p.tensor, p.lo, p.hi, deps);
      if (two_back != kNone) deps.push_back(two_back);
      Command c = dma(EngineType::kDmaIn, p.bytes);
      in_buffers.push_back(buffer_name());
      c.alloc.push_back({in_buffers.back(), c.bytes});
      compute_deps.push_back(emit(std::move(c), "DI", di_, group, std::move(deps)));
    }
    if (weights != kNone) compute_deps.push_back(weights);
    if (two_back != kNone) compute_deps.push_back(two_back);
    Command s;
    s.engine = EngineType::kSlice;
    s.slice = slice;
    s.op = find_op(op);
    s.shape = std::move(shape);
    const std::string out_buffer = buffer_name();
    s.alloc.push_back({out_buffer, std::max<std::uint64_t>(out_bytes, 1)});
    s.free = in_buffers;
    const CommandIndex compute = emit(std::move(s), "S", s_, group, std::move(compute_deps));
    // Store.
    std::vector<CommandIndex> store_deps = {compute};
    Command o = dma(EngineType::kDmaOut, out_bytes);
    o.free.push_back(out_buffer);
    const bool frees_weights = other_readers != nullptr && weights != kNone;
    if (frees_weights) {
      store_deps.insert(store_deps.end(), other_readers->begin(), other_readers->end());
      o.free.push_back(weights_buffer_);
    }
    const CommandIndex store = emit(std::move(o), "DO", do_, group, std::move(store_deps));
    if (frees_weights) weight_frees_.push_back(store);
    writers_[group.output].push_back({out_lo, out_hi, store});
    stores_[slice].push_back(store);
    return compute;
  }

  std::uint32_t next_slice() {
    const std::uint32_t s = rr_;
    rr_ = (rr_ + 1) % slices_;
    return s;
  }

  [[noreturn]] void cannot_fit(const Group& group, std::uint64_t need, const std::string& what) const {
    throw InputError(g_.source_file, "layer '" + group.name + "' " + group.loc,
                     what + " needs " + std::to_string(need) + " bytes of local memory, more than its share of the config's " +
                         std::to_string(cfg_.lram_bytes) + " bytes (lram_kib) allows; raise lram_kib or use fewer slices");
  }

  // ---- spatial layers: Conv, DepthwiseConv, pools --------------------------------------------
  void compile_spatial(const Group& group) {
    const Layer& l = g_.layers[group.layers[0]];
    const Tensor& x = g_.tensors[l.inputs[0]];
    const Tensor& y = g_.tensors[group.output];
    const std::uint64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], w = x.shape[3];
    const std::uint64_t k = y.shape[1], oh = y.shape[2], ow = y.shape[3];
    const bool conv = l.op == "Conv";
    const std::int64_t group_count = conv ? l.attrs.get_int("group", 1) : 1;
    // A conv's kernel comes from its weight [K, C/group, kh, kw], a pool's from its attribute.
    const auto kernel = l.attrs.get_ints("kernel_shape", {1, 1});
    const std::uint64_t kh = conv ? g_.tensors[l.inputs[1]].shape[2] : static_cast<std::uint64_t>(kernel[0]);
    const std::uint64_t kw = conv ? g_.tensors[l.inputs[1]].shape[3] : static_cast<std::uint64_t>(kernel[1]);
    const auto strides = l.attrs.get_ints("strides", {1, 1});
    const auto pads = l.attrs.get_ints("pads", {0, 0, 0, 0});
    const auto dil = l.attrs.get_ints("dilations", {1, 1});
    const std::uint64_t sh = static_cast<std::uint64_t>(strides[0]), sw = static_cast<std::uint64_t>(strides[1]);
    const std::uint64_t pt = static_cast<std::uint64_t>(pads[0]);
    const std::uint64_t span_h = (kh - 1) * static_cast<std::uint64_t>(dil[0]) + 1;
    const bool depthwise = conv && static_cast<std::uint64_t>(group_count) == c && c > 1;
    const bool vector = !conv || depthwise;
    const std::string op = conv ? (depthwise ? "DepthwiseConv" : "Conv") : l.op;
    const std::uint64_t ex = dtype_bytes(x.dtype), ey = dtype_bytes(y.dtype);

    // Channels are chunked in units: one input channel for depthwise and pools, whole groups
    // for grouped convs, one output channel otherwise.
    std::uint64_t units = 0, out_per_unit = 0, in_per_unit = 0, weight_per_unit = 0;
    if (vector) {
      units = c;
      out_per_unit = k / c;
      in_per_unit = 1;
    } else {
      units = static_cast<std::uint64_t>(group_count);
      out_per_unit = k / units;
      in_per_unit = c / units;
    }
    if (conv) {
      std::uint64_t const_bytes = g_.tensors[l.inputs[1]].bytes();
      for (std::size_t i = 2; i < l.inputs.size(); ++i) const_bytes += g_.tensors[l.inputs[i]].bytes();
      for (std::uint32_t t : group.extra_constants) const_bytes += g_.tensors[t].bytes();
      weight_per_unit = ceil_div(const_bytes, units);
    }
    // Ungrouped convs chunk by output channel.
    if (!vector && units == 1) {
      units = k;
      out_per_unit = 1;
      in_per_unit = c;  // every output channel reads every input channel
      weight_per_unit = ceil_div(weight_per_unit, k);
    }
    // A grouped conv whose single group's weights exceed a chunk is chunked by output channel
    // within its group: chunk sizes divide the group's channels so that no chunk straddles two.
    const std::uint64_t out_per_group = k / static_cast<std::uint64_t>(group_count);
    const bool within_group = !vector && group_count > 1 && weight_per_unit > weight_budget_;
    if (within_group) {
      weight_per_unit = ceil_div(weight_per_unit, out_per_group);
      units = k;
      out_per_unit = 1;
      in_per_unit = c / static_cast<std::uint64_t>(group_count);
    }
    // The largest size not above `limit` that a chunk may have.
    auto allowed_chunk = [&](std::uint64_t limit) {
      if (!within_group) return std::min(units, limit);
      for (std::uint64_t d = std::min(out_per_group, limit); d > 0; --d) {
        if (out_per_group % d == 0) return d;
      }
      return std::uint64_t{0};
    };
    const bool input_whole_channels = !vector && static_cast<std::uint64_t>(group_count) == 1;
    auto chunk_in_c = [&](std::uint64_t cu) {
      return input_whole_channels ? c : within_group ? in_per_unit : cu * in_per_unit;
    };

    std::uint64_t chunk_units = units;
    if (weight_per_unit > 0) chunk_units = allowed_chunk(weight_budget_ / weight_per_unit);
    if (chunk_units == 0) cannot_fit(group, weight_per_unit, "one output channel of its weights");

    const std::uint64_t span_w = (kw - 1) * static_cast<std::uint64_t>(dil[1]) + 1;
    auto in_rows = [&](std::uint64_t rows) { return std::min(h, (rows - 1) * sh + span_h); };
    auto in_cols = [&](std::uint64_t cols) { return std::min(w, (cols - 1) * sw + span_w); };
    auto tile_bytes = [&](std::uint64_t rows, std::uint64_t cols, std::uint64_t cu) {
      return in_rows(rows) * in_cols(cols) * chunk_in_c(cu) * ex + rows * cols * cu * out_per_unit * ey;
    };
    // Shrink rows first, then columns, then channel chunks (each costs more re-reads).
    std::uint64_t rows = oh;
    std::uint64_t cols = ow;
    while (tile_bytes(rows, cols, chunk_units) > tile_budget_) {
      if (rows > 1) {
        rows = ceil_div(rows, 2);
      } else if (cols > 1) {
        cols = ceil_div(cols, 2);
      } else if (chunk_units > 1) {
        chunk_units = allowed_chunk(ceil_div(chunk_units, 2));
      } else {
        cannot_fit(group, tile_bytes(1, 1, 1), "one output pixel of one channel");
      }
    }
    // Enough tiles to keep every slice busy.
    while (rows > 1 && n * ceil_div(oh, rows) * ceil_div(ow, cols) * ceil_div(units, chunk_units) < slices_) {
      rows = ceil_div(rows, 2);
    }
    const std::uint64_t chunks = ceil_div(units, chunk_units);
    if (!within_group) chunk_units = ceil_div(units, chunks);  // balance the chunks

    image_[group.output] = true;
    // A conv reads its input as an image; one that is not laid out as one is read whole.
    const bool x_image = image_[l.inputs[0]];
    const std::uint64_t x_row_bytes = w * c * ex;  // NHWC in DRAM: a row is contiguous
    const std::uint64_t y_row_bytes = ow * k * ey;
    for (std::uint64_t ch = 0; ch < chunks; ++ch) {
      const std::uint64_t u0 = ch * chunk_units;
      const std::uint64_t cu = std::min(units, u0 + chunk_units) - u0;
      const CommandIndex weights = weight_per_unit > 0 ? load_weights(cu * weight_per_unit, group) : kNone;
      std::vector<CommandIndex> computes;
      const std::uint64_t row_tiles = ceil_div(oh, rows);
      const std::uint64_t col_tiles = ceil_div(ow, cols);
      for (std::uint64_t img = 0; img < n; ++img) {
        for (std::uint64_t t = 0; t < row_tiles * col_tiles; ++t) {
          const std::uint64_t r0 = (t / col_tiles) * rows, r1 = std::min(oh, r0 + rows);
          const std::uint64_t c0 = (t % col_tiles) * cols, c1 = std::min(ow, c0 + cols);
          const std::uint64_t lo = r0 * sh > pt ? r0 * sh - pt : 0;
          const std::uint64_t hi = std::min(h, (r1 - 1) * sh + span_h > pt ? (r1 - 1) * sh + span_h - pt : 0);
          const std::uint64_t in_c = chunk_in_c(cu);
          const std::uint64_t pl = static_cast<std::uint64_t>(pads[1]);
          const std::uint64_t wl = c0 * sw > pl ? c0 * sw - pl : 0;
          const std::uint64_t wh = std::min(w, (c1 - 1) * sw + span_w > pl ? (c1 - 1) * sw + span_w - pl : 0);
          // Ranges cover whole rows: a column tile's bytes lie within them.
          Piece piece{l.inputs[0], x_image ? (img * h + lo) * x_row_bytes : 0,
                      x_image ? (img * h + hi) * x_row_bytes : x.bytes(), (hi - lo) * (wh - wl) * in_c * ex};
          ConvShape shape;
          const std::uint64_t out_c = cu * out_per_unit;
          // The rows read, padding folded in, so the output is exactly the tile's rows.
          shape.in_h = (r1 - r0 - 1) * sh + kh;
          shape.in_w = (c1 - c0 - 1) * sw + kw;
          shape.in_c = conv ? in_c : out_c;
          shape.out_c = out_c;
          shape.kernel_h = kh;
          shape.kernel_w = kw;
          shape.stride_h = sh;
          shape.stride_w = sw;
          if (conv && !depthwise && group_count > 1 && !within_group) shape.groups = cu;
          const bool last = img == n - 1 && t == row_tiles * col_tiles - 1;
          computes.push_back(tile(next_slice(), group, {piece}, op, shape, weights,
                                  (r1 - r0) * (c1 - c0) * out_c * ey, (img * oh + r0) * y_row_bytes,
                                  (img * oh + r1) * y_row_bytes, last ? &computes : nullptr));
        }
      }
    }
  }

  // ---- MatMul ---------------------------------------------------------------------------------
  void compile_matmul(const Group& group) {
    const Layer& l = g_.layers[group.layers[0]];
    const Tensor& a = g_.tensors[l.inputs[0]];
    const Tensor& b = g_.tensors[l.inputs[1]];
    const Tensor& y = g_.tensors[group.output];
    const std::uint64_t m = a.shape[a.shape.size() - 2], kd = a.shape.back(), nd = b.shape.back();
    const std::uint64_t ea = dtype_bytes(a.dtype), eb = dtype_bytes(b.dtype), ey = dtype_bytes(y.dtype);
    const std::uint64_t a_batch = a.elements() / (m * kd);
    const std::uint64_t b_batch = b.elements() / (kd * nd);
    const std::uint64_t out_batch = y.elements() / (m * nd);
    // With a shared right operand the left one's batches are just more rows.
    const bool shared_b = b_batch == 1;
    const std::uint64_t passes = shared_b ? 1 : out_batch;
    const std::uint64_t rows_total = shared_b ? a_batch * m : m;
    std::uint64_t extra = 0;  // bias bytes per output column
    for (std::size_t i = 2; i < l.inputs.size(); ++i) extra += g_.tensors[l.inputs[i]].bytes();
    for (std::uint32_t t : group.extra_constants) extra += g_.tensors[t].bytes();
    const std::uint64_t per_col = kd * eb + ceil_div(extra, nd);
    std::uint64_t cols = std::min(nd, weight_budget_ / per_col);
    auto tile_bytes = [&](std::uint64_t rows, std::uint64_t nc) { return rows * kd * ea + rows * nc * ey; };
    if (cols == 0 || tile_bytes(1, 1) > tile_budget_) {
      return compile_matmul_ksplit(group, passes, rows_total, shared_b, a_batch, b_batch, extra);
    }
    std::uint64_t rows = rows_total;
    while (tile_bytes(rows, cols) > tile_budget_) {
      if (rows > 1) {
        rows = ceil_div(rows, 2);
      } else if (cols > 1) {
        cols = ceil_div(cols, 2);
      } else {
        cannot_fit(group, tile_bytes(1, 1), "one row of one column");
      }
    }
    while (rows > 1 && passes * ceil_div(rows_total, rows) * ceil_div(nd, cols) < slices_) rows = ceil_div(rows, 2);
    const std::uint64_t chunks = ceil_div(nd, cols);
    cols = ceil_div(nd, chunks);
    const std::uint64_t a_row_bytes = kd * ea, y_row_bytes = nd * ey;
    // An operand batched other than the output (mixed broadcasting, [2,1] x [1,3]) has no simple
    // pass -> batch map: its loads wait for all of its writers.
    const bool a_exact = shared_b || a_batch == 1 || a_batch == out_batch;
    const bool b_exact = (shared_b || b_batch == 1 || b_batch == out_batch) && !image_[l.inputs[1]];
    for (std::uint64_t p = 0; p < passes; ++p) {
      const std::uint64_t a_base = shared_b || a_batch == 1 || !a_exact ? 0 : p * m;
      const std::uint64_t b_base = shared_b || b_batch == 1 || !b_exact ? 0 : p;
      for (std::uint64_t ch = 0; ch < chunks; ++ch) {
        const std::uint64_t c0 = ch * cols, nc = std::min(nd, c0 + cols) - c0;
        // An activation as right operand (attention) loads like weights, after its writers.
        std::vector<CommandIndex> after;
        if (!b.constant) {
          const std::uint64_t b_bytes = kd * nd * eb;
          reader_deps(l.inputs[1], b_exact ? b_base * b_bytes : 0,
                      b_exact ? (b_base + 1) * b_bytes : b.bytes(), after);
        }
        const CommandIndex weights = load_weights(nc * per_col, group, after);
        std::vector<CommandIndex> computes;
        const std::uint64_t tiles = ceil_div(rows_total, rows);
        for (std::uint64_t t = 0; t < tiles; ++t) {
          const std::uint64_t r0 = t * rows, r1 = std::min(rows_total, r0 + rows);
          const std::uint64_t row_base = a_base;
          const bool a_rows = !image_[l.inputs[0]] && a_exact;  // else wait for all writers
          Piece piece{l.inputs[0], a_rows ? (row_base + r0) * a_row_bytes : 0,
                      a_rows ? (row_base + r1) * a_row_bytes : a.bytes(), (r1 - r0) * kd * ea};
          GemmShape shape;
          shape.m = r1 - r0;
          shape.n = nc;
          shape.k = kd;
          const std::uint64_t y_base = shared_b ? 0 : p * m;
          const bool last = t == tiles - 1;
          computes.push_back(tile(next_slice(), group, {piece}, "Gemm", shape, weights,
                                  (r1 - r0) * nc * ey, (y_base + r0) * y_row_bytes,
                                  (y_base + r1) * y_row_bytes, last ? &computes : nullptr));
        }
      }
    }
  }

  // A MatMul whose reduction dimension is too long for one row or column to fit: each output
  // tile accumulates in place over steps along k, each step loading its slices of both operands.
  // A slice then holds the tile two back (at most T) and this tile's output (at most T/3) and
  // two steps' inputs (at most T/3 each): 2T, as for other tiles.
  void compile_matmul_ksplit(const Group& group, std::uint64_t passes, std::uint64_t rows_total,
                             bool shared_b, std::uint64_t a_batch, std::uint64_t b_batch,
                             std::uint64_t extra) {
    const Layer& l = g_.layers[group.layers[0]];
    const Tensor& a = g_.tensors[l.inputs[0]];
    const Tensor& b = g_.tensors[l.inputs[1]];
    const Tensor& y = g_.tensors[group.output];
    const std::uint64_t m = a.shape[a.shape.size() - 2], kd = a.shape.back(), nd = b.shape.back();
    const std::uint64_t ea = dtype_bytes(a.dtype), eb = dtype_bytes(b.dtype), ey = dtype_bytes(y.dtype);
    const std::uint64_t third = tile_budget_ / 3;
    std::uint64_t rows = rows_total, cols = nd, kc = kd;
    while (rows * cols * ey > third) {
      if (rows > 1) {
        rows = ceil_div(rows, 2);
      } else if (cols > 1) {
        cols = ceil_div(cols, 2);
      } else {
        cannot_fit(group, 3 * ey, "one output element");
      }
    }
    auto step_bytes = [&](std::uint64_t r, std::uint64_t nc, std::uint64_t k) { return r * k * ea + k * nc * eb; };
    while (step_bytes(rows, cols, kc) > third) {
      if (kc > 1) {
        kc = ceil_div(kc, 2);
      } else if (rows > 1) {
        rows = ceil_div(rows, 2);
      } else if (cols > 1) {
        cols = ceil_div(cols, 2);
      } else {
        cannot_fit(group, 3 * step_bytes(1, 1, 1), "one step of one output element");
      }
    }
    while (rows > 1 && passes * ceil_div(rows_total, rows) * ceil_div(nd, cols) < slices_) rows = ceil_div(rows, 2);
    const std::uint64_t a_row_bytes = kd * ea, y_row_bytes = nd * ey, b_bytes = kd * nd * eb;
    const bool a_exact = shared_b || a_batch == 1 || a_batch == passes;
    const bool b_exact = (shared_b || b_batch == 1 || b_batch == passes) && !image_[l.inputs[1]];
    const bool a_rows = !image_[l.inputs[0]] && a_exact;
    for (std::uint64_t p = 0; p < passes; ++p) {
      const std::uint64_t a_base = shared_b || a_batch == 1 || !a_exact ? 0 : p * m;
      const std::uint64_t b_base = shared_b || b_batch == 1 || !b_exact ? 0 : p;
      const std::uint64_t y_base = shared_b ? 0 : p * m;
      for (std::uint64_t r0 = 0; r0 < rows_total; r0 += rows) {
        const std::uint64_t r1 = std::min(rows_total, r0 + rows);
        for (std::uint64_t c0 = 0; c0 < nd; c0 += cols) {
          const std::uint64_t nc = std::min(nd, c0 + cols) - c0;
          const std::uint32_t slice = next_slice();
          const std::vector<CommandIndex>& ring = stores_[slice];
          const CommandIndex two_back = ring.size() >= 2 ? ring[ring.size() - 2] : kNone;
          const std::string out_buffer = buffer_name();
          std::vector<CommandIndex> steps;
          for (std::uint64_t k0 = 0; k0 < kd; k0 += kc) {
            const std::uint64_t kn = std::min(kd, k0 + kc) - k0;
            // Loads wait for the step two back (whose compute freed them), or on the first two
            // steps for the tile two back.
            const CommandIndex wait = steps.size() >= 2 ? steps[steps.size() - 2] : two_back;
            std::vector<CommandIndex> a_deps;
            reader_deps(l.inputs[0], a_rows ? (a_base + r0) * a_row_bytes : 0,
                        a_rows ? (a_base + r1) * a_row_bytes : a.bytes(), a_deps);
            if (wait != kNone) a_deps.push_back(wait);
            std::vector<CommandIndex> b_deps;
            if (!b.constant) {
              reader_deps(l.inputs[1], b_exact ? b_base * b_bytes : 0,
                          b_exact ? (b_base + 1) * b_bytes : b.bytes(), b_deps);
            }
            if (wait != kNone) b_deps.push_back(wait);
            Command load_a = dma(EngineType::kDmaIn, (r1 - r0) * kn * ea);
            Command load_b = dma(EngineType::kDmaIn, kn * nc * eb + (k0 == 0 ? ceil_div(extra * nc, nd) : 0));
            const std::string a_buf = buffer_name(), b_buf = buffer_name();
            load_a.alloc.push_back({a_buf, load_a.bytes});
            load_b.alloc.push_back({b_buf, load_b.bytes});
            std::vector<CommandIndex> deps = {emit(std::move(load_a), "DI", di_, group, std::move(a_deps)),
                                              emit(std::move(load_b), "DI", di_, group, std::move(b_deps))};
            if (!steps.empty()) deps.push_back(steps.back());  // accumulates onto the last step
            if (steps.empty() && two_back != kNone) deps.push_back(two_back);
            Command gemm;
            gemm.engine = EngineType::kSlice;
            gemm.slice = slice;
            gemm.op = find_op("Gemm");
            gemm.shape = GemmShape{1, r1 - r0, nc, kn};
            if (steps.empty()) gemm.alloc.push_back({out_buffer, (r1 - r0) * nc * ey});
            gemm.free = {a_buf, b_buf};
            steps.push_back(emit(std::move(gemm), "S", s_, group, std::move(deps)));
          }
          Command store = dma(EngineType::kDmaOut, (r1 - r0) * nc * ey);
          store.free.push_back(out_buffer);
          const CommandIndex st = emit(std::move(store), "DO", do_, group, {steps.back()});
          writers_[group.output].push_back({(y_base + r0) * y_row_bytes, (y_base + r1) * y_row_bytes, st});
          stores_[slice].push_back(st);
        }
      }
    }
  }

  // ---- vector layers: element-wise, normalisations, copies -----------------------------------
  void compile_vector(const Group& group) {
    const Layer& l = g_.layers[group.layers[0]];
    if (l.op == "GlobalAveragePool") return compile_global_pool(group);
    if (l.op == "MaxPool" || l.op == "AveragePool") return compile_spatial(group);
    // The largest tensor drives the tiling; rows are all dims but the last (for 4-d NCHW, the
    // N*H rows of the NHWC layout in DRAM).
    std::uint32_t driver = group.output;
    for (std::uint32_t t : l.inputs) {
      if (!g_.tensors[t].constant && g_.tensors[t].elements() > g_.tensors[driver].elements()) driver = t;
    }
    const Tensor& d = g_.tensors[driver];
    // Element-wise ops and resizes keep an image an image; other copies lay out row-major.
    const bool keeps_layout = classify_op(l.op) == OpClass::kVector || l.op == "Resize" || l.op == "Pad";
    image_[group.output] = keeps_layout && image_[driver] && g_.tensors[group.output].shape.size() == 4;
    // Tiles are whole rows, or `sub` pieces of a row when one row is more than a tile.
    const std::uint64_t base_rows = rows_of(driver);
    std::uint64_t sub = 1;
    std::uint64_t rows_total = base_rows;
    // How each operand comes in per tile of r driver rows:
    //  - same size as the driver: its share of the rows;
    //  - broadcast over leading dims (same last dim): the rows the tile touches, at most all;
    //  - anything smaller: whole, with every tile, or once per layer if it is a constant.
    // (kShareAll: a share in another layout, so it waits for every writer of the operand.)
    enum class Feed { kShare, kShareAll, kRows, kWhole, kOnce };
    struct Operand {
      std::uint32_t tensor;
      Feed feed;
      std::uint64_t rows;  // kRows: the operand's own rows
    };
    std::vector<Operand> operands;
    std::uint64_t once_bytes = 0;
    for (std::uint32_t t : l.inputs) {
      const Tensor& in = g_.tensors[t];
      const bool same_layout = image_[t] == image_[driver];
      // Only ops that keep element order read the rows they write: a transpose or gather reads
      // from anywhere in its input.
      const bool keeps_order = classify_op(l.op) == OpClass::kVector || l.op == "Cast";
      if (in.elements() == d.elements()) {
        operands.push_back({t, same_layout && keeps_order ? Feed::kShare : Feed::kShareAll, 0});
      } else if (same_layout && !image_[t] && in.shape.size() >= 2 &&
                 in.shape.back() == d.shape.back() && rows_total % rows_of(t) == 0) {
        operands.push_back({t, Feed::kRows, rows_of(t)});
      } else if (in.constant) {
        operands.push_back({t, Feed::kOnce, 0});
        once_bytes += in.bytes();
      } else if (classify_op(l.op) == OpClass::kCopy) {
        // A resize or gather reads its input in proportion to the output it makes.
        operands.push_back({t, Feed::kShareAll, 0});
      } else {
        operands.push_back({t, Feed::kWhole, 0});
      }
    }
    const Tensor& y = g_.tensors[group.output];
    auto share = [&](std::uint64_t bytes, std::uint64_t r0, std::uint64_t r1) {
      __extension__ using U128 = unsigned __int128;
      return static_cast<std::uint64_t>((U128{bytes} * (r1 - r0) + rows_total - 1) / rows_total);
    };
    auto piece_of = [&](const Operand& op, std::uint64_t r0, std::uint64_t r1) -> Piece {
      const Tensor& in = g_.tensors[op.tensor];
      switch (op.feed) {
        case Feed::kShare:
          return {op.tensor, share(in.bytes(), 0, r0), share(in.bytes(), 0, r1), share(in.bytes(), r0, r1)};
        case Feed::kShareAll:
          return {op.tensor, 0, in.bytes(), share(in.bytes(), r0, r1)};
        case Feed::kRows: {
          // The driver's whole rows this tile touches, mapped onto the operand's rows.
          const std::uint64_t d0 = r0 / sub, d1 = ceil_div(r1, sub);
          const std::uint64_t row_bytes = in.bytes() / op.rows;
          const std::uint64_t n = std::min(d1 - d0, op.rows);
          const std::uint64_t lo = (d0 % op.rows) * row_bytes;
          // A range that wraps past the operand's end reads all of it.
          const bool wraps = d0 % op.rows + n > op.rows;
          return {op.tensor, wraps ? 0 : lo, wraps ? in.bytes() : lo + n * row_bytes, n * row_bytes};
        }
        case Feed::kWhole:
          return {op.tensor, 0, in.bytes(), in.bytes()};
        case Feed::kOnce:
          break;
      }
      return {op.tensor, 0, 0, 0};
    };
    auto tile_bytes = [&](std::uint64_t rows) {
      std::uint64_t total = share(y.bytes(), 0, rows);
      for (const Operand& op : operands) total += piece_of(op, 0, rows).bytes;
      return total;
    };
    if (once_bytes > weight_budget_) cannot_fit(group, once_bytes, "its constant operands");
    const std::uint64_t row_elements = d.elements() / base_rows;
    while (tile_bytes(1) > tile_budget_ && sub < row_elements) {
      sub *= 2;
      rows_total = base_rows * sub;
    }
    std::uint64_t rows = rows_total;
    while (tile_bytes(rows) > tile_budget_) {
      if (rows == 1) cannot_fit(group, tile_bytes(1), "one element");
      rows = ceil_div(rows, 2);
    }
    while (rows > 1 && ceil_div(rows_total, rows) < slices_) rows = ceil_div(rows, 2);
    const CommandIndex weights = once_bytes > 0 ? load_weights(once_bytes, group) : kNone;
    const std::string op = vector_schedule_op(l.op);
    const std::uint64_t tiles = ceil_div(rows_total, rows);
    std::vector<CommandIndex> computes;
    for (std::uint64_t t = 0; t < tiles; ++t) {
      const std::uint64_t r0 = t * rows, r1 = std::min(rows_total, r0 + rows);
      std::vector<Piece> pieces;
      for (const Operand& operand : operands) {
        if (operand.feed != Feed::kOnce) pieces.push_back(piece_of(operand, r0, r1));
      }
      const ElementsShape shape{std::max<std::uint64_t>(1, share(d.elements(), r0, r1))};
      const bool last = t == tiles - 1;
      // The result's rows, where its layout matches the driver's; else it may be anywhere.
      const bool y_aligned = image_[group.output] == image_[driver] && y.elements() == d.elements();
      computes.push_back(tile(next_slice(), group, pieces, op, shape, weights, share(y.bytes(), r0, r1),
                              y_aligned ? share(y.bytes(), 0, r0) : 0,
                              y_aligned ? share(y.bytes(), 0, r1) : y.bytes(),
                              last ? &computes : nullptr));
    }
  }

  void compile_global_pool(const Group& group) {
    const Layer& l = g_.layers[group.layers[0]];
    const Tensor& x = g_.tensors[l.inputs[0]];
    const Tensor& y = g_.tensors[group.output];
    const std::uint64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], w = x.shape[3];
    const std::uint64_t ex = dtype_bytes(x.dtype), ey = dtype_bytes(y.dtype);
    std::uint64_t cc = c;
    while (h * w * cc * ex + cc * ey > tile_budget_) {
      if (cc == 1) cannot_fit(group, h * w * ex + ey, "one channel");
      cc = ceil_div(cc, 2);
    }
    while (cc > 1 && n * ceil_div(c, cc) < slices_) cc = ceil_div(cc, 2);
    for (std::uint64_t img = 0; img < n; ++img) {
      for (std::uint64_t c0 = 0; c0 < c; c0 += cc) {
        const std::uint64_t k = std::min(c, c0 + cc) - c0;
        // A channel slice of NHWC is strided across the whole image.
        const bool x_image = image_[l.inputs[0]];
        Piece piece{l.inputs[0], x_image ? img * h * w * c * ex : 0,
                    x_image ? (img + 1) * h * w * c * ex : x.bytes(), h * w * k * ex};
        ConvShape shape;
        shape.in_h = shape.kernel_h = h;
        shape.in_w = shape.kernel_w = w;
        shape.in_c = shape.out_c = k;
        tile(next_slice(), group, {piece}, "GlobalAveragePool", shape, kNone, k * ey,
             (img * c + c0) * ey, (img * c + c0 + k) * ey, nullptr);
      }
    }
  }

  // ---- host fallback --------------------------------------------------------------------------
  // One command on the host, which reads its inputs from DRAM once their writers are done and
  // writes its outputs there; it costs the config's host call plus a cost per output element.
  void compile_host(const Group& group) {
    const Layer& l = g_.layers[group.layers[0]];
    std::vector<CommandIndex> deps;
    for (std::uint32_t t : l.inputs) {
      if (!g_.tensors[t].constant) reader_deps(t, 0, ~std::uint64_t{0}, deps);
    }
    Command c;
    c.engine = EngineType::kHost;
    for (std::uint32_t t : l.outputs) c.elements += g_.tensors[t].elements();
    const CommandIndex host = emit(std::move(c), "H", h_, group, std::move(deps));
    for (std::uint32_t t : l.outputs) writers_[t].push_back({0, ~std::uint64_t{0}, host});
  }

  // ---- views ----------------------------------------------------------------------------------
  // No data moves: the outputs hold whatever the inputs' writers wrote, so readers of any part
  // wait for all of them.
  void compile_view(const Layer& l) {
    for (std::uint32_t out : l.outputs) {
      image_[out] = l.op == "Concat" && g_.tensors[out].shape.size() == 4 && image_[l.inputs[0]];
      for (std::uint32_t in : l.inputs) {
        if (g_.tensors[in].constant) continue;
        for (const Writer& w : writers_[in]) writers_[out].push_back({0, ~std::uint64_t{0}, w.store});
      }
    }
  }

  void compile_group(const Group& group) {
    const Layer& l = g_.layers[group.layers[0]];
    const OpClass cls = classify_op(l.op);
    const bool view = cls == OpClass::kView || l.op == "Concat" || l.op == "Split" || l.op == "Slice";
    if (view) return compile_view(l);
    if (cls == OpClass::kUnknown) {
      throw InputError(g_.source_file, "layer '" + l.name + "' " + l.loc,
                       "op '" + l.op + "' cannot run on the NPU");
    }
    sched_.programs.push_back({group.name, group.loc});
    const std::size_t first_command = sched_.commands.size();
    if (cls == OpClass::kHost) {
      compile_host(group);
    } else if (cls == OpClass::kArray && l.op == "Conv") {
      compile_spatial(group);
    } else if (cls == OpClass::kArray) {
      compile_matmul(group);
    } else {
      compile_vector(group);
    }
    if (sched_.commands.size() == first_command) sched_.programs.pop_back();
    // Other outputs of the group's last layer (a quantize's scale, say) come from the same stores.
    for (std::uint32_t out : g_.layers[group.layers.back()].outputs) {
      if (out == group.output) continue;
      for (const Writer& w : writers_[group.output]) writers_[out].push_back({0, ~std::uint64_t{0}, w.store});
    }
  }

  Schedule finish() {
    sched_.file = g_.source_file;
    sched_.model.name = g_.name;
    sched_.model.batch = g_.batch;
    sched_.model.weights_bytes = g_.weights_bytes();
    auto tensors = [&](const std::vector<std::uint32_t>& ids) {
      std::vector<TensorInfo> list;
      for (std::uint32_t t : ids) {
        const Tensor& tensor = g_.tensors[t];
        const std::string layout =
            tensor.layout.empty() && tensor.shape.size() == 4 ? "NCHW" : tensor.layout;
        list.push_back({tensor.name, dtype_name(tensor.dtype), layout, tensor.shape});
      }
      return list;
    };
    sched_.model.inputs = tensors(g_.inputs);
    sched_.model.outputs = tensors(g_.outputs);
    sched_.target_config = cfg_.name;
    sched_.target_slices = cfg_.slices.count;
    if (sched_.programs.empty()) sched_.programs.push_back({g_.name, ""});
    return std::move(sched_);
  }

  const Graph& g_;
  const HwConfig& cfg_;
  std::uint32_t slices_;
  std::uint64_t weight_budget_;
  std::uint64_t tile_budget_;
  std::map<std::uint32_t, std::vector<std::uint32_t>> consumers_;
  std::vector<std::vector<Writer>> writers_;
  // Whether a tensor sits in DRAM as an NHWC image (rows of W*C, N*H of them): the 4-d inputs
  // and results of convolutions and what keeps their layout. Other tensors are row-major with
  // rows of their last dimension. Byte ranges are only compared within one layout.
  std::vector<bool> image_;
  std::vector<std::vector<CommandIndex>> stores_;   // per slice: its tiles' stores, in order
  std::vector<CommandIndex> weight_frees_;           // stores whose ends free weight chunks
  std::string weights_buffer_;  // the chunk most recently loaded
  Schedule sched_;
  std::uint64_t di_ = 0, do_ = 0, s_ = 0, h_ = 0, buffers_ = 0;
  std::uint32_t rr_ = 0;
};

}  // namespace

Schedule compile_schedule(const Graph& graph, const HwConfig& config) {
  check_graph(graph);
  Schedule schedule = Compiler(graph, config).run();
  // The same checks and costing as a schedule read from a file.
  Diagnostics diag(graph.source_file + " (compiled for " + config.name + ")");
  finalize_schedule(schedule, config, diag);
  diag.throw_if_any();
  return schedule;
}

}  // namespace npusim
