#!/bin/bash
# Thirty-second session, call 3: three builds of k_linear_quant_wgmma, otherwise the same tree:
#   new  the kept form (two A register sets for 128-token tiles; 64-token tiles keep the one-set loop);
#   two  call 2's form, two sets for both tiles (.peers/twosets/linear_quant_wgmma.cu = fc812dc's file);
#   old  HEAD's kernel before this session (.peers/old/linear_quant_wgmma.cu = b0f020d's file).
# - test_gpu_ops test_quant_linear on new;
# - bench-1b's engine at 64 requests, INT8 and INT4, the three alternated (the decision: the 64-token
#   tiles' form; bench_linear_quant runs one linear back to back, the engine runs a layer's different kernels);
# - the gpu tests gpu_model, engine_cuda, gpu_ops (sm_90a) on new with the time left.
# LIMIT (seconds, default 360: 411 s of device time were left).
set -u
T0=$(date +%s)
LIMIT=${LIMIT:-360}
S=$OUT/summary3.txt; L=$OUT/l3; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
prefix=/tmp/fk-deps
deploy/offline-deps.sh unpack .deps $prefix >/dev/null || exit 1
export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
for t in old two; do
    rm -rf /tmp/fk-$t-src && mkdir /tmp/fk-$t-src && cp -a . /tmp/fk-$t-src/
done
cp .peers/old/linear_quant_wgmma.cu /tmp/fk-old-src/kernels/
cp .peers/twosets/linear_quant_wgmma.cu /tmp/fk-two-src/kernels/
build() { # dir src
    [ -f $1/build.ninja ] || meson setup $1 $2 -Ddep_prefix=$prefix -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup-$(basename $1).log 2>&1
    ninja -C $1 -j6 >$L/build-$(basename $1).log 2>&1
}
build /tmp/fk-new . & p1=$!
build /tmp/fk-old /tmp/fk-old-src & p2=$!
build /tmp/fk-two /tmp/fk-two-src & p3=$!
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk.log 2>&1
for p in $p1 $p2 $p3; do wait $p || { note "a build FAILED"; tail -30 $L/build-*.log; exit 1; }; done
note "built the three, bench-1b made"
if FK_TEST_FILTER="test_quant_linear" timeout 150 /tmp/fk-new/tests/gpu/test_gpu_ops >$L/ops.log 2>&1; then r=passed; else r="FAILED rc=$?"; fi
note "new: test_gpu_ops test_quant_linear: $r"
[ "$r" = passed ] || { tail -30 $L/ops.log; }
for n in 64; do
    for q in int8 int4; do
        for t in new two old new two old; do
            [ $n = 32 ] && [ -f $L/be-$q-$n-$t.txt ] && continue
            [ $(left) -lt 120 ] && break 3
            f=$L/be-$q-$n-$t.txt; [ -f $f ] && f=$L/be-$q-$n-${t}b.txt
            /tmp/fk-$t/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --quantization $q --requests $n \
                --prompt-len 128 --max-tokens 128 --max-model-len 4096 >$f 2>&1
            note "$q requests $n $t: $(grep 'output tokens/s' $f | head -1)"
        done
    done
done
timeout $(( $(left) - 12 )) meson test -C /tmp/fk-new --print-errorlogs gpu_model engine_cuda gpu_ops >$L/suite-new.log 2>&1
note "native gpu suite (new, sm_90a): rc=$? $(grep -E '^(Ok|Fail|Skipped|Timeout):' $L/suite-new.log | tr -s ' ' | tr '\n' ' ')"
grep -E "^ *[0-9]+/[0-9]+ " $L/suite-new.log | tee -a $S
cp /tmp/fk-new/meson-logs/testlog.txt $L/suite-new-testlog.txt 2>/dev/null
tar czf $OUT/l3.tgz -C $OUT l3
cat $S
