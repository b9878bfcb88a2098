#!/bin/bash
# Call 3 (committed as 1a1b03f, reverted after it): the norms folded into the quantized linears that read them (k_linear_quant_norm). The new op test natively
# and as compute_75 PTX; bench-1b INT8 and INT4 at batch 1 (and 8 requests) with FK_FOLD_NORM=1 / 0 alternated in
# one build; the quantized model tests and the engine tests natively.
set -u
T0=$(date +%s)
S=$OUT/summary3.txt; L=$OUT/l3; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(git rev-parse --short HEAD)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
bld() { # name arch targets...
  local n=$1 a=$2; shift 2
  rm -rf /tmp/fk-$n; meson setup /tmp/fk-$n -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$a >/dev/null 2>&1 &&
  ninja -C /tmp/fk-$n -j8 "$@" >$L/build-$n.log 2>&1; echo "$n: $(tail -1 $L/build-$n.log)"
}
bld native sm_90a tools/flashkernel tests/gpu/test_gpu_ops tests/gpu/test_gpu_model tests/gpu/test_engine_cuda > $L/b1.txt &
bld ptx75 compute_75 tests/gpu/test_gpu_ops > $L/b2.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
t() { # build test filter label timeout
  env FK_TEST_DEVICE=cuda FK_TEST_FILTER="$3" timeout $5 /tmp/fk-$1/tests/gpu/$2 > $L/$1-$2-$4.log 2>&1; echo "rc $?" >> $L/$1-$2-$4.log
  note "$1 $2 $4: $(grep -E 'PASSED|FAILED|^rc|ERROR' $L/$1-$2-$4.log | tr '\n' ' ')"
}
t native test_gpu_ops test_quant_norm_linear norm 120
grep -B2 -A8 "FAILED\|error" $L/native-test_gpu_ops-norm.log | head -30
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
eng() { # label requests fold quant
  env FK_FOLD_NORM=$3 timeout 120 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $2 \
    --prompt-len 128 --max-tokens 128 --max-model-len 4096 --quantization $4 >$L/engine-$1.log 2>&1
  note "bench-engine $4 n=$2 FK_FOLD_NORM=$3: $(grep -E 'output tokens/s' $L/engine-$1.log | tail -1)"
}
for r in 1 2 3; do for q in int8 int4; do for f in 1 0; do eng $q-b1-f$f-r$r 1 $f $q; done; done; done
for q in int8 int4; do for f in 1 0; do eng $q-n8-f$f 8 $f $q; done; done
t native test_gpu_model test_quantized model 200
t native test_engine_cuda '' engine 120
t ptx75 test_gpu_ops test_quant_norm_linear norm 200
tar czf $OUT/l3.tgz -C $OUT l3 && rm -rf $L
note done
