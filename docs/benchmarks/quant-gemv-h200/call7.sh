#!/bin/bash
# Session 3, call 7: llama.cpp build started in the background; the gpu suite native sm_90a + compute_75 PTX at the
# commit; bench-engine --profile of bench-1b at 1 and 64 requests, fp16 / int8 / int4 (where the 64-request step goes).
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary7.txt; L=$OUT/l7; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
( deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null; [ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1b.log 2>&1 ) &
rm -rf /tmp/fk-native /tmp/fk-ptx75
timeout 330 sh tests/gpu/run-on-device.sh llamacpp-start test > $L/suite.log 2>&1
note "suite rc=$?"; tail -25 $L/suite.log | tee -a $S
wait
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
for n in 1 64; do for q in none int8 int4; do
  timeout 60 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --prompt-len 128 --max-tokens 128 \
    --max-model-len 4096 --requests $n --quantization $q --profile > $L/prof-$q-$n.log 2>&1
  note "profile $q n=$n rc=$?"; grep -iE "decode|output tokens/s|linears|step" $L/prof-$q-$n.log | head -12 | tee -a $S
done; done
