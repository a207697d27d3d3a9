#!/usr/bin/env bash
# Installs the Debian packages npusim needs (if missing) and builds it into build/.
# Usage: scripts/build.sh [extra cmake -D options]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNPUSIM_WERROR=ON "$@" >/dev/null
cmake --build build -j "$(nproc)"
