#!/bin/bash
# Eighth session, call 4: the kept tree (decode attention's first chunks before the PDL wait with rope_store; the
# small linear's split rule where tiles < SMs) against HEAD: gpu suite native + compute_75 PTX, memcheck and
# racecheck on test_attention_decode and test_linear*, A/B decode, and all-cuBLAS at 9-16 tokens (FK_SMALL_LINEAR_MAX_M=8).
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary4.txt; L=$OUT/l4; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); old = $(cat .peers/commit) (HEAD), new = working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
rm -rf /tmp/fk-native /tmp/fk-ptx75
[ -f /tmp/bench-1b/config.json ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
rm -rf /tmp/src-old; mkdir /tmp/src-old; tar cf - --exclude=./.deps --exclude=./.peers --exclude=./.git . | tar xf - -C /tmp/src-old
cp -r .peers/old/. /tmp/src-old/
( rm -rf /tmp/fk-old; meson setup /tmp/fk-old /tmp/src-old -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup-old.log 2>&1 &&
  ninja -C /tmp/fk-old -j4 tools/flashkernel >$L/build-old.log 2>&1 ) || note "BUILD FAILED old" &
OUT=$L/suite timeout 380 sh tests/gpu/run-on-device.sh test >$L/suite.log 2>&1; note "suite: exit $?"; grep -E "gpu suite|BUILD|FAIL|Ok:|Fail:" $L/suite/summary.txt | head -12 | tee -a $S
wait
note "all built"
ln -sfn /tmp/fk-native /tmp/fk-new
for t in 'test_attention_decode' 'test_linear*'; do
  FK_TEST_FILTER="$t" timeout 150 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/mem-$t.log 2>&1
  note "memcheck $t: exit $? — $(grep -E 'PASSED|FAILED' $L/mem-$t.log | head -1) $(grep -E 'ERROR SUMMARY|LEAK SUMMARY' $L/mem-$t.log | tr '\n' ' ')"
done
FK_TEST_FILTER=test_attention_decode timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/race-decode.log 2>&1
note "racecheck test_attention_decode: exit $? — $(grep -E 'PASSED|FAILED' $L/race-decode.log | head -1) $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $L/race-decode.log | tr '\n' ' ')"
run() { local v=$1 lab=$2; shift 2
  timeout 90 /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$v-$lab.log 2>&1
  note "$v $lab: $(grep -E 'output tokens/s' $L/$v-$lab.log)"; }
for r in 1 2; do for v in old new; do
  run $v none-b1-$r --prompt-len 128 --requests 1
  run $v int4-b1-$r --prompt-len 128 --requests 1 --quantization int4
  run $v int8-b1-$r --prompt-len 128 --requests 1 --quantization int8
done; done
for v in old new; do
  run $v none-b16 --prompt-len 128 --requests 16
  run $v none-b64 --prompt-len 128 --requests 64 --warmup 64
done
FK_SMALL_LINEAR_MAX_M=8 run new none-b16-cublas --prompt-len 128 --requests 16
FK_SMALL_LINEAR_MAX_M=8 run new none-b12-cublas --prompt-len 128 --requests 12
run new none-b12 --prompt-len 128 --requests 12
tar czf $OUT/l4.tgz -C $OUT l4
echo; echo "label: old new"
for lab in none-b1-1 none-b1-2 int4-b1-1 int4-b1-2 int8-b1-1 int8-b1-2 none-b16 none-b64 none-b16-cublas none-b12-cublas none-b12; do
  printf "%-16s" $lab; for v in old new; do printf " %10s" "$(grep "] $v $lab:" $S | awk '{print $NF}')"; done; echo; done
