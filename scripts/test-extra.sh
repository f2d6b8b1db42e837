#!/usr/bin/env bash
# The builds beside the main one, run by scripts/test.sh after the main suite
# (so by CI): the unit and parity tests under AddressSanitizer +
# UndefinedBehaviorSanitizer (preset asan), the CPU-only build (preset
# cpu-only) with its tests, and the browser build with its tests in headless
# Chromium (scripts/test-web.sh). Each step prints its wall time. Expects
# scripts/setup.sh to have run (the main build fills ccache, which the
# CPU-only build then reads: same files, same flags).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ccache-env.sh

step() {  # step NAME COMMAND...: runs it and reports its wall time
  local name=$1 start=$SECONDS
  shift
  "$@"
  echo "test-extra.sh: $name took $((SECONDS - start)) s"
}

# Sanitizers: forge_tests and the CLI built at -O1 with ASan + UBSan (no
# benchmarks, no fuzzers: those have their own sanitizer builds). Any report
# fails the run (UBSan halts, ASan and LeakSanitizer exit non-zero). Dawn and
# the Vulkan driver are not instrumented; LeakSanitizer ignores what they keep
# (tests/sanitizers/lsan.supp, third-party frames only).
#
# Every unit and parity test runs, on the CPU and on SwiftShader, except (for
# CI's time: under ASan on two cores each costs minutes, and the host code they
# drive is what the smaller tests drive):
#  - the tests of whole CLI commands, whole models against Hugging Face and
#    long runs, whose files the asan preset leaves out of the build
#    (FORGE_TESTS_WHOLE_RUNS=OFF; tests/CMakeLists.txt); the BadInput table
#    does run the sanitized CLI, once per error path; LongRun would measure
#    ASan's quarantine, which grows the resident set by design (LeakSanitizer
#    checks leaks);
#  - the quantize command's tests (Quantize.Command*, QuantizeFolder);
#  - ModelThreads' SwiftShader case (whole models decoding on SwiftShader; the
#    runtime's locking is OpsThreads' WebGPU case, which does run).
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1
export LSAN_OPTIONS=suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ASAN_SKIP='*QuantizeFolder*:Quantize.Command*:ModelThreads.*WebGpu'
step "asan build" bash -c 'cmake --preset asan >/dev/null && cmake --build build-asan --target forge_tests'
# Two shards at once: one test process keeps about one core busy (its
# SwiftShader work is short), and the tests share no files (ctest runs them in
# parallel too). Each shard's output follows when both are done.
asan_tests() {
  local pids=() rc=0 i
  for i in 0 1; do
    GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=$i build-asan/tests/forge_tests --gtest_brief=1 \
      --gtest_filter="-$ASAN_SKIP" >build-asan/asan-shard-$i.log 2>&1 &
    pids+=($!)
  done
  for i in 0 1; do
    wait "${pids[$i]}" || rc=1
    echo "test-extra.sh: asan shard $i of 2:"
    cat build-asan/asan-shard-$i.log
  done
  return $rc
}
step "asan tests" asan_tests

# Without WebGPU: the CPU backend alone must build and pass its tests.
step "cpu-only build" bash -c 'cmake --preset cpu-only >/dev/null && cmake --build build-cpu --target forge_tests'
step "cpu-only tests" ctest --test-dir build-cpu -j 2 --output-on-failure --timeout 900

# The browser: the wasm build (preset wasm, em++ through ccache) and the page
# in headless Chromium against the native CLI (tests/web).
step "browser build and tests" scripts/test-web.sh
