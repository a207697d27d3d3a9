// npusim sweep: a grid of config overrides, one `npusim run` child process per point, collected
// into sweep.csv and sweep.json (docs/sweep.md).
#include "sim/app/sweep.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include <spdlog/spdlog.h>
#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "profiler/input_file.h"
#include "profiler/output_dir.h"
#include "profiler/report.h"
#include "profiler/report_writers.h"
#include "profiler/stats.h"
#include "sim/api/models.h"
#include "sim/app/process_runner.h"
#include "sim/config/hw_config.h"
#include "sim/util/error.h"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace npusim::app {

using profiler::write_file_atomically;

using OJson = nlohmann::ordered_json;

// ---- shared with check.cpp ----------------------------------------------------------------------

std::vector<std::string> run_child_args(const std::string& model, const std::string& config,
                                        const std::vector<std::string>& overrides,
                                        const std::vector<std::string>& extra,
                                        const fs::path& out) {
  // --opt=value throughout, so that no value is ever taken for an option.
  std::vector<std::string> args = {"run", "--model=" + model, "--config=" + config};
  for (const std::string& o : overrides) args.push_back("--set=" + o);
  args.insert(args.end(), extra.begin(), extra.end());
  args.push_back("--out=" + out.string());
  args.push_back("--quiet");
  return args;
}

std::string child_error_text(const fs::path& stderr_file, int exit_code) {
  std::ifstream in(stderr_file, std::ios::binary);
  std::string text, line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
      line.pop_back();
    if (line.empty()) continue;
    text += (text.empty() ? "" : " | ") + line;
  }
  if (exit_code > 128 && exit_code < 128 + 65) {
    text =
        "killed by signal " + std::to_string(exit_code - 128) + (text.empty() ? "" : ": " + text);
  }
  if (text.empty()) text = "exited with code " + std::to_string(exit_code) + " and printed nothing";
  // It goes into sweep.json and check's JUnit XML: a message naming a file that is not UTF-8
  // must not make them unwritable.
  return profiler::escape_invalid_utf8(text);
}

std::string absolute_config(const std::string& config) {
  std::error_code ec;
  if (fs::is_regular_file(config, ec)) return fs::absolute(config).lexically_normal().string();
  return config;
}

namespace {

constexpr std::size_t kMaxPoints = 100000;
constexpr long long kMaxJobs = 4096;

// ---- the grid -----------------------------------------------------------------------------------

struct SweepKey {
  std::string key;                  // config key path, e.g. slices.count
  std::vector<std::string> values;  // as given on the command line
};

struct Plan {
  std::string model;                      // as given
  std::string model_path;                 // absolute, for the children
  std::string config;                     // as given
  std::string config_arg;                 // absolute file path or built-in name, for the children
  std::vector<std::string> fixed;         // --set, applied to every point first
  std::vector<std::string> input_shapes;  // --input-shape, passed on
  unsigned stats_level = 40;              // --stats-level, passed on
  std::string trace_detail;               // --trace-detail, passed on when given
  std::vector<SweepKey> keys;             // command-line order

