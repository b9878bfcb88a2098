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
ninja -C /tmp/fk-native tools/flashkernel >$L/build.log 2>&1; note "ours: $(tail -1 $L/build.log)"
for i in $(seq 1 100); do [ -f /tmp/llama.cpp/done ] && break; sleep 5; done
note "llama.cpp build: done=$(cat /tmp/llama.cpp/done 2>/dev/null) $(tail -1 /tmp/llama-build.log 2>/dev/null)"
eng() { # label extra-args...
    local label=$1; shift
    timeout 120 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests 1 \
        --prompt-len 128 --max-tokens 128 --max-model-len 4096 "$@" >$L/engine-$label.log 2>&1
    note "bench-engine $label: $(grep -E 'output tokens/s' $L/engine-$label.log | tail -1)"
}
for q in none int8 int4; do eng $q-before --quantization $q; done
l=/tmp/llama.cpp
PYTHONPATH=$l/gguf-py python3 $l/convert_hf_to_gguf.py /tmp/bench-1b --outtype f16 --outfile /tmp/b1b-f16.gguf >$L/convert.log 2>&1 || note "convert: FAILED"
for q in Q8_0 Q4_0; do $l/build/bin/llama-quantize /tmp/b1b-f16.gguf /tmp/b1b-$q.gguf $q >$L/quantize-$q.log 2>&1 || note "quantize $q: FAILED"; done
for q in f16 Q8_0 Q4_0; do
    $l/build/bin/llama-bench -m /tmp/b1b-$q.gguf -p 0 -n 128 -ngl 99 -fa 1 -r 5 >$L/llama-bench-$q.log 2>&1
    note "llama-bench bench-1b $q tg128: $(grep -E 'tg128' $L/llama-bench-$q.log | tr -s ' ')"
done
for q in none int8 int4; do eng $q-after --quantization $q; done
tar czf $OUT/l2.tgz -C $OUT l2
cat $S
