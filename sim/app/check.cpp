// npusim check: cycle budgets in CI (docs/budgets.md). Every budget entry is one `npusim run` in a
// child process; its metric is read from the run's stats.json and compared with the budget.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <spdlog/spdlog.h>
#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "profiler/output_dir.h"
#include "profiler/report_writers.h"
#include "sim/app/cli_options.h"
#include "sim/app/process_runner.h"
#include "sim/app/sweep.h"
#include "sim/config/hw_config.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace npusim::app {

using profiler::write_file_atomically;
namespace {

using OJson = nlohmann::ordered_json;

constexpr const char* kDefaultMetric = "/runtime/total_cycles";
constexpr double kDefaultTolerance = 0.5;

enum class Kind { kExpected, kMax, kMin };

struct Entry {
  std::string name;
  std::string model;   // resolved against the budget file's folder
  std::string config;  // an absolute file path or a built-in name
  std::vector<std::string> overrides;
  std::string metric;  // a JSON pointer into stats.json
  Kind kind = Kind::kExpected;
  std::optional<double> expected;        // nullopt: "expected": null, not measured yet
  double limit = 0;                      // max or min
  double tolerance = kDefaultTolerance;  // percent, for expected
  bool higher_better = false;
  unsigned stats_level = 40;  // passed to npusim run
};

struct Budgets {
  std::string file;  // as given
  std::vector<Entry> entries;
};

// ---- the budget file ----------------------------------------------------------------------------

std::optional<double> get_number(JsonObject& obj, const std::string& key, double min, double max) {
  const Json* v = obj.get(key);
  if (!v) return std::nullopt;
  if (!v->is_number()) {
    obj.diagnostics().error(obj.pointer(key), "expected a number, found " + v->dump());
    return std::nullopt;
  }
  const double d = v->get<double>();
  if (!(d >= min && d <= max)) {
    std::ostringstream msg;
    msg << "value " << v->dump() << " out of range [" << min << ", " << max << "]";
    obj.diagnostics().error(obj.pointer(key), msg.str());
    return std::nullopt;
  }
  return d;
}

std::string normalize_metric(JsonObject& obj, const std::string& key, const std::string& text) {
  if (text.empty()) {
    obj.diagnostics().error(
        obj.pointer(key),
        "empty metric (expected a JSON pointer into stats.json, e.g. /runtime/total_cycles)");
    return kDefaultMetric;
  }
  const std::string pointer = text.front() == '/' ? text : "/" + text;
  try {
    OJson::json_pointer check(pointer);
  } catch (const OJson::exception& e) {
    obj.diagnostics().error(obj.pointer(key), "'" + text + "' is not a JSON pointer: " + e.what());
  }
  return pointer;
}

bool is_builtin(const std::string& name) {
  const auto names = builtin_config_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

struct Defaults {
  std::string config = "default";
  std::string metric = kDefaultMetric;
  double tolerance = kDefaultTolerance;
  unsigned stats_level = 40;
};

unsigned get_stats_level(JsonObject& obj, unsigned fallback) {
  const std::uint64_t level = obj.get_uint("stats_level", fallback, 40, 100);
  if (level != 40 && level != 50 && level != 70 && level != 100) {
    obj.diagnostics().error(obj.pointer("stats_level"),
                            "expected 40, 50, 70 or 100, found " + std::to_string(level));
    return fallback;
  }
  return static_cast<unsigned>(level);
}

Budgets load_budgets(const std::string& file) {
  const Json root = read_json_file(file);  // malformed JSON: InputError naming file and byte
  const fs::path folder = fs::absolute(file).parent_path();
  Diagnostics diag(file);
  Budgets budgets{file, {}};
  JsonObject top(root, "", diag);
  const std::string format = top.get_string("format", "npusim-budgets");
  if (format != "npusim-budgets")
    diag.error(top.pointer("format"), "expected \"npusim-budgets\", found \"" + format + "\"");
  top.get_uint("version", 1, 1, 1);
  top.get_string("description", "");

  Defaults defaults;
  if (const Json* d = top.get("defaults")) {
    JsonObject obj(*d, top.pointer("defaults"), diag);
    defaults.config = obj.get_string("config", defaults.config);
    defaults.metric = normalize_metric(obj, "metric", obj.get_string("metric", defaults.metric));
    defaults.tolerance = get_number(obj, "tolerance_percent", 0, 1e6).value_or(defaults.tolerance);
    defaults.stats_level = get_stats_level(obj, defaults.stats_level);
    obj.finish();
  }

  const Json* list = top.get("budgets");
  if (!list) {
    diag.error(top.pointer("budgets"), "missing required field");
  } else if (!list->is_array() || list->empty()) {
    diag.error(top.pointer("budgets"), "expected a non-empty array of budget entries");
  } else {
    std::set<std::string> names;
    for (std::size_t i = 0; i < list->size(); ++i) {
      const Json& item = (*list)[i];
      JsonObject e(item, "/budgets/" + std::to_string(i), diag);
      Entry entry;
      bool usable = true;
      if (const auto name = e.require_string("name")) {
        entry.name = *name;
        if (entry.name.empty()) {
          diag.error(e.pointer("name"), "empty name");
        } else if (!names.insert(entry.name).second) {
          diag.error(e.pointer("name"), "duplicate name '" + entry.name + "'");
        }
      }
      e.get_string("description", "");
      if (const auto model = e.require_string("model")) {
        const fs::path p = fs::path(*model).is_absolute() ? fs::path(*model) : folder / *model;
        std::error_code ec;
        if (!fs::is_regular_file(p, ec)) {
          diag.error(e.pointer("model"), "no such file '" + *model + "' (looked for " +
                                             p.lexically_normal().string() + ")");
          usable = false;
        }
        entry.model = p.lexically_normal().string();
      } else {
        usable = false;
      }
      const std::string config = e.get_string("config", defaults.config);
      {
        const fs::path p = fs::path(config).is_absolute() ? fs::path(config) : folder / config;
        std::error_code ec;
        if (!config.empty() && fs::is_regular_file(p, ec)) {
          entry.config = p.lexically_normal().string();
        } else if (is_builtin(config)) {
          entry.config = config;
        } else {
          diag.error(e.pointer("config"), "no such config file '" + config + "' (looked for " +
                                              p.lexically_normal().string() +
                                              ") and no built-in config of that name");
          usable = false;
        }
      }
      if (const Json* o = e.get("overrides")) {
        if (!o->is_object()) {
          diag.error(
              e.pointer("overrides"),
              std::string("expected an object of \"key.path\": value, found ") + o->type_name());
          usable = false;
        } else {
          for (auto it = o->begin(); it != o->end(); ++it) {
            if (it->is_object() || it->is_array() || it->is_null()) {
              diag.error(e.pointer("overrides") + "/" + pointer_token(it.key()),
                         "expected a number, string or boolean");
              usable = false;
              continue;
            }
            entry.overrides.push_back(it.key() + "=" +
                                      (it->is_string() ? it->get<std::string>() : it->dump()));
          }
        }
      }
      entry.metric = normalize_metric(e, "metric", e.get_string("metric", defaults.metric));
      entry.stats_level = get_stats_level(e, defaults.stats_level);

      const bool has_expected = e.has("expected"), has_max = e.has("max"), has_min = e.has("min");
      for (const char* key : {"expected", "max", "min"})
        e.get(key);  // known keys, even when misused
      if (int(has_expected) + int(has_max) + int(has_min) != 1) {
        diag.error(
            e.pointer(),
            "give exactly one of \"expected\" (with \"tolerance_percent\"), \"max\" or \"min\"");
      }
      if (has_expected) {
        entry.kind = Kind::kExpected;
        const Json* v = e.get("expected");
        if (!v->is_null()) {
          entry.expected = get_number(e, "expected", -1e300, 1e300);
        }
        entry.tolerance = get_number(e, "tolerance_percent", 0, 1e6).value_or(defaults.tolerance);
        const std::string better = e.get_string("better", "lower");
        if (better != "lower" && better != "higher") {
          diag.error(e.pointer("better"),
                     "expected \"lower\" or \"higher\", found \"" + better + "\"");
        }
        entry.higher_better = better == "higher";
      } else {
        for (const char* key : {"tolerance_percent", "better"}) {
          if (e.has(key)) {
            e.get(key);
            diag.error(e.pointer(key), "applies to \"expected\" budgets only");
          }
        }
        entry.kind = has_max ? Kind::kMax : Kind::kMin;
        entry.limit = get_number(e, has_max ? "max" : "min", -1e300, 1e300).value_or(0);
      }
      e.finish();
      if (usable) {
        try {
          load_hw_config(entry.config, entry.overrides);
        } catch (const InputError& err) {
          for (const Problem& p : err.problems()) {
            diag.error(e.pointer(entry.overrides.empty() ? "config" : "overrides"), p.to_string());
          }
        }
      }
      budgets.entries.push_back(std::move(entry));
    }
  }
  top.finish();
  diag.throw_if_any();
  return budgets;
}

// ---- results ------------------------------------------------------------------------------------

enum class Verdict { kPass, kImproved, kFail, kNew, kError, kBadMetric };

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kPass:
      return "PASS";
    case Verdict::kImproved:
      return "IMPROVED";
    case Verdict::kFail:
      return "FAIL";
    case Verdict::kNew:
      return "NEW";
    case Verdict::kError:
      return "ERROR";
    case Verdict::kBadMetric:
      return "ERROR";
  }
  return "?";
}