  // The number of points; 0 when it would pass kMaxPoints (a plan read from a file may claim any
  // number of values), so that no product ever wraps.
  std::size_t size() const {
    std::size_t n = 1;
    for (const SweepKey& k : keys) {
      if (k.values.empty()) return 0;
      if (k.values.size() > kMaxPoints || n > kMaxPoints / k.values.size()) return 0;
      n *= k.values.size();
    }
    return n;
  }
  // The value index of each key for point `index`: the last key varies fastest.
  std::vector<std::size_t> coordinates(std::size_t index) const {
    std::vector<std::size_t> c(keys.size());
    for (std::size_t k = keys.size(); k-- > 0;) {
      c[k] = index % keys[k].values.size();
      index /= keys[k].values.size();
    }
    return c;
  }
  std::vector<std::string> point_overrides(std::size_t index) const {
    std::vector<std::string> o = fixed;
    const auto c = coordinates(index);
    for (std::size_t k = 0; k < keys.size(); ++k)
      o.push_back(keys[k].key + "=" + keys[k].values[c[k]]);
    return o;
  }
  std::string describe(std::size_t index) const {
    std::string s;
    const auto c = coordinates(index);
    for (std::size_t k = 0; k < keys.size(); ++k) {
      s += (k ? " " : "") + keys[k].key + "=" + keys[k].values[c[k]];
    }
    return s;
  }
  std::vector<std::string> extra_args() const {
    std::vector<std::string> extra;
    for (const std::string& s : input_shapes) extra.push_back("--input-shape=" + s);
    extra.push_back("--stats-level=" + std::to_string(stats_level));
    if (!trace_detail.empty()) extra.push_back("--trace-detail=" + trace_detail);
    return extra;
  }
};

// A value as `--set` reads it: JSON if it parses, a string otherwise.
OJson override_value(const std::string& text) {
  try {
    return OJson::parse(text);
  } catch (const OJson::parse_error&) {
    return text;
  }
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

SweepKey parse_list(const std::string& option, const std::string& key, const std::string& list) {
  SweepKey k{key, {}};
  std::size_t from = 0;
  while (true) {
    const auto comma = list.find(',', from);
    const std::string value =
        trim(list.substr(from, comma == std::string::npos ? comma : comma - from));
    if (value.empty()) {
      throw InputError("", option, "empty value in '" + list + "' (expected v1,v2,...)");
    }
    if (std::find(k.values.begin(), k.values.end(), value) != k.values.end()) {
      throw InputError("", option, "value '" + value + "' is given twice for " + key);
    }
    k.values.push_back(value);
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  return k;
}

// A swept key that no value can make valid (unknown, or a path through a non-object) is a
// mistake in the sweep itself, not a failing point.
void check_key_paths(const Plan& plan) {
  for (const SweepKey& k : plan.keys) {
    for (const std::string& v : k.values) {
      std::vector<std::string> overrides = plan.fixed;
      overrides.push_back(k.key + "=" + v);
      try {
        load_hw_config(plan.config, overrides);
      } catch (const InputError& e) {
        for (const Problem& p : e.problems()) {
          if (p.where.rfind("--set ", 0) == 0 || p.message.rfind("unknown key", 0) == 0) {
            throw InputError("", "--sweep " + k.key, p.to_string());
          }
        }
      }
    }
  }
}

// ---- one point's figures ------------------------------------------------------------------------

constexpr const char* kBoundRule =
    "the resource with the largest static lower bound (stats.json bounds.binding): array, vector, "
    "mac_peak, dma_in_port, dma_out_port, dram or host; ties go to the first in that order";

// The lower bounds a point's row carries: stats.json's bounds.<name>_cycles as the column
// lower_bound_<name>_cycles, one per resource in profiler::kBoundResources order.
std::vector<std::string> lower_bound_names() {
  std::vector<std::string> names;
  for (profiler::BoundResource r : profiler::kBoundResources) {
    names.emplace_back(profiler::bound_name(r));
  }
  return names;
}

// The number (or, with `object`, the object) at `pointer`; throws naming the pointer otherwise.
const OJson& need(const OJson& root, const std::string& pointer, bool object = false) {
  const OJson::json_pointer p(pointer);
  if (!root.contains(p)) throw std::runtime_error("no " + pointer);
  const OJson& v = root.at(p);
  if (object ? !v.is_object() : !v.is_number()) {
    throw std::runtime_error(pointer + (object ? " is not an object" : " is not a number"));
  }
  return v;
}

struct PointResult {
  bool ok = false;
  OJson exit_code;  // null when the point never ran
  std::string error;
  OJson total_cycles, latency_us, mac_utilization, dram_gbps, compute_busy, dma_busy;
  OJson energy_uj;  // the simulation's total energy (stats.json /energy/total_uj)
  // An LLM run's figures (stats.json /llm/...): null for other models.
  OJson ttft_ms, tpot_mean_ms, tpot_p99_ms, decode_tokens_per_s;
  std::vector<OJson> lower_bounds;  // indexed like lower_bound_names(); empty unless ok
  std::string bound;                // the binding resource's name
};

// Reads a finished point's folder: exit_code.txt, then stats.json or stderr.txt. Paths in
// messages are relative to the sweep folder, so a merged sweep reads the same as a direct one.
PointResult read_point(const fs::path& dir, const std::string& rel) {
  PointResult r;
  std::ifstream code_in(dir / "exit_code.txt");
  long code = -1;
  if (!(code_in >> code) || code < 0 || code > 255) {
    r.error = "not run: no exit code in " + rel + "/exit_code.txt";
    return r;
  }
  r.exit_code = code;
  if (code != 0) {
    r.error = child_error_text(dir / "stderr.txt", static_cast<int>(code));
    return r;
  }
  try {
    std::ifstream in(dir / "stats.json", std::ios::binary);
    if (!in) throw std::runtime_error("cannot read the file");
    const OJson stats = OJson::parse(in);
    r.total_cycles = need(stats, "/runtime/total_cycles");
    r.latency_us = need(stats, "/runtime/time_us");
    r.mac_utilization = need(stats, "/runtime/mac_utilization");
    r.dram_gbps = need(stats, "/runtime/dram_achieved_gbps");
    r.energy_uj = need(stats, "/energy/total_uj");
    if (stats.contains("llm")) {
      r.ttft_ms = need(stats, "/llm/ttft_ms");
      r.tpot_mean_ms = need(stats, "/llm/tpot_mean_ms");
      r.tpot_p99_ms = need(stats, "/llm/tpot_p99_ms");
      r.decode_tokens_per_s = need(stats, "/llm/decode_tokens_per_s");
    }
    for (const std::string& name : lower_bound_names()) {
      r.lower_bounds.push_back(need(stats, "/bounds/" + name + "_cycles"));
    }
    const OJson::json_pointer binding("/bounds/binding");
    if (!stats.contains(binding) || !stats.at(binding).is_string()) {
      throw std::runtime_error("no /bounds/binding (a resource name)");
    }
    r.bound = stats.at(binding).get<std::string>();
    const OJson& engines = need(stats, "/runtime/engines", true);
    std::uint64_t compute = 0, dma = 0;
    for (const auto& [name, e] : engines.items()) {
      const OJson& cycles = need(e, "/busy_cycles");
      if (!cycles.is_number_unsigned())
        throw std::runtime_error("/runtime/engines/" + name + "/busy_cycles is not a cycle count");
      const std::uint64_t busy = cycles.get<std::uint64_t>();
      // Several devices: DEV<d>.DMA_IN is a DMA engine too; the links and SYNC are neither.
      const std::optional<profiler::EngineKind> kind = profiler::engine_kind_of_name(name);
      if (kind && profiler::is_multi_device(*kind)) continue;
      std::uint64_t& slot = kind && profiler::is_dma(*kind) ? dma : compute;
      slot = std::max(slot, busy);
    }
    r.compute_busy = compute;
    r.dma_busy = dma;
    r.ok = true;
  } catch (const std::exception& e) {
    r = PointResult{};
    r.exit_code = code;
    r.error = rel + "/stats.json: " + e.what();
  }
  return r;
}

// ---- sweep.csv and sweep.json -------------------------------------------------------------------

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

std::string number_text(const OJson& v) { return v.is_null() ? "" : v.dump(); }

std::string sweep_csv(const Plan& plan, const std::vector<PointResult>& results) {
  std::ostringstream out;
  out << "index";
  for (const SweepKey& k : plan.keys) out << ',' << csv_field(k.key);
  out << ",status,exit_code,total_cycles,latency_us,mac_utilization,dram_gbps,bound,"
         "compute_busy_cycles,dma_busy_cycles";
  const std::vector<std::string> bound_names = lower_bound_names();
  for (const std::string& name : bound_names) out << ",lower_bound_" << name << "_cycles";
  out << ",energy_uj,ttft_ms,tpot_mean_ms,tpot_p99_ms,decode_tokens_per_s,error\n";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const PointResult& r = results[i];
    out << i;
    const auto c = plan.coordinates(i);
    for (std::size_t k = 0; k < plan.keys.size(); ++k)
      out << ',' << csv_field(plan.keys[k].values[c[k]]);
    out << ',' << (r.ok ? "ok" : "failed") << ',' << number_text(r.exit_code) << ','
        << number_text(r.total_cycles) << ',' << number_text(r.latency_us) << ','
        << number_text(r.mac_utilization) << ',' << number_text(r.dram_gbps) << ','
        << csv_field(r.bound) << ',' << number_text(r.compute_busy) << ','
        << number_text(r.dma_busy) << ',';
    for (std::size_t b = 0; b < bound_names.size(); ++b) {
      out << (r.ok ? number_text(r.lower_bounds[b]) : std::string()) << ',';
    }
    out << number_text(r.energy_uj) << ',' << number_text(r.ttft_ms) << ','
        << number_text(r.tpot_mean_ms) << ',' << number_text(r.tpot_p99_ms) << ','
        << number_text(r.decode_tokens_per_s) << ',' << csv_field(r.error) << '\n';
  }
  return out.str();
}

std::string sweep_json(const Plan& plan, const std::vector<PointResult>& results) {
  OJson j;
  j["format"] = "npusim-sweep";
  j["version"] = 1;
  j["model"] = profiler::escape_invalid_utf8(plan.model);
  j["config"] = profiler::escape_invalid_utf8(plan.config);
  j["set"] = plan.fixed;
  j["input_shapes"] = plan.input_shapes;
  j["stats_level"] = plan.stats_level;
  OJson keys = OJson::array();
  for (const SweepKey& k : plan.keys) {
    OJson values = OJson::array();
    for (const std::string& v : k.values) values.push_back(override_value(v));
    keys.push_back({{"key", k.key}, {"values", values}});
  }
  j["keys"] = keys;
  j["bound_rule"] = kBoundRule;
  std::size_t ok = 0;
  for (const PointResult& r : results) ok += r.ok ? 1 : 0;
  j["summary"] = {{"points", results.size()}, {"ok", ok}, {"failed", results.size() - ok}};
  OJson points = OJson::array();
  for (std::size_t i = 0; i < results.size(); ++i) {
    const PointResult& r = results[i];
    OJson p;
    p["index"] = i;
    p["dir"] = "points/" + std::to_string(i);
    OJson values = OJson::object();
    const auto c = plan.coordinates(i);
    for (std::size_t k = 0; k < plan.keys.size(); ++k) {
      values[plan.keys[k].key] = override_value(plan.keys[k].values[c[k]]);
    }
    p["values"] = values;
    p["status"] = r.ok ? "ok" : "failed";
    p["exit_code"] = r.exit_code;
    p["total_cycles"] = r.total_cycles;
    p["latency_us"] = r.latency_us;
    p["mac_utilization"] = r.mac_utilization;
    p["dram_gbps"] = r.dram_gbps;
    p["bound"] = r.ok ? OJson(r.bound) : OJson();
    p["compute_busy_cycles"] = r.compute_busy;
    p["dma_busy_cycles"] = r.dma_busy;
    const std::vector<std::string> names = lower_bound_names();
    for (std::size_t b = 0; b < names.size(); ++b) {
      p["lower_bound_" + names[b] + "_cycles"] = r.ok ? r.lower_bounds[b] : OJson();
    }
    p["energy_uj"] = r.energy_uj;
    p["ttft_ms"] = r.ttft_ms;
    p["tpot_mean_ms"] = r.tpot_mean_ms;
    p["tpot_p99_ms"] = r.tpot_p99_ms;
    p["decode_tokens_per_s"] = r.decode_tokens_per_s;
    p["error"] = r.ok ? OJson() : OJson(r.error);
    points.push_back(p);
  }
  j["points"] = points;
  // Paths are escaped above; any other invalid UTF-8 (a swept value) is replaced, not thrown on.
  return j.dump(2, ' ', false, OJson::error_handler_t::replace) + "\n";
}

// ---- sweep-plan.json: what --merge needs to rebuild the grid ------------------------------------

std::string plan_json(const Plan& plan) {
  OJson j;
  j["format"] = "npusim-sweep-plan";
  j["version"] = 1;
  j["model"] = profiler::escape_invalid_utf8(plan.model);
  j["model_path"] = profiler::escape_invalid_utf8(plan.model_path);
  j["config"] = profiler::escape_invalid_utf8(plan.config);
  j["config_arg"] = profiler::escape_invalid_utf8(plan.config_arg);
  j["set"] = plan.fixed;
  j["input_shapes"] = plan.input_shapes;
  j["stats_level"] = plan.stats_level;
  OJson keys = OJson::array();
  for (const SweepKey& k : plan.keys) keys.push_back({{"key", k.key}, {"values", k.values}});
  j["keys"] = keys;
  j["points"] = plan.size();
  // Paths are escaped above; any other invalid UTF-8 (a swept value) is replaced, not thrown on.
  return j.dump(2, ' ', false, OJson::error_handler_t::replace) + "\n";
}

Plan read_plan(const fs::path& dir) {
  const fs::path file = dir / "sweep-plan.json";
  const std::string name = profiler::escape_invalid_utf8(file.string());
  std::string text;
  if (const auto problem = profiler::read_input_file(file.string(), text)) {
    throw InputError(name, "",
                     *problem + " (is this a folder written by npusim sweep or --emit-jobs?)");
  }
  OJson j;
  try {
    j = OJson::parse(text);
  } catch (const OJson::exception& e) {
    throw InputError(name, "", std::string("malformed JSON: ") + e.what());
  }
  Plan plan;
  try {
    if (j.at("format") != "npusim-sweep-plan")
      throw InputError(name, "/format", "expected \"npusim-sweep-plan\"");
    if (j.at("version") != 1) throw InputError(name, "/version", "expected 1");
    plan.model = j.at("model").get<std::string>();
    plan.model_path = j.at("model_path").get<std::string>();
    plan.config = j.at("config").get<std::string>();
    plan.config_arg = j.at("config_arg").get<std::string>();
    plan.fixed = j.at("set").get<std::vector<std::string>>();
    plan.input_shapes = j.at("input_shapes").get<std::vector<std::string>>();
    plan.stats_level = j.at("stats_level").get<unsigned>();
    for (const OJson& k : j.at("keys")) {
      SweepKey key{k.at("key").get<std::string>(), k.at("values").get<std::vector<std::string>>()};
      if (key.values.empty()) throw InputError(name, "/keys", "a key without values");
      plan.keys.push_back(std::move(key));
    }
    const OJson& points = j.at("points");
    if (plan.keys.empty() || !points.is_number_unsigned() ||
        points.get<std::uint64_t>() > kMaxPoints || plan.size() == 0) {
      throw InputError(name, "/points",
                       "expected a point count of 1 to " + std::to_string(kMaxPoints) +
                           " that matches the keys' values, found " + points.dump());
    }
    if (points.get<std::uint64_t>() != plan.size()) {
      throw InputError(name, "/points",
                       "the keys' values make " + std::to_string(plan.size()) +
                           " point(s), but the plan says " + points.dump());
    }
  } catch (const OJson::exception& e) {
    throw InputError(name, "", std::string("not a sweep plan: ") + e.what());
  }
  return plan;
}

// ---- the command --------------------------------------------------------------------------------

struct SweepOptions {
  std::string model, config = "default", out, emit_jobs, merge;
  std::vector<std::string> fixed, input_shapes;
  long long jobs = 0;  // signed, so that --jobs -1 is rejected rather than read as 2^32 - 1
  unsigned stats_level = 40;
  std::string trace_detail;
  bool help = false;
};

void create_folder(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw profiler::OutputError("cannot create the folder " + dir.string() +
                                (ec ? ": " + ec.message() : ""));
  }
}

void write_results(const fs::path& dir, const Plan& plan, const std::vector<PointResult>& results,
                   bool quiet) {
  write_file_atomically(dir / "sweep.csv", sweep_csv(plan, results));
  write_file_atomically(dir / "sweep.json", sweep_json(plan, results));
  std::size_t failed = 0;
  for (const PointResult& r : results) failed += r.ok ? 0 : 1;
  if (!quiet) {
    std::cout << "sweep: " << results.size() << " point(s), " << results.size() - failed << " ok, "
              << failed << " failed; written to " << (dir / "sweep.csv").string() << " and "
              << (dir / "sweep.json").string() << '\n';
  }
}

// Which of the plan's points have a folder in DIR/points, from one listing of it: folders of
// points beyond the plan (an earlier, bigger sweep into the same DIR) are ignored.
std::vector<bool> point_folders(const fs::path& dir, std::size_t points) {
  std::vector<bool> present(points, false);
  std::error_code ec;
  for (fs::directory_iterator it(dir / "points", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.size() > 9 ||
        name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    const std::size_t index = std::stoul(name);
    if (index < points && std::to_string(index) == name) present[index] = true;
  }
  return present;
}

int merge(const fs::path& dir, bool quiet) {
  const Plan plan = read_plan(dir);
  // The plan against the folder, before any point is read: a plan none of whose points has a
  // folder is not this folder's (or its jobs never ran).
  const std::vector<bool> present = point_folders(dir, plan.size());
  if (std::find(present.begin(), present.end(), true) == present.end()) {
    throw InputError(profiler::escape_invalid_utf8((dir / "points").string()), "",
                     "holds none of the " + std::to_string(plan.size()) +
                         " point(s) of sweep-plan.json (folders points/0 to points/" +
                         std::to_string(plan.size() - 1) +
                         "): run the sweep's jobs first, or merge the folder they ran in");
  }
  std::vector<PointResult> results;
  int status = kExitOk;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const std::string rel = "points/" + std::to_string(i);
    if (present[i]) {
      results.push_back(read_point(dir / rel, rel));
    } else {
      results.emplace_back();
      results.back().error = "not run: no exit code in " + rel + "/exit_code.txt";
    }
    if (!results.back().ok) {
      std::cerr << "npusim: sweep: point " << i << " (" << plan.describe(i)
                << ") failed: " << results.back().error << '\n';
      status = kExitSimulationFailed;
    }
  }
  write_results(dir, plan, results, quiet);
  return status;
}

int emit_jobs(const Plan& plan, const fs::path& dir, const std::string& file, bool quiet) {
  create_folder(dir);
  write_file_atomically(dir / "sweep-plan.json", plan_json(plan));
  const std::string binary = self_executable();
  const fs::path abs_dir = fs::absolute(dir).lexically_normal();
  std::ostringstream lines;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const fs::path point = abs_dir / "points" / std::to_string(i);
    const std::string q = shell_quote(point.string());
    lines << "mkdir -p " << q << " && (" << shell_quote(binary);
    for (const std::string& a : run_child_args(plan.model_path, plan.config_arg,
                                               plan.point_overrides(i), plan.extra_args(), point)) {
      lines << ' ' << shell_quote(a);
    }
    lines << " </dev/null >/dev/null 2>" << shell_quote((point / "stderr.txt").string())
          << "; rc=$?; echo $rc >" << shell_quote((point / "exit_code.txt").string())
          << "; exit $rc)\n";
  }
  if (file == "-") {
    std::cout << lines.str();
    std::cout.flush();
  } else {
    write_file_atomically(file, lines.str());
  }
  if (!quiet) {
    (file == "-" ? std::cerr : std::cout)
        << "sweep: " << plan.size() << " job(s) written to "
        << (file == "-" ? "standard output" : file) << "; run them (for example: parallel < "
        << (file == "-" ? "JOBS" : shell_quote(file)) << "), then: npusim sweep --merge "
        << shell_quote(dir.string()) << '\n';
  }
  return kExitOk;
}

