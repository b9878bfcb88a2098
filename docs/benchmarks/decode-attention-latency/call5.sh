#!/bin/bash
# Nineteenth session, call 5: on call 4's kernel (new): the query's loads issued ahead of chunk STAGES - 1's (qf:
# -DFK_DECODE_Q_FIRST=1), and the one-wave rule for SiLU·mul only (ow2: -DFK_LINEAR_ONE_WAVE=2). Alternated.
set -u
T0=$(date +%s)
S=$OUT/summary5.txt; L=$OUT/l5; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
bld() { # dir arch targets... (extra cuda args in CA)
  local d=$1 arch=$2; shift 2
  rm -rf $d; meson setup $d -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$arch ${CA:+"-Dcuda_args=$CA"} >/dev/null 2>&1 &&
  ninja -C $d -j5 "$@" >$L/build-$(basename $d).log 2>&1; echo "$(basename $d): $(tail -1 $L/build-$(basename $d).log)"
}
bld /tmp/fk-new sm_90a tools/flashkernel > $L/b1.txt &
CA=-DFK_DECODE_Q_FIRST=1 bld /tmp/fk-qf sm_90a tools/flashkernel > $L/b2.txt &
CA=-DFK_LINEAR_ONE_WAVE=2 bld /tmp/fk-ow2 sm_90a tools/flashkernel > $L/b3.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
eng() { # build label requests prompt extra-args... ; env in E
  local b=$1 label=$2 n=$3 p=$4; shift 4
  env ${E:-X=1} timeout 120 /tmp/$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n --prompt-len $p \
    --max-tokens 128 --max-model-len 4096 "$@" >$L/engine-$b-$label.log 2>&1
  note "bench-engine $b $label: $(grep -E 'output tokens/s' $L/engine-$b-$label.log | tail -1)"
}
for r in 1 2 3; do for b in new qf ow2; do eng fk-$b fp16-b1-r$r 1 128; done; done
for b in new qf ow2; do eng fk-$b int4-b1 1 128 --quantization int4; done
for b in new qf; do eng fk-$b int8-b1 1 128 --quantization int8; done
for b in new qf ow2; do eng fk-$b fp16-n4 4 128; done
tar czf $OUT/l5.tgz -C $OUT l5 && rm -rf $L
note done
