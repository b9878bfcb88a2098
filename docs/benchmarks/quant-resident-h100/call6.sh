#!/bin/bash
# Call 6: the final tree. Quant op tests natively and as compute_75 PTX, the model tests (quantized included) and
# the engine tests natively; INT8 and INT4 batch 1 once each.
set -u
T0=$(date +%s)
S=$OUT/summary6.txt; L=$OUT/l6; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
bld() { # dir arch cuda_args targets...
  local d=$1 arch=$2 ca=$3; shift 3
  rm -rf $d; meson setup $d -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$arch "-Dcuda_args=$ca" >/dev/null 2>&1 &&
  ninja -C $d -j8 "$@" >$L/build-$(basename $d).log 2>&1; echo "$(basename $d): $(tail -1 $L/build-$(basename $d).log)"
}
bld /tmp/fk-new sm_90a "" tools/flashkernel tests/gpu/test_gpu_ops tests/gpu/test_gpu_model tests/gpu/test_engine_cuda > $L/b1.txt &
bld /tmp/fk-new75 compute_75 "" tools/flashkernel tests/gpu/test_gpu_ops > $L/b2.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
t() { # build test filter label
  FK_TEST_DEVICE=cuda ${3:+FK_TEST_FILTER=$3} timeout 150 /tmp/$1/tests/gpu/$2 > $L/$1-$2-$4.log 2>&1; echo "rc $?" >> $L/$1-$2-$4.log
  note "$1 $2 $4: $(grep -E 'PASSED|FAILED|^rc' $L/$1-$2-$4.log | tr '\n' ' ')"
}
t fk-new test_gpu_ops 'test_quant*' quant
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
for q in int8 int4; do
  timeout 60 /tmp/fk-new/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests 1 --prompt-len 128 \
    --max-tokens 128 --max-model-len 4096 --quantization $q > $L/engine-$q.log 2>&1
  note "bench-engine $q b1: $(grep -E 'output tokens/s' $L/engine-$q.log | tail -1)"
done
t fk-new test_gpu_model '' all
t fk-new75 test_gpu_ops 'test_quant*' quant
t fk-new test_engine_cuda '' all
tar czf $OUT/l6.tgz -C $OUT l6 && rm -rf $L
note done