int run_sweep(const Plan& plan, const fs::path& dir, unsigned jobs, bool quiet) {
  create_folder(dir / "points");
  write_file_atomically(dir / "sweep-plan.json", plan_json(plan));
  const std::size_t n = plan.size();
  std::vector<ChildSpec> children(n);
  for (std::size_t i = 0; i < n; ++i) {
    const fs::path point = dir / "points" / std::to_string(i);
    std::error_code ec;
    fs::remove_all(point, ec);  // no file of an earlier sweep may pass for this one's
    create_folder(point);
    children[i].args = run_child_args(plan.model_path, plan.config_arg, plan.point_overrides(i),
                                      plan.extra_args(), point);
    children[i].stderr_file = point / "stderr.txt";
  }
  spdlog::info("sweep: {} point(s), {} at a time, into {}", n, jobs, dir.string());
  std::vector<PointResult> results(n);
  std::size_t finished = 0;
  Progress progress("points", n, quiet);
  run_children(children, jobs, [&](std::size_t i, const ChildOutcome& outcome) {
    const std::string rel = "points/" + std::to_string(i);
    const fs::path point = dir / rel;
    {
      std::ofstream code(point / "exit_code.txt", std::ios::binary | std::ios::trunc);
      code << outcome.exit_code << '\n';
    }
    results[i] = read_point(point, rel);
    ++finished;
    const PointResult& r = results[i];
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%.2f s", outcome.seconds);
    std::string line = "npusim: sweep: [" + std::to_string(finished) + "/" + std::to_string(n) +
                       "] point " + std::to_string(i) + " (" + plan.describe(i) + "): ";
    if (r.ok) {
      line += "ok, " + r.total_cycles.dump() + " cycles, bound by " + r.bound + ", " + seconds;
    } else {
      line += "failed (exit " + std::to_string(outcome.exit_code) + "): " + r.error;
    }
    progress.finished(line, !r.ok);
  });
  progress.close();
  write_results(dir, plan, results, quiet);
  const bool any_failed =
      std::any_of(results.begin(), results.end(), [](const PointResult& r) { return !r.ok; });
  return any_failed ? kExitSimulationFailed : kExitOk;
}

