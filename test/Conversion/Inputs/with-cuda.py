#!/usr/bin/env python3
"""Run a command with the CUDA toolkit of a given ptxas visible.

  with-cuda.py /path/to/cuda/bin/ptxas flash-opt -gpu-lower-to-nvvm-pipeline=...

gpu-module-to-binary finds libdevice (which math.exp2/log2 lower to) and
ptxas through `toolkit=`, then PATH, then CUDA_ROOT; lit runs with a minimal
PATH and only knows the toolkit through the ptxas path it was configured with
(%ptxas), so this puts that toolkit on PATH and in CUDA_ROOT.
"""
import os
import subprocess
import sys

bin_dir = os.path.dirname(os.path.abspath(sys.argv[1]))
env = dict(os.environ)
env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
env["CUDA_ROOT"] = os.path.dirname(bin_dir)
sys.exit(subprocess.call(sys.argv[2:], env=env))
