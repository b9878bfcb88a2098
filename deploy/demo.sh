#!/bin/sh
# demo.sh — sets up FlashKernel on a fresh Debian 12 machine and generates from the bundled demo model
# (shakespeare-llama, deploy/demo-model): the README's first command. Extra arguments go to `generate`.
set -eu
cd "$(dirname "$0")/.."
deploy/build.sh build
# Prompt: "ROMEO:\n" as token ids (<s> ROMEO : \n).
exec build/tools/flashkernel generate --prompt-ids 0,826,270 --max-tokens 64 "$@"
