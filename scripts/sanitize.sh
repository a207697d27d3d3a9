#!/usr/bin/env bash
# Builds npusim with AddressSanitizer and UndefinedBehaviorSanitizer into build-asan/ and runs the
# whole ctest suite there (docs/reliability.md). Any sanitizer report fails the test it occurs in:
# UBSan does not recover (-fno-sanitize-recover=undefined), ASan aborts, leaks are reported.
# Exits with ctest's status.
#
# Usage: scripts/sanitize.sh [ctest args...]   e.g. scripts/sanitize.sh -R Schedule
# Environment: NPUSIM_ASAN_BUILD (default build-asan); CXX (default: the system c++, gcc; see
#   below why gcc); NPUSIM_ASAN_ALL=1 runs the sweeps left out below too.
#
# SystemC and ASan. libsystemc runs SC_THREADs as QuickThreads coroutines on stacks of its own and
# tells ASan about each switch (__sanitizer_start_switch_fiber, weak references in sc_cor_qt.cpp).
# But for a switch back to the main coroutine it passes the main coroutine's stack as it knows it:
# address 0, size 0. From then on ASan believes the main thread's stack is [0, 0), so the next C++
# exception thrown on it (every test of an error after a simulation: a deadlock, an unwritable
# output folder) finds __asan_handle_no_return refusing to unpoison the frames it unwinds
# ("WARNING: ASan is ignoring requested __asan_handle_no_return: stack type: default top:
# 0x000000000000"), and their stale redzones give false stack-buffer-overflow reports in whatever
# code next uses that stack (a gtest matcher, steady_clock::now). Not a bug in npusim, and
# detect_stack_use_after_return=0 does not help: ASan needs the real main stack. A small shim,
# preloaded, wraps __sanitizer_start_switch_fiber and substitutes the main thread's stack
# (pthread_getattr_np) when SystemC passes 0/0; preloading it ahead of libasan needs
# verify_asan_link_order=0. It works with gcc's shared libasan; an executable linked with clang's
# static ASan runtime defines the symbol itself and the shim cannot interpose, so use gcc here.
# detect_stack_use_after_return stays off (as gcc defaults): its fake stacks would need the same
# bookkeeping across coroutine switches. LeakSanitizer stays on; nothing needs suppressing.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${NPUSIM_ASAN_BUILD:-build-asan}
SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -D_GLIBCXX_ASSERTIONS"
T0=$(date +%s)
mkdir -p "$BUILD"
# -Og without NDEBUG: assert() stays on, and the tests run at a bearable speed. -Og builds the
# library in 40 % less time than -O1 (compiler.cpp 20.9 s against 12.0 s under the sanitizers),
# and the tests took as long (measured 2026-11-29 on a clean tree: build 461 s and tests 702 s,
# against 591 s and 698 s at -O1 with seven more tests, about 40 s of them). -g1: line tables
# only, enough for the reports' file:line, and a good deal quicker to build than -g. No Python module:
# an ASan-built extension would need libasan preloaded into python3 and LeakSanitizer told about
# the interpreter's own allocations; the module's C++ is the library's, which the other tests
# run here.
# The tests' own code at -O0: it spends its time in the library, and under the sanitizers -O0
# halves its build (tests/CMakeLists.txt). No benchmarks: they measure, and test nothing.
cmake -S . -B "$BUILD" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DNPUSIM_PYTHON=OFF \
  -DNPUSIM_BENCH=OFF \
  -DNPUSIM_TEST_CXX_FLAGS="-O0 -g1" \
  -DCMAKE_CXX_FLAGS="$SAN" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-Og -g1" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >"$BUILD/configure.log" 2>&1 ||
  { cat "$BUILD/configure.log"; exit 2; }
cmake --build "$BUILD" -j "$(nproc)" >"$BUILD/build.log" 2>&1 ||
  { tail -50 "$BUILD/build.log"; echo "sanitize.sh: build failed (full log: $BUILD/build.log)" >&2; exit 2; }
T1=$(date +%s)
echo "sanitize: built in $((T1 - T0)) s"

