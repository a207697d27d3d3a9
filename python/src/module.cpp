// npusim._npusim: the run API of sim/api/session.h for Python. The package around it
// (python/npusim/) turns what these functions return into Config, Schedule and Result objects;
// docs/python.md is the user's view.
//
// What crosses the boundary is the documented file formats, produced by the same writers as the
// CLI's files: a schedule as its JSON form (docs/schedule.md) and a run's figures as stats.json
// (docs/outputs.md). So a figure read in Python is the CLI's figure, by construction.
//
// Threads and the GIL: every call that loads, compiles, estimates, simulates or writes releases
// the GIL, so other Python threads run meanwhile. The simulation runs in a forked child
// (api::RunRequest::simulate_in_this_process stays false): SystemC elaborates once per process,
// and this process may be asked to simulate any number of times.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "profiler/output_dir.h"
#include "profiler/report_writers.h"
#include "sim/api/models.h"
#include "sim/api/session.h"
#include "sim/config/hw_config.h"
#include "sim/ir/schedule_writer.h"
#include "sim/util/error.h"

namespace py = pybind11;

namespace npusim::python {
namespace {

// A run as Python asks for it; the model options and scenario of api::RunRequest.
struct Request {
  std::string model;
  std::string config;
  std::vector<std::string> overrides;
  std::vector<std::string> input_shapes;  // "name=1x3x224x224"
  bool host_fallback = false;
  std::uint32_t iterations = 1;
  std::uint32_t first_profiled = 0;
  std::uint32_t profiled = 0;
};

api::RunRequest run_request(const Request& r) {
  api::RunRequest req;
  req.model = r.model;
  req.config = r.config;
  req.overrides = r.overrides;
  for (const std::string& shape : r.input_shapes) api::add_input_shape(req.model_options, shape);
  req.model_options.host_fallback = r.host_fallback;
  req.iterations.count = r.iterations;
  req.iterations.first_profiled = r.first_profiled;
  req.iterations.profiled = r.profiled;
  // Never in this process: a Python session simulates as often as it likes (simulate_child.h).
  req.simulate_in_this_process = false;
  return req;
}

// A compiled (or loaded) schedule: its JSON form and what the cost model fixed per command.
struct CompiledSchedule {
  std::string json;
  std::string config_name;
  struct Cost {
    std::uint64_t macs, vector_macs, isolated_cycles, lram_alloc_bytes, lram_free_bytes;
  };
  std::vector<Cost> costs;
};

CompiledSchedule compile_schedule(const Request& r) {
  const api::Session session = api::Session::open(run_request(r));
  CompiledSchedule out;
  std::ostringstream json;
  write_schedule_json(json, session.schedule());
  out.json = json.str();
  out.config_name = session.config().name;
  for (const Command& c : session.schedule().commands) {
    out.costs.push_back(
        {c.macs, c.vector_macs, c.isolated_cycles, c.lram_alloc_bytes, c.lram_free_bytes});
  }
  return out;
}

// What a run measured, as the CLI's files say it.
struct Measurement {
  std::string stats_json;  // stats.json at level 100: every figure
  std::string summary;     // summary.txt at the requested level, as `npusim run` prints it
  std::string failure;     // why the run could not complete ("" if it did)
  bool failed_in_estimate = false;
};

Measurement measure(const Request& r, bool simulate, const std::string& out, int stats_level,
                    bool force) {
  const std::optional<profiler::StatsLevel> level = profiler::stats_level_from(stats_level);
  if (!level) {
    throw InputError("stats_level", "",
                     "expected 40, 50, 70 or 100, found " + std::to_string(stats_level));
  }
  // The scenario first, as the CLI checks its options before it loads anything.
  api::check_iterations(run_request(r).iterations, 0);
  const api::Session session = api::Session::open(run_request(r));
  if (!out.empty() && !force) {
    const std::string other = api::other_model_in(out, r.model);
    if (!other.empty()) {
      throw InputError(out, "",
                       "holds the outputs of another model, " + other +
                           "; give force=True to replace them, or another out");
    }
  }
  const api::Measured m = session.measure(simulate);
  if (!out.empty()) session.write(m, out, *level);
  Measurement result;
  std::ostringstream stats;
  profiler::ReportOptions options;
  options.level = profiler::StatsLevel::kExtended;
  options.iterations = m.iterations ? &*m.iterations : nullptr;
  options.incomplete = m.failure;
  options.llm = m.llm ? &*m.llm : nullptr;  // a language model's phases, as stats.json has them
  profiler::write_stats_json(stats, *m.workload, m.estimate, m.runtime ? &*m.runtime : nullptr,
                             options);
  result.stats_json = stats.str();
  std::ostringstream summary;
  api::write_summary(summary, m, *level);
  result.summary = summary.str();
  result.failure = m.failure;
  result.failed_in_estimate = m.failed_in_estimate;
  return result;
}

py::dict config_dict(const HwConfig& c) {
  py::dict slices;
  slices["count"] = c.slices.count;
  slices["rows"] = c.slices.rows;
  slices["cols"] = c.slices.cols;
  slices["dataflow"] = dataflow_name(c.slices.dataflow);
  slices["vector_lanes"] = c.slices.vector_lanes;
  py::dict dma;
  dma["in_channels"] = c.dma.in_channels;
  dma["out_channels"] = c.dma.out_channels;
  dma["burst_bytes"] = c.dma.burst_bytes;
  dma["bytes_per_cycle"] = c.dma.bytes_per_cycle;
  dma["setup_cycles"] = c.dma.setup_cycles;
  dma["max_outstanding"] = c.dma.max_outstanding;
  py::dict dram;
  dram["bandwidth_mbps"] = c.dram.bandwidth_mbps;
  dram["latency_ps"] = c.dram.latency_ps;
  dram["channels"] = c.dram.channels;
  py::dict host;
  host["call_cycles"] = c.host.call_cycles;
  host["cycles_per_element"] = c.host.cycles_per_element;
  py::dict d;
  d["name"] = c.name;
  d["source"] = c.source;
  d["clock_khz"] = c.clock_khz;
  d["slices"] = slices;
  d["lram_bytes"] = c.lram_bytes;
  d["dma"] = dma;
  d["dram"] = dram;
  d["host"] = host;
  d["dispatch_cycles"] = c.dispatch_cycles;
  d["ideal_memory"] = c.ideal_memory;
  d["warnings"] = c.warnings;
  return d;
}

// Raises the package's exception class `name` (python/npusim/_errors.py) built from `args`.
void raise(const char* name, const py::tuple& args) {
  const py::object cls = py::module_::import("npusim._errors").attr(name);
  const py::object exc = cls(*args);
  PyErr_SetObject(cls.ptr(), exc.ptr());
}

// C++ errors become the package's exceptions, with the CLI's message (the text after
// "npusim: error: ") and, for bad input, every problem's file, JSON pointer and message.
void translate(const std::exception_ptr& p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const InputError& e) {
    py::list problems;
    for (const Problem& pr : e.problems()) {
      problems.append(py::make_tuple(pr.file, pr.where, pr.message));
    }
    raise("InputError", py::make_tuple(e.what(), problems));
  } catch (const profiler::OutputError& e) {
    raise("OutputError", py::make_tuple(e.what()));
  } catch (const SimulationError& e) {
    raise("SimulationError", py::make_tuple(e.what(), e.stage()));
  } catch (const py::error_already_set&) {
    throw;
  } catch (const py::builtin_exception&) {
    throw;
  } catch (const std::exception& e) {
    raise("InternalError", py::make_tuple(e.what()));
  }
}

// Library warnings (a schedule compiled for another config, ...) go to stderr as the CLI's do.
void configure_logging() {
  auto logger = spdlog::get("npusim");
  if (!logger) logger = spdlog::stderr_color_mt("npusim");
  logger->set_pattern("npusim: %^%l%$: %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::warn);
}

void set_log_level(const std::string& level) {
  const auto parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off") {
    throw InputError("log_level", "",
                     "unknown level '" + level + "' (trace, debug, info, warn, error, off)");
  }
  spdlog::set_level(parsed);
}

}  // namespace
}  // namespace npusim::python

