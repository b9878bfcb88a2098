#!/bin/bash
# Seventh session, call 10: RoPE and the KV store fused into the decode attention kernel, the new key's loads beside the query's and its cache store at the end (working tree) against HEAD:
# gpu suite native + compute_75 PTX, A/B decode, a traced INT4 step, compute-sanitizer memcheck on the attention tests.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary10.txt; L=$OUT/l10; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); old = $(cat .peers/commit) (HEAD), new = working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
rm -rf /tmp/src-old; mkdir /tmp/src-old; tar cf - --exclude=./.deps --exclude=./.peers --exclude=./.git . | tar xf - -C /tmp/src-old
cp -r .peers/old/. /tmp/src-old/
( meson setup /tmp/fk-old /tmp/src-old -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup-old.log 2>&1 &&
  ninja -C /tmp/fk-old -j4 tools/flashkernel >$L/build-old.log 2>&1 ) || note "BUILD FAILED old" &
( meson setup /tmp/fk-trace . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a -Dcuda_args=-DFK_TRACE >$L/setup-t.log 2>&1 &&
  ninja -C /tmp/fk-trace -j4 tools/flashkernel >$L/build-t.log 2>&1 ) || note "BUILD FAILED trace" &
OUT=$L/suite timeout 360 sh tests/gpu/run-on-device.sh test >$L/suite.log 2>&1; note "suite: exit $?"; grep -E "gpu suite|BUILD|FAIL|Ok:|Fail:" $L/suite/summary.txt | head -12 | tee -a $S
wait
note "all built"
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
FK_TEST_FILTER=test_attention_decode timeout 100 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/san-decode.log 2>&1
note "memcheck test_attention_decode: exit $? — $(grep -E 'PASSED|FAILED' $L/san-decode.log | head -1) $(grep -E 'ERROR SUMMARY|LEAK SUMMARY' $L/san-decode.log | tr '\n' ' ')"
tar czf $OUT/l10.tgz -C $OUT l10
echo; echo "label: old new"
for lab in int4-b1-1 int4-b1-2 none-b1-1 none-b1-2 int8-b1-1 int8-b1-2 none-b16 int4-b16 none-b64 int4-b1-p2000; do
  printf "%-14s" $lab; for v in old native; do printf " %10s" "$(grep "] $v $lab:" $S | awk '{print $NF}')"; done; echo; done
sed -n 1,12p $OUT/trace-int4-b1-new.txt; tail -11 $OUT/trace-int4-b1-new.txt
