#include "sim/app/profiler_commands.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>

#include <spdlog/spdlog.h>
#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "profiler/csv_readers.h"
#include "profiler/layer_stats.h"
#include "profiler/output_dir.h"
#include "profiler/report.h"
#include "profiler/trace_import.h"
#include "sim/app/cli_options.h"
#include "sim/util/error.h"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace npusim::app {

using profiler::write_file_atomically;
namespace {

// Options every profiler command accepts after its name; main() applies them.
void add_logging(po::options_description& desc, bool with_quiet) {
  desc.add_options()("log-level", po::value<std::string>()->value_name("LEVEL"),
                     "trace|debug|info|warn|error|off");
  if (with_quiet) desc.add_options()("quiet,q", po::bool_switch(), "print nothing but errors");
}

// A ParseError from the profiler library is bad input: exit 2, with its message unchanged.
template <typename F>
auto translating_parse_errors(F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const profiler::ParseError& e) {
    throw InputError("", "", e.what());
  }
}

// "800", "933.333": a clock in MHz with at most 3 decimals, as kHz.
std::uint64_t parse_clock_khz(const std::string& text) {
  const std::size_t dot = text.find('.');
  const std::string whole = text.substr(0, dot);
  const std::string frac = dot == std::string::npos ? "" : text.substr(dot + 1);
  auto digits = [](const std::string& s) {
    return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
  };
  const bool ok = digits(whole) && whole.size() <= 9 &&
                  (dot == std::string::npos || (digits(frac) && frac.size() <= 3));
  const std::uint64_t khz =
      ok ? std::stoull(whole) * 1000 +
               (frac.empty() ? 0 : std::stoull(frac + std::string(3 - frac.size(), '0')))
         : 0;
  if (khz == 0) {
    throw InputError("--clock-mhz", "",
                     "expected a clock above 0 MHz with at most 3 decimals, found '" + text + "'");
  }
  return khz;
}

}  // namespace

int report_command(const std::vector<std::string>& args) {
  std::string dir, mode = "total", format = "table", by = "layer";
  bool estimate = false, help = false, layers = false;
  po::options_description desc("Options for npusim report");
  desc.add_options()("help,h", po::bool_switch(&help), "show this help")(
      "dir", po::value(&dir)->value_name("DIR"),
      "a run's output folder (or its stats.json); may be given as the positional argument")(
      "mode", po::value(&mode)->value_name("total|each")->default_value("total"),
      "total: op types by cycles; each: one row per model operator (layer)")(
      "by", po::value(&by)->value_name("layer|command")->default_value("layer"),
      "with --mode each: one row per layer, or per command (by index)")(
      "estimate", po::bool_switch(&estimate),
      "report the compile-time estimate even when the folder holds a simulation")(
      "layers", po::bool_switch(&layers),
      "per layer: SCALE-Sim's compute report (total, stall cycles, utilisations) and the tiling "
      "against the untiled layer")(
      "format", po::value(&format)->value_name("table|csv")->default_value("table"),
      "with --layers: a table, or CSV whose first columns are SCALE-Sim's COMPUTE_REPORT.csv");
  add_logging(desc, true);
  parse_options(args, desc, "report", "dir", 1);
  if (help) {
    print_help(
        "npusim report DIR [--mode total|each [--by layer|command] | --layers [--format "
        "table|csv]] [--estimate] [-q]",
        "Breaks a run down from DIR/stats.json (the simulation if present, else the\n"
        "estimate; written at --stats-level 70 or more): invoke time, NPU time, DMA time,\n"
        "DRAM bytes moved, variable buffer size; the op types' share of the ops' cycles\n"
        "(total) or each model operator's (each; --by command: every command); per layer, its "
        "cycles and the shares of them spent in\n"
        "array compute, vector compute, DMA load and DMA store (docs/report.md).",
        desc);
    return kExitOk;
  }
  if (dir.empty()) throw InputError("", "", "a run folder is required (see npusim report --help)");
  if (mode != "total" && mode != "each") {
    throw InputError("--mode", "", "expected total or each, found '" + mode + "'");
  }
  if (by != "layer" && by != "command") {
    throw InputError("--by", "", "expected layer or command, found '" + by + "'");
  }
  if (format != "table" && format != "csv") {
    throw InputError("--format", "", "expected table or csv, found '" + format + "'");
  }
  std::error_code ec;
  if (!fs::exists(dir, ec)) throw InputError(dir, "", "no such folder");
  const std::string stats =
      fs::is_directory(dir, ec) ? (fs::path(dir) / "stats.json").string() : dir;
  if (!fs::exists(stats, ec)) {
    throw InputError(stats, "", "not found (written by npusim run and npusim estimate)");
  }
  if (layers) {
    return translating_parse_errors([&] {
      const nlohmann::json j = profiler::read_json_file(stats);
      const char* run = !estimate && j.contains("runtime") ? "runtime" : "estimate";
      if (!j.is_object() || !j.contains(run))
        throw profiler::ParseError(stats, 0, std::string("/") + run, "missing");
      if (!is_quiet(args)) {
        profiler::write_layer_report(std::cout, j[run], stats, std::string("/") + run,
                                     format == "csv");
      }
      return kExitOk;
    });
  }
  return translating_parse_errors([&] {
    const profiler::ReportInput input = profiler::read_report_input_file(stats, estimate);
    const profiler::Report report = profiler::compute_report(input);
    if (is_quiet(args)) return kExitOk;  // the file was readable: that is all -q asks
    profiler::write_report(std::cout, input, report,
                           mode == "total" ? profiler::ReportMode::kTotal
                           : by == "layer" ? profiler::ReportMode::kEach
                                           : profiler::ReportMode::kEachCommand);
    return kExitOk;
  });
}

