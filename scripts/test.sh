#!/usr/bin/env bash
# The whole test suite, as CI runs it: set up and build, run every test of the
# main build with CTest (unit, parity on the CPU and WebGPU, golden, CLI,
# fuzz), then scripts/test-extra.sh: the unit and parity tests under
# AddressSanitizer + UndefinedBehaviorSanitizer, the CPU-only build with its
# tests, and the browser build with its tests in headless Chromium
# (scripts/test-web.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
start=$SECONDS
ctest --preset default
echo "test.sh: the main tests took $((SECONDS - start)) s"
scripts/test-extra.sh
