#!/bin/bash
# Call 4: the fold, second design: FOLD_NORM (q|k|v, gate|up) normalizes the residual rows into shared memory once
# per block (no per-step work, registers as without it), one token tile only (n <= 8); INT4 one-token o and down add
# the residual on the resident kernel. The op test natively and as compute_75 PTX; bench-1b INT8 and INT4 at batch 1
# (3 rounds), 4 and 8 requests with FK_NORM_FOLD=1 / 0 alternated in one build (0: norm kernels as before); the
# quantized model tests and the engine tests natively.
set -u
T0=$(date +%s)
S=$OUT/summary4.txt; L=$OUT/l4; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit)"
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
t() { # build test filter label timeout (an empty filter: every test)
  if [ -n "$3" ]; then export FK_TEST_FILTER="$3"; else unset FK_TEST_FILTER; fi
  env FK_TEST_DEVICE=cuda timeout $5 /tmp/fk-$1/tests/gpu/$2 > $L/$1-$2-$4.log 2>&1; echo "rc $?" >> $L/$1-$2-$4.log
  unset FK_TEST_FILTER
  note "$1 $2 $4: $(grep -E 'PASSED|FAILED|^rc|ERROR' $L/$1-$2-$4.log | tr '\n' ' ')"
}
t native test_gpu_ops test_norm_fold fold 120
grep -B2 -A8 "FAILED\|error" $L/native-test_gpu_ops-fold.log | head -30
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
eng() { # label requests fold quant
  env FK_NORM_FOLD=$3 timeout 120 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $2 \
    --prompt-len 128 --max-tokens 128 --max-model-len 4096 --quantization $4 >$L/engine-$1.log 2>&1
  note "bench-engine $4 n=$2 FK_NORM_FOLD=$3: $(grep -E 'output tokens/s' $L/engine-$1.log | tail -1)"
}
for r in 1 2 3; do for q in int8 int4; do for f in 1 0; do eng $q-b1-f$f-r$r 1 $f $q; done; done; done
for n in 4 8; do for q in int8 int4; do for f in 1 0; do eng $q-n$n-f$f $n $f $q; done; done; done
t native test_gpu_model test_quantized model 200
t native test_engine_cuda '' engine 150
t ptx75 test_gpu_ops test_norm_fold fold 200
tar czf $OUT/l4.tgz -C $OUT l4 && rm -rf $L
note done
