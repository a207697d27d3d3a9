// Google Benchmark for the parts of a run that need no SystemC. scripts/bench.sh runs it.
#include <benchmark/benchmark.h>

#include <sstream>

#include "profiler/chrome_trace.h"
#include "profiler/perfetto_trace.h"
#include "profiler/report_writers.h"
#include "profiler/trace_model.h"
#include "sim/compiler/compiler.h"
#include "sim/estimator/estimator.h"
#include "sim/frontend/graph_json.h"
#include "sim/ir/engines.h"
#include "sim/ir/synthetic.h"

namespace {

const npusim::Graph& resnet50() {
  static const npusim::Graph g =
      npusim::load_graph_json(std::string(NPUSIM_SOURCE_DIR) + "/models/zoo/resnet50.json");
  return g;
}

void BM_CompileResNet50(benchmark::State& state) {
  const npusim::HwConfig config = npusim::load_hw_config("default");
  for (auto _ : state) benchmark::DoNotOptimize(npusim::compile_schedule(resnet50(), config));
}
BENCHMARK(BM_CompileResNet50)->Unit(benchmark::kMillisecond);

void BM_EstimateResNet50(benchmark::State& state) {
  const npusim::HwConfig config = npusim::load_hw_config("default");
  const npusim::Schedule s = npusim::compile_schedule(resnet50(), config);
  for (auto _ : state) benchmark::DoNotOptimize(npusim::estimate(s, config));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * s.commands.size()));
}
BENCHMARK(BM_EstimateResNet50)->Unit(benchmark::kMillisecond);

void BM_EstimateSynthetic(benchmark::State& state) {
  const npusim::HwConfig config = npusim::load_hw_config("default");
  const npusim::Schedule s =
      npusim::synthetic_schedule(static_cast<std::uint64_t>(state.range(0)), config);
  for (auto _ : state) benchmark::DoNotOptimize(npusim::estimate(s, config));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * s.commands.size()));
}
BENCHMARK(BM_EstimateSynthetic)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

void BM_WritersResNet50(benchmark::State& state) {
  const npusim::HwConfig config = npusim::load_hw_config("default");
  const npusim::Schedule s = npusim::compile_schedule(resnet50(), config);
  const npusim::profiler::Workload w = npusim::make_workload(s, config);
  const npusim::profiler::Timeline t = npusim::estimate(s, config);
  for (auto _ : state) {
    std::ostringstream stats, json, pf;
    npusim::profiler::write_stats_json(stats, w, t, &t);  // level 70
    const auto model = npusim::profiler::build_trace_model(w, {{"a", &t}, {"b", &t}});
    npusim::profiler::write_chrome_trace(json, model);
    npusim::profiler::write_perfetto_trace(pf, model);
    benchmark::DoNotOptimize(stats.str().size() + json.str().size() + pf.str().size());
  }
}
BENCHMARK(BM_WritersResNet50)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
