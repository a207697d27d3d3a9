#!/usr/bin/env bash
# Sets up, builds, and runs every test (unit, SystemC platform, end to end), one process per test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd build
ctest --output-on-failure -j "$(nproc)" -LE browser  # the browser check: .ci/run
