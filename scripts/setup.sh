#!/usr/bin/env bash
# Installs what flashc's build and tests need on a fresh Debian 12 machine.
# Idempotent: packages already present are skipped, so a second run is fast.
# The CUDA toolkit is not installed here (it is not a Debian package on this
# platform); it is only detected, and the build goes on without cubin output
# when it is missing.
set -euo pipefail

LLVM_VERSION=22
PACKAGES=(
  "libmlir-${LLVM_VERSION}-dev" "mlir-${LLVM_VERSION}-tools"
  "llvm-${LLVM_VERSION}-dev" "llvm-${LLVM_VERSION}-tools"
  cmake ninja-build g++ libzstd-dev zlib1g-dev libgtest-dev python3
  # gcc: the `cc` flashc --target=cpu links kernel.so with; numpy: the CPU
  # path's tests (test/python/test_flashc_cpu_kernel.py).
  gcc python3-numpy
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup: all Debian packages present"
fi

LLVM_PREFIX="/usr/lib/llvm-${LLVM_VERSION}"
for tool in lit FileCheck not mlir-opt; do
  if [[ ! -x "$LLVM_PREFIX/bin/$tool" ]]; then
    echo "setup: error: $LLVM_PREFIX/bin/$tool is missing after install" >&2
    exit 1
  fi
done

# The CPU path's test runs under the python3 CMake finds first on PATH.
# Debian's python3-numpy (above) serves /usr/bin/python3; another python3
# (pyenv, a venv) takes numpy from PyPI, else that test reports itself
# skipped.
if ! python3 -c 'import numpy' 2>/dev/null; then
  echo "setup: installing numpy for $(command -v python3) from PyPI"
  python3 -m pip install --quiet numpy ||
    echo "setup: warning: no numpy for $(command -v python3):" \
         "test/python/test_flashc_cpu_kernel.py will be skipped" >&2
fi

CUDA_ROOT="${CUDA_ROOT:-/usr/local/cuda}"
if [[ -x "$CUDA_ROOT/bin/ptxas" && -f "$CUDA_ROOT/include/cuda.h" ]]; then
  echo "setup: CUDA toolkit found at $CUDA_ROOT ($("$CUDA_ROOT/bin/ptxas" --version | tail -1))"
else
  echo "setup: warning: no CUDA toolkit at $CUDA_ROOT (ptxas, cuda.h);" \
       "flashc will emit PTX but not cubin, and cubin tests are skipped" >&2
fi
