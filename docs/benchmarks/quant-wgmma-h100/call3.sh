#!/bin/bash
# Thirtieth session, call 3 (after call1.sh had run the wgmma quantized kernel's tests and bench_linear_quant): the
# wgmma kernel on by default (QUANT_WGMMA_MAX_M_DEFAULT, chosen from call 1's table). The op tests of the quantized
# linears again, now that the default path takes it; the whole engine on bench-1b with quantized weights,
# the new default against FK_QUANT_WGMMA_MAX_M=0 (the old default), alternated: output tokens/s of
# `flashkernel bench-engine` at 1, 64 and 256 requests (128-token prompts, 128 new tokens), INT8 and INT4; the gpu
# model tests of the quantized paths; bench_linear_quant's default column last, as far as time allows.
set -u
T0=$(date +%s)
LIMIT=${LIMIT:-570}
S=$OUT/summary3.txt; L=$OUT/l3; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
prefix=/tmp/fk-deps
deploy/offline-deps.sh unpack .deps $prefix >/dev/null || exit 1
export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
[ -f /tmp/fk-native/build.ninja ] || meson setup /tmp/fk-native -Ddep_prefix=$prefix -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1
ninja -C /tmp/fk-native >$L/build.log 2>&1 || { grep -E "error|FAILED" $L/build.log | head -30; exit 1; }
note "built"
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk.log 2>&1
note "bench-1b made"
if FK_TEST_FILTER="test_quant_linear" timeout 120 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/ops.log 2>&1; then r=passed; else r="FAILED rc=$?"; fi
note "test_gpu_ops test_quant_linear: $r"
fk=/tmp/fk-native/tools/flashkernel
for q in int8 int4; do
    for n in 64 256 1; do
        for way in new old new2 old2; do
            [ $(left) -lt 200 ] && break 3
            env="FK_QUANT_WGMMA_MAX_M_UNSET=1"; case $way in old*) env="FK_QUANT_WGMMA_MAX_M=0" ;; esac
            env $env $fk bench-engine --model /tmp/bench-1b --device cuda --quantization $q --requests $n \
                --prompt-len 128 --max-tokens 128 --max-model-len 4096 >$L/be-$q-$n-$way.txt 2>&1
            note "$q requests $n $way: $(grep 'output tokens/s' $L/be-$q-$n-$way.txt | head -1)"
        done
    done
done
if FK_TEST_FILTER="test_quant*" timeout $(( $(left) - 110 )) /tmp/fk-native/tests/gpu/test_gpu_model >$L/model.log 2>&1; then r=passed; else r="FAILED rc=$?"; fi
note "test_gpu_model test_quant*: $r $(grep -cE '^\[       OK' $L/model.log) ok"
[ "$r" = passed ] || grep -E "FAILED|Error|error|differ|expected" $L/model.log | head -12 | tee -a $S
timeout $(( $(left) - 10 )) stdbuf -oL /tmp/fk-native/kernels/bench/bench_linear_quant >$L/blq.txt 2>&1
note "bench_linear_quant rc=$? (cut off by the time limit where 124)"
tar czf $OUT/l3.tgz -C $OUT l3
cat $S
