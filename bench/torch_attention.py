#!/usr/bin/env python3
"""PyTorch counterpart of `forge bench attention`: scaled_dot_product_attention
in f32 on CUDA at the same shapes (GPT-2 124M: 12 heads, head_dim 64;
SmolLM2-360M: 15 query heads, 5 KV heads, head_dim 64), a causal prefill of
--seq tokens and a one-token decode over a --seq-entry KV cache, and the
attention of a fine-tuning step at B4 x T512 (causal) for SmolLM2-135M (9
query heads, 3 KV heads) and SmolLM2-360M; forward and backward. Prints JSON with the fields and FLOP counts forge uses: 4 * D flops
per visible (query, key) pair forward, 10 * D backward."""
import argparse
import json
import time

import torch
import torch.nn.functional as F


def timed(fn, min_iters=3, min_seconds=0.5, batch=10):
    # As forge bench attention times its calls: launched back to back, one
    # synchronize every `batch` calls.
    fn()
    torch.cuda.synchronize()
    iters, start = 0, time.perf_counter()
    while iters < min_iters or time.perf_counter() - start < min_seconds:
        for _ in range(batch):
            fn()
        iters += batch
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / iters


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device(args.device)
    gpt2, smol135, smol360 = ("gpt2-124m", 12, 12, 64), ("smollm2-135m", 9, 3, 64), ("smollm2-360m", 15, 5, 64)
    prefill, decode = ("prefill", 1, args.seq, args.seq, 0), ("decode", 1, 1, args.seq + 1, args.seq)
    train = ("train", 4, 512, 512, 0)
    cases = [(gpt2, prefill), (gpt2, decode), (smol360, prefill), (smol360, decode), (smol135, train), (smol360, train)]
    results = []
    for (name, heads, kv_heads, dim), (phase, batch, sq, sk, offset) in cases:
        # forge's layout is [batch, seq, heads, dim]; SDPA wants [batch, heads, seq, dim].
        q = torch.randn(batch, heads, sq, dim, device=dev, requires_grad=True)
        k = torch.randn(batch, kv_heads, sk, dim, device=dev, requires_grad=True)
        v = torch.randn(batch, kv_heads, sk, dim, device=dev, requires_grad=True)
        # Query i sits at position offset + i and sees keys j <= offset + i: a
        # causal square for the prefill and the training step, every key for the decode.
        causal = phase != "decode"
        group = heads // kv_heads

        def fwd():
            try:
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=group > 1)
            except TypeError:  # torch < 2.5: no enable_gqa
                kk, vv = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
                return F.scaled_dot_product_attention(q, kk, vv, is_causal=causal)

        out = fwd()
        grad = torch.randn_like(out)

        def bwd():
            torch.autograd.grad(out, (q, k, v), grad, retain_graph=True)

        with torch.no_grad():
            fwd_s = timed(fwd)
        bwd_s = timed(bwd)
        pairs = batch * heads * sum(min(sk, offset + i + 1) for i in range(sq))
        results.append({
            "device": torch.cuda.get_device_name(dev), "model": name, "phase": phase, "batch": batch, "heads": heads,
            "kv_heads": kv_heads, "head_dim": dim, "seq_q": sq, "seq_k": sk, "causal": True,
            "fwd_ms": fwd_s * 1e3, "fwd_tflops": 4 * dim * pairs / fwd_s / 1e12,
            "bwd_ms": bwd_s * 1e3, "bwd_tflops": 10 * dim * pairs / bwd_s / 1e12,
        })
    print(json.dumps({"bench": "attention", "framework": "torch " + torch.__version__, "results": results}, indent=2))


if __name__ == "__main__":
    main()
