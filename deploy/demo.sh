#!/bin/sh
# demo.sh — sets up FlashKernel on a fresh Debian 12 machine and generates from the bundled demo model
# (shakespeare-llama, deploy/demo-model) without the server (deploy/serve.sh serves it). Text in, text out: it prints
# the prompt, then the model's continuation. Extra arguments go to `generate`.
set -eu
cd "$(dirname "$0")/.."
deploy/build.sh build
prompt="ROMEO:
"
printf '%s' "$prompt"
exec build/tools/flashkernel generate --prompt "$prompt" --max-tokens 64 "$@"