const char* kSweepHelp =
    "Runs the model on every point of a grid of config values, each point compiled for its\n"
    "config and simulated by `npusim run` in a process of its own (up to --jobs at a time),\n"
    "and writes DIR/sweep.csv and DIR/sweep.json (one row per point, in grid order: keys in\n"
    "command-line order, values in the order given, the last key varying fastest). Each point's\n"
    "outputs, stderr.txt and exit_code.txt are in DIR/points/<index>/. See docs/sweep.md.\n"
    "\n"
    "exit codes: 0 every point ran; 3 some point failed (the others still ran and are in the\n"
    "results); 2 bad input of the sweep itself (nothing is run); 4 internal error.";

}  // namespace

int sweep_command(const std::vector<std::string>& args) {
  SweepOptions o;
  po::options_description desc("Options for npusim sweep");
  desc.add_options()("help,h", po::bool_switch(&o.help), "show this help")(
      "model,m", po::value(&o.model)->value_name("FILE"),
      "the model (schedule, graph JSON, SCALE-Sim topology or ONNX); may also be the one "
      "positional argument")(
      "config,c", po::value(&o.config)->value_name("FILE|NAME")->default_value("default"),
      "base hardware config: a JSON file or a built-in name (default, server)")(
      "set", po::value(&o.fixed)->value_name("KEY=VALUE")->composing(),
      "a fixed override applied to every point before its swept values (repeatable)")(
      "clock-mhz", po::value<std::string>()->value_name("V1,V2,..."),
      "shorthand for --sweep clock_mhz=V1,V2,...")(
      "slices", po::value<std::string>()->value_name("V1,V2,..."),
      "shorthand for --sweep slices.count=V1,V2,...")(
      "sweep", po::value<std::vector<std::string>>()->value_name("KEY=V1,V2,...")->composing(),
      "sweep a config key over values (repeatable; one grid dimension each)")(
      "input-shape", po::value(&o.input_shapes)->value_name("NAME=DxD...")->composing(),
      "passed on to npusim run (ONNX inputs)")(
      "stats-level", po::value(&o.stats_level)->value_name("40|50|70|100")->default_value(40),
      "passed on to npusim run: how much each point's outputs hold (40, the totals, is enough "
      "for the sweep's figures and the fastest)")(
      "trace-detail", po::value(&o.trace_detail)->value_name("auto|full|summary"),
      "passed on to npusim run: per-command detail of each point's traces and stats.json "
      "(default: run's, auto)")("out,o", po::value(&o.out)->value_name("DIR"),
                                "the sweep folder (required)")(
      "jobs,j", po::value(&o.jobs)->value_name("N"),
      "points run at a time (default: the number of cores)")(
      "emit-jobs", po::value(&o.emit_jobs)->value_name("FILE"),
      "run nothing: write one shell command per point to FILE ('-': standard output), for GNU "
      "parallel or a Slurm job array; then merge with --merge DIR")(
      "merge", po::value(&o.merge)->value_name("DIR"),
      "run nothing: collect DIR/points/*/ (written by the emitted jobs) into DIR/sweep.csv and "
      "DIR/sweep.json")("log-level", po::value<std::string>()->value_name("LEVEL"),
                        "trace|debug|info|warn|error|off")(
      "quiet,q", po::bool_switch(), "no progress and no summary; failures are still reported");

  std::vector<SweepKey> keys;
  po::variables_map vm;
  try {
    po::positional_options_description positionals;
    positionals.add("model", 1);
    const po::parsed_options parsed =
        po::command_line_parser(args)
            .options(desc)
            .positional(positionals)
            .style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing)
            .run();
    po::store(parsed, vm);
    po::notify(vm);
    // The grid's keys in command-line order, which boost's variables_map does not keep.
    for (const po::option& opt : parsed.options) {
      if (opt.value.empty()) continue;
      const std::string& v = opt.value.front();
      if (opt.string_key == "clock-mhz") keys.push_back(parse_list("--clock-mhz", "clock_mhz", v));
      if (opt.string_key == "slices") keys.push_back(parse_list("--slices", "slices.count", v));
      if (opt.string_key == "sweep") {
        const auto eq = v.find('=');
        const std::string key = eq == std::string::npos ? "" : trim(v.substr(0, eq));
        if (key.empty()) throw InputError("", "--sweep " + v, "expected KEY=V1,V2,...");
        keys.push_back(parse_list("--sweep " + key, key, v.substr(eq + 1)));
      }
    }
  } catch (const po::error& e) {
    throw InputError("", "", std::string(e.what()) + " (see npusim sweep --help)");
  }
  if (o.help) {
    std::cout
        << "usage: npusim sweep [--model] MODEL [--config C] [--set K=V ...]\n"
           "                    [--clock-mhz V,...] [--slices V,...] [--sweep KEY=V,... ...]\n"
           "                    --out DIR [--jobs N] [--emit-jobs FILE]\n"
           "       npusim sweep --merge DIR\n\n"
        << kSweepHelp << "\n\n"
        << desc << '\n';
    return kExitOk;
  }
  const bool quiet = vm["quiet"].as<bool>();

  if (!o.merge.empty()) {
    for (const char* other : {"model", "set", "clock-mhz", "slices", "sweep", "input-shape", "out",
                              "jobs", "emit-jobs", "stats-level", "trace-detail"}) {
      if (vm.count(other) && !vm[other].defaulted()) {
        throw InputError("", "",
                         std::string("--merge takes no --") + other +
                             ": the grid comes from DIR/sweep-plan.json (see npusim sweep --help)");
      }
    }
    if (!vm["config"].defaulted())
      throw InputError("", "",
                       "--merge takes no --config: the grid comes from DIR/sweep-plan.json");
    return merge(o.merge, quiet);
  }

  if (o.model.empty()) throw InputError("", "", "--model is required (see npusim sweep --help)");
  if (o.out.empty()) throw InputError("", "", "--out is required (see npusim sweep --help)");
  if (keys.empty())
    throw InputError("", "",
                     "nothing to sweep: give --clock-mhz, --slices or --sweep KEY=V1,V2,...");
  if (vm.count("jobs") && (o.jobs < 1 || o.jobs > kMaxJobs)) {
    throw InputError("", "--jobs",
                     "expected 1 to " + std::to_string(kMaxJobs) + " processes at a time, found " +
                         std::to_string(o.jobs));
  }
  if (o.stats_level != 40 && o.stats_level != 50 && o.stats_level != 70 && o.stats_level != 100) {
    throw InputError("", "--stats-level",
                     "expected 40, 50, 70 or 100, found " + std::to_string(o.stats_level));
  }
  if (!o.trace_detail.empty() && !profiler::trace_detail_from(o.trace_detail)) {
    throw InputError("", "--trace-detail",
                     "expected auto, full or summary, found " + o.trace_detail);
  }
  const unsigned jobs = vm.count("jobs") ? static_cast<unsigned>(o.jobs) : default_jobs();
  for (std::size_t a = 0; a < keys.size(); ++a) {
    for (std::size_t b = 0; b < a; ++b) {
      if (keys[a].key == keys[b].key) throw InputError("", "", keys[a].key + " is swept twice");
    }
  }
  std::size_t points = 1;
  for (const SweepKey& k : keys) {
    points *= k.values.size();
    if (points > kMaxPoints) {
      throw InputError("", "", "the grid has more than " + std::to_string(kMaxPoints) + " points");
    }
  }

  Plan plan;
  plan.model = o.model;
  plan.config = o.config;
  plan.fixed = o.fixed;
  plan.input_shapes = o.input_shapes;
  plan.stats_level = o.stats_level;
  plan.trace_detail = o.trace_detail;
  plan.keys = std::move(keys);
  std::error_code ec;
  if (!fs::is_regular_file(o.model, ec)) throw InputError(o.model, "", "no such file");
  api::detect_model_kind(o.model);  // an unknown kind of model is bad input of the sweep
  plan.model_path = fs::absolute(o.model).lexically_normal().string();
  plan.config_arg = absolute_config(o.config);
  load_hw_config(o.config, o.fixed);  // the base config with the fixed overrides must be valid
  check_key_paths(plan);

  if (!o.emit_jobs.empty()) return emit_jobs(plan, o.out, o.emit_jobs, quiet);
  return run_sweep(plan, o.out, jobs, quiet);
}

}  // namespace npusim::app
