"""peers_kernels.py — `peers.py kernels`: the PyTorch peers of every row of bench_kernels' ours.json, timed the way
bench_kernels times ours (docs/kernels.md): 100 warm-up calls, 1,000 timed, L2 flushed (a 2 x L2 buffer zeroed)
before each, a CUDA event pair around exactly one call. Writes peers.json after every row, so a run cut short keeps
what it measured (--resume goes on from there).

Peers: "eager" (the same computation in plain PyTorch ops) on every row; "compile" (torch.compile(mode=
"max-autotune") of that eager function) on main rows; "cublas" (F.linear on fp16 weights) on the linears;
"sdpa_flash" / "sdpa_cudnn" (dense q/k/v, causal) on prefill attention; "sdpa" (contiguous K/V) on decode."""
import json
import math
import os
import statistics
import subprocess
import time

import torch
import torch.nn.functional as F

# The model shapes of the spec (docs/kernels.md): hidden, heads, KV heads, head dim, FFN width, vocabulary.
MODELS = {
    "gpt2": dict(d=768, H=12, Hkv=12, D=64, ffn=3072, vocab=50257),
    "llama1b": dict(d=2048, H=32, Hkv=8, D=64, ffn=8192, vocab=128256),
    "llama8b": dict(d=4096, H=32, Hkv=8, D=128, ffn=14336, vocab=128256),
}
# (model, layer) -> (k = inputs, rows of W, epilogue, bias); gate_up's W is [gate | up] = 2 x ffn rows.
LAYERS = {
    ("gpt2", "c_attn"): (768, 2304, "plain", True),
    ("gpt2", "attn_proj"): (768, 768, "plain", True),
    ("gpt2", "c_fc"): (768, 3072, "gelu", True),
    ("gpt2", "mlp_proj"): (3072, 768, "plain", True),
    ("gpt2", "lm_head"): (768, 50257, "plain", False),
    ("llama1b", "qkv"): (2048, 3072, "plain", False),
    ("llama1b", "o"): (2048, 2048, "plain", False),
    ("llama1b", "gate_up"): (2048, 2 * 8192, "silu_mul", False),
    ("llama1b", "down"): (8192, 2048, "plain", False),
    ("llama1b", "lm_head"): (2048, 128256, "plain", False),
    ("llama8b", "qkv"): (4096, 6144, "plain", False),
    ("llama8b", "o"): (4096, 4096, "plain", False),
    ("llama8b", "gate_up"): (4096, 2 * 14336, "silu_mul", False),
    ("llama8b", "down"): (14336, 4096, "plain", False),
    ("llama8b", "lm_head"): (4096, 128256, "plain", False),
}
BLOCK = 16  # KV cache block size of the attention rows
QUANT_GROUP = 128  # src/quant.h
# INT4: the shift of input e (0..7) within its little-endian 32-bit word: nibble e / 2 (e even), 4 + e / 2 (e odd).
INT4_SHIFTS = (0, 16, 4, 20, 8, 24, 12, 28)
HF = torch.float16
DEVICE = "cuda"  # where the inputs live (a test may build them on "cpu" to check shapes)


def randn(*shape, scale=1.0):
    return torch.randn(*shape, device=DEVICE, dtype=HF) * scale


def randint(hi, n, lo=0):
    return torch.randint(lo, hi, (n,), device=DEVICE, dtype=torch.int32)


# ---- eager equivalents of the launchers (kernels/kernels.h) ----

def rms_norm_eager(residual, x, w, eps):
    residual.add_(x)
    h = residual.float()
    return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(HF)


def layer_norm_eager(residual, x, w, b, eps):
    residual.add_(x)
    return F.layer_norm(residual, (residual.shape[-1],), w, b, eps)