struct Result {
  Verdict verdict = Verdict::kError;
  OJson actual;         // the metric's value, as stats.json has it
  std::string message;  // one line for people
  std::string detail;   // a failed run's stderr
  double seconds = 0;
  std::optional<std::uint64_t> commands;  // stats.json's `commands`: the run's size
};

// Integral values without a fraction (81456, not 81456.0); others as JSON writes them.
std::string num(double v) {
  if (std::fabs(v) < 9007199254740992.0 && std::floor(v) == v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.0f", v);
    return buf;
  }
  return OJson(v).dump();
}

std::string ref_text(const Entry& e) {
  std::ostringstream s;
  switch (e.kind) {
    case Kind::kExpected:
      if (!e.expected) return "(none)";
      s << num(*e.expected) << " +-" << num(e.tolerance) << "%";
      return s.str();
    case Kind::kMax:
      return "<= " + num(e.limit);
    case Kind::kMin:
      return ">= " + num(e.limit);
  }
  return "";
}

std::optional<double> reference(const Entry& e) {
  if (e.kind == Kind::kExpected) return e.expected;
  return e.limit;
}

std::string delta_text(const Entry& e, const Result& r) {
  const auto ref = reference(e);
  if (!ref || !r.actual.is_number()) return "";
  const double actual = r.actual.get<double>();
  if (*ref == 0) return actual == 0 ? "+0.00" : "n/a";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%+.2f", (actual - *ref) / std::fabs(*ref) * 100.0);
  return buf;
}