# The shim described above.
SHIM="$(cd "$BUILD" && pwd)/systemc_asan_shim.so"  # NPUSIM_ASAN_BUILD may be absolute
cat >"$BUILD/systemc_asan_shim.c" <<'EOF'
// Gives ASan the main thread's real stack when SystemC switches back to its main coroutine with
// stack 0/0 (scripts/sanitize.sh explains why).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
typedef void (*start_fn)(void**, const void*, size_t);
void __sanitizer_start_switch_fiber(void** fake_stack, const void* bottom, size_t size) {
  static start_fn real;
  static void* main_bottom;
  static size_t main_size;
  if (real == NULL) real = (start_fn)dlsym(RTLD_NEXT, "__sanitizer_start_switch_fiber");
  if (bottom == NULL && size == 0) {
    if (main_bottom == NULL) {
      pthread_attr_t attr;
      pthread_getattr_np(pthread_self(), &attr);
      pthread_attr_getstack(&attr, &main_bottom, &main_size);
      pthread_attr_destroy(&attr);
    }
    bottom = main_bottom;
    size = main_size;
  }
  if (real != NULL) real(fake_stack, bottom, size);
}
EOF
cc -shared -fPIC -O2 -o "$SHIM" "$BUILD/systemc_asan_shim.c" -ldl
export LD_PRELOAD="$SHIM${LD_PRELOAD:+:$LD_PRELOAD}"
export ASAN_OPTIONS=${ASAN_OPTIONS:-verify_asan_link_order=0:detect_stack_use_after_return=0:detect_leaks=1:abort_on_error=1:strict_string_checks=1:check_initialization_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

rc=0
# Not the browser checks: they test what Chromium makes of trace.json, which .ci/run has already
# checked with the normal build. Nor, unless NPUSIM_ASAN_ALL=1, the whole-model sweeps below, whose
# code other tests run under the sanitizers; the normal suite runs them all. Measured 2026-11-29,
# the sanitized tests took 1,038 s of 2 cores with only the first five left out, most of CI's time:
#   - the invariant sweeps that compile ResNet-50 and BERT at 16 slice and memory settings and
#     MobileNetV2 at 12 slice counts (214 s and 162 s here): every zoo, shared ONNX and SCALE-Sim
#     model compiles under them on both configs in other tests (fewer slices, K-splits, chains);
#   - ClosedForm.ZooModelsEqualPerBurst (69 to 118 s): ClosedForm.RandomSchedulesEqualPerBurst
#     runs the same closed-form and per-burst paths on contended and uncontended schedules;
#   - ScheduleStream.EveryFuzzInputLoadsAsItsDocument (54 s): .ci/run's fuzz.sh starts its
#     schedule target on its corpus, which loads each input both ways (load_schedule against
#     parse_schedule, as this test does) under ASan and UBSan;
#   - Compiler.MacsEqualTheGraphsAnalyticCount (44 s): its models compile here in the fusion,
#     chain and SCALE-Sim tests;
#   - AllModels/ModelRun on `server` (23 runs, 480 s): every model runs end to end here on
#     `default`; `server`'s own paths (residency, remapping, splits over 8 slices) run here in
#     ScaleSim.EveryShippedTopologyCompilesOnBothConfigs, the Residency and Sharding tests and
#     the compiler tests on `server`;
#   - the two LLM consistency runs (Cli.AnLlmRunIsTheSameOnOneThreadAsInBatchesOfThree, 56 s, and
#     Sweep.LlmPointsHaveTtftTpotAndTokensPerSecond, 34 s): the Llm tests run prefill and decode
#     here, Parallel.ACompileIsTheSameOnOneThreadAsOnSeveral the helper threads;
#   - SweepEngines.parallel and .slurm (32 s) and Sweep.PlotScriptWritesPngs (13 s): they test GNU
#     parallel, the Slurm script and Python's plots around `npusim run`, which runs here elsewhere;
#   - FuzzReplay.Corpus (7 targets, 75 s): .ci/run's fuzz.sh starts every target on the same seed
#     corpus under ASan and UBSan (FuzzReplay.Regressions, the inputs that once failed, runs here).
# Measured 2026-11-29 on a clean clone: .ci/run 38.5 min, of which these tests 698 s with all but
# FuzzReplay.Corpus left out, and the build 591 s (at -O1; at -Og since, 702 s and 461 s).
skip=()
if [ "${NPUSIM_ASAN_ALL:-0}" != 1 ]; then
  skip=(-E "^(Compiler\.TilesFitLocalMemoryAcrossSlicesAndCapacities|CostSearch\.MoreSlicesAreNeverSlower|ClosedForm\.ZooModelsEqualPerBurst|ScheduleStream\.EveryFuzzInputLoadsAsItsDocument|Compiler\.MacsEqualTheGraphsAnalyticCount|AllModels/ModelRun\.CompilesAndSimulates/[A-Za-z0-9_]*_server( .*)?|Cli\.AnLlmRunIsTheSameOnOneThreadAsInBatchesOfThree|Sweep\.LlmPointsHaveTtftTpotAndTokensPerSecond|SweepEngines\..*|Sweep\.PlotScriptWritesPngs|Targets/FuzzReplay\.Corpus/[a-z_]*( .*)?)\$")
fi
# (ctest's names of parameterised tests end in "  # GetParam() = ...", hence the "( .*)?".)
# (An -E of the caller's own comes after this one, and ctest keeps the last: it replaces it.)
(cd "$BUILD" && ctest --output-on-failure -j "$(nproc)" -LE browser ${skip[@]+"${skip[@]}"} "$@") || rc=$?
T2=$(date +%s)
echo "sanitize: tests took $((T2 - T1)) s, total $((T2 - T0)) s: $([ $rc -eq 0 ] && echo clean || echo FAILED)"
exit $rc
