#!/bin/bash
# smoke_chat_openai.sh — the official `openai` Python client's chat.completions.create against a real server with the
# demo model (lib.sh's openai_venv installs it from PyPI). The prompt a chat is rendered to is checked against jinja2
# rendering the model's tokenizer_config.json template as transformers does: usage.prompt_tokens is /tokenize's count
# of that text without special tokens; a greedy chat's text is /generate's on those ids; the streamed deltas (role
# first) concatenate to the text of the same request unstreamed, with the same usage; text parts, logprobs, seeds,
# stop strings; unsupported fields as the client's BadRequestError naming them; the README's client example.
. "$(dirname "$0")/lib.sh"

openai_venv
start_server chat-openai

demo=$FK_SOURCE_ROOT/deploy/demo-model
# (`|| fail` on this line: after a line break it would start the here-document, and python would run `fail ...`)
"$VENV/bin/python" - "$BASE" "$demo" "$FK_SOURCE_ROOT/README.md" <<'PY' || fail "the openai client checks failed"
import contextlib
import io
import json
import re
import sys
import urllib.request

import jinja2.sandbox
import openai

base, model_dir, readme = sys.argv[1], sys.argv[2], sys.argv[3]
config = json.load(open(model_dir + "/tokenizer_config.json"))
# transformers' render_jinja_template: a sandbox with trim_blocks and lstrip_blocks.
env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
template = env.from_string(config["chat_template"])


def post(path, body):
    request = urllib.request.Request(base + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request) as r:
        return json.load(r)


def prompt_ids(messages):
    text = template.render(messages=messages, add_generation_prompt=True, bos_token=config["bos_token"],
                           eos_token=config["eos_token"])
    return post("/tokenize", {"prompt": text, "add_special_tokens": False})["tokens"]


client = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0)
messages = [{"role": "system", "content": "You are a player in a play."},
            {"role": "user", "content": "Speak, ROMEO."},
            {"role": "assistant", "content": "What say you?"},
            {"role": "user", "content": "Who is JULIET?"}]
ids = prompt_ids(messages)

# Non-streamed, greedy: usage counts the rendered prompt's tokens; the text is /generate's on those ids.
c = client.chat.completions.create(model="demo-model", messages=messages, max_tokens=24, temperature=0)
assert c.object == "chat.completion" and c.model == "demo-model" and c.id.startswith("chatcmpl-"), c
choice = c.choices[0]
assert len(c.choices) == 1 and choice.index == 0 and choice.message.role == "assistant", c
text = choice.message.content
ref = post("/generate", {"prompt": ids, "max_tokens": 24, "temperature": 0})
assert text == ref["text"], (text, ref["text"])
assert choice.finish_reason == {"length": "length", "eos": "stop"}[ref["finish_reason"]], (choice, ref)
assert c.usage.prompt_tokens == len(ids), (c.usage, len(ids))
assert c.usage.completion_tokens == ref["usage"]["completion_tokens"], (c.usage, ref["usage"])
assert c.usage.total_tokens == len(ids) + c.usage.completion_tokens, c.usage
print("chat: %d prompt tokens, %d completion tokens: %r" % (len(ids), c.usage.completion_tokens, text))

# Streamed: the role first, deltas that concatenate to the same text, then the finish reason and the same usage.
chunks = list(client.chat.completions.create(model="demo-model", messages=messages, max_tokens=24, temperature=0,
                                             stream=True, stream_options={"include_usage": True}))
assert all(k.object == "chat.completion.chunk" and k.id == chunks[0].id for k in chunks), chunks
assert chunks[0].choices[0].delta.role == "assistant", chunks[0]
assert all(k.choices[0].delta.role is None for k in chunks[1:] if k.choices), chunks
pieces = [k.choices[0].delta.content or "" for k in chunks if k.choices]
finishes = [k.choices[0].finish_reason for k in chunks if k.choices and k.choices[0].finish_reason]
assert "".join(pieces) == text, ("".join(pieces), text)
assert finishes == [choice.finish_reason], finishes
assert not chunks[-1].choices and chunks[-1].usage == c.usage, (chunks[-1], c.usage)
assert all(k.usage is None for k in chunks[:-1]), chunks
# Without include_usage: no usage chunk.
chunks = list(client.chat.completions.create(model="demo-model", messages=messages, max_tokens=5, temperature=0,
                                             stream=True))
assert all(k.choices and k.usage is None for k in chunks), chunks

# Content as text parts: joined with "\n", the same prompt as that string.
parts = [{"role": "user", "content": [{"type": "text", "text": "Speak,"}, {"type": "text", "text": "ROMEO."}]}]
c = client.chat.completions.create(model="demo-model", messages=parts, max_completion_tokens=3, temperature=0)
assert c.usage.prompt_tokens == len(prompt_ids([{"role": "user", "content": "Speak,\nROMEO."}])), c.usage
assert c.usage.completion_tokens == 3 and c.choices[0].finish_reason == "length", c

# Logprobs: one entry per token, each with its alternatives; the tokens spell the text.
c = client.chat.completions.create(model="demo-model", messages=messages, max_tokens=6, temperature=0,
                                   logprobs=True, top_logprobs=3)
content = c.choices[0].logprobs.content
assert len(content) == 6 and all(len(t.top_logprobs) == 3 for t in content), content
assert "".join(t.token for t in content) == c.choices[0].message.content, content
assert all(t.top_logprobs[0].logprob >= t.logprob - 1e-5 and bytes(t.bytes) == t.token.encode() for t in content)

# Sampling: the same seed gives the same text; penalties are taken.
a, b = (client.chat.completions.create(model="demo-model", messages=messages, max_tokens=16, temperature=1.0,
                                       top_p=0.9, seed=1234, presence_penalty=0.5, frequency_penalty=0.5)
        for _ in range(2))
assert a.choices[0].message.content == b.choices[0].message.content, (a, b)

# A stop string ends the text before it.
if len(text) > 6:
    stop = text[3:6]
    c = client.chat.completions.create(model="demo-model", messages=messages, max_tokens=24, temperature=0,
                                       stop=[stop])
    assert c.choices[0].finish_reason == "stop" and c.choices[0].message.content == text[:text.index(stop)], c

# What is not supported is a BadRequestError naming it; a model that is not served, NotFoundError.
for kwargs, needle in [({"n": 2}, "n must be 1"),
                       ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]},
                        "tools is not supported"),
                       ({"response_format": {"type": "json_object"}}, "response_format is not supported")]:
    try:
        client.chat.completions.create(model="demo-model", messages=messages, max_tokens=2, **kwargs)
        raise AssertionError("%s was accepted" % kwargs)
    except openai.BadRequestError as e:
        assert e.status_code == 400 and needle in str(e), e
try:
    client.chat.completions.create(model="gpt-4o", messages=messages)
    raise AssertionError("another model was accepted")
except openai.NotFoundError as e:
    assert e.status_code == 404, e

# The README's example runs as written (against this server) and prints the greedy text twice: whole, then streamed.
code = next(block for block in re.findall(r"```python\n(.*?)```", open(readme).read(), re.S)
            if "client.chat.completions.create" in block)
out, namespace = io.StringIO(), {}
with contextlib.redirect_stdout(out):
    exec(code.replace("http://localhost:8080", base), namespace)
want = post("/generate", {"prompt": prompt_ids(namespace["messages"]), "max_tokens": 16, "temperature": 0})["text"]
assert out.getvalue() == want + "\n" + want + "\n", (out.getvalue(), want)
print("openai chat client: ok")
PY
expect_healthy "after the client"
stop_server
echo "smoke_chat_openai: ok"
