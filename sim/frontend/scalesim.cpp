#include "sim/frontend/scalesim.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>

#include "profiler/input_file.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace npusim {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) fields.push_back(trim(field));
  return fields;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::optional<std::uint64_t> parse_dim(const std::string& field) {
  if (field.empty() || field.size() > 10 ||
      !std::all_of(field.begin(), field.end(), [](unsigned char c) { return std::isdigit(c); })) {
    return std::nullopt;
  }
  const std::uint64_t v = std::stoull(field);
  if (v == 0 || v > (std::uint64_t{1} << 32)) return std::nullopt;
  return v;
}

std::uint32_t add_tensor(Graph& g, std::string name, std::vector<std::uint64_t> shape,
                         bool constant, const char* layout) {
  Tensor t;
  t.name = std::move(name);
  t.shape = std::move(shape);
  t.constant = constant;
  t.layout = layout;
  g.tensors.push_back(std::move(t));
  return static_cast<std::uint32_t>(g.tensors.size() - 1);
}

}  // namespace

Graph parse_scalesim_topology(const std::string& text, const std::string& origin) {
  Diagnostics diag(origin);
  Graph g;
  g.source_file = origin;
  g.name = profiler::escape_invalid_utf8(std::filesystem::path(origin).stem().string());
  const std::string file =
      profiler::escape_invalid_utf8(std::filesystem::path(origin).filename().string());
  std::istringstream in(text);
  std::string line;
  std::size_t row = 0;
  bool gemm = false;
  bool have_header = false;
  while (std::getline(in, line)) {
    ++row;
    const std::vector<std::string> f = split_fields(line);
    const bool blank =
        std::all_of(f.begin(), f.end(), [](const std::string& s) { return s.empty(); });
    if (blank) continue;
    const std::string where = "row " + std::to_string(row);
    if (!have_header) {
      have_header = true;
      const std::string second = f.size() > 1 ? lower(f[1]) : "";
      if (second == "m") {
        gemm = true;
      } else if (second.find("ifmap") == std::string::npos) {
        diag.error(
            where,
            "expected a SCALE-Sim header: 'Layer name, IFMAP Height, ...' or 'Layer, M, N, K'");
        break;
      }
      continue;
    }
    const std::size_t needed = gemm ? 4 : 8;
    if (f.size() < needed || f[0].empty()) {
      diag.error(where, "expected " + std::to_string(needed) + " fields (" +
                            (gemm ? "Layer, M, N, K"
                                  : "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter "
                                    "Width, Channels, Num Filter, Strides") +
                            "), found " + std::to_string(f.size()));
      continue;
    }
    static const char* kConvNames[] = {
        "",         "IFMAP Height", "IFMAP Width", "Filter Height", "Filter Width",
        "Channels", "Num Filter",   "Strides"};
    static const char* kGemmNames[] = {"", "M", "N", "K"};
    std::vector<std::uint64_t> v(needed, 1);
    bool ok = true;
    for (std::size_t i = 1; i < needed; ++i) {
      const auto d = parse_dim(f[i]);
      if (!d) {
        diag.error(where, std::string("expected a positive integer for ") +
                              (gemm ? kGemmNames[i] : kConvNames[i]) + ", found '" + f[i] + "'");
        ok = false;
      } else {
        v[i] = *d;
      }
    }
    if (!ok) continue;
    const std::string& name = f[0];
    Layer layer;
    layer.name = name;
    layer.loc = "loc(\"" + file + "\":" + std::to_string(row) + ")";
    if (gemm) {
      // (M x K) times (K x N).
      const std::uint64_t m = v[1], n = v[2], k = v[3];
      layer.op = "MatMul";
      layer.inputs = {add_tensor(g, name + ".a", {m, k}, false, "MK"),
                      add_tensor(g, name + ".b", {k, n}, true, "KN")};
      layer.outputs = {add_tensor(g, name + ".out", {m, n}, false, "MN")};
    } else {
      const std::uint64_t h = v[1], w = v[2], fh = v[3], fw = v[4], c = v[5], k = v[6], sh = v[7];
      std::uint64_t sw = sh;
      if (f.size() > 8 && !f[8].empty()) {
        const auto d = parse_dim(f[8]);
        if (!d) {
          diag.error(where, "expected a positive integer for Stride W, found '" + f[8] + "'");
          continue;
        }
        sw = *d;
      }
      // Past the IFMAP, SCALE-Sim's output size ceil((H - Fh + S) / S) counts windows that start
      // beyond the input and read nothing of it.
      if (sh > h || sw > w) {
        diag.error(where, "layer '" + name + "': stride " + std::to_string(sh) + "x" +
                              std::to_string(sw) + " is larger than the IFMAP " +
                              std::to_string(h) + "x" + std::to_string(w));
        continue;
      }
      if (fh > h || fw > w) {
        diag.error(where, "filter " + std::to_string(fh) + "x" + std::to_string(fw) +
                              " larger than the IFMAP " + std::to_string(h) + "x" +
                              std::to_string(w));
        continue;
      }
      // A name with DP marks a depthwise layer: one filter per channel.
      const bool depthwise = name.find("DP") != std::string::npos;
      const std::uint64_t filters = depthwise ? c : k;
      // SCALE-Sim's IFMAP includes padding and its output is ceil((H - Fh + Sh) / Sh); pad the
      // bottom and right just enough that floor division gives the same size.
      const std::uint64_t pad_b = (sh - (h - fh) % sh) % sh;
      const std::uint64_t pad_r = (sw - (w - fw) % sw) % sw;
      const std::uint64_t oh = (h - fh + sh - 1) / sh + 1;
      const std::uint64_t ow = (w - fw + sw - 1) / sw + 1;
      layer.op = "Conv";
      layer.attrs.ints["kernel_shape"] = {static_cast<std::int64_t>(fh),
                                          static_cast<std::int64_t>(fw)};
      layer.attrs.ints["strides"] = {static_cast<std::int64_t>(sh), static_cast<std::int64_t>(sw)};
      layer.attrs.ints["pads"] = {0, 0, static_cast<std::int64_t>(pad_b),
                                  static_cast<std::int64_t>(pad_r)};
      layer.attrs.ints["group"] = {depthwise ? static_cast<std::int64_t>(c) : 1};
      layer.inputs = {
          add_tensor(g, name + ".ifmap", {1, c, h, w}, false, "NCHW"),
          add_tensor(g, name + ".filter", {filters, depthwise ? 1 : c, fh, fw}, true, "KCHW")};
      layer.outputs = {add_tensor(g, name + ".ofmap", {1, filters, oh, ow}, false, "NCHW")};
    }
    g.inputs.push_back(layer.inputs[0]);
    g.outputs.push_back(layer.outputs[0]);
    g.layers.push_back(std::move(layer));
  }
  if (!have_header) diag.error("", "empty topology: no header line");
  if (have_header && g.layers.empty() && diag.empty())
    diag.error("", "no layer rows after the header");
  diag.throw_if_any();
  check_graph(g);
  return g;
}

Graph load_scalesim_topology(const std::string& path) {
  return parse_scalesim_topology(read_text_file(path), path);
}

}  // namespace npusim
