#!/usr/bin/env python3
"""make_seeds.py — writes the seed corpora of the fuzz harnesses (tests/fuzz/seeds/<harness>/) from the fixtures:
small valid instances of each input, taken from or shaped like the real files, so that the fuzzers start from inputs
that reach deep into the parsers. The tokenizer harness's seeds (seeds/tokenizer) are older and kept as they are;
so are the inputs of past findings (files named regression-*), kept in their harness's folder.

    python3 tests/fuzz/make_seeds.py        # from the repository root; rewrites the other seed folders
"""
import glob
import json
import os
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "tests", "fixtures")
OUT = os.path.join(ROOT, "tests", "fuzz", "seeds")


def folder(name):
    """Empties seeds/<name> except its regression-* inputs (past findings), and returns its path."""
    path = os.path.join(OUT, name)
    os.makedirs(path, exist_ok=True)
    for entry in os.listdir(path):
        if not entry.startswith("regression-"):
            os.remove(os.path.join(path, entry))
    return path


def write(path, data):
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def safetensors_file(tensors, metadata=None):
    """tensors: [(name, dtype, shape, bytes)] → the file's bytes."""
    header, data = {}, b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata is not None:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(h)) + h + data


def header_of(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return f.read(n)


def safetensors_seeds():
    out = folder("safetensors")
    f32 = struct.pack("<6f", 0.5, -1.0, 2.0, 3.5, -0.25, 1e-3)
    write(os.path.join(out, "mixed"), safetensors_file([
        ("w.f32", "F32", [2, 3], f32), ("w.f16", "F16", [3], struct.pack("<3e", 1.0, -2.0, 0.5)),
        ("w.bf16", "BF16", [2], b"\x80\x3f\x00\xc0"), ("ids", "I64", [2], struct.pack("<2q", 7, -1)),
        ("mask", "BOOL", [3], b"\x01\x00\x01"), ("empty", "F32", [0, 4], b""), ("scalar", "F32", [], f32[:4]),
    ], {"format": "pt"}))
    write(os.path.join(out, "empty-header"), safetensors_file([]))
    for path in sorted(glob.glob(os.path.join(FIX, "models", "*", "*.safetensors")) +
                       glob.glob(os.path.join(FIX, "hf-variants", "*", "model.safetensors"))):
        # The real header with a made-up data section of the size it names (a few tensors' worth at most).
        h = json.loads(header_of(path))
        names = sorted(k for k in h if k != "__metadata__")[:4]
        small = []
        for k in names:
            numel = 1
            for d in h[k]["shape"]:
                numel *= d
            if numel <= 4096:
                size = {"F32": 4, "F16": 2, "BF16": 2}[h[k]["dtype"]]
                small.append((k, h[k]["dtype"], h[k]["shape"], bytes(range(256)) * (numel * size // 256) +
                              bytes(numel * size % 256)))
        name = os.path.relpath(path, FIX).replace("/", "-")
        if small:
            write(os.path.join(out, name), safetensors_file(small, h.get("__metadata__")))


def index_seeds():
    out = folder("safetensors_index")
    write(os.path.join(out, "valid"), json.dumps({"metadata": {"total_size": 12}, "weight_map": {
        "x": "a.safetensors", "y": "a.safetensors", "z": "b.safetensors"}}, indent=2))
    write(os.path.join(out, "one-shard"), json.dumps({"weight_map": {"z": "b.safetensors"}}))
    for path in sorted(glob.glob(os.path.join(FIX, "*", "*", "model.safetensors.index.json"))):
        write(os.path.join(out, os.path.relpath(path, FIX).replace("/", "-")), open(path, "rb").read())


def config_seeds():
    out = folder("model_config")
    dirs = sorted(glob.glob(os.path.join(FIX, "models", "*", "")) + glob.glob(os.path.join(FIX, "hf-variants", "*", "")) +
                  [os.path.join(ROOT, "deploy", "demo-model")])
    for d in dirs:
        config = open(os.path.join(d, "config.json"), "rb").read()
        gen = os.path.join(d, "generation_config.json")
        name = os.path.relpath(d, ROOT).strip("/").replace("/", "-")
        write(os.path.join(out, name), config)
        if os.path.exists(gen):
            write(os.path.join(out, name + "+generation"), config + b"\0" + open(gen, "rb").read())


def shrink(tok, keep=300):
    """The tokenizer with the first `keep` vocabulary entries and the merges among them; added tokens not among those
    renumbered after them, and the template's ids with them."""
    model = tok["model"]
    vocab = {k: v for k, v in model["vocab"].items() if v < keep}
    merges = []
    for m in model["merges"]:
        a, b = m.split(" ", 1) if isinstance(m, str) else m
        if a in vocab and b in vocab and a + b in vocab:
            merges.append(m)
    added, renumbered = [], {}
    for a in tok.get("added_tokens") or []:
        new_id = vocab[a["content"]] if a["content"] in vocab else keep + len(renumbered)
        renumbered[a["id"]] = new_id
        added.append(dict(a, id=new_id))
    out = dict(tok, added_tokens=added, model=dict(model, vocab=vocab, merges=merges))
    text = json.dumps(out.get("post_processor"))  # TemplateProcessing names special tokens by id
    for old, new in renumbered.items():
        text = text.replace('"ids": [%d]' % old, '"ids": [%d]' % new)
    out["post_processor"] = json.loads(text)
    if out["model"].get("unk_token") and out["model"]["unk_token"] not in vocab:
        out["model"]["unk_token"] = None
    return out


def tokenizer_seeds():
    out = folder("tokenizer_load")
    bases = {"tokenizers/gpt2/tokenizer.json": "gpt2", "tokenizers/llama2-spm/tokenizer.json": "llama2-spm",
             "models/shakespeare-llama/tokenizer.json": "shakespeare-llama"}
    full = {path: json.load(open(os.path.join(FIX, path))) for path in bases}
    for path, name in bases.items():
        small = json.dumps(shrink(full[path]))
        write(os.path.join(out, name), small)
        write(os.path.join(out, name + "+text"), small + "\0Hello, world! caf\u00e9 \u2581 <s>")
    for v in json.load(open(os.path.join(FIX, "tokenizers", "variants.json")))["variants"]:
        tok = json.loads(json.dumps(full[v["base"]]))
        for key, value in v["edits"].items():
            if key.endswith("+"):
                tok[key[:-1]] = (tok.get(key[:-1]) or []) + value
            elif key.startswith("model."):
                tok["model"][key[6:]] = value
            else:
                tok[key] = value
        write(os.path.join(out, v["name"]), json.dumps(shrink(tok)))


def chunked(data, size):
    return b"".join(b"%x\r\n" % len(data[i:i + size]) + data[i:i + size] + b"\r\n"
                    for i in range(0, len(data), size)) + b"0\r\n\r\n"


def sse(events, nl=b"\n"):
    return b"".join(b"data: " + e + nl + nl for e in events) + b"data: [DONE]" + nl + nl


def loadtest_seeds():
    gen_events = [json.dumps({"text": " t%d" % i, "token": 100 + i}).encode() for i in range(3)] + [json.dumps(
        {"id": "gen-1", "finish_reason": "length", "usage": {"prompt_tokens": 4, "completion_tokens": 3,
                                                             "total_tokens": 7, "cached_tokens": 0}}).encode()]
    chunk = {"id": "cmpl-1", "object": "text_completion", "created": 1, "model": "m", "usage": None,
             "choices": [{"index": 0, "text": " t", "logprobs": None, "finish_reason": None}]}
    cmpl_events = [json.dumps(chunk).encode()] * 3 + [
        json.dumps(dict(chunk, choices=[dict(chunk["choices"][0], text="", finish_reason="stop")])).encode(),
        json.dumps(dict(chunk, choices=[], usage={"prompt_tokens": 4, "completion_tokens": 3,
                                                  "total_tokens": 7})).encode()]
    out = folder("loadtest_sse")
    write(os.path.join(out, "generate"), b"\x3f" + sse(gen_events))
    write(os.path.join(out, "completions-crlf"), b"\x17" + b": ping\r\n\r\n" + sse(cmpl_events, b"\r\n"))
    write(os.path.join(out, "multiline-cr"), b"\x01" + b"event: x\rdata: a\rdata: b\r\rid: 1\ndata\n\n:c\n")
    out = folder("loadtest_response")
    head = b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\n"
    whole = json.dumps({"id": "gen-1", "text": "abc", "tokens": [1, 2, 3], "finish_reason": "length",
                        "usage": {"prompt_tokens": 4, "completion_tokens": 3, "total_tokens": 7}}).encode()
    write(os.path.join(out, "generate-whole"), b"\x00" + head % b"application/json" +
          b"Content-Length: %d\r\n\r\n" % len(whole) + whole)
    write(os.path.join(out, "generate-stream-chunked"), b"\x02" + head % b"text/event-stream" +
          b"Transfer-Encoding: chunked\r\n\r\n" + chunked(sse(gen_events), 37))
    write(os.path.join(out, "completions-stream-close"), b"\x03" + b"HTTP/1.1 100 Continue\r\n\r\n" +
          head % b"text/event-stream" + b"Connection: close\r\n\r\n" + sse(cmpl_events))
    cmpl_whole = json.dumps(dict(chunk, choices=[dict(chunk["choices"][0], finish_reason="length")],
                                 usage={"prompt_tokens": 4, "completion_tokens": 3, "total_tokens": 7})).encode()
    write(os.path.join(out, "completions-whole-close"), b"\x01" + head % b"application/json" + b"\r\n" + cmpl_whole)
    err = json.dumps({"error": {"message": "server overloaded, retry later", "type": "rate_limit_error",
                                "param": None, "code": 429}}).encode()
    write(os.path.join(out, "429"), b"\x02" + b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\n"
          b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(err) + err)
    # llama-server's /completion (byte 0 bit 2), as its source at 18ef86ece writes it: one token per event, a last
    # event with "stop": true and the counts, no [DONE]; whole, the same object with content and (return_tokens) ids
    llama_final = {"index": 0, "content": "", "tokens": [], "id_slot": 0, "stop": True, "model": "b1b.gguf",
                   "tokens_predicted": 3, "tokens_evaluated": 4, "stop_type": "limit", "stopping_word": "",
                   "tokens_cached": 6, "timings": {"prompt_n": 4, "predicted_n": 3}}
    llama_events = [json.dumps({"index": 0, "content": " t%d" % i, "tokens": [100 + i], "stop": False, "id_slot": 0,
                                "tokens_predicted": i + 1, "tokens_evaluated": 4}).encode() for i in range(3)]
    write(os.path.join(out, "llama-stream-chunked"), b"\x06" + head % b"text/event-stream" +
          b"Transfer-Encoding: chunked\r\n\r\n" + chunked(sse(llama_events + [json.dumps(llama_final).encode()]), 41))
    for name, steer in (("stream", b"\x06"), ("whole", b"\x04")):  # and what a real llama-server sent
        with open(os.path.join(FIX, "llama-server", name + ".http"), "rb") as f:
            write(os.path.join(out, "llama-server-" + name), steer + f.read())
    llama_whole = json.dumps(dict(llama_final, content=" t0 t1 t2", tokens=[100, 101, 102])).encode()
    write(os.path.join(out, "llama-whole"), b"\x04" + head % b"application/json" +
          b"Content-Length: %d\r\n\r\n" % len(llama_whole) + llama_whole)
    error_event = json.dumps({"error": {"message": "the engine failed", "type": "server_error", "code": 503}})
    write(os.path.join(out, "error-event"), b"\x02" + head % b"text/event-stream" +
          b"Transfer-Encoding: chunked\r\n\r\n" + chunked(sse(gen_events[:2] + [error_event.encode()]), 64))


def api_seeds():
    """Request bodies of each API family: the documented fields at their edges, and a few refusals."""
    common = {"temperature": 0.7, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "seed": 7, "stop": ["\n\n", "END"],
              "repetition_penalty": 1.1, "presence_penalty": 0.5, "frequency_penalty": -0.5, "ignore_eos": True}
    bodies = {
        "generate": {
            "text": {"prompt": "ROMEO:", "max_tokens": 16},
            "ids-all-fields": dict(common, prompt=[0, 826, 270], max_tokens=8, logprobs=3, stream=True),
            "stop-string": {"prompt": "First Citizen:\nBefore we proceed", "stop": "\n", "max_tokens": 2047},
            "unicode": {"prompt": "caf\u00e9 \u65e5\u672c \ud83d\ude00", "max_tokens": None, "top_k": -1},
            "bad-max-tokens": {"prompt": "a", "max_tokens": -1},
        },
        "completions": {
            "text": {"model": "demo-model", "prompt": "JULIET:", "max_tokens": 12, "temperature": 0},
            "list-all-fields": dict(common, prompt=["JULIET:"], stream=True, stream_options={"include_usage": True},
                                    logprobs=2, n=1, best_of=1, echo=False, logit_bias={}, user="u", suffix=None),
            "ids": {"prompt": [[1, 2, 3]], "max_tokens": 4},
            "unsupported": {"prompt": "x", "n": 2, "echo": True},
        },
        "chat": {
            "system-user": {"model": "demo-model", "messages": [
                {"role": "system", "content": "You are a poet."}, {"role": "user", "content": "Speak."}],
                "max_tokens": 16},
            "all-fields": dict(common, messages=[
                {"role": "user", "content": [{"type": "text", "text": "Hello"}, {"type": "text", "text": "there"}]},
                {"role": "assistant", "content": "Good day.", "name": "bard"},
                {"role": "user", "content": "More."}], max_completion_tokens=8, logprobs=True, top_logprobs=2,
                stream=True, stream_options={"include_usage": True}, add_generation_prompt=True),
            "continue": {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}],
                         "add_generation_prompt": False},
            "tools": {"messages": [{"role": "user", "content": "x"}], "tools": []},
        },
    }
    for family, cases in bodies.items():
        out = folder("api_" + family)
        for name, body in cases.items():
            write(os.path.join(out, name), json.dumps(body))


safetensors_seeds()
index_seeds()
config_seeds()
tokenizer_seeds()
loadtest_seeds()
api_seeds()