PYBIND11_MODULE(_npusim, m) {
  using namespace npusim::python;
  namespace api = npusim::api;
  using Release = py::call_guard<py::gil_scoped_release>;
  m.doc() = "npusim's run API (sim/api/session.h); use the npusim package, not this module";
  configure_logging();
  // pybind11's translator type takes the exception_ptr by value.
  // NOLINTNEXTLINE(performance-unnecessary-value-param)
  py::register_exception_translator([](std::exception_ptr p) { translate(p); });

  py::class_<Request>(m, "Request")
      .def(py::init<>())
      .def_readwrite("model", &Request::model)
      .def_readwrite("config", &Request::config)
      .def_readwrite("overrides", &Request::overrides)
      .def_readwrite("input_shapes", &Request::input_shapes)
      .def_readwrite("host_fallback", &Request::host_fallback)
      .def_readwrite("iterations", &Request::iterations)
      .def_readwrite("first_profiled", &Request::first_profiled)
      .def_readwrite("profiled", &Request::profiled);

  py::class_<CompiledSchedule>(m, "CompiledSchedule")
      .def_readonly("json", &CompiledSchedule::json)
      .def_readonly("config_name", &CompiledSchedule::config_name)
      .def("__len__", [](const CompiledSchedule& s) { return s.costs.size(); })
      .def("cost", [](const CompiledSchedule& s, std::size_t i) {
        if (i >= s.costs.size()) throw py::index_error("command index out of range");
        const CompiledSchedule::Cost& c = s.costs[i];
        py::dict d;
        d["macs"] = c.macs;
        d["vector_macs"] = c.vector_macs;
        d["isolated_cycles"] = c.isolated_cycles;
        d["lram_alloc_bytes"] = c.lram_alloc_bytes;
        d["lram_free_bytes"] = c.lram_free_bytes;
        return d;
      });

  py::class_<Measurement>(m, "Measurement")
      .def_readonly("stats_json", &Measurement::stats_json)
      .def_readonly("summary", &Measurement::summary)
      .def_readonly("failure", &Measurement::failure)
      .def_readonly("failed_in_estimate", &Measurement::failed_in_estimate);

  m.def(
      "load_config",
      [](const std::string& source, const std::vector<std::string>& overrides) {
        npusim::HwConfig config;
        {
          py::gil_scoped_release release;
          config = api::load_config(source, overrides);
        }
        return config_dict(config);
      },
      py::arg("source"), py::arg("overrides"));
  m.def("builtin_configs", &npusim::builtin_config_names);
  m.def("compile", &compile_schedule, py::arg("request"), Release());
  m.def("measure", &measure, py::arg("request"), py::arg("simulate"), py::arg("out"),
        py::arg("stats_level"), py::arg("force"), Release());
  m.def("set_log_level", &set_log_level, py::arg("level"));
}
