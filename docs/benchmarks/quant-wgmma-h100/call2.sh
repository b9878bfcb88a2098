#!/bin/bash
# Twenty-ninth session, call 2 (the machine of call 1, warm): the whole engine on bench-1b with quantized weights,
# the wgmma kernel (FK_QUANT_WGMMA_MAX_M=256) against the default paths (=0), alternated in one call: output
# tokens/s of `flashkernel bench-engine` at 64 and 256 requests (128-token prompts, 128 new tokens: the prefill
# chunks and the busy decode steps), INT8 and INT4; then the gpu model tests (quantized paths included).
set -u
T0=$(date +%s)
S=$OUT/summary2.txt; L=$OUT/l2; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
prefix=/tmp/fk-deps
deploy/offline-deps.sh unpack .deps $prefix >/dev/null || exit 1
export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
[ -f /tmp/fk-native/build.ninja ] || meson setup /tmp/fk-native -Ddep_prefix=$prefix -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1
ninja -C /tmp/fk-native >$L/build.log 2>&1 || { grep -E "error|FAILED" $L/build.log | head -30; exit 1; }
note "built"
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk.log 2>&1
note "bench-1b made"
fk=/tmp/fk-native/tools/flashkernel
for round in 1 2; do
    for q in int8 int4; do
        for n in 64 256; do
            for way in wgmma before; do
                [ $(( $(date +%s) - T0 )) -gt 420 ] && break 4
                env="FK_QUANT_WGMMA_MAX_M=256"; [ $way = before ] && env="FK_QUANT_WGMMA_MAX_M=0"
                env $env $fk bench-engine --model /tmp/bench-1b --device cuda --quantization $q --requests $n \
                    --prompt-len 128 --max-tokens 128 --max-model-len 4096 >$L/be-$q-$n-$way-$round.txt 2>&1
                note "round $round $q requests $n $way: $(grep 'output tokens/s' $L/be-$q-$n-$way-$round.txt)"
            done
        done
    done
done
if FK_TEST_FILTER="test_quant*" timeout $(( 560 - ($(date +%s) - T0) )) /tmp/fk-native/tests/gpu/test_gpu_model >$L/model.log 2>&1; then r=passed; else r="FAILED rc=$?"; fi
note "test_gpu_model test_quant*: $r $(grep -cE '^\[       OK' $L/model.log) ok"
tar czf $OUT/l2.tgz -C $OUT l2
