#!/usr/bin/env bash
# forge in the browser: installs what the browser build needs (Debian's
# Emscripten; Chromium for the tests, scripts/test-web.sh), builds the wasm
# (preset wasm: build-wasm/forge_wasm.{js,wasm}) and serves the page.
#
#   scripts/web.sh [--port P] [--models DIR] [--build-only]
#
# The page is http://127.0.0.1:P/ (default 8080) with DIR (default
# tests/fixtures) at /models/; window.forge is its JavaScript API (web/forge.js).
set -euo pipefail
cd "$(dirname "$0")/.."

port=8080 models=tests/fixtures build_only=0
while (($#)); do
  case $1 in
    --port) port=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --build-only) build_only=1; shift ;;
    *) echo "usage: scripts/web.sh [--port P] [--models DIR] [--build-only]" >&2; exit 2 ;;
  esac
done

WEB_APT_PACKAGES=(emscripten nodejs cmake ninja-build nlohmann-json3-dev ccache)
missing=()
for p in "${WEB_APT_PACKAGES[@]}"; do
  if [[ $p == nodejs ]] && command -v node >/dev/null 2>&1; then continue; fi
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "web.sh: installing ${missing[*]}"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Debian's Emscripten finds its JavaScript dependencies (acorn) there. Its
# system libraries (libc, libc++, ...) come prebuilt in its frozen cache
# (/usr/share/emscripten/cache): nothing is built there on first use.
export NODE_PATH=/usr/share/nodejs
# em++ through ccache (as the native builds): a rebuild of unchanged sources
# is all hits, leaving the link (Asyncify's pass over the module) as the cost.
source scripts/ccache-env.sh
start=$SECONDS
cmake --preset wasm -DCMAKE_CXX_COMPILER_LAUNCHER="${CMAKE_CXX_COMPILER_LAUNCHER:-}" >/dev/null
cmake --build build-wasm --target forge_web
echo "web.sh: wasm build took $((SECONDS - start)) s;" \
     "forge_wasm.wasm $(stat -c %s build-wasm/forge_wasm.wasm) bytes, forge_wasm.js $(stat -c %s build-wasm/forge_wasm.js) bytes"
((build_only)) && exit 0
exec node web/serve.mjs --port "$port" --models "$models" --build build-wasm
