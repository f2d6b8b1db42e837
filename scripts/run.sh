#!/usr/bin/env bash
# The main job: set up, show the devices, compute on each, then generate text.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build/forge info
build/forge demo --device all
# Text from the Llama-architecture model that forge trained on Debian's fortunes and the
# King James Bible, 4-bit (models/llama-fortunes).
build/forge generate --model models/llama-fortunes --prompt "The meaning of life is" -n 60 \
  --temperature 0.8 --top-k 40 --seed 1 --device auto
