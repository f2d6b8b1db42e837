#!/usr/bin/env bash
# The builds beside the main suite: the unit, parity, file and hub tests under
# AddressSanitizer + UndefinedBehaviorSanitizer (preset asan), and the
# CPU-only build (preset cpu-only) with its tests. Each step prints its wall
# time; the last line is CTest's summary. Expects scripts/setup.sh to have run.
set -euo pipefail
cd "$(dirname "$0")/.."

step() {  # step NAME COMMAND...: runs it and reports its wall time
  local name=$1 start=$SECONDS
  shift
  "$@"
  echo "test-extra.sh: $name took $((SECONDS - start)) s"
}

# Sanitizers. Dawn and the Vulkan driver are not instrumented; LeakSanitizer
# ignores what they keep (tests/sanitizers/lsan.supp, third-party frames only).
# Under them run the unit and parity tests (CPU and SwiftShader) and the file,
# tokenizer, template and hub tests; the golden model tests and the tests that
# run the CLI as a child process are left to the main suite (scripts/test.sh): on
# SwiftShader under ASan they take many minutes and exercise the same host
# code as the smaller tests.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1
export LSAN_OPTIONS=suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ASAN_SKIP='*Golden*:*Cli*:*Chat*:*QuantizeFolder*:Quantize.Command*:TrainResume*:*Train*Golden*'
step "asan build" bash -c 'cmake --preset asan >/dev/null && cmake --build build-asan --target forge_tests'
step "asan tests" build-asan/tests/forge_tests --gtest_brief=1 --gtest_filter="-$ASAN_SKIP"

# Without WebGPU: the CPU backend alone must build and pass its tests.
step "cpu-only build" bash -c 'cmake --preset cpu-only -DFORGE_FUZZ=OFF >/dev/null &&
                               cmake --build build-cpu --target forge_tests'
ctest --test-dir build-cpu -j 2 --output-on-failure --timeout 900
