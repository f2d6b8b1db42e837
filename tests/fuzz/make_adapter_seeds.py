#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_adapter (tests/fuzz/corpus_adapter/): each
seed is adapter_config.json, a NUL byte, then adapter_model.safetensors, for
the one-layer model of fuzz_adapter.cpp. The first config is the one PEFT
wrote for tests/fixtures/llama3-tiny/adapter; the tensors follow PEFT's key
names and layout (lora_A [r, in], lora_B [out, r])."""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus_adapter")
PEFT_CONFIG = os.path.join(HERE, "..", "fixtures", "llama3-tiny", "adapter", "adapter_config.json")
MODULES = {"self_attn.q_proj": (8, 8), "self_attn.k_proj": (8, 4), "self_attn.v_proj": (8, 4),
           "self_attn.o_proj": (8, 8), "mlp.gate_proj": (8, 12), "mlp.up_proj": (8, 12), "mlp.down_proj": (12, 8)}
DTYPES = {"F32": ("<f", 4), "F16": ("<e", 2), "BF16": (None, 2)}


def encode(dtype, values):
    fmt, size = DTYPES[dtype]
    if fmt:
        return b"".join(struct.pack(fmt, v) for v in values)
    return b"".join(struct.pack("<f", v)[2:] for v in values)  # bf16: the high half of f32


def safetensors(tensors, dtype="F32"):
    header, data = {"__metadata__": {"format": "pt"}}, b""
    for name in sorted(tensors):
        shape = tensors[name]
        n = shape[0] * shape[1]
        raw = encode(dtype, [((i * 7) % 13 - 6) / 16.0 for i in range(n)])
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def weights(r, targets, transpose=False):
    out = {}
    for module, (i, o) in MODULES.items():
        if module.split(".")[1] not in targets:
            continue
        key = "base_model.model.model.layers.0." + module
        out[key + ".lora_A.weight"] = [i, r] if transpose else [r, i]
        out[key + ".lora_B.weight"] = [o, r]
    return out


def seed(name, config, tensors, dtype="F32"):
    text = config if isinstance(config, str) else json.dumps(config, indent=1)
    blob = text.encode() + (b"\0" + safetensors(tensors, dtype) if tensors is not None else b"")
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(blob)


def main():
    os.makedirs(OUT, exist_ok=True)
    peft = json.load(open(PEFT_CONFIG))
    all7 = peft["target_modules"]
    seed("peft_all_modules_f32", peft, weights(peft["r"], all7))
    attn = {"peft_type": "LORA", "r": 2, "lora_alpha": 4, "use_rslora": True, "target_modules": ["q_proj", "v_proj"],
            "bias": "none", "rank_pattern": {}, "modules_to_save": None}
    seed("attn_rslora_bf16", attn, weights(2, ["q_proj", "v_proj"]), "BF16")
    seed("mlp_f16", {"r": 1, "lora_alpha": 2.5, "target_modules": ["gate_proj", "up_proj", "down_proj"]},
         weights(1, ["gate_proj", "up_proj", "down_proj"]), "F16")
    seed("bad_no_weights_file", peft, None)
    seed("bad_transposed_a", attn, weights(2, ["q_proj", "v_proj"], transpose=True))
    seed("bad_extra_key", dict(attn, target_modules=["q_proj"]), weights(2, ["q_proj", "v_proj"]))
    seed("bad_dora", dict(attn, use_dora=True), weights(2, ["q_proj", "v_proj"]))
    seed("bad_float_rank", dict(attn, r=2.5), weights(2, ["q_proj", "v_proj"]))


if __name__ == "__main__":
    main()
