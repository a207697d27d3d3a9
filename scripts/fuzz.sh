#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, docs/reliability.md) with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer into build-fuzz/, and runs each for SECONDS (default 60), as many at
# once as there are cores, seeded from tests/fuzz/corpus/<target>/. Prints one summary line per
# target; exits 1 if any target found a crash, a sanitizer report, an unexpected exception, a
# timeout or ran out of memory (the input is saved under build-fuzz/artifacts/<target>/).
#
# Usage: scripts/fuzz.sh [--save-corpus] [--coverage] [SECONDS] [TARGET...]
#   targets: hw_config schedule graph_json topology onnx onnx_proto timeline_csv runtime_csv
#   (default: all). onnx_proto is the onnx entry with a structure-aware mutator; it shares the
#   onnx seeds and regressions.
#   --save-corpus  after the run, merge what each target found (build-fuzz/corpus/<target>/) into
#                  the committed seeds tests/fuzz/corpus/<target>/ with libFuzzer's -merge=1: only
#                  inputs that add coverage, none larger than NPUSIM_FUZZ_SAVE_MAX_LEN bytes
#                  (default 4096), so the committed corpora stay small. Review, then commit them.
#   --coverage     instead of fuzzing, build the targets with clang's source-based coverage
#                  (-fprofile-instr-generate -fcoverage-mapping) into build-fuzz-cov/, replay the
#                  seeds and everything found so far (build-fuzz/corpus/<target>/), and print
#                  llvm-cov-14's per-file line coverage of sim/ and profiler/ (SECONDS unused).
# Environment: NPUSIM_FUZZ_BUILD (default build-fuzz), NPUSIM_FUZZ_JOBS (default nproc),
#   NPUSIM_FUZZ_TIMEOUT (seconds one input may take, default 30), CXX (default clang++-14),
#   NPUSIM_FUZZ_ARGS (extra libFuzzer flags, e.g. "-only_ascii=1").
#
# New inputs the fuzzers find go to build-fuzz/corpus/<target>/, never into the source tree
# unless --save-corpus is given. That corpus is kept between runs, so each run starts where the
# last one stopped; when it holds more than NPUSIM_FUZZ_PRUNE_AT files (default 4000) it is pruned
# with -merge=1 to the inputs that keep its coverage before the run.
# To reproduce a finding: ./build-fuzz/fuzz/fuzz_T build-fuzz/artifacts/T/crash-...; once fixed,
# copy it to tests/fuzz/regressions/T/ (npusim_fuzz_regression_tests replays it in every build).
set -euo pipefail
cd "$(dirname "$0")/.."

ALL_TARGETS=(hw_config schedule graph_json topology onnx onnx_proto timeline_csv runtime_csv)
SECS=60
SAVE_CORPUS=0
COVERAGE=0
while [ $# -gt 0 ]; do
  case "$1" in
    --save-corpus) SAVE_CORPUS=1; shift ;;
    --coverage) COVERAGE=1; shift ;;
    *) break ;;
  esac
done
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

# The seed folder of a target: onnx_proto mutates the onnx seeds.
seeds_of() { if [ "$1" = onnx_proto ]; then echo onnx; else echo "$1"; fi; }

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

# Configures DIR with clang at -O1 with CXXFLAGS and LDFLAGS, and builds the fuzz targets; WHAT
# names the build in the error. -g1: line tables only, enough for the reports' file:line (as
# sanitize.sh), and quicker to build than -g (compiler.cpp: 26 s against 32 s).
build_fuzz_targets() {
  local dir=$1 cxxflags=$2 ldflags=$3 what=$4
  mkdir -p "$dir"
  cmake -S . -B "$dir" -DCMAKE_CXX_COMPILER="$CXX_FUZZ" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS="$cxxflags" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DCMAKE_EXE_LINKER_FLAGS="$ldflags" \
    -DNPUSIM_FUZZ=ON >"$dir/configure.log" 2>&1 || { cat "$dir/configure.log"; exit 2; }
  local targets=()
  for t in "${TARGETS[@]}"; do targets+=(--target "fuzz_$t"); done
  cmake --build "$dir" -j "$JOBS" "${targets[@]}" >"$dir/build.log" 2>&1 ||
    { tail -50 "$dir/build.log"; echo "fuzz.sh: $what failed (full log: $dir/build.log)" >&2; exit 2; }
}