namespace {

// A stats.json's device.clock_mhz in kHz; 0 when it has none.
std::uint64_t stats_clock_khz(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("device") || !j["device"].is_object()) return 0;
  const nlohmann::json& device = j["device"];
  if (!device.contains("clock_mhz") || !device["clock_mhz"].is_number()) return 0;
  const double mhz = device["clock_mhz"].get<double>();
  return mhz > 0 ? static_cast<std::uint64_t>(std::llround(mhz * 1000)) : 0;
}

// The clock of the timeline files without --clock-mhz: the device.clock_mhz of the stats.json
// beside them (npusim's run folders hold one), else 800 MHz with a warning.
std::uint64_t timeline_clock_khz(const std::vector<std::string>& files) {
  constexpr std::uint64_t kAssumedKhz = 800000;
  std::uint64_t khz = 0;
  std::string from;
  for (const std::string& path : files) {
    const fs::path stats = fs::path(path).parent_path() / "stats.json";
    std::ifstream in(stats);
    if (!in) continue;
    const std::uint64_t k = stats_clock_khz(nlohmann::json::parse(in, nullptr, false));
    if (k == 0) continue;
    if (khz != 0 && k != khz) {
      throw InputError("--clock-mhz", "",
                       "the stats.json files beside the timelines disagree on the clock (" + from +
                           ": " + std::to_string(khz) + " kHz, " + stats.string() + ": " +
                           std::to_string(k) + " kHz); give --clock-mhz");
    }
    khz = k;
    from = stats.string();
  }
  if (khz != 0) {
    spdlog::info("timeline clock {} kHz, from {}", khz, from);
    return khz;
  }
  if (!files.empty()) {
    spdlog::warn("no --clock-mhz and no stats.json beside the timeline files: assuming 800 MHz");
  }
  return kAssumedKhz;
}

}  // namespace

