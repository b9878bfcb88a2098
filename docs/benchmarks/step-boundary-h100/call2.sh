#!/bin/bash
# Sixth session (2026-11-26), call 2: the working tree (embed in 16-byte pieces; the sampling rows' upload and the tokens' download
# on a copy stream beside the ops) against HEAD (old): gpu suite native + compute_75 PTX, A/B decode, a traced
# step, compute-sanitizer on the embed test and the CUDA engine test.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary2.txt; L=$OUT/l2; mkdir -p $L
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
OUT=$L/suite timeout 420 sh tests/gpu/run-on-device.sh test >$L/suite.log 2>&1; note "suite: exit $?"; grep -E "gpu suite|BUILD" $L/suite/summary.txt | tee -a $S
wait
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
  run $v none-b4 --prompt-len 128 --requests 4
  run $v int4-b16 --prompt-len 128 --requests 16 --quantization int4
  run $v none-b16 --prompt-len 128 --requests 16
  run $v none-b64 --prompt-len 128 --requests 64 --warmup 64
  run $v int4-b1-p2000 --prompt-len 2000 --requests 1 --quantization int4
done
FK_TRACE_FILE=$L/trace-new.txt timeout 90 /tmp/fk-trace/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 --requests 1 --quantization int4 >$L/trace-new.log 2>&1
python3 kernels/bench/trace_report.py $L/trace-new.txt >$OUT/trace-new-report.txt 2>&1
note "trace new: $(grep -E 'output tokens/s' $L/trace-new.log); $(head -1 $OUT/trace-new-report.txt)"
for t in test_embed_widths test_elementwise test_sample; do
  FK_TEST_FILTER=$t timeout 200 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/san-$t.log 2>&1
  note "memcheck $t: exit $? — $(grep -E 'PASSED|FAILED' $L/san-$t.log | head -1) $(grep -E 'ERROR SUMMARY|LEAK SUMMARY' $L/san-$t.log | tr '\n' ' ')"
done
FK_TEST_UNDER_SANITIZER=1 timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/fk-native/tests/gpu/test_engine_cuda >$L/san-engine.log 2>&1
note "memcheck test_engine_cuda: exit $? — $(grep -E 'PASSED|FAILED' $L/san-engine.log | head -2 | tr '\n' ' ') $(grep -E 'ERROR SUMMARY' $L/san-engine.log)"
cp $L/trace-new.txt /tmp/ 2>/dev/null; tar czf $OUT/l2.tgz -C $OUT l2 && rm -rf $L
echo; echo "label: old new"
for lab in int4-b1-1 int4-b1-2 none-b1-1 none-b1-2 int8-b1-1 int8-b1-2 none-b4 int4-b16 none-b16 none-b64 int4-b1-p2000; do
  printf "%-14s" $lab; for v in old native; do printf " %10s" "$(grep "] $v $lab:" $S | awk '{print $NF}')"; done; echo; done
