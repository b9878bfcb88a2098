#!/usr/bin/env python3
"""memory-plan.py — what fits on one GPU: a model directory's weights as the CUDA backend holds them (fp16, or with
the server's --quantization the linear layers' packed values and scales), its KV cache per token, and for N
concurrent sequences of L tokens the KV cache they need and whether weights + KV fit. Reads config.json and the
safetensors headers only (no weights, no GPU). deploy/g4dn.md has the T4's table.

usage: deploy/memory-plan.py MODEL_DIR [--gpu-gib 14.75] [--utilization 0.9] [--overhead-gib 0.5]
                             [--quantization none|int8|int4] [--quantize-lm-head] [--weight-bytes 2]
                             [--kv-bytes 2] [--block-size 16] [--seqs 1,16,64,256] [--lengths 1024,4096,...]

  --gpu-gib       the GPU's memory as CUDA reports it (14.75: a T4 with ECC on, as on g4dn)
  --utilization   the server's --gpu-memory-utilization (default 0.9): the share of that it may use
  --overhead-gib  what is not weights or KV: CUDA context, cuBLAS, the forward workspaces (an estimate)
  --quantization  the server's --quantization: every linear layer of the blocks as int8 (a byte per weight and an
                  fp16 scale per output row) or int4 (half a byte per weight and two fp16 values, scale and zero
                  point, per output row and group of 128 inputs); embeddings and norms stay unquantized
  --quantize-lm-head  the server's flag: the output head quantized too (a tied head: a quantized copy)
  --weight-bytes  bytes per unquantized weight value: 2 on the GPU (fp16), 4 on the CPU (fp32)
  --kv-bytes      bytes per cached value: 2 on the GPU (fp16), 4 on the CPU (fp32)
"""
import argparse
import json
import os
import struct
import sys

GIB = 1 << 30
GROUP = 128  # int4 inputs per scale
NOT_LINEAR = ("embed_tokens.weight", "wte.weight", "wpe.weight", "lm_head.weight")


