#!/bin/bash
# Session 3, call 4: INT4 dequantization in fewer instructions (one LOP3 a pair, an fma for the in-place nibble)
# against HEAD's, and the RT2 variant (two row tiles a warp at <= 8 tokens): quant tests native + compute_75,
# bench_linear (1B, 8B), bench_linear_quant m=64, bench-engine batch 1 / 16 / 64.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary.txt; L=/tmp/fk-logs4; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
rm -rf /tmp/src-old; mkdir /tmp/src-old; tar cf - --exclude=./.deps --exclude=./.peers --exclude=./.git . | tar xf - -C /tmp/src-old
cp .peers/old/* /tmp/src-old/kernels/
bld() { local v=$1 src=$2 arch=$3 args=$4; shift 4
  meson setup /tmp/fk-$v $src -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$arch "-Dcuda_args=$args" >$L/setup-$v.log 2>&1
  ninja -C /tmp/fk-$v -j6 "$@" >$L/build-$v.log 2>&1 || echo "BUILD FAILED $v" | tee -a $S; }
rm -rf /tmp/fk-old /tmp/fk-new /tmp/fk-rt2 /tmp/fk-p75
bld old /tmp/src-old sm_90a "" tools/flashkernel kernels/bench/bench_linear kernels/bench/bench_linear_quant &
bld new . sm_90a "" tools/flashkernel kernels/bench/bench_linear kernels/bench/bench_linear_quant tests/gpu/test_gpu_ops &
bld rt2 . sm_90a "-DFK_QLINEAR_RT2=1" tools/flashkernel kernels/bench/bench_linear tests/gpu/test_gpu_ops &
bld p75 . compute_75 "" tests/gpu/test_gpu_ops &
wait; note "built"
for v in new p75 rt2; do
  FK_TEST_FILTER='test_quant*' timeout 200 /tmp/fk-$v/tests/gpu/test_gpu_ops >$L/test-$v.log 2>&1
  note "test_quant* $v rc=$?: $(grep -E 'PASSED|FAILED' $L/test-$v.log | tr '\n' ' ')"; grep -E "ERROR|FAIL" $L/test-$v.log | head -5 | tee -a $S
done
for v in old new rt2; do FK_BENCH_ONLY="llama" timeout 100 /tmp/fk-$v/kernels/bench/bench_linear > $L/bl-$v.log 2>&1; note "bench_linear $v rc=$?"; done
echo "shape | old us %copy | new | rt2" | tee -a $S
paste <(grep "RESULT linear_quant " $L/bl-old.log | sed -E 's/RESULT linear_quant (int.) (\S+) (.*) m=([0-9]+): ([0-9.]+) us ([0-9.]+)% of copy.*/\1 \2 \3 m=\4 | \5 \6%/') \
      <(grep "RESULT linear_quant " $L/bl-new.log | sed -E 's/.*: ([0-9.]+) us ([0-9.]+)% of copy.*/| \1 \2%/') \
      <(grep "RESULT linear_quant " $L/bl-rt2.log | sed -E 's/.*: ([0-9.]+) us ([0-9.]+)% of copy.*/| \1 \2%/') | tee -a $S
for v in old new; do FK_BENCH_M=64 timeout 60 /tmp/fk-$v/kernels/bench/bench_linear_quant >$L/blq-$v.log 2>&1; note "blq $v rc=$?"; done
paste <(grep -v RESULT $L/blq-old.log | awk 'NR>2 && $4==64 {print $1,$2,$3,"fp16",$6,"tiled",$8}') <(grep -v RESULT $L/blq-new.log | awk 'NR>2 && $4==64 {print "new tiled",$8}') | tee -a $S
wait
run() { local v=$1 lab=$2; shift 2
  /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --prompt-len 128 --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$v-$lab.log 2>&1
  note "$v $lab: $(grep -E 'output tokens/s' $L/$v-$lab.log)"; }
for r in 1 2; do for v in old new rt2; do for q in int8 int4; do run $v $q-b1-$r --requests 1 --quantization $q; done; done; done
for v in old new rt2; do for q in int8 int4; do run $v $q-b8 --requests 8 --quantization $q; done; done
for v in old new; do run $v int4-b64 --requests 64 --quantization int4; done
tar czf $OUT/logs.tgz -C $L .
