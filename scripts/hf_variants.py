"""forge against Hugging Face transformers on checkpoints that no fixture has: random,
small models of every family with the settings released checkpoints vary (head counts
down to MQA, untied heads, head_dim apart from hidden / heads, q/k/v and MLP biases,
other epsilons, rope types and both config styles, sliding windows shorter than the
prompt, f32 / bf16 / f16 storage, sharded folders, MLX 2/4/8-bit at group sizes
32/64/128 with per-layer overrides and unquantized layers). For each: HF's logits,
loss and 24 greedy tokens (float32 from the stored weights) in OUT_DIR/NAME/
reference.safetensors (the names of tests/fixtures), then `forge eval` and `forge
generate` (with and without the KV cache) on each device given, and a line of JSON
per (model, device) with the largest logit difference, the loss difference and
whether the ids match, and for dense models the largest difference of 10 AdamW
steps' losses (`forge train --fixed-batch`), and of a LoRA adapter on every
projection, applied (`forge eval --adapter`) and trained alone for 10 steps
(`forge train --adapter`); the last line counts the failures
(the issues' tolerances: logits 1e-4 on the CPU, 1e-3 on WebGPU, ids identical;
losses 2e-3 / 5e-3, as the training golden tests).

usage: python3 scripts/hf_variants.py FORGE OUT_DIR [DEVICE ...]   (needs torch + transformers)
"""
import copy, json, os, subprocess, sys, tempfile
import torch
from safetensors.torch import save_file, load_file
from transformers import (LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM,
                          MistralConfig, MistralForCausalLM)

forge, out = sys.argv[1], sys.argv[2]
devices = sys.argv[3:] or ["cpu"]
V, PROMPT = 1000, [464, 616, 286, 204, 318, 13]
torch.use_deterministic_algorithms(True)


