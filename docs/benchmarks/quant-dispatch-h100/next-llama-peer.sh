#!/bin/bash
# Prepared in the thirty-first session, not run (no device time left): issue 13's peer, llama.cpp's llama-bench
# tg128 of bench-1b at f16 / Q8_0 / Q4_0, with ours at fp16 / int8 / int4 batch 1 before and after it. The peer's
# source (.peers/llama.cpp-*.tar.xz, ~3-4 MiB) does not fit beside .deps in one call's 64 MiB tree (the tracked files
# are ~59 MiB): a first call carries .peers with it alone and starts .peers/build-llama-cpp.sh /tmp/llama.cpp with
# setsid; this one, within the machine's 30 s idle time, carries .deps and .peers without it.
set -u
T0=$(date +%s)
S=$OUT/summary2.txt; L=$OUT/l2; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -f /tmp/fk-native/build.ninja ] || meson setup /tmp/fk-native -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled \
    -Dcuda-arch=sm_90a >$L/setup.log 2>&1
ninja -C /tmp/fk-native tools/flashkernel >$L/build.log 2>&1; note "ours: $(tail -1 $L/build.log)"
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b \
    tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk.log 2>&1
eng() { # label extra-args...
    local label=$1; shift
    timeout 120 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests 1 \
        --prompt-len 128 --max-tokens 128 --max-model-len 4096 "$@" >$L/engine-$label.log 2>&1
    note "bench-engine $label: $(grep -E 'output tokens/s' $L/engine-$label.log | tail -1)"
}
for q in none int8 int4; do eng $q-before --quantization $q; done
tests/gpu/run-on-device.sh llamacpp >$L/llamacpp.txt 2>&1 # waits for the build; convert, quantize, llama-bench
grep "llama" $L/llamacpp.txt | tee -a $S
for q in none int8 int4; do eng $q-after --quantization $q; done
tar czf $OUT/l2.tgz -C $OUT l2
cat $S
