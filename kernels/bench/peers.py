#!/usr/bin/env python3
"""The peers FlashKernel's kernels and decode loop must beat, measured on the GPU host in the same run as ours
(tests/gpu/run-on-device.sh). Not used by CI.

  peers.py attention           PyTorch SDPA (flash backend where it applies) on bench_attention's shapes
  peers.py linear_gelu         F.gelu(F.linear(x, w, b), approximate="tanh") on bench_linear_gelu's shapes
  peers.py generate MODEL_DIR  Hugging Face transformers generate(): batch 1, 128 prompt / 128 new tokens, greedy
"""
import sys
import time

import torch
import torch.nn.functional as F


def median_ms(fn, warmup=5, reps=20):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[len(times) // 2]


def attention():
    dev = "cuda"
    # Decode: 64 sequences x 4096, 32 query / 8 KV heads, head_dim 128, contiguous KV (no paging).
    q = torch.randn(64, 32, 1, 128, device=dev, dtype=torch.float16)
    k = torch.randn(64, 8, 4096, 128, device=dev, dtype=torch.float16)
    v = torch.randn_like(k)
    ms = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
    gbs = 2 * k.numel() * 2 / (ms * 1e-3) / 1e9
    print(f"PEER torch_sdpa decode 64x4096 h32/8 d128: {ms:.3f} ms, {gbs:.0f} GB/s")
    # Prefill: 4 x 4096 tokens, 16 heads, head_dim 128, causal, the flash backend.
    q = torch.randn(4, 16, 4096, 128, device=dev, dtype=torch.float16)
    k, v = torch.randn_like(q), torch.randn_like(q)
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        ms = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
    flops = 4.0 * 4 * 16 * 128 * (4096 * 4097 / 2)
    print(f"PEER torch_sdpa_flash prefill 4x4096 h16 d128 causal: {ms:.3f} ms, {flops / (ms * 1e-3) / 1e12:.1f} TFLOP/s")


def linear_gelu():
    # CUDA graph of 20 calls, median of 15 replays / 20: as bench_linear_gelu times ours.
    for d_in, d_out in ((768, 3072), (1600, 6400)):
        w = torch.randn(d_out, d_in, device="cuda", dtype=torch.float16) * 0.05
        b = torch.randn(d_out, device="cuda", dtype=torch.float16) * 0.5
        for n in (1, 8, 64, 512, 4096):
            x = torch.randn(n, d_in, device="cuda", dtype=torch.float16)
            step = lambda: F.gelu(F.linear(x, w, b), approximate="tanh")
            step()
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for _ in range(20):
                    step()
            ms = median_ms(graph.replay, warmup=3, reps=15)
            print(f"PEER torch linear+gelu_tanh {n}x{d_in}->{d_out}: {ms * 1e3 / 20:.2f} us")


def generate(model_dir):
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float16).to("cuda").eval()
    vocab = model.config.vocab_size
    prompt = torch.randint(0, vocab - 2, (1, 128), device="cuda")
    kwargs = dict(max_new_tokens=128, min_new_tokens=128, do_sample=False, pad_token_id=0)
    with torch.no_grad():
        model.generate(prompt, **kwargs)  # warm-up
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = model.generate(prompt, **kwargs)
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
    n = out.shape[1] - prompt.shape[1]
    print(f"PEER transformers_generate batch1 {model_dir}: {n} tokens in {dt:.2f} s = {n / dt:.1f} tokens/s")


if __name__ == "__main__":
    if sys.argv[1] == "attention":
        attention()
    elif sys.argv[1] == "linear_gelu":
        linear_gelu()
    else:
        generate(sys.argv[2])