if [ "$COVERAGE" -eq 1 ]; then
  # Coverage build: libFuzzer's driver (fuzzer-no-link for the libraries, fuzzer for the targets)
  # without sanitizers, each input replayed once (-runs=0), profiles merged and reported.
  COV_BUILD=${NPUSIM_FUZZ_COV_BUILD:-build-fuzz-cov}
  PROFDATA=$(command -v llvm-profdata-14 || command -v llvm-profdata || true)
  LLVMCOV=$(command -v llvm-cov-14 || command -v llvm-cov || true)
  if [ -z "$PROFDATA" ] || [ -z "$LLVMCOV" ]; then
    echo "fuzz.sh: llvm-profdata-14 and llvm-cov-14 are needed for --coverage (package llvm-14)" >&2
    exit 2
  fi
  build_fuzz_targets "$COV_BUILD" \
    "-fsanitize=fuzzer-no-link -fprofile-instr-generate -fcoverage-mapping" \
    "-fprofile-instr-generate" "coverage build"
  rm -rf "$COV_BUILD/profiles"
  mkdir -p "$COV_BUILD/profiles"
  objects=()
  for t in "${TARGETS[@]}"; do
    dirs=("tests/fuzz/corpus/$(seeds_of "$t")")
    [ -d "tests/fuzz/regressions/$(seeds_of "$t")" ] && dirs+=("tests/fuzz/regressions/$(seeds_of "$t")")
    [ -d "$BUILD/corpus/$t" ] && dirs+=("$BUILD/corpus/$t")
    LLVM_PROFILE_FILE="$COV_BUILD/profiles/$t-%p.profraw" \
      "$COV_BUILD/fuzz/fuzz_$t" -runs=0 -timeout="$TIMEOUT" -rss_limit_mb=2560 "${dirs[@]}" \
      >"$COV_BUILD/profiles/$t.log" 2>&1 || echo "fuzz.sh: $t failed on its corpus (see $COV_BUILD/profiles/$t.log)" >&2
    "$PROFDATA" merge -sparse "$COV_BUILD"/profiles/"$t"-*.profraw -o "$COV_BUILD/profiles/$t.profdata"
    total=$("$LLVMCOV" report "$COV_BUILD/fuzz/fuzz_$t" -instr-profile="$COV_BUILD/profiles/$t.profdata" \
      "$PWD/sim" "$PWD/profiler" 2>/dev/null | awk '/^TOTAL/ {print $(NF-3)}')
    echo "fuzz: coverage $t: ${total:-?} of the lines of sim/ and profiler/ it links"
    objects+=(-object "$COV_BUILD/fuzz/fuzz_$t")
  done
  "$PROFDATA" merge -sparse "$COV_BUILD"/profiles/*.profdata -o "$COV_BUILD/profiles/all.profdata"
  echo "fuzz: per-file line coverage, all targets together (lines, missed, cover):"
  "$LLVMCOV" report "${objects[@]:1}" -instr-profile="$COV_BUILD/profiles/all.profdata" \
    "$PWD/sim" "$PWD/profiler" 2>/dev/null |
    awk 'NR > 2 && $1 != "" && $1 !~ /^-/ { printf "  %-48s %6s %6s %8s\n", $1, $(NF-5), $(NF-4), $(NF-3) }' |
    sed "s|$PWD/||"
  echo "fuzz: html: $LLVMCOV show ${objects[*]:1} -instr-profile=$COV_BUILD/profiles/all.profdata -format=html -output-dir=$COV_BUILD/html sim profiler"
  exit 0
fi

# Instrument the whole build (the libraries under test, not only the targets): coverage for
# libFuzzer, ASan, UBSan with no recovery (so a report stops the run and saves the input), and
# libstdc++'s own checks (bounds of operator[], front() of an empty container, ...). -O1 without
# NDEBUG keeps assert() on.
SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -D_GLIBCXX_ASSERTIONS"
T0=$(date +%s)
build_fuzz_targets "$BUILD" "$SAN" "-fsanitize=address,undefined" "build"
T1=$(date +%s)
echo "fuzz: built ${#TARGETS[@]} target(s) in $((T1 - T0)) s; running each for ${SECS} s, ${JOBS} at a time"

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

run_one() {
  local t=$1
  local corpus="$BUILD/corpus/$t" artifacts="$BUILD/artifacts/$t" log="$BUILD/logs/$t.log"
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  local dict=()
  # shellcheck disable=SC2086
  local seeds
  seeds=$(seeds_of "$t")
  [ -f "tests/fuzz/dicts/$seeds.dict" ] && dict=(-dict="tests/fuzz/dicts/$seeds.dict")
  # The corpus grows across runs; prune it to the inputs that keep its coverage when it is large.
  if [ "$(find "$corpus" -type f | wc -l)" -gt "${NPUSIM_FUZZ_PRUNE_AT:-4000}" ]; then
    rm -rf "$corpus.pruned" && mkdir -p "$corpus.pruned"
    "$BUILD/fuzz/fuzz_$t" -merge=1 -timeout="$TIMEOUT" -rss_limit_mb=2560 "$corpus.pruned" "$corpus" \
      >"$log.prune" 2>&1 && rm -rf "$corpus" && mv "$corpus.pruned" "$corpus"
  fi
  "$BUILD/fuzz/fuzz_$t" "$corpus" "tests/fuzz/corpus/$seeds" "${dict[@]}" \
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
if [ "$SAVE_CORPUS" -eq 1 ]; then
  for t in "${TARGETS[@]}"; do
    seeds=$(seeds_of "$t")
    before=$(find "tests/fuzz/corpus/$seeds" -type f | wc -l)
    # Only small inputs are candidates (merge keeps those that add coverage to the seeds).
    small="$BUILD/corpus/$t.small"
    rm -rf "$small" && mkdir -p "$small"
    find "$BUILD/corpus/$t" -type f -size -"$((${NPUSIM_FUZZ_SAVE_MAX_LEN:-4096} + 1))"c -exec cp {} "$small/" \;
    # Edges only (-use_counters=0): an input that only reaches an edge more often is not kept.
    "$BUILD/fuzz/fuzz_$t" -merge=1 -use_counters=0 -timeout="$TIMEOUT" -rss_limit_mb=2560 \
      "tests/fuzz/corpus/$seeds" "$small" >"$BUILD/logs/$t.save.log" 2>&1 ||
      echo "fuzz.sh: merging $t into tests/fuzz/corpus/$seeds failed (see $BUILD/logs/$t.save.log)" >&2
    rm -rf "$small"
    after=$(find "tests/fuzz/corpus/$seeds" -type f | wc -l)
    echo "fuzz: saved $((after - before)) new input(s) of $t into tests/fuzz/corpus/$seeds/"
  done
fi
echo "fuzz: total $(( $(date +%s) - T0 )) s"
exit $failed
