#!/usr/bin/env python3
"""The peers FlashKernel's kernels and decode loop must beat, measured on the GPU host in the same run as ours
(tests/gpu/run-on-device.sh). Not used by CI.

  peers.py attention           PyTorch SDPA on bench_attention's shapes (prefill: the flash and cuDNN backends)
  peers.py linear_gelu         F.gelu(F.linear(x, w, b), approximate="tanh") on bench_linear_gelu's shapes
  peers.py generate MODEL_DIR  Hugging Face transformers generate(): batch 1, 128 prompt / 128 new tokens, greedy
  peers.py kernels --ours ours.json --json peers.json [--compile main|none|only] [--only KERNEL] [--resume]
                               eager, torch.compile, cuBLAS and SDPA on every row of bench_kernels' ours.json
                               (peers_kernels.py; `peers.py kernels --help`)
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
    from torch.nn.attention import SDPBackend, sdpa_kernel
    # Decode: one query per sequence over contiguous K/V (no paging), the shapes of bench_attention.
    for S, ctx, H, Hkv, D in ((64, 4096, 32, 8, 128), (16, 16384, 32, 8, 128), (1, 32768, 32, 8, 128),
                              (64, 4096, 32, 8, 64)):
        q = torch.randn(S, H, 1, D, device=dev, dtype=torch.float16)
        k = torch.randn(S, Hkv, ctx, D, device=dev, dtype=torch.float16)
        v = torch.randn_like(k)
        ms = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
        gbs = 2 * k.numel() * 2 / (ms * 1e-3) / 1e9
        print(f"PEER torch_sdpa decode {S}x{ctx} h{H}/{Hkv} d{D}: {ms:.3f} ms, {gbs:.0f} GB/s")
        del q, k, v
    # Prefill: 4 x 4096 tokens, causal, with the flash and cuDNN backends.
    for H, D in ((16, 128), (32, 64)):
        q = torch.randn(4, H, 4096, D, device=dev, dtype=torch.float16)
        k, v = torch.randn_like(q), torch.randn_like(q)
        flops = 4.0 * 4 * H * D * (4096 * 4097 / 2)
        for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            try:
                with sdpa_kernel(backend):
                    ms = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
                print(f"PEER torch_sdpa_{name} prefill 4x4096 h{H} d{D} causal: {ms:.3f} ms, "
                      f"{flops / (ms * 1e-3) / 1e12:.1f} TFLOP/s")
            except RuntimeError as e:
                print(f"PEER torch_sdpa_{name} prefill 4x4096 h{H} d{D} causal: unavailable ({str(e)[:80]})")


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
    if sys.argv[1] == "kernels":
        import argparse

        import peers_kernels
        parser = argparse.ArgumentParser(prog="peers.py kernels", description=peers_kernels.__doc__,
                                         formatter_class=argparse.RawDescriptionHelpFormatter)
        peers_kernels.add_arguments(parser)
        peers_kernels.run(parser.parse_args(sys.argv[2:]))
    elif sys.argv[1] == "attention":
        attention()
    elif sys.argv[1] == "linear_gelu":
        linear_gelu()
    else:
        generate(sys.argv[2])
