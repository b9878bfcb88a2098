#!/bin/bash
# Prepared in the thirtieth session, not yet run: the next A/B for issue 13's m = 32 rows. bench_linear_quant
# measured the wgmma kernel within 1.15x of fp16 at 32 tokens on every shape, where the default (two passes of the
# small kernel, QUANT_SMALL_MAX_M_DEFAULT 32) is 1.33-1.53x on Llama-3.2-1B's q|k|v and o. This alternates
# FK_QUANT_SMALL_MAX_M=16 (17-32 tokens to the wgmma kernel) with the default on bench-1b's whole engine at
# 17-48 requests, INT8 and INT4, then profiles the wgmma kernel with Nsight Compute where it is slowest against fp16
# (8B's o at m = 128 and 256: the split choice; 1B's q|k|v at m = 128). LIMIT (seconds, default 570).
set -u
T0=$(date +%s)
LIMIT=${LIMIT:-570}
S=$OUT/summary-next.txt; L=$OUT/lnext; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
prefix=/tmp/fk-deps
deploy/offline-deps.sh unpack .deps $prefix >/dev/null || exit 1
export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
[ -f /tmp/fk-native/build.ninja ] || meson setup /tmp/fk-native -Ddep_prefix=$prefix -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1
ninja -C /tmp/fk-native >$L/build.log 2>&1 || { grep -E "error|FAILED" $L/build.log | head -30; exit 1; }
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk.log 2>&1
note "built, bench-1b made"
fk=/tmp/fk-native/tools/flashkernel
for q in int8 int4; do
    for n in 32 24 48 17; do
        for way in small16 default small16b defaultb; do
            [ $(left) -lt 180 ] && break 3
            env="FK_QUANT_SMALL_MAX_M=16"; case $way in default*) env="FK_UNSET=1" ;; esac
            env $env $fk bench-engine --model /tmp/bench-1b --device cuda --quantization $q --requests $n \
                --prompt-len 128 --max-tokens 128 --max-model-len 4096 >$L/be-$q-$n-$way.txt 2>&1
            note "$q requests $n $way: $(grep 'output tokens/s' $L/be-$q-$n-$way.txt | head -1)"
        done
    done
done
for spec in "llama-3-8b o:128" "llama-3-8b o:256" "llama-3.2-1b qkv:128"; do
    [ $(left) -lt 40 ] && break
    name=${spec%:*}; m=${spec#*:}
    FK_BENCH_ONLY="$name" FK_BENCH_M=$m timeout $(( $(left) - 20 )) ncu --clock-control none -k regex:linear_quant_wgmma \
        -c 2 --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats \
        /tmp/fk-native/kernels/bench/bench_linear_quant >"$L/ncu-${name// /_}-$m.txt" 2>&1
    note "ncu $name m=$m rc=$? (see lnext/ncu-*.txt)"
done
tar czf $OUT/lnext.tgz -C $OUT lnext
cat $S
