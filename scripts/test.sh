#!/usr/bin/env bash
# The whole test suite: set up, then run every test (unit, parity on the CPU
# and WebGPU, golden, CLI, fuzz) with CTest. The sanitizer and CPU-only
# builds are scripts/test-extra.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
ctest --preset default

