#!/bin/bash
# Seventh session, call 1: the staged quantized linear (working tree) against HEAD (old): op tests of the quantized
# linears, A/B decode with several stage budgets, a traced INT4 step.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary1.txt; L=$OUT/l1; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); old = $(cat .peers/commit) (HEAD), new = working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
rm -rf /tmp/src-old; mkdir /tmp/src-old; tar cf - --exclude=./.deps --exclude=./.peers --exclude=./.git . | tar xf - -C /tmp/src-old
cp -r .peers/old/. /tmp/src-old/
( meson setup /tmp/fk-old /tmp/src-old -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup-old.log 2>&1 &&
  ninja -C /tmp/fk-old -j5 tools/flashkernel >$L/build-old.log 2>&1 ) || note "BUILD FAILED old" &
( meson setup /tmp/fk-trace . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a -Dcuda_args=-DFK_TRACE >$L/setup-t.log 2>&1 &&
  ninja -C /tmp/fk-trace -j5 tools/flashkernel >$L/build-t.log 2>&1 ) || note "BUILD FAILED trace" &
( meson setup /tmp/fk-native . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup-n.log 2>&1 &&
  ninja -C /tmp/fk-native -j6 tools/flashkernel tests/gpu/test_gpu_ops kernels/bench/bench_kernels >$L/build-n.log 2>&1 ) || note "BUILD FAILED native"
note "native built"
for t in test_quant_linear test_quant_linear_silu_mul test_quant_linear_gelu test_quant_layout; do
  FK_TEST_FILTER=$t timeout 150 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/op-$t.log 2>&1
  note "op $t: exit $? — $(grep -E 'PASSED|FAILED' $L/op-$t.log | head -2 | tr '\n' ' ')"
done
wait
note "all built"
run() { local v=$1 lab=$2; shift 2
  timeout 90 /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$v-$lab.log 2>&1
  note "$v $lab: $(grep -E 'output tokens/s' $L/$v-$lab.log)"; }
for r in 1 2; do
  run old int4-b1-$r --prompt-len 128 --requests 1 --quantization int4
  for kb in 96 0 48 160 200; do FK_QUANT_STAGED_KB=$kb run native int4-b1-kb$kb-$r --prompt-len 128 --requests 1 --quantization int4; done
  run old int8-b1-$r --prompt-len 128 --requests 1 --quantization int8
  for kb in 96 0 48 160 200; do FK_QUANT_STAGED_KB=$kb run native int8-b1-kb$kb-$r --prompt-len 128 --requests 1 --quantization int8; done
done
run old int4-b16 --prompt-len 128 --requests 16 --quantization int4
FK_QUANT_STAGED_KB=96 run native int4-b16-kb96 --prompt-len 128 --requests 16 --quantization int4
FK_QUANT_STAGED_KB=160 run native int4-b16-kb160 --prompt-len 128 --requests 16 --quantization int4
run old int4-b1-p2000 --prompt-len 2000 --requests 1 --quantization int4
run native int4-b1-p2000 --prompt-len 2000 --requests 1 --quantization int4
FK_TRACE_FILE=$L/trace-new.txt timeout 90 /tmp/fk-trace/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 --requests 1 --quantization int4 >$L/trace-new.log 2>&1
python3 kernels/bench/trace_report.py $L/trace-new.txt >$OUT/trace-int4-b1-new.txt 2>&1
note "trace new: $(grep -E 'output tokens/s' $L/trace-new.log); $(head -1 $OUT/trace-int4-b1-new.txt)"
timeout 100 /tmp/fk-native/kernels/bench/bench_kernels --only k_linear_quant >$OUT/kernels-quant.txt 2>&1; note "bench_kernels: exit $?"
rm -f $L/trace-new.txt; tar czf $OUT/l1.tgz -C $OUT l1 && rm -rf $L
grep -E "llama1b" $OUT/kernels-quant.txt | grep -E " m=1 | m=8 " | head -40
