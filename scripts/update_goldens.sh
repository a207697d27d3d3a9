#!/usr/bin/env bash
# Regenerates traces/golden/<example>/ from the current build. Run after an intended change to
# the outputs, then review `git diff traces/golden` before committing.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${NPUSIM_BIN:-build/npusim}
for name in fc convnet; do
  rm -rf "traces/golden/$name"
  "$BIN" run --model "models/$name.json" --config default --out "traces/golden/$name" --quiet
  echo "updated traces/golden/$name"
done
