#!/bin/bash
# Thirty-first session, call 1: where the quantized linears of 17-256 tokens should go on a Hopper (issue 13).
# - llama.cpp's build: started by the call before this one (it carried the peer source, which does not fit beside .deps);
#   started here, niced, in its own session, if that call did not (call 2 runs llama-bench on it);
# - bench-1b's engine, FK_QUANT_SMALL_MAX_M=16 (17-32 tokens to k_linear_quant_wgmma) alternated with the default
#   at 17, 24, 32 and 48 requests, INT8 and INT4 (the thirtieth session's next-small-vs-wgmma.sh);
# - bench_linear_quant at m = 64, 128 and 256 with the wgmma kernel's splits forced (FK_QUANT_WGMMA_SPLITS=1, 2, 4,
#   8) and chosen (0), and at m = 128, 256 with blocks of 64 tokens (FK_QUANT_WGMMA_TOKENS=64, t64): its "wgmma"
#   column is the kernel so run;
# - Nsight Compute on the kernel where it is slowest against fp16.
# LIMIT (seconds, default 450: device time ran short this session).
set -u
T0=$(date +%s)
LIMIT=${LIMIT:-450}
S=$OUT/summary1.txt; L=$OUT/l1; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
[ -d /tmp/llama.cpp ] || setsid nice -n 19 sh -c ".peers/build-llama-cpp.sh /tmp/llama.cpp >/tmp/llama-build.log 2>&1" \
    </dev/null >/dev/null 2>&1 &
prefix=/tmp/fk-deps
deploy/offline-deps.sh unpack .deps $prefix >/dev/null || exit 1
export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
[ -f /tmp/fk-native/build.ninja ] || meson setup /tmp/fk-native -Ddep_prefix=$prefix -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1
ninja -C /tmp/fk-native >$L/build.log 2>&1 || { grep -E "error|FAILED" $L/build.log | head -30; exit 1; }
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk.log 2>&1
note "built, bench-1b made"
if FK_TEST_FILTER="test_quant_linear" timeout 120 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/ops.log 2>&1; then r=passed; else r="FAILED rc=$?"; fi
note "test_gpu_ops test_quant_linear (with the forced tile tokens and splits): $r"
fk=/tmp/fk-native/tools/flashkernel
for n in 32 24 48 17; do
    for q in int8 int4; do
        for way in small16 default small16b defaultb; do
            [ $(left) -lt 250 ] && break 3
            env="FK_QUANT_SMALL_MAX_M=16"; case $way in default*) env="FK_UNSET=1" ;; esac
            env $env $fk bench-engine --model /tmp/bench-1b --device cuda --quantization $q --requests $n \
                --prompt-len 128 --max-tokens 128 --max-model-len 4096 >$L/be-$q-$n-$way.txt 2>&1
            note "$q requests $n $way: $(grep 'output tokens/s' $L/be-$q-$n-$way.txt | head -1)"
        done
    done
done
bl=/tmp/fk-native/kernels/bench/bench_linear_quant
for m in 128 256 64; do
    for sp in 0 1 2 4 8 t64; do
        [ $(left) -lt 100 ] && break 2
        [ $sp = t64 ] && [ $m = 64 ] && continue
        case $sp in t64) env="FK_QUANT_WGMMA_TOKENS=64" ;; *) env="FK_QUANT_WGMMA_SPLITS=$sp" ;; esac
        env FK_BENCH_M=$m $env timeout 60 $bl >$L/blq-m$m-s$sp.txt 2>&1
        note "bench_linear_quant m=$m splits=$sp rc=$?"
        grep -E "^llama.* $m \|" $L/blq-m$m-s$sp.txt | awk -v sp=$sp '{print "  s" sp, $0}' | cut -c1-110 >>$L/splits.txt
    done
done
for spec in "llama-3-8b o:128" "llama-3.2-1b qkv:128"; do
    [ $(left) -lt 35 ] && break
    name=${spec%:*}; m=${spec#*:}
    FK_BENCH_ONLY="$name" FK_BENCH_M=$m timeout $(( $(left) - 15 )) ncu --clock-control none -k regex:linear_quant_wgmma \
        -c 2 --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats \
        --section SchedulerStats $bl >"$L/ncu-${name// /_}-$m.txt" 2>&1
    note "ncu $name m=$m rc=$?"
done
note "llama.cpp build: done=$(cat /tmp/llama.cpp/done 2>/dev/null) $(tail -1 /tmp/llama-build.log 2>/dev/null)"
tar czf $OUT/l1.tgz -C $OUT l1
cat $S
echo "--- splits (wgmma column = 5th number field after '|')"
cat $L/splits.txt
