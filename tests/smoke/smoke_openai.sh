#!/bin/bash
# smoke_openai.sh — the official `openai` Python client (from PyPI, installed into a virtual environment in the build
# directory on first use: lib.sh's openai_venv) against /v1: completions with and without streaming (text and usage
# checked against `flashkernel generate`), the model list, a 400 and a 401 as the client's exceptions, with an API key
# set.
. "$(dirname "$0")/lib.sh"

openai_venv
venv=$VENV

reference "ROMEO:" 24 >"$WORK/ref.json"
start_server openai --api-key sk-smoke

"$venv/bin/python" - "$BASE/v1" "$WORK/ref.json" <<'PY' || fail "the openai client checks failed"
import json
import sys

import openai

base, ref_path = sys.argv[1], sys.argv[2]
ref = json.load(open(ref_path))
n_prompt, text = len(ref["prompt_ids"]), ref["text"]
client = openai.OpenAI(base_url=base, api_key="sk-smoke", max_retries=0)

models = [m.id for m in client.models.list()]
assert models == ["demo-model"], models

c = client.completions.create(model="demo-model", prompt="ROMEO:", max_tokens=24, temperature=0)
assert c.object == "text_completion" and c.model == "demo-model", c
assert c.choices[0].text == text, (c.choices[0].text, text)
assert c.choices[0].finish_reason == "length", c.choices[0]
assert (c.usage.prompt_tokens, c.usage.completion_tokens, c.usage.total_tokens) == (n_prompt, 24, n_prompt + 24), c.usage

pieces, usage, finish = [], None, None
for chunk in client.completions.create(model="demo-model", prompt="ROMEO:", max_tokens=24, temperature=0,
                                       stream=True, stream_options={"include_usage": True}):
    for choice in chunk.choices:
        pieces.append(choice.text)
        finish = choice.finish_reason or finish
    if chunk.usage:
        usage = chunk.usage
assert "".join(pieces) == text, ("".join(pieces), text)
assert finish == "length", finish
assert usage and (usage.prompt_tokens, usage.completion_tokens) == (n_prompt, 24), usage

c = client.completions.create(model="demo-model", prompt="ROMEO:", max_tokens=4, temperature=0, logprobs=2)
lp = c.choices[0].logprobs
assert len(lp.tokens) == 4 and len(lp.token_logprobs) == 4 and len(lp.top_logprobs) == 4, lp
assert "".join(lp.tokens) == c.choices[0].text, (lp.tokens, c.choices[0].text)

try:
    client.completions.create(model="demo-model", prompt="ROMEO:", n=2)
    raise AssertionError("n=2 was accepted")
except openai.BadRequestError as e:
    assert e.status_code == 400 and "n must be 1" in str(e), e

try:
    openai.OpenAI(base_url=base, api_key="wrong", max_retries=0).completions.create(model="demo-model", prompt="a")
    raise AssertionError("a wrong key was accepted")
except openai.AuthenticationError as e:
    assert e.status_code == 401, e
print("openai client: ok")
PY
expect_healthy "after the client"
stop_server
echo "smoke_openai: ok"
