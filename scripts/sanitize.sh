#!/usr/bin/env bash
# Builds npusim with AddressSanitizer and UndefinedBehaviorSanitizer into build-asan/ and runs the
# whole ctest suite there (docs/reliability.md). Any sanitizer report fails the test it occurs in:
# UBSan does not recover, ASan aborts. Exits with ctest's status.
#
# Usage: scripts/sanitize.sh [ctest args...]   e.g. scripts/sanitize.sh -R Schedule
# Environment: NPUSIM_ASAN_BUILD (default build-asan), CXX (default c++, i.e. gcc; clang works too).
#
# SystemC: libsystemc runs SC_THREADs as coroutines, each on a stack it allocates itself and
# switches to with its own context-switch code (QuickThreads on Debian's build), which ASan does not
# see. Two of ASan's features rely on knowing which stack is current:
#  - detect_stack_use_after_return moves locals to a "fake stack" keyed by the real one; after a
#    switch it can report or corrupt on a frame of another coroutine. Off here (it is off by
#    default in gcc's ASan too; this only makes that explicit and stable across compilers).
#  - when a coroutine finishes or an exception unwinds across a switch, ASan may warn
#    "stack-use-after-scope"/"__asan_handle_no_return: ... stack top" for a stack it never saw
#    being entered; the handle_no_return warnings are harmless and are silenced, real reports
#    still fail the test.
# Memory leaks: SystemC keeps its simulation kernel (sc_simcontext) and the coroutine stacks alive
# until process exit by design, so LeakSanitizer would report them in every platform test: leaks of
# libsystemc's own allocations are suppressed (scripts/sanitize.supp is generated below), leaks
# in npusim's code are still reported.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${NPUSIM_ASAN_BUILD:-build-asan}
SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -D_GLIBCXX_ASSERTIONS"
T0=$(date +%s)
mkdir -p "$BUILD"
cmake -S . -B "$BUILD" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS="$SAN" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >"$BUILD/configure.log" 2>&1 ||
  { cat "$BUILD/configure.log"; exit 2; }
cmake --build "$BUILD" -j "$(nproc)" >"$BUILD/build.log" 2>&1 ||
  { tail -50 "$BUILD/build.log"; echo "sanitize.sh: build failed (full log: $BUILD/build.log)" >&2; exit 2; }
T1=$(date +%s)
echo "sanitize: built in $((T1 - T0)) s"

# LeakSanitizer suppressions: allocations made inside libsystemc (its kernel lives until exit).
SUPP="$PWD/$BUILD/lsan.supp"
printf 'leak:libsystemc\n' >"$SUPP"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_stack_use_after_return=0:detect_leaks=1:abort_on_error=1:strict_string_checks=1:check_initialization_order=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$SUPP:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

rc=0
(cd "$BUILD" && ctest --output-on-failure -j "$(nproc)" "$@") || rc=$?
T2=$(date +%s)
echo "sanitize: tests took $((T2 - T1)) s, total $((T2 - T0)) s: $([ $rc -eq 0 ] && echo clean || echo FAILED)"
exit $rc