Result evaluate(const Entry& e, const OJson& actual_json) {
  Result r;
  r.actual = actual_json;
  const double actual = actual_json.get<double>();
  const std::string what = e.metric + " = " + actual_json.dump();
  switch (e.kind) {
    case Kind::kExpected: {
      if (!e.expected) {
        r.verdict = Verdict::kNew;
        r.message = what + ", no expected value yet (run npusim check --update)";
        return r;
      }
      const double lo = *e.expected - std::fabs(*e.expected) * e.tolerance / 100.0;
      const double hi = *e.expected + std::fabs(*e.expected) * e.tolerance / 100.0;
      const bool worse = e.higher_better ? actual < lo : actual > hi;
      const bool better = e.higher_better ? actual > hi : actual < lo;
      r.verdict = worse ? Verdict::kFail : better ? Verdict::kImproved : Verdict::kPass;
      r.message = what + ", expected " + ref_text(e) + " (" +
                  (e.higher_better ? "higher" : "lower") + " is better)";
      if (better) r.message += "; tighten the budget (npusim check --update)";
      return r;
    }
    case Kind::kMax:
      r.verdict = actual > e.limit ? Verdict::kFail : Verdict::kPass;
      r.message = what + ", maximum " + num(e.limit);
      return r;
    case Kind::kMin:
      r.verdict = actual < e.limit ? Verdict::kFail : Verdict::kPass;
      r.message = what + ", minimum " + num(e.limit);
      return r;
  }
  return r;
}

