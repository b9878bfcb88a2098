#!/bin/bash
# Twenty-ninth session, call 1: build natively (sm_90a), run the quantized-linear op tests (every path, the new wgmma
# kernel's two modes included) and the fp16 linear tests (linear_wgmma.cu now takes its tensor maps from
# tensor_map.cuh), then bench_linear_quant (wgmma against tiled, dequantize + cuBLAS and fp16 cuBLAS).
set -u
T0=$(date +%s)
S=$OUT/summary1.txt; L=$OUT/l1; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
prefix=/tmp/fk-deps
deploy/offline-deps.sh unpack .deps $prefix >/dev/null || exit 1
export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
if [ ! -f /tmp/fk-native/build.ninja ]; then
    meson setup /tmp/fk-native -Ddep_prefix=$prefix -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1 || { tail $L/setup.log; exit 1; }
fi
ninja -C /tmp/fk-native >$L/build.log 2>&1 || { grep -E "error|FAILED" $L/build.log | head -30; tar czf $OUT/l1.tgz -C $OUT l1; exit 1; }
note "built"
for f in "test_quant_*" "test_linear*"; do
    if FK_TEST_FILTER="$f" timeout 240 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/ops-${f%\*}.log 2>&1; then r=passed; else r="FAILED rc=$?"; fi
    note "test_gpu_ops $f: $r $(grep -cE '^\[       OK' $L/ops-${f%\*}.log) ok"
    [ "$r" = passed ] || grep -E "FAILED|Error|error|differ|expected" $L/ops-${f%\*}.log | head -12 | tee -a $S
done
timeout $(( 570 - ($(date +%s) - T0) )) stdbuf -oL /tmp/fk-native/kernels/bench/bench_linear_quant >$L/blq.txt 2>&1
note "bench_linear_quant rc=$?"
grep -v RESULT $L/blq.txt | tee -a $S
tar czf $OUT/l1.tgz -C $OUT l1
