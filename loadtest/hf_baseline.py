#!/usr/bin/env python3
"""hf_baseline.py — the baseline of the serving benchmark: Hugging Face transformers' generate() on the model
directories loadtest/run-benchmark.sh makes (OUTDIR/models/<model>), as a user would run it: torch fp16 on CUDA,
greedy, exactly 128 new tokens (min_new_tokens = max_new_tokens) after 128 random prompt token ids, at batch 1 and
batch 32, one warm-up run each, then one timed run. Prints, per model and batch size:

  BASELINE <model> batch <b>: <tok/s> output tokens/s

where output tokens/s = batch x new tokens / the timed generate() call's wall time (prefill included, as a server's
output tok/s counts it). Used on the GPU host only: needs torch and transformers (not in CI).

usage: python3 loadtest/hf_baseline.py MODEL_DIR [MODEL_DIR ...] [--batches 1,32] [--prompt-len 128]
                                       [--new-tokens 128] [--seed 0]
"""
import argparse
import os
import time

import torch
import transformers
from transformers import AutoModelForCausalLM


def run(model, ids, new_tokens):
    """One generate() call; returns its wall time in seconds (the GPU synchronized before and after)."""
    torch.cuda.synchronize()
    t = time.perf_counter()
    out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=new_tokens,
                         min_new_tokens=new_tokens, pad_token_id=0)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t
    got = out.shape[1] - ids.shape[1]
    assert got == new_tokens, "generated %d tokens, want %d" % (got, new_tokens)
    return dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model_dirs", nargs="+", metavar="MODEL_DIR")
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    print("# torch %s, transformers %s, %s" % (torch.__version__, transformers.__version__,
                                               torch.cuda.get_device_name(0)), flush=True)
    for d in args.model_dirs:
        name = os.path.basename(os.path.normpath(d))
        model = AutoModelForCausalLM.from_pretrained(d, torch_dtype=torch.float16).to("cuda").eval()
        g = torch.Generator().manual_seed(args.seed)
        for b in batches:
            ids = torch.randint(0, model.config.vocab_size, (b, args.prompt_len), generator=g).to("cuda")
            with torch.inference_mode():
                run(model, ids, args.new_tokens)  # warm-up: kernels, allocator, caches
                dt = run(model, ids, args.new_tokens)
            print("BASELINE %s batch %d: %.1f output tokens/s" % (name, b, b * args.new_tokens / dt), flush=True)
        del model
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