def tensors(model_dir):
    """(name, shape) of every tensor of every safetensors file (tied embeddings are stored once)."""
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index, encoding="utf-8") as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    for name in files:
        with open(os.path.join(model_dir, name), "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(n))
        for key, t in header.items():
            if key != "__metadata__":
                yield key, t["shape"]


def linear_bytes(rows, cols, quantization, plain_bytes):
    """A [rows][cols] (= [out][in]) linear weight as the backend stores it (src/quant.h's layouts)."""
    if quantization == "int8":
        return rows * cols + 2 * rows
    if quantization == "int4":
        return rows * cols // 2 + 4 * rows * (cols // GROUP)
    return rows * cols * plain_bytes


def weight_bytes(model_dir, config, quantization, quantize_lm_head, plain_bytes):
    """The weights' bytes on the backend: every 2-D tensor but the embeddings and the head is a block's linear
    (GPT-2's Conv1D weights are stored [in][out]); int4 needs every linear's input size to be a multiple of 128."""
    conv1d = config.get("model_type") == "gpt2"
    head = quantization if quantize_lm_head else "none"
    total = 0
    for name, shape in tensors(model_dir):
        size = 1
        for d in shape:
            size *= d
        if len(shape) != 2 or (name.endswith(NOT_LINEAR) and not name.endswith("lm_head.weight")):
            total += size * plain_bytes
            continue
        rows, cols = (shape[1], shape[0]) if conv1d and not name.endswith(NOT_LINEAR) else shape
        fmt = head if name.endswith("lm_head.weight") else quantization
        if fmt == "int4" and cols % GROUP:
            raise ValueError("%s: int4 quantizes groups of %d inputs, and the input size %d is not a multiple of %d"
                             % (name, GROUP, cols, GROUP))
        total += linear_bytes(rows, cols, fmt, plain_bytes)
    if head != "none" and config.get("tie_word_embeddings", True):  # the tied head's quantized copy
        vocab, hidden = config["vocab_size"], config.get("hidden_size", config.get("n_embd"))
        total += linear_bytes(vocab, hidden, head, plain_bytes)
    return total


def kv_bytes_per_token(config, value_bytes):
    """2 (K and V) x layers x KV heads x head_dim x bytes per value."""
    layers = config.get("num_hidden_layers", config.get("n_layer"))
    heads = config.get("num_attention_heads", config.get("n_head"))
    kv_heads = config.get("num_key_value_heads", heads)
    head_dim = config.get("head_dim") or config.get("hidden_size", config.get("n_embd")) // heads
    return 2 * layers * kv_heads * head_dim * value_bytes, (layers, kv_heads, head_dim)


def context_length(config):
    """The longest context the server serves: max_position_embeddings (n_positions for GPT-2), or a Mistral model's
    sliding window when smaller (the attention has no window mask; MistralConfig's default window is 4096)."""
    context = config.get("max_position_embeddings", config.get("n_positions"))
    window = config.get("sliding_window", 4096) if config.get("model_type") == "mistral" else None
    return min(context, window) if context and window else context or window


def main(argv):
    ap = argparse.ArgumentParser(usage=__doc__.split("\n\n")[1])
    ap.add_argument("model_dir")
    ap.add_argument("--gpu-gib", type=float, default=14.75)
    ap.add_argument("--utilization", type=float, default=0.9)
    ap.add_argument("--overhead-gib", type=float, default=0.5)
    ap.add_argument("--quantization", choices=("none", "int8", "int4"), default="none")
    ap.add_argument("--quantize-lm-head", action="store_true")
    ap.add_argument("--weight-bytes", type=int, default=2)
    ap.add_argument("--kv-bytes", type=int, default=2)
    ap.add_argument("--block-size", type=int, default=16)
    ap.add_argument("--seqs", default="1,16,64,256")
    ap.add_argument("--lengths", default="1024,2048,4096,8192,32768")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    a = ap.parse_args(argv)

    with open(os.path.join(a.model_dir, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    try:  # fp16 on the GPU, whatever the file's dtype
        weights = weight_bytes(a.model_dir, config, a.quantization, a.quantize_lm_head, a.weight_bytes)
    except ValueError as e:
        print("error: %s" % e, file=sys.stderr)
        return 1
    per_token, (layers, kv_heads, head_dim) = kv_bytes_per_token(config, a.kv_bytes)
    block = per_token * a.block_size
    budget = a.utilization * a.gpu_gib * GIB - a.overhead_gib * GIB
    context = context_length(config)
    rows = []
    for n in (int(x) for x in a.seqs.split(",")):
        for length in (int(x) for x in a.lengths.split(",")):
            if context and length > context:
                continue
            kv = n * -(-length // a.block_size) * block  # whole blocks per sequence
            rows.append({"seqs": n, "length": length, "kv_bytes": kv, "fits": weights + kv <= budget})
    plan = {"weights_bytes": weights, "quantization": a.quantization, "kv_bytes_per_token": per_token,
            "block_bytes": block,
            "budget_bytes": budget, "kv_tokens_max": int((budget - weights) // block) * a.block_size,
            "layers": layers, "kv_heads": kv_heads, "head_dim": head_dim, "context": context, "rows": rows}
    if a.json:
        print(json.dumps(plan))
        return 0
    print("%s: weights %.2f GiB (%s); KV per token 2 x %d layers x %d KV heads x %d head_dim x %d B = %d B"
          % (a.model_dir, weights / GIB, "fp16" if a.quantization == "none" else
             a.quantization + (" linears and head" if a.quantize_lm_head else " linears"),
             layers, kv_heads, head_dim, a.kv_bytes, per_token))
    print("budget for weights + KV: %.2f x %.2f GiB - %.2f GiB = %.2f GiB; KV room after the weights: %d tokens"
          % (a.utilization, a.gpu_gib, a.overhead_gib, budget / GIB, plan["kv_tokens_max"]))
    print("| sequences x length | KV cache | weights + KV | fits |")
    print("|---|---|---|---|")
    for r in rows:
        print("| %d x %d | %.2f GiB | %.2f GiB | %s |" % (r["seqs"], r["length"], r["kv_bytes"] / GIB,
                                                     (weights + r["kv_bytes"]) / GIB, "yes" if r["fits"] else "no"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