int convert_command(const std::vector<std::string>& args) {
  std::vector<std::string> compile, runtime;
  std::string out, clock;
  bool help = false;
  po::options_description desc("Options for npusim convert");
  desc.add_options()("help,h", po::bool_switch(&help), "show this help")(
      "compile", po::value(&compile)->value_name("CSV ...")->multitoken()->composing(),
      "timeline.csv files (ID,Start,End,Location,Op Type; cycles), npusim's or a vendor's")(
      "runtime", po::value(&runtime)->value_name("CSV ...")->multitoken()->composing(),
      "runtime.csv files (id;time_since_open;time_since_start;location; microseconds)")(
      "out,o", po::value(&out)->value_name("T.pftrace"),
      "the Perfetto trace to write; the overview goes beside it as T.overview.json")(
      "clock-mhz", po::value(&clock)->value_name("F"),
      "clock of the timeline files' cycles, in MHz (at most 3 decimals); default: the clock of "
      "the stats.json beside them, else 800 with a warning");
  add_logging(desc, true);
  parse_options(args, desc, "convert");
  if (help) {
    print_help(
        "npusim convert --compile A.csv [B.csv ...] --runtime R.csv [...] --out T.pftrace "
        "[--clock-mhz F]",
        "Converts timeline.csv and runtime.csv files into one Perfetto trace, one process\n"
        "per file (timeline rows on tracks DMA_IN, DMA_OUT and compute, extra lanes where\n"
        "rows of a class overlap; runtime rows as program slices), and prints an overview\n"
        "of each file (DMA, slice, DMA only, slice only, DMA+slice overlap, busy, idle,\n"
        "overall) that it also writes as JSON beside the trace (docs/report.md).",
        desc);
    return kExitOk;
  }
  if (compile.empty() && runtime.empty()) {
    throw InputError("", "",
                     "no input: give --compile and/or --runtime files (see npusim convert --help)");
  }
  if (out.empty()) throw InputError("", "", "--out is required (see npusim convert --help)");
  const bool clock_given = std::any_of(args.begin(), args.end(), [](const std::string& a) {
    return a.rfind("--clock-mhz", 0) == 0;
  });
  const std::uint64_t given_khz = clock_given ? parse_clock_khz(clock) : 0;
  fs::path trace_path(out);
  const std::string stem = trace_path.extension() == ".pftrace"
                               ? (trace_path.parent_path() / trace_path.stem()).string()
                               : trace_path.string();
  const fs::path overview_path = stem + ".overview.json";

  return translating_parse_errors([&] {
    std::vector<profiler::ImportedFile> files;
    for (const std::string& path : compile) {
      profiler::ImportedFile f;
      f.path = path;
      f.kind = profiler::ImportedFile::Kind::kTimeline;
      f.timeline = profiler::read_timeline_csv_file(path);
      files.push_back(std::move(f));
    }
    for (const std::string& path : runtime) {
      profiler::ImportedFile f;
      f.path = path;
      f.kind = profiler::ImportedFile::Kind::kRuntime;
      f.runtime = profiler::read_runtime_csv_file(path);
      files.push_back(std::move(f));
    }
    // After the files are read, so that a bad file is not preceded by a warning about clocks.
    const std::uint64_t khz = clock_given ? given_khz : timeline_clock_khz(compile);
    const profiler::ImportedTrace trace(std::move(files), khz);
    write_file_atomically(trace_path, [&](std::ostream& s) { trace.write_perfetto(s); });
    write_file_atomically(overview_path, [&](std::ostream& s) {
      profiler::write_overview_json(s, trace, trace_path.string());
    });
    if (!is_quiet(args)) {
      profiler::write_overview_table(std::cout, trace);
      std::cout << "\ntrace written to " << trace_path.string() << ", overview to "
                << overview_path.string() << '\n';
    }
    return kExitOk;
  });
}

namespace {

// One side of a diff from a command-line argument: a run folder (its runtime_timeline.csv or
// timeline.csv, and stats.json for layers) or a timeline CSV file.
profiler::DiffSide load_side(const std::string& arg, const char* csv_name) {
  profiler::DiffSide side;
  std::error_code ec;
  if (!fs::is_directory(arg, ec)) {
    if (!fs::exists(arg, ec)) throw InputError(arg, "", "no such folder or file");
    side.label = arg;
    side.rows = profiler::read_timeline_csv_file(arg);
    side.no_layers_reason = arg + " is a timeline file, not a run folder with a stats.json";
    return side;
  }
  const fs::path csv = fs::path(arg) / csv_name;
  side.label = csv.string();
  side.rows = profiler::read_timeline_csv_file(csv.string());
  const fs::path stats = fs::path(arg) / "stats.json";
  if (!fs::exists(stats, ec)) {
    side.no_layers_reason = stats.string() + " not found";
    return side;
  }
  const nlohmann::json j = profiler::read_json_file(stats.string());
  side.layer_of = profiler::read_layer_map(j, stats.string(), side.no_layers_reason);
  side.clock_khz = stats_clock_khz(j);
  return side;
}

void require(const fs::path& file, const std::string& why) {
  std::error_code ec;
  if (!fs::exists(file, ec)) throw InputError(file.string(), "", "not found" + why);
}

}  // namespace

