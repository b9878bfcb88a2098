#!/bin/bash
# Session 3, call 12: the gpu suite native sm_90a + compute_75 PTX at the refactor (split-K handshake and cp.async
# copy in one place each), then bench-engine batch 1 and 64 requests (no speed change expected).
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary12.txt; L=$OUT/l12; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
( [ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1b.log 2>&1 ) &
rm -rf /tmp/fk-native /tmp/fk-ptx75
timeout 400 sh tests/gpu/run-on-device.sh test > $L/suite.log 2>&1
note "suite rc=$?"; grep -E "^ *[0-9]/4 gpu|Ok:|Fail:|FAIL" $L/suite.log /tmp/fk-out/*.log 2>/dev/null | head -20 | tee -a $S
tail -5 $L/suite.log | tee -a $S
wait
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
run() { local lab=$1; shift
  timeout 100 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --prompt-len 128 --max-tokens 128 --max-model-len 4096 "$@" >$L/$lab.log 2>&1
  note "$lab: $(grep -E 'output tokens/s' $L/$lab.log)"; }
for q in none int8 int4; do run $q-b1 --requests 1 --quantization $q; done
for q in int8 int4; do run $q-64 --requests 64 --quantization $q --warmup 64; done
