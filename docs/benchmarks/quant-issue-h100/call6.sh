#!/bin/bash
# Seventh session, call 6: the quantized SiLU·mul (gate|up) linear in blocks of 4 warps (-DFK_QLINEAR_SILU_WARPS=4:
# 512 blocks that fit the GPU in one wave, each warp 4 k-steps) against HEAD (8 warps, two waves); a traced INT4 step.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary6.txt; L=$OUT/l6; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); old = $(cat .peers/commit) (HEAD)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
rm -rf /tmp/src-old; mkdir /tmp/src-old; tar cf - --exclude=./.deps --exclude=./.peers --exclude=./.git . | tar xf - -C /tmp/src-old
cp -r .peers/old/. /tmp/src-old/
( meson setup /tmp/fk-old /tmp/src-old -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup-old.log 2>&1 &&
  ninja -C /tmp/fk-old -j5 tools/flashkernel >$L/build-old.log 2>&1 ) || note "BUILD FAILED old" &
( meson setup /tmp/fk-trace . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a "-Dcuda_args=-DFK_TRACE -DFK_QLINEAR_SILU_WARPS=4" >$L/setup-t.log 2>&1 &&
  ninja -C /tmp/fk-trace -j5 tools/flashkernel >$L/build-t.log 2>&1 ) || note "BUILD FAILED trace" &
( meson setup /tmp/fk-s4 . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a "-Dcuda_args=-DFK_QLINEAR_SILU_WARPS=4" >$L/setup-s4.log 2>&1 &&
  ninja -C /tmp/fk-s4 -j6 tools/flashkernel tests/gpu/test_gpu_ops >$L/build-s4.log 2>&1 ) || note "BUILD FAILED s4"
wait
note "all built"
FK_TEST_FILTER=test_quant_linear_silu_mul timeout 150 /tmp/fk-s4/tests/gpu/test_gpu_ops >$L/op-silu.log 2>&1; note "op silu_mul (s4): exit $?"
run() { local v=$1 lab=$2; shift 2
  timeout 90 /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$v-$lab.log 2>&1
  note "$v $lab: $(grep -E 'output tokens/s' $L/$v-$lab.log)"; }
for r in 1 2; do for v in old s4; do
  run $v int4-b1-$r --prompt-len 128 --requests 1 --quantization int4
  run $v int8-b1-$r --prompt-len 128 --requests 1 --quantization int8
done; done
for v in old s4; do
  run $v int4-b4 --prompt-len 128 --requests 4 --quantization int4
  run $v int4-b16 --prompt-len 128 --requests 16 --quantization int4
  run $v int8-b16 --prompt-len 128 --requests 16 --quantization int8
  run $v int4-b1-p2000 --prompt-len 2000 --requests 1 --quantization int4
done
FK_TRACE_FILE=$L/trace.txt timeout 90 /tmp/fk-trace/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 --requests 1 --quantization int4 >$L/trace.log 2>&1
python3 kernels/bench/trace_report.py $L/trace.txt >$OUT/trace-int4-b1-silu4.txt 2>&1; rm -f $L/trace.txt
note "trace s4: $(grep -E 'output tokens/s' $L/trace.log); $(head -1 $OUT/trace-int4-b1-silu4.txt)"
tar czf $OUT/l6.tgz -C $OUT l6
echo; echo "label: old s4"
for lab in int4-b1-1 int4-b1-2 int8-b1-1 int8-b1-2 int4-b4 int4-b16 int8-b16 int4-b1-p2000; do
  printf "%-14s" $lab; for v in old s4; do printf " %10s" "$(grep "] $v $lab:" $S | awk '{print $NF}')"; done; echo; done
sed -n 1,14p $OUT/trace-int4-b1-silu4.txt; tail -12 $OUT/trace-int4-b1-silu4.txt