def mlx_quantize(w, group_size, bits):
    """MLX affine quantization (mlx.core.quantize): groups along the input dim,
    w ~= q * scale + bias, q packed little-endian into uint32 words."""
    out_f, in_f = w.shape
    n_bins = (1 << bits) - 1
    wg = w.reshape(out_f, in_f // group_size, group_size).double()
    w_max, w_min = wg.amax(-1, keepdim=True), wg.amin(-1, keepdim=True)
    mask = w_min.abs() > w_max.abs()
    scales = torch.clamp((w_max - w_min) / n_bins, min=1e-7)
    scales = torch.where(mask, scales, -scales)
    edge = torch.where(mask, w_min, w_max)
    q0 = torch.round(edge / scales)
    scales = torch.where(q0 != 0, edge / q0, scales)
    biases = torch.where(q0 == 0, torch.zeros_like(q0), edge)
    q = torch.clamp(torch.round((wg - biases) / scales), 0, n_bins).to(torch.int64).reshape(out_f, in_f)
    per = 32 // bits
    qw = q.reshape(out_f, in_f // per, per)
    packed = torch.zeros(out_f, in_f // per, dtype=torch.int64)
    for i in range(per):
        packed |= qw[:, :, i] << (bits * i)
    scales = scales.squeeze(-1).to(torch.bfloat16)
    biases = biases.squeeze(-1).to(torch.bfloat16)
    deq = (q.double() * scales.double().repeat_interleave(group_size, -1)
           + biases.double().repeat_interleave(group_size, -1)).float()
    return packed.to(torch.uint32), scales, biases, deq


def train_losses(model, ids, steps=10):
    """HF's AdamW on one batch, as the fixtures' training references: lr 1e-3, betas
    (0.9, 0.999), eps 1e-8, weight decay 0.01 on every parameter, labels = input_ids."""
    m = copy.deepcopy(model).float().train()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    losses = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = m(ids, labels=ids).loss
        loss.backward(); opt.step(); losses.append(loss.item())
    return losses


LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


class LoraLinear(torch.nn.Module):
    """PEFT's LoRA forward: y = W x (+ b) + (alpha / r) B A x."""
    def __init__(self, base, r, alpha, gen):
        super().__init__()
        self.base, self.scaling = base, alpha / r
        self.A = torch.nn.Parameter(torch.randn(r, base.in_features, generator=gen) * 0.05)
        self.B = torch.nn.Parameter(torch.randn(base.out_features, r, generator=gen) * 0.05)

    def forward(self, x):
        return self.base(x) + (x @ self.A.t() @ self.B.t()) * self.scaling


def lora_reference(model, ids, d, r=4, alpha=8):
    """A PEFT-layout adapter on every projection (B non-zero, so it counts from the
    first step) in d/adapter; returns the logits with it and the losses of 10 AdamW
    steps (lr 1e-3, no weight decay) that train only the adapter."""
    m = copy.deepcopy(model).float()
    for p in m.parameters():
        p.requires_grad_(False)
    gen = torch.Generator().manual_seed(7)
    adapters = {}
    for name, mod in list(m.named_modules()):
        for t in LORA_TARGETS:
            if isinstance(getattr(mod, t, None), torch.nn.Linear):
                adapters[f"{name}.{t}"] = LoraLinear(getattr(mod, t), r, alpha, gen)
                setattr(mod, t, adapters[f"{name}.{t}"])
    ad = os.path.join(d, "adapter")
    os.makedirs(ad, exist_ok=True)
    state = {}
    for n, ll in adapters.items():
        state[f"base_model.model.{n}.lora_A.weight"] = ll.A.detach().clone().contiguous()
        state[f"base_model.model.{n}.lora_B.weight"] = ll.B.detach().clone().contiguous()
    save_file(state, os.path.join(ad, "adapter_model.safetensors"))
    json.dump({"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": r, "lora_alpha": alpha, "lora_dropout": 0.0,
               "target_modules": LORA_TARGETS, "bias": "none", "fan_in_fan_out": False, "use_rslora": False},
              open(os.path.join(ad, "adapter_config.json"), "w"), indent=1)
    m.eval()
    with torch.no_grad():
        logits = m(ids).logits.float()
    m.train()
    params = [p for ll in adapters.values() for p in (ll.A, ll.B)]
    opt = torch.optim.AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    losses = []
    for _ in range(10):
        opt.zero_grad(set_to_none=True)
        loss = m(ids, labels=ids).loss
        loss.backward(); opt.step(); losses.append(loss.item())
    return ad, logits, losses


def reference(model, ids, d, train=False):
    model = model.float().eval()
    extra = {"train_losses": torch.tensor(train_losses(model, ids))} if train else {}
    lora = lora_reference(model, ids, d) if train else None
    with torch.no_grad():
        o = model(ids, labels=ids)
        gen = model.generate(torch.tensor([PROMPT]), max_new_tokens=24, do_sample=False, use_cache=True,
                             pad_token_id=0)
    greedy = gen[0, len(PROMPT):]
    # The same names as the reference fixtures of the tests, so a folder can become one.
    save_file({"input_ids": ids.to(torch.int32), "logits": o.logits.float().contiguous(),
               "loss": o.loss.reshape(1).float(), "generate_prompt": torch.tensor(PROMPT, dtype=torch.int32),
               "generate_greedy": greedy.to(torch.int32), **extra}, os.path.join(d, "reference.safetensors"))
    return o.logits.float(), float(o.loss), greedy.tolist(), extra.get("train_losses"), lora


def dense(name, cls, cfg, dtype, T=16, B=2, seed=0, shard=None, patch=None):
    torch.manual_seed(seed)
    m = cls(cfg)
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(p.to(dtype).float())
    d = os.path.join(out, name)
    m.to(dtype).save_pretrained(d, safe_serialization=True, **({"max_shard_size": shard} if shard else {}))
    if patch:
        cp = os.path.join(d, "config.json")
        c = json.load(open(cp)); patch(c); json.dump(c, open(cp, "w"), indent=1)
    ids = torch.randint(0, V, (B, T), generator=torch.Generator().manual_seed(seed + 1))
    return d, reference(m.float(), ids, d, train=True)


def mlx(name, cls, cfg, group_size, bits, overrides, T=12, seed=0):
    """overrides: {module path: {"group_size", "bits"} or False (kept in bf16)}."""
    torch.manual_seed(seed)
    m = cls(cfg)
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    tensors, deq = {}, {}
    for k, v in m.state_dict().items():
        base = k[:-len(".weight")] if k.endswith(".weight") else None
        if k == "lm_head.weight" and cfg.tie_word_embeddings:
            continue
        ov = overrides.get(base, {"group_size": group_size, "bits": bits})
        if base and v.dim() == 2 and "norm" not in k and ov is not False:
            pk, sc, bi, w = mlx_quantize(v.float(), ov["group_size"], ov["bits"])
            tensors[k], tensors[base + ".scales"], tensors[base + ".biases"], deq[k] = pk, sc, bi, w
        else:
            tensors[k] = v.to(torch.bfloat16)
            deq[k] = tensors[k].float()
    if cfg.tie_word_embeddings:
        deq["lm_head.weight"] = deq["model.embed_tokens.weight"]
    save_file({k: v.contiguous() for k, v in tensors.items()}, os.path.join(d, "model.safetensors"),
              metadata={"format": "mlx"})
    c = cfg.to_dict()
    c["architectures"] = [cls.__name__]
    c["quantization"] = {"group_size": group_size, "bits": bits, **overrides}
    c["torch_dtype"] = "bfloat16"
    json.dump(c, open(os.path.join(d, "config.json"), "w"), indent=1)
    ref = cls(cfg)
    missing, unexpected = ref.load_state_dict(deq, strict=False)
    assert not unexpected and all("rotary" in x for x in missing), (missing, unexpected)
    ids = torch.randint(0, V, (1, T), generator=torch.Generator().manual_seed(seed + 1))
    return d, reference(ref, ids, d)


def rope_top_level(c):  # the released checkpoints' style: rope_theta + rope_scaling at the top level
    rp = c.pop("rope_parameters", None) or {}
    c["rope_theta"] = rp.get("rope_theta", 10000.0)
    if rp.get("rope_type", "default") != "default":
        c["rope_scaling"] = {k: v for k, v in rp.items() if k != "rope_theta"}


small = dict(vocab_size=V, bos_token_id=0, eos_token_id=0, max_position_embeddings=512)
L = lambda **kw: LlamaConfig(**{**small, **kw})
cases = [
    dense("llama-mqa-untied-biases", LlamaForCausalLM,
          L(hidden_size=96, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=1, head_dim=40, attention_bias=True, mlp_bias=True, rms_norm_eps=1e-6,
            tie_word_embeddings=False, rope_parameters={"rope_type": "default", "rope_theta": 5000.0}),
          torch.float32, seed=1, patch=rope_top_level),
    dense("llama-linear-rope-f16-sharded", LlamaForCausalLM,
          L(hidden_size=64, intermediate_size=128, num_hidden_layers=3, num_attention_heads=8,
            num_key_value_heads=4, rms_norm_eps=1e-5, tie_word_embeddings=True,
            rope_parameters={"rope_type": "linear", "rope_theta": 10000.0, "factor": 4.0}),
          torch.float16, seed=2, shard="100KB"),
    dense("llama-linear-rope-top-level", LlamaForCausalLM,
          L(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
            num_key_value_heads=2, rms_norm_eps=1e-5, tie_word_embeddings=False,
            rope_parameters={"rope_type": "linear", "rope_theta": 20000.0, "factor": 2.0}),
          torch.bfloat16, seed=3, patch=rope_top_level),
    dense("llama3-rope-parameters-style", LlamaForCausalLM,
          L(hidden_size=128, intermediate_size=192, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, rms_norm_eps=1e-5, tie_word_embeddings=True,
            rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0,
                             "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                             "original_max_position_embeddings": 16}),
          torch.bfloat16, T=40, seed=4),
    dense("llama3-rope-top-level-mqa", LlamaForCausalLM,
          L(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=1, rms_norm_eps=1e-6, tie_word_embeddings=False,
            rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                             "low_freq_factor": 2.0, "high_freq_factor": 8.0,
                             "original_max_position_embeddings": 32}),
          torch.float32, T=48, seed=5, patch=rope_top_level),
    dense("qwen2-untied-f32", Qwen2ForCausalLM,
          Qwen2Config(**small, hidden_size=96, intermediate_size=192, num_hidden_layers=2, num_attention_heads=6,
                      num_key_value_heads=2, rms_norm_eps=1e-5, tie_word_embeddings=False,
                      use_sliding_window=False, rope_parameters={"rope_type": "default", "rope_theta": 1e6}),
          torch.float32, seed=6, patch=rope_top_level),
    dense("qwen2-mqa-bf16", Qwen2ForCausalLM,
          Qwen2Config(**small, hidden_size=64, intermediate_size=96, num_hidden_layers=3, num_attention_heads=4,
                      num_key_value_heads=1, rms_norm_eps=1e-6, tie_word_embeddings=True,
                      use_sliding_window=False),
          torch.bfloat16, seed=7),
    dense("qwen2-sliding-window-layers", Qwen2ForCausalLM,
          Qwen2Config(**small, hidden_size=64, intermediate_size=128, num_hidden_layers=3, num_attention_heads=4,
                      num_key_value_heads=2, rms_norm_eps=1e-6, tie_word_embeddings=True,
                      use_sliding_window=True, sliding_window=4, max_window_layers=1),
          torch.float32, T=14, seed=14),
    dense("mistral-window5-mqa", MistralForCausalLM,
          MistralConfig(**small, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                        num_key_value_heads=1, head_dim=16, sliding_window=5, rms_norm_eps=1e-5,
                        tie_word_embeddings=True),
          torch.bfloat16, T=23, B=2, seed=8),
    dense("mistral-window3-untied-f32", MistralForCausalLM,
          MistralConfig(**small, hidden_size=96, intermediate_size=160, num_hidden_layers=2, num_attention_heads=6,
                        num_key_value_heads=3, sliding_window=3, rms_norm_eps=1e-6, tie_word_embeddings=False,
                        rope_parameters={"rope_type": "default", "rope_theta": 1e6}),
          torch.float32, T=17, seed=9, patch=rope_top_level),
    mlx("llama-mlx4-g32-mixed", LlamaForCausalLM,
        L(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
          rms_norm_eps=1e-5, tie_word_embeddings=True), 32, 4,
        {"model.layers.0.mlp.down_proj": {"group_size": 64, "bits": 8},
         "model.layers.1.self_attn.v_proj": {"group_size": 128, "bits": 2},
         "model.layers.1.self_attn.o_proj": False}, seed=10),
    mlx("llama-mlx8-g128-untied", LlamaForCausalLM,
        L(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1,
          rms_norm_eps=1e-6, tie_word_embeddings=False), 128, 8,
        {"lm_head": {"group_size": 64, "bits": 4}}, seed=11),
    mlx("qwen2-mlx2-g64", Qwen2ForCausalLM,
        Qwen2Config(**small, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, tie_word_embeddings=True, use_sliding_window=False), 64, 2,
        {"model.embed_tokens": {"group_size": 32, "bits": 8}}, seed=12),
    mlx("mistral-mlx4-window4", MistralForCausalLM,
        MistralConfig(**small, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, sliding_window=4, tie_word_embeddings=False), 64, 4, {}, seed=13),
]

def run_forge(args, as_json=True):
    """(forge's last stdout line as JSON, or its whole stdout; None) when it succeeds,
    (None, the last 400 characters of its error) when it fails."""
    r = subprocess.run([forge] + args, capture_output=True, text=True)
    if r.returncode:
        return None, (r.stderr or r.stdout).strip()[-400:]
    return (json.loads(r.stdout.strip().splitlines()[-1]) if as_json else r.stdout), None


def check_eval(row, tag, d, dev, want_logits, want_loss, extra=()):
    """`forge eval` (with `extra` options) beside HF's logits and loss: the largest
    differences into row, and whether they are within the device's tolerance."""
    o = os.path.join(d, f"{tag}-{dev}.safetensors")
    _, err = run_forge(["eval", "--model", d, *extra, "--input", os.path.join(d, "reference.safetensors"),
                        "--output", o, "--device", dev], as_json=False)
    if err:
        row[f"{tag}_eval_error"] = err
        return False
    r = load_file(o)
    os.remove(o)
    tol = 1e-4 if dev == "cpu" else 1e-3
    row[f"{tag}_logits_max_diff"] = float((r["logits"] - want_logits).abs().max())
    ok = row[f"{tag}_logits_max_diff"] <= tol
    if want_loss is not None:
        row[f"{tag}_loss_diff"] = abs(float(r["loss"][0]) - want_loss)
        ok = ok and row[f"{tag}_loss_diff"] <= tol
    return ok


def check_train(row, tag, d, dev, want_losses, extra):
    """10 steps of `forge train --fixed-batch` (with `extra` options) beside HF's losses,
    within the training golden tests' tolerances."""
    out, err = run_forge(["train", "--model", d, *extra, "--fixed-batch", os.path.join(d, "reference.safetensors"),
                           "--steps", "10", "--lr", "1e-3", "--json", "--device", dev, "--out", tempfile.mkdtemp()])
    if err:
        row[f"{tag}_train_error"] = err
        return False
    got = out["losses"]
    row[f"{tag}_losses_max_diff"] = max(abs(a - b) for a, b in zip(got, want_losses))
    return len(got) == 10 and row[f"{tag}_losses_max_diff"] <= (2e-3 if dev == "cpu" else 5e-3)


failed = 0
for d, (logits, loss, ids, losses, lora) in cases:
    for dev in devices:
        row = {"model": os.path.basename(d), "device": dev}
        ok = check_eval(row, "base", d, dev, logits, loss)
        for key, extra in (("ids_match", []), ("ids_match_no_cache", ["--no-cache"])):
            out, err = run_forge(["generate", "--model", d, "--prompt-ids", ",".join(map(str, PROMPT)), "-n", "24",
                                  "--greedy", "--json", "--device", dev] + extra)
            row[key] = err is None and out["ids"] == ids
            if err:
                row[key.replace("ids_match", "generate_error")] = err
            elif not row[key]:
                row[key.replace("ids_match", "ids")], row["hf_ids"] = out["ids"], ids
            ok = ok and row[key]
        if losses is not None:  # dense: 10 AdamW steps of full fine-tuning, as the training golden tests
            ok = check_train(row, "base", d, dev, losses.tolist(), ["--weight-decay", "0.01"]) and ok
        if lora is not None:  # the adapter applied (eval --adapter), then 10 steps training it alone
            ad, lora_logits, lora_losses = lora
            ok = check_eval(row, "lora", d, dev, lora_logits, None, ["--adapter", ad]) and ok
            ok = check_train(row, "lora", d, dev, lora_losses, ["--adapter", ad, "--weight-decay", "0"]) and ok
        row["ok"] = ok
        failed += not ok
        print(json.dumps(row), flush=True)
print(json.dumps({"variants": len(cases), "devices": devices, "failed": failed}))
