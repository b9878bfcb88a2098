#!/bin/bash
# Nineteenth session, call 2: why decode attention stays ~5.5 us a layer at batch 1. Builds: default (cl), with a
# shared-memory floor of 200 KB so no other kernel's block shares an attention block's SM (fl), with the next kernel
# released at attention's end (lt), both (fllt); each run with the splits merged by the merge kernel (c0) and in a
# cluster (c128). fp16 and INT4 batch 1; timelines of fp16 and INT4 with fl and cl.
set -u
T0=$(date +%s)
S=$OUT/summary2.txt; L=$OUT/l2; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
bld() { # dir arch targets... (extra cuda args in CA)
  local d=$1 arch=$2; shift 2
  rm -rf $d; meson setup $d -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$arch ${CA:+"-Dcuda_args=$CA"} >/dev/null 2>&1 &&
  ninja -C $d -j3 "$@" >$L/build-$(basename $d).log 2>&1; echo "$(basename $d): $(tail -1 $L/build-$(basename $d).log)"
}
bld /tmp/fk-cl sm_90a tools/flashkernel > $L/b1.txt &
CA=-DFK_DECODE_SMEM_FLOOR=204800 bld /tmp/fk-fl sm_90a tools/flashkernel > $L/b2.txt &
CA=-DFK_DECODE_RELEASE_LATE=1 bld /tmp/fk-lt sm_90a tools/flashkernel > $L/b3.txt &
CA="-DFK_DECODE_SMEM_FLOOR=204800 -DFK_DECODE_RELEASE_LATE=1" bld /tmp/fk-fllt sm_90a tools/flashkernel > $L/b4.txt &
CA=-DFK_TRACE bld /tmp/fk-trcl sm_90a tools/flashkernel > $L/b5.txt &
CA="-DFK_TRACE -DFK_DECODE_SMEM_FLOOR=204800" bld /tmp/fk-trfl sm_90a tools/flashkernel > $L/b6.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
eng() { # build label requests prompt extra-args... ; env in E
  local b=$1 label=$2 n=$3 p=$4; shift 4
  env ${E:-X=1} timeout 120 /tmp/$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n --prompt-len $p \
    --max-tokens 128 --max-model-len 4096 "$@" >$L/engine-$b-$label.log 2>&1
  note "bench-engine $b $label: $(grep -E 'output tokens/s' $L/engine-$b-$label.log | tail -1)"
}
for q in none int4; do for c in 0 128; do for b in cl fl lt fllt; do
  E=FK_DECODE_CLUSTER_MIN_SPLIT=$c eng fk-$b $q-b1-c$c 1 128 --quantization $q
done; done; done
for b in cl fl; do for q in none int4; do
  t=$L/trace-$b-$q.txt
  E="FK_TRACE_FILE=$t" eng fk-tr$b $q-b1-trace 1 128 --quantization $q
  python3 kernels/bench/trace_report.py $t > $t.report 2>&1; gzip $t
  note "trace $b $q: $(head -1 $t.report)"; sed -n '/by shape/,$p' $t.report | tee -a $S
done; done
tar czf $OUT/l2.tgz -C $OUT l2 && rm -rf $L
note done