Result read_result(const Entry& e, const fs::path& dir, const ChildOutcome& outcome) {
  Result r;
  r.seconds = outcome.seconds;
  if (outcome.exit_code != 0) {
    r.verdict = Verdict::kError;
    r.detail = child_error_text(dir / "stderr.txt", outcome.exit_code);
    r.message = "npusim run failed (exit " + std::to_string(outcome.exit_code) + "): " + r.detail;
    return r;
  }
  OJson stats;
  try {
    std::ifstream in(dir / "stats.json", std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + (dir / "stats.json").string());
    stats = OJson::parse(in);
  } catch (const std::exception& ex) {
    r.verdict = Verdict::kError;
    r.message = std::string("stats.json: ") + ex.what();
    return r;
  }
  const OJson::json_pointer p(e.metric);
  if (!stats.contains(p) || !stats.at(p).is_number()) {
    r.verdict = Verdict::kBadMetric;
    r.message = "metric " + e.metric +
                (stats.contains(p) ? " is not a number" : " is not in stats.json") +
                " (written with stats_level " + std::to_string(e.stats_level) + ")";
    return r;
  }
  Result evaluated = evaluate(e, stats.at(p));
  evaluated.seconds = outcome.seconds;
  const auto commands = stats.find("commands");
  if (commands != stats.end() && commands->is_number_unsigned()) {
    evaluated.commands = commands->get<std::uint64_t>();
  }
  return evaluated;
}

// ---- run order ----------------------------------------------------------------------------------

// Beside BUDGETS.json, BUDGETS.sizes.json: each entry's command count as its last --update
// measured it. Runs are started largest first, so that the longest one does not start last and
// leave the other cores idle (docs/budgets.md#run-order).
fs::path sizes_file(const std::string& budgets) {
  fs::path p(budgets);
  return p.replace_extension().string() + ".sizes.json";
}

// Entry name -> command count; empty when the file is missing or unreadable (it only orders the
// runs, so a bad one is ignored with a warning).
std::map<std::string, std::uint64_t> read_sizes(const std::string& budgets) {
  std::map<std::string, std::uint64_t> sizes;
  const fs::path file = sizes_file(budgets);
  std::ifstream in(file, std::ios::binary);
  if (!in) return sizes;
  const OJson j = OJson::parse(in, nullptr, false);
  const auto commands = j.is_object() ? j.find("commands") : j.end();
  if (commands == j.end() || !commands->is_object()) {
    spdlog::warn("{}: no \"commands\" object; the budgets run in file order", file.string());
    return sizes;
  }
  for (const auto& [name, count] : commands->items()) {
    if (count.is_number_unsigned()) sizes[name] = count.get<std::uint64_t>();
  }
  return sizes;
}

// The order in which to start the entries: largest recorded command count first; entries with
// none recorded (new ones) before all others, since they may be the longest; ties in file order.
std::vector<std::size_t> run_order(const Budgets& b) {
  const std::map<std::string, std::uint64_t> sizes = read_sizes(b.file);
  std::vector<std::size_t> order(b.entries.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto size = [&](std::size_t i) {
    const auto it = sizes.find(b.entries[i].name);
    return it == sizes.end() ? ~std::uint64_t{0} : it->second;
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t c) { return size(a) > size(c); });
  return order;
}

// --update: records every entry's command count (the ones that did not run keep theirs). Written
// only when a count changed, two-space indented, entries in file order.
void update_sizes(const Budgets& b, const std::vector<Result>& results) {
  std::map<std::string, std::uint64_t> old = read_sizes(b.file);
  OJson j;
  j["format"] = "npusim-budget-sizes";
  j["version"] = 1;
  j["description"] =
      "Commands of each budget entry's run, recorded by npusim check --update; "
      "npusim check starts the largest first (docs/budgets.md#run-order).";
  OJson commands = OJson::object();
  bool changed = false;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const std::string& name = b.entries[i].name;
    const auto it = old.find(name);
    if (results[i].commands) {
      commands[name] = *results[i].commands;
      changed = changed || it == old.end() || it->second != *results[i].commands;
    } else if (it != old.end()) {
      commands[name] = it->second;
    }
  }
  changed = changed || commands.size() != old.size();
  j["commands"] = std::move(commands);
  if (changed) write_file_atomically(sizes_file(b.file), j.dump(2) + "\n");
}

