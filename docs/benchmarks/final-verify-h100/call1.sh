#!/bin/bash
# Thirty-third session, call 1: the gpu suite natively (sm_90a) on the tree the thirty-second session left untested
# (0ec7fb3), then bench-1b's engine at 1 and 64 requests (none, int8, int4) while the call's time lasts.
# LIMIT (seconds, default 560).
set -u
T0=$(date +%s); LIMIT=${LIMIT:-560}
S=$OUT/summary1.txt; L=$OUT/l1; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
note "tree $(cat .peers/commit) + working tree"
FK_TEST_BUILDS=native:sm_90a timeout $(( LIMIT - 120 )) tests/gpu/run-on-device.sh test >$L/test.txt 2>&1
note "run-on-device.sh test (native): rc=$?"
cat $OUT/summary.txt >>$S
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk.log 2>&1
for n in 1 64; do
    for q in none int8 int4; do
        [ $(left) -lt 30 ] && break 2
        f=$L/be-$q-$n.txt
        timeout $(( $(left) - 5 )) /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --quantization $q --requests $n \
            --prompt-len 128 --max-tokens 128 --max-model-len 4096 >$f 2>&1
        note "$q requests $n: $(grep 'output tokens/s' $f | head -1)"
    done
done
cp /tmp/fk-logs/testlog-native.txt $L/ 2>/dev/null
tar czf $OUT/l1.tgz -C $OUT l1 && rm -rf $L
cat $S
