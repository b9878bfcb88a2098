#!/bin/bash
# Ninth session, call 3: the early weight loads kept ahead of the PDL wait (load_early16), A/B in one run:
# old = HEAD's kernels; newq = linear_quant only; new = linear_quant and linear_small. Plus the wait_order check.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary3.txt; L=$OUT/l3; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree = $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
for v in old newq; do mkdir -p /tmp/src-$v; git ls-files -co --exclude-standard | tar cf - -T - | tar xf - -C /tmp/src-$v; done
cp -r .peers/old/. /tmp/src-old/; cp -r .peers/v/newq/. /tmp/src-newq/
b() { local dir=$1 src=$2; shift 2; ( meson setup $dir $src -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$dir.setup.log 2>&1 &&
  ninja -C $dir -j5 "$@" >$dir.build.log 2>&1 ) || note "BUILD FAILED $dir"; }
b /tmp/fk-new . tools/flashkernel kernels/libfk_kernels.a &
b /tmp/fk-newq /tmp/src-newq tools/flashkernel &
b /tmp/fk-old /tmp/src-old tools/flashkernel kernels/libfk_kernels.a &
wait
note "built"
for v in old new; do (cd /tmp/fk-$v/kernels && python3 /tmp/src-newq/tests/gpu/check_wait_order.py libfk_kernels.a | tail -1 | sed "s/^/$v: /" >>$S); done
wait
run() { local bin=$1 lab=$2; shift 2
  timeout 120 /tmp/fk-$bin/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 "$@" >$L/$lab.log 2>&1
  note "$lab: $(grep -E 'output tokens/s' $L/$lab.log)"; }
for v in old newq new; do
  for q in int8 int4 none; do run $v $q-b1-$v-1 --requests 1 --quantization $q; done
  run $v none-r16-$v --requests 16; run $v int4-r16-$v --requests 16 --quantization int4; run $v int8-r16-$v --requests 16 --quantization int8
done
for v in new newq old; do for q in int8 int4 none; do run $v $q-b1-$v-2 --requests 1 --quantization $q; done; done
tar czf $OUT/l3.tgz -C $OUT l3
cat $S
