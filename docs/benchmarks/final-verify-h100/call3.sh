#!/bin/bash
# Thirty-third session, call 3 (call 2's machine, warm): issue 13's peer. Ours batch 1 (fp16, INT8, INT4) before and
# after llama.cpp's llama-bench tg128 of bench-1b at f16 / Q8_0 / Q4_0 (run-on-device.sh llamacpp: waits for call 2's
# build, converts, quantizes). Then, while the call's time lasts, test_gpu_ops's quantized-linear tests on the
# compute_75 PTX build call 2 started. LIMIT (seconds, default 400).
set -u
T0=$(date +%s); LIMIT=${LIMIT:-400}
S=$OUT/summary3.txt; L=$OUT/l3; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
note "llama.cpp build so far: $(tail -c 200 /tmp/llama.cpp/build.log 2>/dev/null | tr '\n' ' ' | tail -c 100)"
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk.log 2>&1
eng() { # label quantization
    timeout 60 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests 1 \
        --prompt-len 128 --max-tokens 128 --max-model-len 4096 --quantization $2 >$L/engine-$1-$2.log 2>&1
    note "flashkernel bench-engine batch 1 $2 ($1): $(grep -E 'output tokens/s' $L/engine-$1-$2.log | tail -1)"
}
for q in none int8 int4; do eng before $q; done
OUT=$L/llamacpp tests/gpu/run-on-device.sh llamacpp >$L/llamacpp.txt 2>&1
grep "llama" $L/llamacpp/summary.txt | tee -a $S
for q in none int8 int4; do eng after $q; done
for i in $(seq 1 30); do [ -f /tmp/ptx75-done ] && break; sleep 2; done
note "ptx75 build: $(cat /tmp/ptx75-done 2>/dev/null) $(tail -1 /tmp/ptx75-build.log 2>/dev/null)"
if [ "$(cat /tmp/ptx75-done 2>/dev/null)" = 0 ] && [ $(left) -gt 60 ]; then
    FK_TEST_FILTER="test_quant*" timeout $(( $(left) - 15 )) /tmp/fk-ptx75/tests/gpu/test_gpu_ops >$L/ops-ptx75.log 2>&1
    note "ptx75 test_gpu_ops test_quant*: rc=$? ($(grep -c 'OK \]' $L/ops-ptx75.log) OK, $(grep -c 'FAILED \]' $L/ops-ptx75.log) FAILED)"
    grep -E '^\[ *(RUN|OK|FAILED)' $L/ops-ptx75.log | tail -40 >>$S
fi
tar czf $OUT/l3.tgz -C $OUT l3 && rm -rf $L
cat $S
