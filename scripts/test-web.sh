#!/usr/bin/env bash
# The browser tests (tests/web/*.test.mjs): builds the wasm (scripts/web.sh
# --build-only, installing Emscripten when missing), installs Debian's
# Chromium and npm's playwright-core when missing (playwright never downloads
# a browser), then drives the page headless against the native CLI in
# build/ (scripts/setup.sh builds it). Artifacts (the page's screenshot) go
# to build-wasm/web-test/. Prints the step's wall time.
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
[[ -x build/forge ]] || { echo "test-web.sh: build/forge is missing (run scripts/setup.sh)" >&2; exit 1; }

scripts/web.sh --build-only
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
status=0
for t in tests/web/*.test.mjs; do
  node "$t" || status=1
done
echo "test-web.sh: browser build and tests took $((SECONDS - start)) s"
exit $status
