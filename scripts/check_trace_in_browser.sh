#!/usr/bin/env bash
# Opens npusim's trace.json in Chromium DevTools' Performance panel, headless, and checks that
# DevTools shows every slice on its track and draws every dependency flow, with no console
# errors (scripts/browser/check_trace.mjs); writes a screenshot beside the trace.
# Installs what it needs once (Debian's chromium, puppeteer-core from npm), like setup.sh.
# Usage: scripts/check_trace_in_browser.sh [MODEL] [OUT_DIR] [RUN OPTION...]
#   (default: models/convnet.json; options are passed to npusim run, e.g. --devices 2)
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-models/convnet.json}
out=${2:-build/browser-check}
shift $(( $# < 2 ? $# : 2 ))
bin=${NPUSIM_BIN:-build/npusim}

if ! command -v chromium >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "check_trace_in_browser: node and npm are needed (Debian: apt-get install nodejs npm)" >&2
  exit 2
fi
if [ ! -d scripts/browser/node_modules/puppeteer-core ]; then
  (cd scripts/browser && npm ci --no-audit --no-fund --silent)
fi

"$bin" run --model "$model" --out "$out" --quiet --force "$@"
node scripts/browser/check_trace.mjs "$out/trace.json" "$out/devtools.png" "$(command -v chromium)"
