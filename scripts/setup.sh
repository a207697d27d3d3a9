#!/usr/bin/env bash
# Installs every Debian package npusim needs to build, test and plot.
# Idempotent: when every package is already installed it downloads nothing.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config
  libsystemc-dev
  libboost-program-options-dev
  nlohmann-json3-dev
  libspdlog-dev libfmt-dev
  libgtest-dev googletest
  libbenchmark-dev
  libprotobuf-dev protobuf-compiler
  libonnx-dev
  python3 python3-matplotlib
  python3-dev pybind11-dev python3-pybind11 python3-pytest python3-pandas
  parallel
  clang libclang-rt-14-dev clang-format clang-tidy
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
