#!/bin/bash
# Session 5, call 7: the working tree (greedy argmax with 16-byte loads in k_sample; the FK_TRACE timeline, compiled
# out here) against HEAD (old): the gpu suite native + compute_75 PTX, A/B batch-1 decode and 16 / 64 requests,
# bench_kernels k_sample rows, compute-sanitizer on test_sample.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary7.txt; L=$OUT/l7; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); old = $(cat .peers/commit) (HEAD), new = working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
rm -rf /tmp/src-old; mkdir /tmp/src-old; tar cf - --exclude=./.deps --exclude=./.peers --exclude=./.git . | tar xf - -C /tmp/src-old
cp -r .peers/old/. /tmp/src-old/ && rm -f /tmp/src-old/kernels/trace.cu /tmp/src-old/kernels/bench/trace_report.py
rm -rf /tmp/fk-old /tmp/fk-native /tmp/fk-ptx75
( meson setup /tmp/fk-old /tmp/src-old -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup-old.log 2>&1 &&
  ninja -C /tmp/fk-old -j4 tools/flashkernel kernels/bench/bench_kernels >$L/build-old.log 2>&1 ) || note "BUILD FAILED old" &
OUT=$L/suite timeout 420 sh tests/gpu/run-on-device.sh test >$L/suite.log 2>&1; note "suite: exit $?"; grep -E "gpu suite|BUILD" $L/suite/summary.txt | tee -a $S
wait
run() { local v=$1 lab=$2; shift 2
  timeout 90 /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$v-$lab.log 2>&1
  note "$v $lab: $(grep -E 'output tokens/s' $L/$v-$lab.log)"; }
for r in 1 2; do for v in old native; do
  for q in none int8 int4; do run $v $q-b1-$r --prompt-len 128 --requests 1 --quantization $q; done
done; done
for v in old native; do for q in none int4; do run $v $q-b16 --prompt-len 128 --requests 16 --quantization $q; run $v $q-b64 --prompt-len 128 --requests 64 --warmup 64 --quantization $q; done; done
for v in old native; do /tmp/fk-$v/kernels/bench/bench_kernels --only k_sample --iters 300 --warmup 30 >$L/kernels-$v.txt 2>&1; done
note "bench_kernels k_sample (old, then new):"; grep -hE "^k_sample" $L/kernels-old.txt $L/kernels-native.txt | cut -c1-110 | tee -a $S
for tool in memcheck racecheck; do
  extra=""; [ $tool = memcheck ] && extra="--leak-check full"
  FK_TEST_FILTER=test_sample timeout 150 compute-sanitizer --tool $tool $extra --error-exitcode 9 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/san-$tool.log 2>&1
  note "compute-sanitizer $tool test_sample: exit $? — $(grep -E 'PASSED|FAILED' $L/san-$tool.log | head -1) $(grep -E 'ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY' $L/san-$tool.log | tr '\n' ' ')"
done
tar czf $OUT/l7.tgz -C $OUT l7 && rm -rf $L
echo; echo "label: old new"
for lab in none-b1-1 none-b1-2 int8-b1-1 int8-b1-2 int4-b1-1 int4-b1-2 none-b16 int4-b16 none-b64 int4-b64; do
  printf "%-14s" $lab; for v in old native; do printf " %10s" "$(grep "] $v $lab:" $S | awk '{print $NF}')"; done; echo; done
