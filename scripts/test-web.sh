#!/usr/bin/env bash
# The browser tests (tests/web/*.test.mjs), run by scripts/test-extra.sh (so
# by CI): builds the wasm (scripts/web.sh --build-only, installing Emscripten
# when missing; em++ through ccache), installs Debian's Chromium and npm's
# playwright-core when missing (playwright never downloads a browser), then
# drives the page headless against the native CLI in build/ (scripts/setup.sh
# builds it). Artifacts (the page's screenshot) go to build-wasm/web-test/.
# Prints the build's and each test file's wall time. A test file that runs
# past FORGE_WEB_TEST_TIMEOUT seconds (default 900) fails; Playwright closes
# its Chromium on the SIGTERM.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS

if ! dpkg-query -W -f='${Status}' chromium 2>/dev/null | grep -q "install ok installed"; then
  echo "test-web.sh: installing chromium"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium
fi
if [[ ! -d node_modules/playwright-core ]]; then
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
fi
# The native CLI the page is checked against (FORGE_BIN: another build's).
[[ -x ${FORGE_BIN:-build/forge} ]] || { echo "test-web.sh: ${FORGE_BIN:-build/forge} is missing (run scripts/setup.sh)" >&2; exit 1; }

scripts/web.sh --build-only
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
status=0
for t in tests/web/*.test.mjs; do
  t0=$SECONDS
  timeout "${FORGE_WEB_TEST_TIMEOUT:-900}" node "$t" || status=1
  echo "test-web.sh: $t took $((SECONDS - t0)) s"
done
echo "test-web.sh: browser build and tests took $((SECONDS - start)) s"
exit $status
