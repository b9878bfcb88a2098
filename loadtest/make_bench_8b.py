#!/usr/bin/env python3
"""bench-8b: a Llama-3-8B-shaped model (hidden 4096, MLP 14336, 32 layers, 32 query / 8 KV heads of 128) with random
fp16 weights and GPT-2's 50,257-token vocabulary and tokenizer (so that llama.cpp's GGUF converter knows the
tokenizer), and an untied head whose rows are zero for every token that is not printable ASCII (llama-server's
stream rejects the invalid UTF-8 random byte-level tokens make). The body's bytes per step are Llama-3-8B's; the
head is 0.4 GB instead of 1.05 GB. Four safetensors shards and their index, config.json, the tokenizer files.
usage: make_bench_8b.py OUT_DIR GPT2_TOKENIZER_JSON     (torch + safetensors; a GPU makes it faster)"""
import json
import os
import shutil
import sys

import torch
from safetensors.torch import save_file

if len(sys.argv) != 3:
    sys.exit(__doc__)
out, tokenizer = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
V, H, I, L, NQ, NKV, HD = 50257, 4096, 14336, 32, 32, 8, 128
cfg = {"architectures": ["LlamaForCausalLM"], "attention_bias": False, "bos_token_id": 50256, "eos_token_id": 50256,
       "head_dim": HD, "hidden_act": "silu", "hidden_size": H, "intermediate_size": I,
       "max_position_embeddings": 8192, "mlp_bias": False, "model_type": "llama", "num_attention_heads": NQ,
       "num_hidden_layers": L, "num_key_value_heads": NKV, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
       "tie_word_embeddings": False, "torch_dtype": "float16", "vocab_size": V}
json.dump(cfg, open(f"{out}/config.json", "w"), indent=2)
shutil.copy(tokenizer, f"{out}/tokenizer.json")
json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
           "model_max_length": 8192, "add_bos_token": False}, open(f"{out}/tokenizer_config.json", "w"))
json.dump({"bos_token_id": 50256, "eos_token_id": 50256}, open(f"{out}/generation_config.json", "w"))

device = "cuda" if torch.cuda.is_available() else "cpu"
g = torch.Generator(device=device).manual_seed(0)


def w(*shape, sd=0.02):
    return (torch.randn(*shape, generator=g, device=device) * sd).half().cpu()


def ones(n):
    return torch.ones(n, dtype=torch.float16)


# The head: printable-ASCII tokens only (GPT-2's byte-level alphabet maps printable bytes to themselves).
vocab = json.load(open(tokenizer))["model"]["vocab"]
bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
cs, n = bs[:], 0
for b in range(256):
    if b not in bs:
        bs.append(b)
        cs.append(256 + n)
        n += 1
unbyte = {chr(c): b for b, c in zip(bs, cs)}
ascii_ok = torch.zeros(V, dtype=torch.bool)
for tok, i in vocab.items():
    ascii_ok[i] = all(32 <= b < 127 or b in (9, 10) for b in (unbyte.get(ch, 255) for ch in tok))
head = w(V, H)
head[~ascii_ok] = 0

shards = [{"model.embed_tokens.weight": w(V, H)}, {}, {}, {"model.norm.weight": ones(H), "lm_head.weight": head}]
for layer in range(L):
    p = f"model.layers.{layer}."
    shards[layer * 4 // L].update({
        p + "input_layernorm.weight": ones(H), p + "post_attention_layernorm.weight": ones(H),
        p + "self_attn.q_proj.weight": w(NQ * HD, H), p + "self_attn.k_proj.weight": w(NKV * HD, H),
        p + "self_attn.v_proj.weight": w(NKV * HD, H), p + "self_attn.o_proj.weight": w(H, NQ * HD),
        p + "mlp.gate_proj.weight": w(I, H), p + "mlp.up_proj.weight": w(I, H), p + "mlp.down_proj.weight": w(H, I)})
    print(f"layer {layer + 1} of {L}", file=sys.stderr, flush=True)
index, total = {}, 0
for k, tensors in enumerate(shards):
    name = f"model-{k + 1:05d}-of-{len(shards):05d}.safetensors"
    save_file(tensors, f"{out}/{name}", metadata={"format": "pt"})
    for t_name, t in tensors.items():
        index[t_name] = name
        total += t.numel() * 2
json.dump({"metadata": {"total_size": total}, "weight_map": index}, open(f"{out}/model.safetensors.index.json", "w"),
          indent=2)
print(f"bench-8b: {sum(t.numel() for s in shards for t in s.values()):,} parameters, {int(ascii_ok.sum())} ASCII "
      f"tokens of {V}, in {out}")
