#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, docs/reliability.md) with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer into build-fuzz/, and runs each for SECONDS (default 60), as many at
# once as there are cores, seeded from tests/fuzz/corpus/<target>/. Prints one summary line per
# target; exits 1 if any target found a crash, a sanitizer report, an unexpected exception, a
# timeout or ran out of memory (the input is saved under build-fuzz/artifacts/<target>/).
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
#   targets: hw_config schedule graph_json topology onnx timeline_csv runtime_csv (default: all)
# Environment: NPUSIM_FUZZ_BUILD (default build-fuzz), NPUSIM_FUZZ_JOBS (default nproc),
#   NPUSIM_FUZZ_TIMEOUT (seconds one input may take, default 30), CXX (default clang++-14),
#   NPUSIM_FUZZ_ARGS (extra libFuzzer flags, e.g. "-only_ascii=1").
#
# New inputs the fuzzers find go to build-fuzz/corpus/<target>/, never into the source tree. To
# keep useful ones: ./build-fuzz/fuzz/fuzz_T -merge=1 tests/fuzz/corpus/T build-fuzz/corpus/T.
# To reproduce a finding: ./build-fuzz/fuzz/fuzz_T build-fuzz/artifacts/T/crash-...; once fixed,
# copy it to tests/fuzz/regressions/T/ (npusim_fuzz_regression_tests replays it in every build).
set -euo pipefail
cd "$(dirname "$0")/.."

ALL_TARGETS=(hw_config schedule graph_json topology onnx timeline_csv runtime_csv)
SECS=60
if [ $# -gt 0 ] && [[ "$1" =~ ^[0-9]+$ ]]; then
  SECS=$1
  shift
fi
if [ $# -gt 0 ]; then TARGETS=("$@"); else TARGETS=("${ALL_TARGETS[@]}"); fi
for t in "${TARGETS[@]}"; do
  if [[ ! " ${ALL_TARGETS[*]} " == *" $t "* ]]; then
    echo "fuzz.sh: unknown target '$t' (targets: ${ALL_TARGETS[*]})" >&2
    exit 2
  fi
done

bash scripts/setup.sh >/dev/null  # clang and libclang-rt-14-dev among the rest
BUILD=${NPUSIM_FUZZ_BUILD:-build-fuzz}
JOBS=${NPUSIM_FUZZ_JOBS:-$(nproc)}
TIMEOUT=${NPUSIM_FUZZ_TIMEOUT:-30}
CXX_FUZZ=${CXX:-}
if [ -z "$CXX_FUZZ" ] || [[ "$CXX_FUZZ" != *clang* ]]; then
  CXX_FUZZ=$(command -v clang++-14 || command -v clang++ || true)
fi
if [ -z "$CXX_FUZZ" ]; then
  echo "fuzz.sh: clang++ not found (scripts/setup.sh installs clang and libclang-rt-14-dev)" >&2
  exit 2
fi

# Instrument the whole build (the libraries under test, not only the targets): coverage for
# libFuzzer, ASan, UBSan with no recovery (so a report stops the run and saves the input), and
# libstdc++'s own checks (bounds of operator[], front() of an empty container, ...). -O1 without
# NDEBUG keeps assert() on.
SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -D_GLIBCXX_ASSERTIONS"
T0=$(date +%s)
mkdir -p "$BUILD"
cmake -S . -B "$BUILD" \
  -DCMAKE_CXX_COMPILER="$CXX_FUZZ" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS="$SAN" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DNPUSIM_FUZZ=ON >"$BUILD/configure.log" 2>&1 || { cat "$BUILD/configure.log"; exit 2; }
build_targets=()
for t in "${TARGETS[@]}"; do build_targets+=(--target "fuzz_$t"); done
cmake --build "$BUILD" -j "$JOBS" "${build_targets[@]}" >"$BUILD/build.log" 2>&1 ||
  { tail -50 "$BUILD/build.log"; echo "fuzz.sh: build failed (full log: $BUILD/build.log)" >&2; exit 2; }
T1=$(date +%s)
echo "fuzz: built ${#TARGETS[@]} target(s) in $((T1 - T0)) s; running each for ${SECS} s, ${JOBS} at a time"

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

run_one() {
  local t=$1
  local corpus="$BUILD/corpus/$t" artifacts="$BUILD/artifacts/$t" log="$BUILD/logs/$t.log"
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  local dict=()
  [ -f "tests/fuzz/dicts/$t.dict" ] && dict=(-dict="tests/fuzz/dicts/$t.dict")
  # shellcheck disable=SC2086
  "$BUILD/fuzz/fuzz_$t" "$corpus" "tests/fuzz/corpus/$t" "${dict[@]}" \
    -max_total_time="$SECS" -timeout="$TIMEOUT" -rss_limit_mb=2560 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 ${NPUSIM_FUZZ_ARGS:-} >"$log" 2>&1
}

summary() {
  local t=$1 rc=$2 log="$BUILD/logs/$1.log"
  local runs cov corp
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  corp=$(grep -o 'corp: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  if [ "$rc" -eq 0 ]; then
    printf 'fuzz: %-13s OK    %9s runs in %s s, coverage %s, corpus %s\n' "$t" "${runs:-?}" "$SECS" "${cov:-?}" "${corp:-?}"
  else
    local what artifact
    what=$(grep -m1 -oE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer): [a-zA-Z-]+|runtime error: .*|npusim fuzz: unexpected .*' "$log" || true)
    artifact=$(grep -o "$BUILD/artifacts/$t/[a-z]*-[0-9a-f]*" "$log" | tail -1 || true)
    printf 'fuzz: %-13s FAIL  %s; input: %s; log: %s\n' "$t" "${what:-exit code $rc}" "${artifact:-?}" "$log"
  fi
}

declare -A pid_of
failed=0
pending=("${TARGETS[@]}")
running=()
while [ ${#pending[@]} -gt 0 ] || [ ${#running[@]} -gt 0 ]; do
  while [ ${#pending[@]} -gt 0 ] && [ ${#running[@]} -lt "$JOBS" ]; do
    t=${pending[0]}
    pending=("${pending[@]:1}")
    run_one "$t" &
    pid_of[$t]=$!
    running+=("$t")
  done
  # Wait for the first of the running targets to finish (in start order: they run equally long).
  t=${running[0]}
  running=("${running[@]:1}")
  rc=0
  wait "${pid_of[$t]}" || rc=$?
  summary "$t" "$rc"
  [ "$rc" -eq 0 ] || failed=1
done
echo "fuzz: total $(( $(date +%s) - T0 )) s"
exit $failed