int diff_command(const std::vector<std::string>& args) {
  std::vector<std::string> inputs;
  std::string tolerance_arg = "1";
  long long top = 20;  // signed, so that --top -1 is rejected rather than read as 2^64 - 1
  bool help = false, estimate_vs_runtime = false, estimates = false, fail_on_layer = false;
  po::options_description desc("Options for npusim diff");
  desc.add_options()("help,h", po::bool_switch(&help), "show this help")(
      "runs", po::value(&inputs)->value_name("A [B]"),
      "two run folders (or timeline CSV files), or one run folder; positional")(
      "tolerance", po::value(&tolerance_arg)->value_name("PCT")->default_value("1"),
      "exit 1 when the total cycles differ by more than PCT percent of A's (up to 6 decimals)")(
      "estimate-vs-runtime", po::bool_switch(&estimate_vs_runtime),
      "compare one run's estimate (timeline.csv, A) with its simulation (runtime_timeline.csv, "
      "B); the default with one folder")(
      "estimate", po::bool_switch(&estimates),
      "with two runs: compare their estimates (timeline.csv) even when both hold a simulation")(
      "fail-on-layer", po::bool_switch(&fail_on_layer),
      "also exit 1 when any layer's cycles differ by more than the tolerance")(
      "top", po::value(&top)->value_name("N")->default_value(20),
      "rows shown per table, largest |delta| first; 0 shows all");
  add_logging(desc, true);
  parse_options(args, desc, "diff", "runs", 2);
  if (help) {
    print_help(
        "npusim diff A B [--tolerance PCT] [--estimate] [--fail-on-layer] [--top N]\n"
        "       npusim diff DIR [--estimate-vs-runtime] [--tolerance PCT] ...",
        "Compares two runs (their runtime_timeline.csv if both have one, else their\n"
        "timeline.csv; a timeline CSV file may stand for a run), or one run's estimate with\n"
        "its simulation: per command (matched by ID) and per layer (from stats.json), the\n"
        "cycles of A and B and their delta, largest first, and the total (last End).\n"
        "Exit 0 when the total is within the tolerance, 1 when it is past it (or a layer\n"
        "is, with --fail-on-layer), 2 on bad input (docs/report.md).",
        desc);
    return kExitOk;
  }
  if (top < 0) {
    throw InputError(
        "", "--top",
        "expected a number of rows of at least 0 (0 shows all), found " + std::to_string(top));
  }
  const auto tolerance = profiler::parse_tolerance(tolerance_arg);
  if (!tolerance) {
    throw InputError("--tolerance", "",
                     "expected a percentage of at least 0 with at most 6 decimals, found '" +
                         tolerance_arg + "'");
  }
  if (inputs.empty()) throw InputError("", "", "a run folder is required (see npusim diff --help)");
  if (inputs.size() == 2 && estimate_vs_runtime) {
    throw InputError("", "",
                     "--estimate-vs-runtime compares one run folder with itself; give one folder");
  }
  if (inputs.size() == 1 && estimates) {
    throw InputError(
        "", "", "--estimate needs two runs; one folder compares its estimate with its simulation");
  }
  std::error_code ec;
  for (const std::string& in : inputs) {
    if (!fs::exists(in, ec)) throw InputError(in, "", "no such folder or file");
  }
  return translating_parse_errors([&] {
    profiler::DiffSide a, b;
    if (inputs.size() == 1) {
      const fs::path dir(inputs[0]);
      if (!fs::is_directory(dir, ec)) {
        throw InputError(
            inputs[0], "",
            "is not a folder; comparing an estimate with its simulation needs a run folder");
      }
      require(dir / "timeline.csv", " (is this an npusim output folder?)");
      require(dir / "runtime_timeline.csv",
              " (npusim estimate writes no simulation; use npusim run)");
      a = load_side(inputs[0], "timeline.csv");
      b = load_side(inputs[0], "runtime_timeline.csv");
    } else {
      auto has_runtime = [&](const std::string& in) {
        return fs::is_directory(in, ec) && fs::exists(fs::path(in) / "runtime_timeline.csv", ec);
      };
      const char* csv = !estimates && has_runtime(inputs[0]) && has_runtime(inputs[1])
                            ? "runtime_timeline.csv"
                            : "timeline.csv";
      for (const std::string& in : inputs) {
        if (fs::is_directory(in, ec))
          require(fs::path(in) / csv, " (is this an npusim output folder?)");
      }
      a = load_side(inputs[0], csv);
      b = load_side(inputs[1], csv);
    }
    const bool in_time = profiler::diff_in_time(a, b);
    const profiler::DiffResult result = profiler::compute_diff(a, b, *tolerance);
    profiler::DiffPrintOptions options;
    options.in_time = in_time;
    options.top = static_cast<std::size_t>(top);
    options.fail_on_layer = fail_on_layer;
    std::ostringstream text;
    const bool failed = profiler::write_diff(text, a, b, result, *tolerance, options);
    if (!is_quiet(args)) std::cout << text.str();
    return failed ? kExitCheckFailed : kExitOk;
  });
}

}  // namespace npusim::app