def rotate_and_store(qkv, positions, inv_freq, slots, k_cache, v_cache, H, Hkv, D):
    """RoPE rotate-half in fp32 on q and k (inv_freq given), then k and v into the paged caches at slots."""
    x = qkv.view(qkv.shape[0], H + 2 * Hkv, D)
    if inv_freq is not None:
        f = positions.float()[:, None, None] * inv_freq  # [n][1][D/2]
        cos, sin = f.cos(), f.sin()
        qk = x[:, :H + Hkv].float()
        a, b = qk[..., :D // 2], qk[..., D // 2:]
        x[:, :H + Hkv] = torch.cat((a * cos - b * sin, b * cos + a * sin), -1).to(HF)
    blk, off = slots // BLOCK, slots % BLOCK
    k_cache[blk, :, off] = x[:, H:H + Hkv]
    v_cache[blk, :, off] = x[:, H + Hkv:]


def rope_store_eager(H, Hkv, D):
    return lambda *a: rotate_and_store(*a, H, Hkv, D)


def sample_greedy_eager(logits):
    return torch.argmax(logits, -1)


def sample_top_p_eager(logits, u, temperature, top_p):
    """sampler_pick's rule: w = exp((l - max) / T); keep w >= the smallest weight that reaches top_p of the mass;
    the token where the running sum of kept w, in token order, first passes u * total."""
    l = logits.float()
    w = torch.exp((l - l.amax(-1, keepdim=True)) / temperature)
    sw = torch.sort(w, -1, descending=True).values
    cum = sw.cumsum(-1)
    j = torch.searchsorted(cum, top_p * cum[:, -1:]).clamp(max=w.shape[-1] - 1)
    kept = torch.where(w >= sw.gather(-1, j), w, 0.0).cumsum(-1)
    return torch.searchsorted(kept, u[:, None] * kept[:, -1:], right=True).clamp(max=w.shape[-1] - 1)[:, 0]


def dequant_int8(data, scales):
    return data.to(HF) * scales[:, None]


def dequant_int4(words, scales):
    """words int32 [rows][cols / 8] (src/quant.h's packing), scales fp16 [rows][cols / 128][2] = (s, z)."""
    rows = words.shape[0]
    shifts = torch.tensor(INT4_SHIFTS, device=words.device, dtype=torch.int32)
    q = ((words[..., None] >> shifts) & 15).view(rows, -1, QUANT_GROUP).to(HF)
    return ((q - scales[..., 1:]) * scales[..., :1]).view(rows, -1)


def epilogue(y, kind):
    if kind == "gelu":
        return F.gelu(y, approximate="tanh")
    if kind == "silu_mul":
        n = y.shape[-1] // 2
        return F.silu(y[:, :n]) * y[:, n:]
    return y


def linear_eager(kind):
    return lambda x, w, b: epilogue(F.linear(x, w, b), kind)


def quant_linear_eager(dequant, kind):
    return lambda x, data, scales, b: epilogue(F.linear(x, dequant(data, scales), b), kind)


def cublas_linear(x, w, b):
    return F.linear(x, w, b)


def gather_cache(cache, block_tables, ctx):
    """[num_blocks][Hkv][B][D] by block_tables [batch][max_blocks] -> contiguous [batch][Hkv][ctx][D]."""
    c = cache[block_tables]  # [batch][max_blocks][Hkv][B][D]
    b, mb, hkv, blk, d = c.shape
    return c.transpose(1, 2).reshape(b, hkv, mb * blk, d)[:, :, :ctx]


def sdpa(q, k, v, causal, gqa):
    if not gqa and k.shape[1] != q.shape[1]:
        k = k.repeat_interleave(q.shape[1] // k.shape[1], 1)
        v = v.repeat_interleave(q.shape[1] // v.shape[1], 1)
    kw = {"enable_gqa": True} if gqa else {}
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, **kw)


def paged_attention_eager(H, D, batch, q_len, ctx, gqa):
    """Our attention over the paged cache in PyTorch: gather K/V by block table, SDPA, out [tokens][H * D]."""
    def run(qkv, k_cache, v_cache, block_tables):
        q = qkv[:, :H * D].view(batch, q_len, H, D).transpose(1, 2)
        k, v = gather_cache(k_cache, block_tables, ctx), gather_cache(v_cache, block_tables, ctx)
        out = sdpa(q, k, v, q_len > 1, gqa)
        return out.transpose(1, 2).reshape(batch * q_len, H * D)
    return run


def sdpa_backend(backend, causal, gqa):
    from torch.nn.attention import sdpa_kernel

    def run(q, k, v):
        with sdpa_kernel(backend):
            return sdpa(q, k, v, causal, gqa)
    return run


# ---- the rows: each family gives {peer: [(fn, args, note), ...]}, candidates tried in order (args may be a
# function making them, for a fallback's inputs built only when it is tried) ----

def paged_cache(batch, ctx, Hkv, D):
    mb = (ctx + BLOCK - 1) // BLOCK
    k_cache, v_cache = randn(batch * mb, Hkv, BLOCK, D), randn(batch * mb, Hkv, BLOCK, D)
    tables = torch.randperm(batch * mb, device=DEVICE).view(batch, mb)
    return k_cache, v_cache, tables


def attention_peers(p, prefill):
    m = MODELS[p["model"]]
    H, Hkv, D, batch = m["H"], m["Hkv"], m["D"], p["batch"]
    ctx = p["seq"] if prefill else p["context"]
    q_len = ctx if prefill else 1
    qkv = randn(batch * q_len, (H + 2 * Hkv) * D)
    k_cache, v_cache, tables = paged_cache(batch, ctx, Hkv, D)
    paged = (qkv, k_cache, v_cache, tables)
    q = randn(batch, H, q_len, D)
    k, v = randn(batch, Hkv, ctx, D), randn(batch, Hkv, ctx, D)
    expanded = "K/V heads expanded to H outside the timing (no GQA in this backend)"
    dense_expanded = lambda: (q, k.repeat_interleave(H // Hkv, 1), v.repeat_interleave(H // Hkv, 1))
    peers = {"eager": [(paged_attention_eager(H, D, batch, q_len, ctx, g), paged, "" if g else expanded)
                       for g in (True, False)]}
    if prefill:
        from torch.nn.attention import SDPBackend
        for name, backend in (("sdpa_flash", SDPBackend.FLASH_ATTENTION), ("sdpa_cudnn", SDPBackend.CUDNN_ATTENTION)):
            peers[name] = [(sdpa_backend(backend, True, True), (q, k, v), ""),
                           (sdpa_backend(backend, True, False), dense_expanded, expanded)]
    else:
        peers["sdpa"] = [(lambda q, k, v: sdpa(q, k, v, False, True), (q, k, v), ""),
                         (lambda q, k, v: sdpa(q, k, v, False, False), dense_expanded, expanded)]
    return peers


def quant_weight(fmt, rows, k):
    """Random packed weights with sane scales in src/quant.h's layouts; the dequantize function."""
    if fmt == "int8":
        data = torch.randint(-127, 128, (rows, k), device=DEVICE, dtype=torch.int8)
        scales = (torch.rand(rows, device=DEVICE) * 2e-4 + 5e-5).to(HF)
        return data, scales, dequant_int8
    words = torch.randint(-2**31, 2**31 - 1, (rows, k // 8), device=DEVICE, dtype=torch.int32)
    s = torch.rand(rows, k // QUANT_GROUP, 1, device=DEVICE) * 4e-3 + 1e-3
    z = torch.randint(0, 16, (rows, k // QUANT_GROUP, 1), device=DEVICE).float()
    return words, torch.cat((s, z), -1).to(HF), dequant_int4


def linear_peers(p, variant, quantized):
    k, rows, kind, has_bias = LAYERS[(p["model"], p["layer"])]
    x, b = randn(p["m"], k), randn(rows, scale=0.1) if has_bias else None
    if not quantized:
        w = randn(rows, k, scale=0.02)
        return {"eager": [(linear_eager(kind), (x, w, b), "")],
                "cublas": [(cublas_linear, (x, w, b), "F.linear alone (no GELU / SiLU-mul epilogue)"
                            if kind != "plain" else "")]}
    data, scales, dequant = quant_weight(variant, rows, k)
    return {"eager": [(quant_linear_eager(dequant, kind), (x, data, scales, b), "dequantize + F.linear")],
            "cublas": [(cublas_linear, (x, dequant(data, scales), b), "F.linear on the dequantized fp16 weight")]}


def dequant_peers(p, variant):
    k, rows, _, _ = LAYERS[(p["model"], p["layer"])]
    data, scales, dequant = quant_weight(variant, rows, k)
    return {"eager": [(dequant, (data, scales), "")]}


def row_peers(row):
    """{peer: candidates} for one row of ours.json; KeyError / ValueError for a row this script cannot build."""
    kernel, v, p = row["kernel"], row.get("variant", ""), row["params"]
    m = MODELS.get(p.get("model"), {})
    if kernel == "k_embed":
        n, d, vocab = p["n"], m["d"], m["vocab"]
        tok, ids = randn(vocab, d), randint(vocab, n)
        if p["model"] == "gpt2":
            return {"eager": [(lambda i, t, ps, pt: F.embedding(i, t) + F.embedding(ps, pt),
                               (ids, tok, randint(1024, n), randn(1024, d)), "")]}
        return {"eager": [(lambda i, t: F.embedding(i, t), (ids, tok), "")]}
    if kernel == "k_add_rms_norm":
        n, d = p["n"], m["d"]
        return {"eager": [(rms_norm_eager, (randn(n, d), randn(n, d), randn(d), 1e-5), "")]}
    if kernel == "k_add_layer_norm":
        n, d = p["n"], m["d"]
        return {"eager": [(layer_norm_eager, (randn(n, d), randn(n, d), randn(d), randn(d), 1e-5), "")]}
    if kernel == "k_add_bias":
        return {"eager": [(lambda y, b: y.add_(b), (randn(p["n"], 3 * m["d"]), randn(3 * m["d"])), "")]}
    if kernel == "k_bias_gelu":
        return {"eager": [(lambda y, b: F.gelu(y + b, approximate="tanh"), (randn(p["n"], m["ffn"]),
                                                                         randn(m["ffn"])), "")]}
    if kernel == "k_silu_mul":
        f = m["ffn"]
        return {"eager": [(lambda gu: F.silu(gu[:, :f]) * gu[:, f:], (randn(p["n"], 2 * f),), "")]}
    if kernel == "k_rope_store_kv":
        n, H, Hkv, D = p["n"], m["H"], m["Hkv"], m["D"]
        blocks = (n + BLOCK - 1) // BLOCK
        inv_freq = None if p["model"] == "gpt2" else \
            1.0 / 500000.0 ** (torch.arange(0, D, 2, device=DEVICE).float() / D)
        args = (randn(n, (H + 2 * Hkv) * D), randint(8192, n), inv_freq,
                torch.randperm(blocks * BLOCK, device=DEVICE)[:n], randn(blocks, Hkv, BLOCK, D),
                randn(blocks, Hkv, BLOCK, D))
        return {"eager": [(rope_store_eager(H, Hkv, D), args, "")]}
    if kernel == "k_gather_rows":
        return {"eager": [(lambda x, rows: x.index_select(0, rows), (randn(4096, m["d"]), randint(4096, p["m"])), "")]}
    if kernel == "k_half_to_float":
        return {"eager": [(lambda x: x.float(), (randn(p["rows"] * p["vocab"]),), "")]}
    if kernel == "k_float_to_half":
        return {"eager": [(lambda x: x.half(), (randn(p["rows"] * p["vocab"]).float(),), "")]}
    if kernel == "k_sample":
        logits = randn(p["rows"], p["vocab"], scale=3.0)
        if v == "greedy":
            return {"eager": [(sample_greedy_eager, (logits,), "")]}
        u = torch.rand(p["rows"], device=DEVICE)
        return {"eager": [(sample_top_p_eager, (logits, u, 0.8, 0.9), "")]}
    if kernel in ("k_attention_prefill", "k_attention_decode"):
        return attention_peers(p, kernel == "k_attention_prefill")
    if kernel in ("k_linear_small", "k_linear_quant"):
        return linear_peers(p, v, kernel == "k_linear_quant")
    if kernel == "k_dequant":
        return dequant_peers(p, v)
    raise ValueError(f"no PyTorch equivalent for {kernel}")


def share_key(row, peer):
    """Rows whose peer computes exactly the same thing share one measurement: the prefill variants (the same
    attention), and cuBLAS on every linear of one shape (fp16 and quantized)."""
    p = row["params"]
    if row["kernel"] == "k_attention_prefill":
        return (row["kernel"], row["config"], peer)
    if peer == "cublas":
        return (peer, p["model"], p["layer"], p["m"])
    return None


# ---- timing ----

def stats(us):
    s = sorted(us)
    pct = lambda q: s[min(len(s) - 1, max(0, math.ceil(q / 100 * len(s)) - 1))]  # nearest rank
    return {"mean": statistics.fmean(s), "std": statistics.pstdev(s), "min": s[0], "max": s[-1], "p50": pct(50),
            "p95": pct(95), "p99": pct(99)}


def measure(fn, args, flush, warmup, iters, row_budget):
    """Times fn(*args); the warm-up and timed counts shrink (never below 10 / 100) when they would take longer
    than row_budget seconds. Returns (stats, warmup, iters)."""
    t0 = time.perf_counter()
    for _ in range(3):
        flush.zero_()
        fn(*args)
    torch.cuda.synchronize()
    each = (time.perf_counter() - t0) / 3
    if each * (warmup + iters) > row_budget:
        scale = row_budget / (each * (warmup + iters))
        warmup, iters = max(10, int(warmup * scale)), max(100, int(iters * scale))
    for _ in range(warmup):
        flush.zero_()
        fn(*args)
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    for a, b in events:
        flush.zero_()
        a.record()
        fn(*args)
        b.record()
    torch.cuda.synchronize()
    return stats([a.elapsed_time(b) * 1e3 for a, b in events]), warmup, iters


def compiled(fn, args):
    """torch.compile(mode="max-autotune") of fn, its inputs marked as static addresses (they stay put, so CUDA
    graphs need not copy them); the first call (compilation and autotuning) timed."""
    torch._dynamo.reset()
    for a in args:
        if isinstance(a, torch.Tensor) and hasattr(torch._dynamo, "mark_static_address"):
            torch._dynamo.mark_static_address(a)
    cf = torch.compile(fn, mode="max-autotune")
    t0 = time.perf_counter()
    cf(*args)
    torch.cuda.synchronize()
    return cf, time.perf_counter() - t0


def device_info(ours):
    props = torch.cuda.get_device_properties(0)
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=30).stdout.split("\n")[0].strip()
    except OSError:
        driver = ours.get("device", {}).get("driver", "unknown")
    return {"name": props.name, "sms": props.multi_processor_count,
            "l2_bytes": getattr(props, "L2_cache_size", 0) or ours.get("device", {}).get("l2_bytes", 50 << 20),
            "memory_bytes": props.total_memory, "cc": f"{props.major}.{props.minor}", "driver": driver,
            "runtime": torch.version.cuda}


def write_json(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, path)


def run(args):
    with open(args.ours) as f:
        ours = json.load(f)
    dev = device_info(ours)
    doc = {"schema": 1, "device": dev, "torch": torch.__version__, "cuda": torch.version.cuda,
           "ours_commit": ours.get("commit", "unknown"),
           "method": {"warmup": args.warmup, "iters": args.iters, "l2_flush": True, "row_budget_s": args.row_budget},
           "rows": []}
    rows = [r for r in ours["rows"] if args.only in r["kernel"]]
    idents = {(r["kernel"], r.get("variant", ""), r["config"]) for r in rows}
    done = {}  # --resume: ident -> {peer: its row}; rows of other kernels are kept as they are
    if args.resume and os.path.exists(args.json):
        with open(args.json) as f:
            for r in json.load(f)["rows"]:
                ident = (r["kernel"], r["variant"], r["config"])
                if ident in idents:
                    done.setdefault(ident, {})[r["peer"]] = r
                else:
                    doc["rows"].append(r)
    flush = torch.empty(2 * dev["l2_bytes"], dtype=torch.uint8, device=DEVICE)
    if hasattr(torch._dynamo.config, "cache_size_limit"):
        torch._dynamo.config.cache_size_limit = 64
    shared, start = {}, time.perf_counter()
    print(f"peers: {len(rows)} rows of {args.ours} on {dev['name']}, torch {torch.__version__}, "
          f"compile: {args.compile}", flush=True)
    for i, row in enumerate(rows, 1):
        ident = (row["kernel"], row.get("variant", ""), row["config"])
        label = f"[{i}/{len(rows)}] {row['kernel']} {ident[1]} {row['config']}".replace("  ", " ")
        results = measure_row(row, ident, label, args, flush, done, shared, start)
        doc["rows"].extend(results)
        write_json(args.json, doc)
        torch.cuda.empty_cache()
    print(f"peers: {len(doc['rows'])} peer rows in {time.perf_counter() - start:.0f} s -> {args.json}", flush=True)


def wanted_peers(row, mode):
    if mode == "only":
        return ["compile"] if row.get("main") else []
    base = {"k_attention_prefill": ["eager", "sdpa_flash", "sdpa_cudnn"], "k_attention_decode": ["eager", "sdpa"],
            "k_linear_small": ["eager", "cublas"], "k_linear_quant": ["eager", "cublas"]}.get(row["kernel"], ["eager"])
    return base + (["compile"] if mode == "main" and row.get("main") else [])


def measure_row(row, ident, label, args, flush, done, shared, start):
    """The peer rows of one ours row: resumed (measured before, or not wanted now), shared with an identical
    earlier row, or measured here."""
    wanted = wanted_peers(row, args.compile)
    previous = done.get(ident, {})
    out = [r for p, r in previous.items() if "us" in r or p not in wanted]
    todo = []
    for peer in wanted:
        key = share_key(row, peer)
        if "us" in previous.get(peer, {}):
            continue
        if key in shared and key is not None:
            out.append({**shared[key], "kernel": ident[0], "variant": ident[1], "config": ident[2]})
        else:
            todo.append(peer)
    base = {"kernel": ident[0], "variant": ident[1], "config": ident[2]}
    if todo and args.budget and time.perf_counter() - start > args.budget:
        print(f"{label}: skipped (--budget {args.budget} s reached)", flush=True)
        return out + [{**base, "peer": p, "note": f"not measured: --budget {args.budget} s reached (rerun with "
                       "--resume)"} for p in todo]
    if not todo:
        return out
    try:
        peers = row_peers(row)
    except Exception as e:  # a row this script has no equivalent for, or inputs that do not fit: noted, not fatal
        e = f"{type(e).__name__}: {e}"[:240]
        print(f"{label}: cannot build ({e})", flush=True)
        return out + [{**base, "peer": p, "note": f"not measured: {e}"} for p in todo]
    for peer in todo:
        r = {**base, "peer": peer}
        candidates = peers.get("eager" if peer == "compile" else peer, [])
        r.update(measure_peer(peer, candidates, args, flush))
        msg = f"{r['us']['p50']:.2f} us p50 ({r['iters']} iters)" if "us" in r else r["note"]
        if "compile_s" in r:
            msg += f", compiled in {r['compile_s']:.0f} s"
        print(f"{label}: {peer} {msg}", flush=True)
        key = share_key(row, peer)
        if key is not None and "us" in r:
            same = " ".join(x for x in ident if x)
            shared[key] = {**r, "note": (r.get("note", "") + f"; same measurement as {same}").strip("; ")}
        out.append(r)
    return out


def measure_peer(peer, candidates, args, flush):
    """The first candidate that runs, timed; else a note with the last error."""
    err = "no candidate"
    for fn, fargs, note in candidates:
        try:
            extra = {}
            if callable(fargs):
                fargs = fargs()
            if peer == "compile":
                fn, extra["compile_s"] = compiled(fn, fargs)
            s, warmup, iters = measure(fn, fargs, flush, args.warmup, args.iters, args.row_budget)
            r = {"us": s, "warmup": warmup, "iters": iters, **extra}
            if note:
                r["note"] = note
            return r
        except Exception as e:  # an unsupported backend, CUDA OOM, a compile failure: the row's note says which
            err = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:240]
    return {"note": f"unavailable: {err}"}


def add_arguments(p):
    p.add_argument("--ours", required=True, help="bench_kernels' ours.json")
    p.add_argument("--json", required=True, help="where to write peers.json")
    p.add_argument("--compile", choices=("main", "none", "only"), default="main",
                   help="torch.compile peer on main rows (main), never (none), or only it (only)")
    p.add_argument("--only", default="", help="rows whose kernel name contains this")
    p.add_argument("--resume", action="store_true", help="keep the rows already measured in --json")
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--iters", type=int, default=1000)
    p.add_argument("--row-budget", type=float, default=3.0,
                   help="seconds one peer of one row may take; slower peers get fewer iterations (recorded)")
    p.add_argument("--budget", type=float, default=0,
                   help="seconds for the whole run: rows not started by then get a note (0: no limit)")
