#!/usr/bin/env bash
# Sets up, builds, and runs the demo: the double-buffered conv net on the default 2-slice config.
# Traces go to traces/convnet/; the summary is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
./build/npusim run --model models/convnet.json --config default --out traces/convnet