// ---- reports ------------------------------------------------------------------------------------

void print_table(std::ostream& out, const Budgets& b, const std::vector<Result>& results) {
  std::vector<std::vector<std::string>> rows = {
      {"name", "metric", "budget", "actual", "delta %", "result"}};
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Entry& e = b.entries[i];
    const Result& r = results[i];
    rows.push_back({e.name, e.metric, ref_text(e), r.actual.is_null() ? "-" : r.actual.dump(),
                    delta_text(e, r), verdict_name(r.verdict)});
  }
  std::vector<std::size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  const std::vector<bool> right = {false, false, true, true, true, false};
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      const std::string pad(width[c] - row[c].size(), ' ');
      if (c) line += "  ";
      line += right[c] ? pad + row[c] : (c + 1 == row.size() ? row[c] : row[c] + pad);
    }
    out << line << '\n';
  }
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (unsigned char ch : s) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        if (ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') {
          out += '?';  // not allowed in XML 1.0
        } else {
          out += static_cast<char>(ch);
        }
    }
  }
  return out;
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f", s);
  return buf;
}

// JUnit XML as Jenkins, GitLab and the GitHub test-report actions read it: one testcase per
// budget; FAIL and NEW are <failure>, a run that did not complete is <error>.
std::string junit_xml(const Budgets& b, const std::vector<Result>& results, double total_seconds) {
  std::size_t failures = 0, errors = 0;
  for (const Result& r : results) {
    if (r.verdict == Verdict::kFail || r.verdict == Verdict::kNew) ++failures;
    if (r.verdict == Verdict::kError || r.verdict == Verdict::kBadMetric) ++errors;
  }
  const std::string counts = " tests=\"" + std::to_string(results.size()) + "\" failures=\"" +
                             std::to_string(failures) + "\" errors=\"" + std::to_string(errors) +
                             "\"";
  std::ostringstream x;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x << "<testsuites name=\"npusim check\"" << counts << " time=\"" << seconds_text(total_seconds)
    << "\">\n";
  x << "  <testsuite name=\"" << xml_escape(b.file) << "\"" << counts << " skipped=\"0\" time=\""
    << seconds_text(total_seconds) << "\">\n";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Entry& e = b.entries[i];
    const Result& r = results[i];
    x << "    <testcase classname=\"npusim.check\" name=\"" << xml_escape(e.name) << "\" time=\""
      << seconds_text(r.seconds) << "\"";
    const std::string text = std::string(verdict_name(r.verdict)) + ": " + r.message;
    switch (r.verdict) {
      case Verdict::kPass:
      case Verdict::kImproved:
        x << ">\n      <system-out>" << xml_escape(text) << "</system-out>\n    </testcase>\n";
        break;
      case Verdict::kFail:
      case Verdict::kNew:
        x << ">\n      <failure type=\"" << verdict_name(r.verdict) << "\" message=\""
          << xml_escape(r.message) << "\">" << xml_escape(text) << "</failure>\n    </testcase>\n";
        break;
      case Verdict::kError:
      case Verdict::kBadMetric:
        x << ">\n      <error type=\"ERROR\" message=\"" << xml_escape(r.message) << "\">"
          << xml_escape(r.detail.empty() ? r.message : r.detail) << "</error>\n    </testcase>\n";
        break;
    }
  }
  x << "  </testsuite>\n</testsuites>\n";
  return x.str();
}

// Rewrites the expected values of the entries that ran, keeping everything else (key order
// included) as it is; the file is replaced atomically.
std::size_t update_file(const Budgets& b, const std::vector<Result>& results) {
  OJson j;
  {
    std::ifstream in(b.file, std::ios::binary);
    j = OJson::parse(in);
  }
  std::size_t changed = 0;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Entry& e = b.entries[i];
    const Result& r = results[i];
    if (e.kind != Kind::kExpected || !r.actual.is_number()) continue;
    OJson& slot = j["budgets"][i]["expected"];
    if (slot != r.actual) {
      slot = r.actual;
      ++changed;
    }
  }
  if (changed > 0) write_file_atomically(b.file, j.dump(2) + "\n");
  return changed;
}

