#!/usr/bin/env bash
# The main job: set up, then show the devices and run a computation on each.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build/forge info
build/forge demo --device all
