#!/usr/bin/env bash
# Installs the dependencies (scripts/setup.sh), configures and builds flashc
# into build/ (or $FLASHC_BUILD_DIR). Extra arguments go to the configure step.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
build_dir="${FLASHC_BUILD_DIR:-build}"
cmake -G Ninja -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$build_dir"
