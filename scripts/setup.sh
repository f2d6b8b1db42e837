#!/usr/bin/env bash
# Installs what forge needs on Debian 12 (idempotent), then configures and
# builds into build/. Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  g++ cmake ninja-build pkg-config git ca-certificates
  libopenblas-dev nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev
  libcurl4-openssl-dev libssl-dev   # model downloads from the Hugging Face hub, their sha256 checks
  libcpp-httplib-dev                # forge serve's HTTP server; the local hub server of the tests
  libvulkan1 chromium-common        # the Vulkan loader; SwiftShader (a CPU Vulkan driver) for machines without a GPU
  clang libclang-rt-14-dev          # libFuzzer for the parser fuzz test
  ccache                            # the CPU-only build of scripts/test.sh reuses the main build's objects
  nodejs npm                        # npm fetches Dawn (package.json)
  fortunes                          # public-domain English text for the tokenizer benchmark and training
  libonig-dev libicu-dev            # tokenizer: Split / Replace regexes, Unicode normalization
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  # nodejs/npm may come from elsewhere than Debian: a working `npm` is enough.
  if [[ $p == nodejs || $p == npm ]] && command -v npm >/dev/null 2>&1; then continue; fi
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Dawn: the prebuilt shared library inside the pinned npm package.
if [[ ! -f node_modules/bun-webgpu-linux-x64/libwebgpu_wrapper.so ]]; then
  echo "setup: fetching Dawn with npm ci"
  npm ci --no-audit --no-fund --loglevel=error
fi

# ccache, for a build folder configured here for the first time: the
# CPU-only build (scripts/test-extra.sh) compiles the same files with the
# same flags and takes them from the cache.
source scripts/ccache-env.sh
cmake --preset default >/dev/null
cmake --build --preset default
