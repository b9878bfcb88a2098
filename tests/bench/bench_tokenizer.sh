#!/bin/sh
# bench_tokenizer.sh — encoding speed of FlashKernel's tokenizer and of Hugging Face tokenizers (the peer), one
# thread each, same tokenizer.json, same text, in one run; prints a table (docs/BENCHMARKS.md records it).
# usage: tests/bench/bench_tokenizer.sh [TOKENIZER_JSON] [TEXT_FILE] [SECONDS]
# Needs build/tools/flashkernel (deploy/build.sh) and a Python with Hugging Face tokenizers:
#   python3 -m venv .venv && .venv/bin/pip install tokenizers==0.23.2 && PYTHON=.venv/bin/python tests/bench/...
set -eu
cd "$(dirname "$0")/../.."
tok=${1:-tests/fixtures/tokenizers/gpt2/tokenizer.json}
file=${2:-tests/fixtures/corpus/tinyshakespeare-val.txt}
secs=${3:-5}
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import tokenizers' 2>/dev/null; then
    echo "bench_tokenizer: $PYTHON cannot import tokenizers; set PYTHON= to one that can (see the header)" >&2
    exit 2
fi

ours=$(build/tools/flashkernel bench-tokenizer --tokenizer "$tok" --file "$file" --seconds "$secs")
ours_mbs=$(printf '%s\n' "$ours" | sed -n 's/^MB\/s: //p')
ours_tokens=$(printf '%s\n' "$ours" | sed -n 's/.* bytes, \([0-9]*\) tokens.*/\1/p')

# Hugging Face: Tokenizer.encode of the whole text (no special tokens), one thread, timed the same way (a warm-up
# pass, then passes until SECONDS have gone by).
hf=$(TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1 "$PYTHON" - "$tok" "$file" "$secs" <<'PY'
import sys, time
import tokenizers
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[1])
text = open(sys.argv[2], encoding="utf-8").read()
seconds = float(sys.argv[3])
n_tokens = len(tok.encode(text, add_special_tokens=False).ids)
passes, start = 0, time.perf_counter()
while True:
    tok.encode(text, add_special_tokens=False)
    passes += 1
    elapsed = time.perf_counter() - start
    if elapsed >= seconds:
        break
print(f"{len(text.encode('utf-8')) * passes / elapsed / 1e6:.2f} {n_tokens} {tokenizers.__version__}")
PY
)
set -- $hf

cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)
printf 'machine: %s, 1 thread; tokenizer: %s; text: %s (%s bytes), %s s per side\n' "$cpu" "$tok" "$file" \
    "$(wc -c <"$file" | tr -d ' ')" "$secs"
printf '%-32s %10s %10s\n' "encoder" "MB/s" "tokens"
printf '%-32s %10s %10s\n' "flashkernel bench-tokenizer" "$ours_mbs" "$ours_tokens"
printf '%-32s %10s %10s\n' "Hugging Face tokenizers $3" "$1" "$2"
[ "$ours_tokens" = "$2" ] || { echo "bench_tokenizer: token counts differ" >&2; exit 1; }
