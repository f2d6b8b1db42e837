#!/usr/bin/env bash
# The main job: set up, then show the devices and run a computation on each.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build/forge info
build/forge demo --device all
# A generation with a small random-init GPT-2 the repository can make itself (no download).
[[ -f build/gpt2-tiny/model.safetensors ]] ||
  build/forge init --arch gpt2 --preset tiny --out build/gpt2-tiny --tokenizer tests/fixtures/tokenizer-gpt2/tokenizer.json
build/forge generate --model build/gpt2-tiny --prompt "The meaning of life is" -n 24 --device auto --json
