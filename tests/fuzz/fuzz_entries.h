// Entry functions of the fuzz targets (docs/reliability.md): one per input npusim reads. Each
// takes raw bytes, runs them through the same loaders the CLI uses and, when they are accepted,
// through what the CLI does next (compile, estimate, statistics, CSV round trip). A rejection
// (InputError, SimulationError for a deadlock, profiler::ParseError) is a normal outcome and
// returns 0; anything else escapes: another exception, a crash, a sanitizer report or a hang is a
// finding. Built into the libFuzzer targets (tests/fuzz/CMakeLists.txt, NPUSIM_FUZZ=ON) and into
// npusim_fuzz_regression_tests, which replays tests/fuzz/regressions/<target>/ and the seed
// corpora with an ordinary compiler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace npusim::fuzz {

using Entry = int (*)(const std::uint8_t* data, std::size_t size);

// Hardware config: JSON text, then optionally NUL-separated `--set` overrides
// ("key.path=value"). An accepted config then compiles and estimates a small fixed graph.
int fuzz_hw_config(const std::uint8_t* data, std::size_t size);
// Schedule JSON, checked against the default config; accepted ones are estimated, measured and
// their timeline.csv / runtime.csv written and read back (which must round-trip).
int fuzz_schedule(const std::uint8_t* data, std::size_t size);
// Graph JSON: parsed, compiled for the default config, estimated.
int fuzz_graph_json(const std::uint8_t* data, std::size_t size);
// SCALE-Sim topology CSV: parsed, compiled, estimated.
int fuzz_topology(const std::uint8_t* data, std::size_t size);
// ONNX model bytes (written to a temporary file, as import_onnx reads a path): imported without
// and, when that is rejected, with host fallback; accepted graphs compiled and estimated.
int fuzz_onnx(const std::uint8_t* data, std::size_t size);
// timeline.csv and runtime.csv as `npusim convert` reads them.
int fuzz_timeline_csv(const std::uint8_t* data, std::size_t size);
int fuzz_runtime_csv(const std::uint8_t* data, std::size_t size);

struct Target {
  const char* name;  // also the folder name under tests/fuzz/corpus and tests/fuzz/regressions
  Entry entry;
};
// Every target, in a fixed order.
const std::vector<Target>& targets();

}  // namespace npusim::fuzz
