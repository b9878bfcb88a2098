#!/bin/bash
# Thirty-second session, call 3: the kept form of k_linear_quant_wgmma (two A register sets for 128-token tiles only;
# 64-token tiles keep HEAD's one-set loop, whose registers leave room for two blocks an SM) against HEAD's kernel
# (.peers/old/linear_quant_wgmma.cu), both built here:
# - SASS counts (INT8, 6 stages, 128- and 64-token tiles);
# - test_gpu_ops test_quant_linear on the new kernel;
# - bench_linear_quant: fp16 / wgmma / default on the new tree, wgmma / default on the old one;
# - bench-1b's engine at 32, 64 and 128 requests, INT8 and INT4, new then old;
# - the native gpu suite (sm_90a) on the new tree with the time left.
# LIMIT (seconds, default 560).
set -u
T0=$(date +%s)
LIMIT=${LIMIT:-560}
S=$OUT/summary3.txt; L=$OUT/l3; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
prefix=/tmp/fk-deps
deploy/offline-deps.sh unpack .deps $prefix >/dev/null || exit 1
export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
rm -rf /tmp/fk-old-src && mkdir /tmp/fk-old-src && cp -a . /tmp/fk-old-src/ && cp .peers/old/linear_quant_wgmma.cu /tmp/fk-old-src/kernels/
build() { # dir src
    [ -f $1/build.ninja ] || meson setup $1 $2 -Ddep_prefix=$prefix -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup-$(basename $1).log 2>&1
    ninja -C $1 -j8 >$L/build-$(basename $1).log 2>&1
}
build /tmp/fk-new . & p1=$!
build /tmp/fk-old /tmp/fk-old-src & p2=$!
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk.log 2>&1
wait $p1 || { note "new build FAILED"; tail -30 $L/build-fk-new.log; exit 1; }
wait $p2 || { note "old build FAILED"; tail -30 $L/build-fk-old.log; exit 1; }
note "built both, bench-1b made"
for t in new old; do
    o=$(ls /tmp/fk-$t/kernels/*.p/linear_quant_wgmma.cu.o)
    cuobjdump -sass $o >$L/sass-$t.txt 2>&1
    for tok in 128 64; do
        awk -v p="ILi1ELi${tok}ELi0ELi6E" '/Function :/ {f = index($0, p) > 0} f' $L/sass-$t.txt >$L/sass-$t-int8-$tok-6.txt
        note "SASS $t (INT8, $tok tokens, 6 stages): HGMMA $(grep -c HGMMA $L/sass-$t-int8-$tok-6.txt), WARPGROUP.DEPBAR $(grep -c 'WARPGROUP.DEPBAR' $L/sass-$t-int8-$tok-6.txt), WARPGROUP.ARRIVE $(grep -c 'WARPGROUP.ARRIVE' $L/sass-$t-int8-$tok-6.txt)"
    done
done
if FK_TEST_FILTER="test_quant_linear" timeout 150 /tmp/fk-new/tests/gpu/test_gpu_ops >$L/ops.log 2>&1; then r=passed; else r="FAILED rc=$?"; fi
note "new: test_gpu_ops test_quant_linear: $r"
[ "$r" = passed ] || { tail -30 $L/ops.log; }
FK_BENCH_WAYS=fp16,wgmma,default timeout 100 /tmp/fk-new/kernels/bench/bench_linear_quant >$L/blq-new.txt 2>&1; note "bench_linear_quant new (fp16, wgmma, default): rc=$?"
FK_BENCH_WAYS=wgmma,default timeout 100 /tmp/fk-old/kernels/bench/bench_linear_quant >$L/blq-old.txt 2>&1; note "bench_linear_quant old (wgmma, default): rc=$?"
for n in 64 32 128; do
    for q in int8 int4; do
        for t in new old; do
            [ $(left) -lt 330 ] && break 3
            f=$L/be-$q-$n-$t.txt
            /tmp/fk-$t/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --quantization $q --requests $n \
                --prompt-len 128 --max-tokens 128 --max-model-len 4096 >$f 2>&1
            note "$q requests $n $t: $(grep 'output tokens/s' $f | head -1)"
        done
    done
done
timeout $(( $(left) - 15 )) meson test -C /tmp/fk-new --suite gpu --print-errorlogs >$L/suite-new.log 2>&1
note "native gpu suite (new, sm_90a): rc=$? $(grep -E '^(Ok|Fail|Skipped|Timeout):' $L/suite-new.log | tr -s ' ' | tr '\n' ' ')"
grep -E "^ *[0-9]+/[0-9]+ " $L/suite-new.log | tee -a $S
cp /tmp/fk-new/meson-logs/testlog.txt $L/suite-new-testlog.txt 2>/dev/null
tar czf $OUT/l3.tgz -C $OUT l3
cat $S
echo "--- bench_linear_quant: new wgmma / old wgmma, new default / old default, fp16 (us)"
paste <(grep '^llama' $L/blq-new.txt) <(grep '^llama' $L/blq-old.txt) | awk -F'|' '{split($3,w," "); split($7,wo," "); split($4,d," "); split($8,dold," "); printf "%-26s fp16 %7s  wgmma %7s / %7s  default %7s / %7s\n", $1, $2+0, w[1], wo[1], d[1], dold[1]}' | head -120
