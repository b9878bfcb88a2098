#!/bin/bash
# Call 8: the policy from call 7 in code: the fold for INT8 only (FK_NORM_FOLD mask 1; INT4 = 2), up to
# FK_NORM_FOLD_MAX_M tokens (default 1), and no early release in a folded pass. bench-1b INT8 batch 1 (3 rounds),
# INT8 at 2, 4 and 8 requests with FK_NORM_FOLD_MAX_M=8, INT4 batch 1 with FK_NORM_FOLD=2, each against
# FK_NORM_FOLD=0 alternated in one build; then the fold's op test (natively and as compute_75 PTX), the quantized
# model tests and the engine tests natively, on the default policy.
set -u
T0=$(date +%s)
S=$OUT/summary8.txt; L=$OUT/l8; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
bld() { # name arch targets...
  local n=$1 a=$2; shift 2
  [ -d /tmp/fk-$n ] || meson setup /tmp/fk-$n -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$a >/dev/null 2>&1
  ninja -C /tmp/fk-$n -j8 "$@" >$L/build-$n.log 2>&1; echo "$n: $(tail -1 $L/build-$n.log)"
}
bld native sm_90a tools/flashkernel tests/gpu/test_gpu_ops tests/gpu/test_gpu_model tests/gpu/test_engine_cuda > $L/b1.txt &
bld ptx75 compute_75 tests/gpu/test_gpu_ops > $L/b2.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
t() { # build test filter label timeout (an empty filter: every test)
  if [ -n "$3" ]; then export FK_TEST_FILTER="$3"; else unset FK_TEST_FILTER; fi
  env FK_TEST_DEVICE=cuda timeout $5 /tmp/fk-$1/tests/gpu/$2 > $L/$1-$2-$4.log 2>&1; echo "rc $?" >> $L/$1-$2-$4.log
  unset FK_TEST_FILTER
  note "$1 $2 $4: $(grep -E 'PASSED|FAILED|^rc|ERROR' $L/$1-$2-$4.log | tr '\n' ' ')"
}
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
eng() { # label quant requests env...
  local label=$1 q=$2 n=$3; shift 3
  env "$@" timeout 120 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n \
    --prompt-len 128 --max-tokens 128 --max-model-len 4096 --quantization $q >$L/engine-$label.log 2>&1
  note "bench-engine $q n=$n [$*]: $(grep -E 'output tokens/s' $L/engine-$label.log | tail -1)"
}
for r in 1 2 3; do eng int8-b1-fold-r$r int8 1 X=1; eng int8-b1-off-r$r int8 1 FK_NORM_FOLD=0; done
for n in 2 4 8; do eng int8-n$n-fold int8 $n FK_NORM_FOLD_MAX_M=8; eng int8-n$n-off int8 $n FK_NORM_FOLD=0; done
eng int4-b1-fold int4 1 FK_NORM_FOLD=2; eng int4-b1-off int4 1 FK_NORM_FOLD=0
t native test_gpu_ops test_norm_fold fold 120
grep -B2 -A8 "FAILED\|error" $L/native-test_gpu_ops-fold.log | head -20
t native test_gpu_model test_quantized model 200
t native test_engine_cuda '' engine 150
t ptx75 test_gpu_ops test_norm_fold fold 200
tar czf $OUT/l8.tgz -C $OUT l8 && rm -rf $L
note done
