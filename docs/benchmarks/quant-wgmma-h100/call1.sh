#!/bin/bash
# Twenty-ninth session, call 1: build natively (sm_90a), run the quantized-linear op tests (every path, the new wgmma
# kernel's two modes included), bench_linear_quant (wgmma against tiled, dequantize + cuBLAS and fp16 cuBLAS), then
# the remaining op tests (GELU and SiLU·mul epilogues; the fp16 linears: linear_wgmma.cu now takes its tensor maps
# from tensor_map.cuh) as far as the time allows. LIMIT (seconds, default 570) is the call's limit.
set -u
T0=$(date +%s)
LIMIT=${LIMIT:-570}
S=$OUT/summary1.txt; L=$OUT/l1; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
prefix=/tmp/fk-deps
deploy/offline-deps.sh unpack .deps $prefix >/dev/null || exit 1
export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
if [ ! -f /tmp/fk-native/build.ninja ]; then
    meson setup /tmp/fk-native -Ddep_prefix=$prefix -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1 || { tail $L/setup.log; exit 1; }
fi
ninja -C /tmp/fk-native tests/gpu/test_gpu_ops kernels/bench/bench_linear_quant >$L/build.log 2>&1 || { grep -E "error|FAILED" $L/build.log | head -30; exit 1; }
note "built"
ops() { # filter seconds
    if FK_TEST_FILTER="$1" timeout $2 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/ops-$1.log 2>&1; then r=passed; else r="FAILED rc=$?"; fi
    note "test_gpu_ops $1: $r $(grep -cE '^\[       OK' $L/ops-$1.log) ok"
    [ "$r" = passed ] || grep -E "FAILED|Error|error|differ|expected" $L/ops-$1.log | head -12 | tee -a $S
}
ops test_quant_layout 60
ops test_quant_linear 150
timeout $(( $(left) - 150 )) stdbuf -oL /tmp/fk-native/kernels/bench/bench_linear_quant >$L/blq.txt 2>&1
note "bench_linear_quant rc=$?"
grep -v RESULT $L/blq.txt >>$S
ops test_quant_linear_gelu $(( $(left) / 3 ))
ops test_quant_linear_silu_mul $(( $(left) / 2 ))
ops "test_linear*" $(( $(left) - 10 ))
tar czf $OUT/l1.tgz -C $OUT l1
grep -v RESULT $L/blq.txt | cut -c1-170