std::string safe_name(const std::string& name) {
  std::string s;
  for (char ch : name) {
    const bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                      (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == '_';
    s += keep ? ch : '_';
  }
  return s.substr(0, 80);
}

// The folder the runs write into: --out, or a temporary one removed at the end.
class WorkDir {
 public:
  explicit WorkDir(const std::string& keep) {
    if (!keep.empty()) {
      path_ = keep;
      std::error_code ec;
      fs::create_directories(path_, ec);
      if (!fs::is_directory(path_)) throw profiler::OutputError("cannot create the folder " + keep);
      return;
    }
    std::string tmpl = (fs::temp_directory_path() / "npusim-check-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr)
      throw profiler::OutputError("cannot create a temporary folder in " +
                                  fs::temp_directory_path().string());
    path_ = tmpl;
    temporary_ = true;
  }
  ~WorkDir() {
    if (temporary_) {
      std::error_code ignored;
      fs::remove_all(path_, ignored);
    }
  }
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
  bool temporary_ = false;
};

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int check_command(const std::vector<std::string>& args) {
  std::string file, junit, out, trace_detail;
  long long jobs = 0;  // signed, so that --jobs -1 is rejected rather than read as 2^32 - 1
  bool help = false, update = false;
  po::options_description desc("Options for npusim check");
  desc.add_options()("help,h", po::bool_switch(&help), "show this help")(
      "budgets", po::value(&file)->value_name("FILE"),
      "the budget file (docs/budgets.md); also the positional argument")(
      "jobs,j", po::value(&jobs)->value_name("N"),
      "budgets run at a time (default: the number of cores)")(
      "junit", po::value(&junit)->value_name("FILE"), "also write the results as JUnit XML")(
      "update", po::bool_switch(&update),
      "rewrite every \"expected\" value with the measured one (maxima and minima are left alone)")(
      "out,o", po::value(&out)->value_name("DIR"),
      "keep each run's outputs in DIR/<index>-<name>/ (default: a temporary folder, removed)")(
      "trace-detail", po::value(&trace_detail)->value_name("auto|full|summary"),
      "passed on to each npusim run (default: run's, auto)")(
      "log-level", po::value<std::string>()->value_name("LEVEL"),
      "trace|debug|info|warn|error|off")("quiet,q", po::bool_switch(),
                                         "no progress and no table; failures are still reported");
  const po::variables_map vm = parse_options(args, desc, "check", "budgets", 1);
  if (help) {
    std::cout
        << "usage: npusim check BUDGETS.json [--jobs N] [--junit FILE] [--update] [--out DIR]\n\n"
           "Runs every budget entry (model, config, overrides) with `npusim run` in a process of\n"
           "its own, reads the entry's metric from the run's stats.json and compares it with the\n"
           "budget: PASS, IMPROVED (better than expected by more than the tolerance: tighten the\n"
           "budget), FAIL (a regression, or above a maximum), NEW (no expected value yet) or "
           "ERROR\n"
           "(the run did not complete). See docs/budgets.md.\n\n"
           "exit codes: 0 no regression; 1 some budget FAIL or NEW; 2 bad budget file or usage\n"
           "(also a metric that is not in stats.json); 3 some run did not complete; 4 internal "
           "error.\n\n"
        << desc << '\n';
    return kExitOk;
  }
  const bool quiet = vm["quiet"].as<bool>();
  if (file.empty()) throw InputError("", "", "a budget file is required (see npusim check --help)");
  if (vm.count("jobs") && (jobs < 1 || jobs > 4096)) {
    throw InputError("", "--jobs",
                     "expected 1 to 4096 processes at a time, found " + std::to_string(jobs));
  }
  if (!vm.count("jobs")) jobs = default_jobs();
  if (!trace_detail.empty() && !profiler::trace_detail_from(trace_detail)) {
    throw InputError("", "--trace-detail", "expected auto, full or summary, found " + trace_detail);
  }

  const Budgets budgets = load_budgets(file);
  const WorkDir work(out);
  const std::size_t n = budgets.entries.size();
  std::vector<ChildSpec> children(n);
  std::vector<fs::path> dirs(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Entry& e = budgets.entries[i];
    dirs[i] = work.path() / (std::to_string(i) + "-" + safe_name(e.name));
    std::error_code ec;
    fs::remove_all(dirs[i], ec);
    fs::create_directories(dirs[i], ec);
    if (!fs::is_directory(dirs[i]))
      throw profiler::OutputError("cannot create the folder " + dirs[i].string());
    std::vector<std::string> extra = {"--stats-level=" + std::to_string(e.stats_level)};
    if (!trace_detail.empty()) extra.push_back("--trace-detail=" + trace_detail);
    children[i].args = run_child_args(e.model, e.config, e.overrides, extra, dirs[i]);
    children[i].stderr_file = dirs[i] / "stderr.txt";
  }

  // Started largest first; results, table and JUnit stay in file order.
  const std::vector<std::size_t> order = run_order(budgets);
  std::vector<ChildSpec> ordered(n);
  for (std::size_t k = 0; k < n; ++k) ordered[k] = children[order[k]];
  const double start = now_seconds();
  std::vector<Result> results(n);
  std::size_t finished = 0;
  {
    Progress progress("budgets", n, quiet);
    run_children(
        ordered, static_cast<unsigned>(jobs), [&](std::size_t k, const ChildOutcome& outcome) {
          const std::size_t i = order[k];
          results[i] = read_result(budgets.entries[i], dirs[i], outcome);
          ++finished;
          const Result& r = results[i];
          // With --update, an expected value that moved is about to be rewritten, not a failure.
          const bool rewritten = update && budgets.entries[i].kind == Kind::kExpected &&
                                 (r.verdict == Verdict::kFail || r.verdict == Verdict::kNew);
          const bool bad =
              r.verdict != Verdict::kPass && r.verdict != Verdict::kImproved && !rewritten;
          progress.finished("npusim: check: [" + std::to_string(finished) + "/" +
                                std::to_string(n) + "] " + budgets.entries[i].name + ": " +
                                verdict_name(r.verdict) + (bad ? ", " + r.message : std::string()) +
                                " (" + seconds_text(r.seconds) + " s)",
                            bad);
        });
  }
  const double total = now_seconds() - start;

  std::size_t counts[6] = {};
  for (const Result& r : results) ++counts[static_cast<int>(r.verdict)];
  if (!quiet) {
    print_table(std::cout, budgets, results);
    std::cout << n << " budget(s): " << counts[0] << " PASS, " << counts[1] << " IMPROVED, "
              << counts[2] << " FAIL, " << counts[3] << " NEW, " << counts[4] + counts[5]
              << " ERROR\n";
  }
  if (!junit.empty()) write_file_atomically(junit, junit_xml(budgets, results, total));
  std::size_t failing =
      counts[static_cast<int>(Verdict::kFail)] + counts[static_cast<int>(Verdict::kNew)];
  if (update) {
    const std::size_t changed = update_file(budgets, results);
    update_sizes(budgets, results);
    if (!quiet) std::cout << "updated " << changed << " expected value(s) in " << file << '\n';
    // Expected values now match; only maxima and minima can still fail.
    failing = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (budgets.entries[i].kind != Kind::kExpected && results[i].verdict == Verdict::kFail)
        ++failing;
    }
  }
  if (counts[static_cast<int>(Verdict::kBadMetric)] > 0) {
    std::vector<Problem> problems;
    for (std::size_t i = 0; i < n; ++i) {
      if (results[i].verdict == Verdict::kBadMetric) {
        problems.push_back({file, "/budgets/" + std::to_string(i) + "/metric", results[i].message});
      }
    }
    throw InputError(problems);
  }
  if (counts[static_cast<int>(Verdict::kError)] > 0) return kExitSimulationFailed;
  return failing > 0 ? kExitCheckFailed : kExitOk;
}

}  // namespace npusim::app
