#!/bin/bash
# Seventh session, call 8: the fused decode attention with every load of q, k and v in flight before any use
# (working tree) against HEAD: attention op tests native and compute_75 PTX, A/B decode, a traced INT4 step,
# compute-sanitizer memcheck and racecheck on test_attention_decode.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary8.txt; L=$OUT/l8; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); old = $(cat .peers/commit) (HEAD), new = working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
rm -rf /tmp/src-old; mkdir /tmp/src-old; tar cf - --exclude=./.deps --exclude=./.peers --exclude=./.git . | tar xf - -C /tmp/src-old
cp -r .peers/old/. /tmp/src-old/
bld() { local v=$1 src=$2 arch=$3 args=$4; shift 4
  ( meson setup /tmp/fk-$v $src -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$arch "-Dcuda_args=$args" >$L/setup-$v.log 2>&1 &&
    ninja -C /tmp/fk-$v -j4 "$@" >$L/build-$v.log 2>&1 ) || note "BUILD FAILED $v"; }
bld old /tmp/src-old sm_90a "" tools/flashkernel &
bld trace . sm_90a "-DFK_TRACE" tools/flashkernel &
bld ptx75 . compute_75 "" tests/gpu/test_gpu_ops &
bld native . sm_90a "" tools/flashkernel tests/gpu/test_gpu_ops
wait
note "all built"
for v in native ptx75; do
  FK_TEST_FILTER=test_attention timeout 200 /tmp/fk-$v/tests/gpu/test_gpu_ops >$L/op-$v.log 2>&1
  note "op test_attention* ($v): exit $? — $(grep -E 'PASSED|FAILED' $L/op-$v.log | head -2 | tr '\n' ' ')"
done
run() { local v=$1 lab=$2; shift 2
  timeout 90 /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$v-$lab.log 2>&1
  note "$v $lab: $(grep -E 'output tokens/s' $L/$v-$lab.log)"; }
for r in 1 2; do for v in old native; do
  run $v int4-b1-$r --prompt-len 128 --requests 1 --quantization int4
  run $v none-b1-$r --prompt-len 128 --requests 1
  run $v int8-b1-$r --prompt-len 128 --requests 1 --quantization int8
done; done
for v in old native; do
  run $v none-b16 --prompt-len 128 --requests 16
  run $v int4-b16 --prompt-len 128 --requests 16 --quantization int4
  run $v none-b64 --prompt-len 128 --requests 64 --warmup 64
  run $v int4-b1-p2000 --prompt-len 2000 --requests 1 --quantization int4
done
FK_TRACE_FILE=$L/trace.txt timeout 90 /tmp/fk-trace/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 --requests 1 --quantization int4 >$L/trace.log 2>&1
python3 kernels/bench/trace_report.py $L/trace.txt >$OUT/trace-int4-b1-new.txt 2>&1; rm -f $L/trace.txt
note "trace new: $(grep -E 'output tokens/s' $L/trace.log); $(head -1 $OUT/trace-int4-b1-new.txt)"
for tool in memcheck racecheck; do
  extra=""; [ $tool = memcheck ] && extra="--leak-check full"
  FK_TEST_FILTER=test_attention_decode timeout 200 compute-sanitizer --tool $tool $extra --error-exitcode 9 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/san-$tool.log 2>&1
  note "$tool test_attention_decode: exit $? — $(grep -E 'PASSED|FAILED' $L/san-$tool.log | head -1) $(grep -E 'ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY' $L/san-$tool.log | tr '\n' ' ')"
done
tar czf $OUT/l8.tgz -C $OUT l8
echo; echo "label: old new"
for lab in int4-b1-1 int4-b1-2 none-b1-1 none-b1-2 int8-b1-1 int8-b1-2 none-b16 int4-b16 none-b64 int4-b1-p2000; do
  printf "%-14s" $lab; for v in old native; do printf " %10s" "$(grep "] $v $lab:" $S | awk '{print $NF}')"; done; echo; done
sed -n 1,12p $OUT/trace-int4-b1-new.txt; tail -11 $OUT/trace-int4-b1-new.txt
