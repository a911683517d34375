#!/usr/bin/env bash
# Sets up, builds and runs every test: the lit suite (check-flash), then the
# ctest suites (unit tests; GPU tests report themselves skipped where there is
# no CUDA driver). CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/build.sh
build_dir="${FLASHC_BUILD_DIR:-build}"
cmake --build "$build_dir" --target check-flash
# lit already ran above; ctest's own `lit` entry is for people who run ctest.
ctest --test-dir "$build_dir" --output-on-failure --label-exclude lit
