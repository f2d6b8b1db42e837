#!/usr/bin/env bash
# forge's GPU benchmarks beside the PyTorch anchors of this folder, in one
# run on one machine (figures from different machines of one kind differ, so
# a comparison is only made within a run): what the README's "last full run"
# tables come from. Every command's whole output (forge's JSON, PyTorch's
# JSON) goes to one log, each under a "=== name" line; nothing is filtered.
#
#   bench/gpu_run.sh [OUT.log] [FORGE_BINARY [OLD_FORGE_BINARY]]
#
# With OLD_FORGE_BINARY, the fine-tuning and prefill benchmarks also run
# with it, alternating with the new one (a change measured beside the code
# before it). PyTorch's scripts need python3 with torch and transformers and
# a CUDA GPU; without them their sections say why and the rest runs.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-gpu_run.log}
forge=${2:-build/forge}
old=${3:-}
: >"$out"

section() {  # section NAME COMMAND...: the command's stdout and stderr under a header
  local name=$1
  shift
  echo "=== $name" >>"$out"
  local start=$SECONDS
  "$@" >>"$out" 2>&1
  echo "=== $name: exit $? after $((SECONDS - start)) s" >>"$out"
}

have_torch=1
python3 -c 'import torch, transformers; assert torch.cuda.is_available()' 2>/dev/null || have_torch=0
torch_llama() {
  if ((have_torch)); then python3 bench/torch_gpu_llama.py "$@"; else echo "no PyTorch with CUDA here"; fi
}
torch_gpt2() {
  if ((have_torch)); then python3 bench/torch_gpu_gpt2.py; else echo "no PyTorch with CUDA here"; fi
}

section info "$forge" info --json
# Fine-tuning (B4 x T512) beside PyTorch's AdamW step, alternating.
for arch in smollm2-360m smollm2-135m; do
  section "torch $arch" torch_llama "$arch"
  for round in 1 2; do
    section "forge train $arch ($round)" "$forge" bench train --arch "$arch" --shapes 4x512 --steps 5 --device webgpu --json
    [[ -n $old ]] && section "old forge train $arch ($round)" "$old" bench train --arch "$arch" --shapes 4x512 --steps 5 \
      --device webgpu --json
  done
done
section "forge train smollm2-360m LoRA r16" "$forge" bench train --arch smollm2-360m --shapes 4x512 --lora-rank 16 \
  --steps 5 --device webgpu --json
# GPT-2 124M: matrix products, training, prefill and decode.
section "torch gpt2" torch_gpt2
section "forge matmul" "$forge" bench matmul --sizes 1024 4096 8192 --layouts nn tn nt --device webgpu --json
section "forge train gpt2 4x64" "$forge" bench train --shapes 4x64 --steps 30 --device webgpu --json
section "forge train gpt2 8x1024" "$forge" bench train --shapes 8x1024 --steps 5 --device webgpu --json
for round in 1 2; do
  section "forge gpt2 ($round)" "$forge" bench gpt2 --decode-tokens 128 --device webgpu --json
  [[ -n $old ]] && section "old forge gpt2 ($round)" "$old" bench gpt2 --decode-tokens 128 --device webgpu --json
done
# The Llama family: prefill, decode, batched decode.
section "forge llm smollm2-360m" "$forge" bench llm --arch smollm2-360m --rows 8,32 --device webgpu --json
[[ -n $old ]] && section "old forge llm smollm2-360m" "$old" bench llm --arch smollm2-360m --device webgpu --json
section "forge llm llama3.2-1b q4" "$forge" bench llm --arch llama3.2-1b --dtype q4 --device webgpu --json
echo "wrote $out"
