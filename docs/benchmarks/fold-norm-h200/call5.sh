#!/bin/bash
# Call 5: call 4's A/B again (its variant did not build: an unused parameter), without the racecheck. HEAD against
# every INT8 small-batch linear in 4-warp blocks, bench-1b INT8 batch 1 alternated, 3 runs each, 16 requests once.
set -u
T0=$(date +%s)
S=$OUT/summary5.txt; L=$OUT/l5; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(git rev-parse --short HEAD)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
rm -rf /tmp/src-w4; mkdir /tmp/src-w4; tar cf - --exclude=./.deps --exclude=./.peers . | tar xf - -C /tmp/src-w4
sed -i 's/    if (format == K_QUANT_INT8 \&\& epilogue == K_LINEAR_SILU_MUL)$/    if (format == K_QUANT_INT8 \&\& epilogue >= 0)/' /tmp/src-w4/kernels/linear_quant.cu
note "variant patch: $(grep -c '^    if (format == K_QUANT_INT8 && epilogue >= 0)$' /tmp/src-w4/kernels/linear_quant.cu) line(s)"
bld() { # name src targets...
  local n=$1 src=$2; shift 2
  rm -rf /tmp/fk-$n; (cd $src && meson setup /tmp/fk-$n -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >/dev/null 2>&1) &&
  ninja -C /tmp/fk-$n -j8 "$@" >$L/build-$n.log 2>&1; echo "$n: $(tail -1 $L/build-$n.log)"
}
bld head $PWD tools/flashkernel tests/gpu/test_gpu_ops > $L/b1.txt &
bld w4 /tmp/src-w4 tools/flashkernel > $L/b2.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
eng() { # build label requests
  timeout 120 /tmp/fk-$1/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $3 \
    --prompt-len 128 --max-tokens 128 --max-model-len 4096 --quantization int8 >$L/engine-$1-$2.log 2>&1
  note "bench-engine int8 n=$3 $1: $(grep -E 'output tokens/s' $L/engine-$1-$2.log | tail -1)"
}
for r in 1 2 3; do for b in head w4; do eng $b b1-r$r 1; done; done
for b in head w4; do eng $b n16 16; done
FK_TEST_UNDER_SANITIZER=1 FK_TEST_DEVICE=cuda FK_TEST_FILTER='test_quant_linear_silu_mul' OMP_WAIT_POLICY=passive timeout 330 \
tar czf $OUT/l5.tgz -C $OUT l5 && rm -rf $L
note done
