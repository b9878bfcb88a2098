#!/bin/bash
# Call 6: the small quantized kernel's build-time tuning again, in the whole step (earlier sessions timed these in
# bench_linear alone, or before the resident kernel and the 4-warp SiLU·mul): HEAD against -DFK_QLINEAR_BATCH_INT8=8
# and =2 (loads per batch) and -DFK_QLINEAR_WARPS_PER_SM=16 and =4 (the split-K target); bench-1b INT8 batch 1, two
# runs each alternated; INT4 batch 1 once for HEAD and the two split-K targets.
set -u
T0=$(date +%s)
S=$OUT/summary6.txt; L=$OUT/l6; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(git rev-parse --short HEAD)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
bld() { # name cuda_args
  rm -rf /tmp/fk-$1; meson setup /tmp/fk-$1 -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a "-Dcuda_args=$2" >/dev/null 2>&1 &&
  ninja -C /tmp/fk-$1 -j4 tools/flashkernel >$L/build-$1.log 2>&1; echo "$1: $(tail -1 $L/build-$1.log)"
}
bld head "" > $L/b1.txt & bld b8 "-DFK_QLINEAR_BATCH_INT8=8" > $L/b2.txt & bld b2 "-DFK_QLINEAR_BATCH_INT8=2" > $L/b3.txt &
bld wps16 "-DFK_QLINEAR_WARPS_PER_SM=16" > $L/b4.txt & bld wps4 "-DFK_QLINEAR_WARPS_PER_SM=4" > $L/b5.txt & wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
eng() { # build label quant
  [ -x /tmp/fk-$1/tools/flashkernel ] || return
  timeout 60 /tmp/fk-$1/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests 1 \
    --prompt-len 128 --max-tokens 128 --max-model-len 4096 --quantization $3 >$L/engine-$1-$2.log 2>&1
  note "bench-engine $3 b1 $1: $(grep -E 'output tokens/s' $L/engine-$1-$2.log | tail -1)"
}
for r in 1 2; do for b in head b8 b2 wps16 wps4; do eng $b int8-r$r int8; done; done
for b in head wps16 wps4; do eng $b int4 int4; done
tar czf $OUT/l6.tgz -C $OUT l6 && rm -rf $L
note done
