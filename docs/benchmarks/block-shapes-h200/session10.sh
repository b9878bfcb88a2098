#!/bin/bash
# Call 6 of 2026-11-26: llama.cpp's llama-bench tg128 on bench-1b (f16, Q8_0, Q4_0) and FlashKernel's batch-1
# greedy decode (none, int8, int4, int4 + head) three times each, on the machine of call 5.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary.txt; L=/tmp/fk-logs; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
for i in $(seq 1 100); do [ -f /tmp/llama.cpp/done ] && break; sleep 5; done
note "llama.cpp build: $(cat /tmp/llama.cpp/done 2>/dev/null || echo running)"
B=/tmp/fk-native/tools/flashkernel
for r in 1 2 3; do
  for q in none int8 int4 "int4 --quantize-lm-head"; do
    f=$(echo "$q" | tr ' ' '_')
    # shellcheck disable=SC2086
    $B bench-engine --model /tmp/bench-1b --device cuda --quantization $q --requests 1 --prompt-len 128 --max-tokens 128 \
      --max-model-len 4096 >$L/b1-$f-$r.log 2>&1
    note "flashkernel batch-1 greedy, bench-1b, $q, run $r: $(grep -E 'output tokens/s' $L/b1-$f-$r.log) ($(grep -E '^(elapsed|weights)' $L/b1-$f-$r.log | tr -s ' ' | tr '\n' ' '))"
  done
done
l=/tmp/llama.cpp
if [ "$(cat $l/done 2>/dev/null)" = 0 ]; then
  PYTHONPATH=$l/gguf-py python3 $l/convert_hf_to_gguf.py /tmp/bench-1b --outtype f16 --outfile /tmp/b1b-f16.gguf >$L/convert.log 2>&1 || note "convert: FAILED"
  for q in Q8_0 Q4_0; do $l/build/bin/llama-quantize /tmp/b1b-f16.gguf /tmp/b1b-$q.gguf $q >$L/quantize-$q.log 2>&1 || note "quantize $q FAILED"; done
  for q in f16 Q8_0 Q4_0; do
    $l/build/bin/llama-bench -m /tmp/b1b-$q.gguf -p 0 -n 128 -ngl 99 -fa 1 -r 5 >$L/llama-bench-$q.log 2>&1
    note "llama-bench bench-1b $q tg128: $(grep -E 'tg128' $L/llama-bench-$q.log | tr -s ' ')"
  done
fi
tar czf $OUT/logs.tgz -C $L .
