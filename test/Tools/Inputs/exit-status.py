"""Runs a command, forwards its stderr to stdout and prints its exit status.

lit's `not` only says that a command failed; the tools promise exit status 1
(never a crash's signal or 134), so tests check the number itself.
"""
import subprocess
import sys

result = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
sys.stdout.write(result.stderr)
print(f"exit status {result.returncode}")
