#!/bin/bash
# Twentieth session, call 2: timelines (FK_TRACE builds) of base (HEAD) and new (working tree) at fp16 and INT8 batch 1;
# bench_attention three times alternated (prefill: the hopper kernel's cache_blocks); fp16 batch 1 again, and
# new with -DFK_LINEAR_ONE_WAVE=2 (n1w).
set -u
T0=$(date +%s)
S=$OUT/summary2.txt; L=$OUT/l2; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
rm -rf /tmp/base-src; mkdir /tmp/base-src; tar cf - --exclude=./.deps --exclude=./.peers . | tar xf - -C /tmp/base-src
cp .peers/s20/base/*.cu* /tmp/base-src/kernels/
bld() { # dir arch src cuda_args targets...
  local d=$1 arch=$2 src=$3 ca=$4; shift 4
  [ -f $d/build.ninja ] || (cd $src && meson setup $d -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$arch "-Dcuda_args=$ca" >/dev/null 2>&1)
  ninja -C $d -j3 "$@" >$L/build-$(basename $d).log 2>&1; echo "$(basename $d): $(tail -1 $L/build-$(basename $d).log)"
}
bld /tmp/fk-base sm_90a /tmp/base-src "" tools/flashkernel kernels/bench/bench_attention > $L/b1.txt &
bld /tmp/fk-new sm_90a . "" tools/flashkernel kernels/bench/bench_attention > $L/b2.txt &
bld /tmp/fk-trbase sm_90a /tmp/base-src "-DFK_TRACE" tools/flashkernel > $L/b3.txt &
bld /tmp/fk-trnew sm_90a . "-DFK_TRACE" tools/flashkernel > $L/b4.txt &
bld /tmp/fk-n1w sm_90a . "-DFK_LINEAR_ONE_WAVE=2" tools/flashkernel > $L/b5.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
for r in 1 2 3; do for b in base new; do
  timeout 60 /tmp/fk-$b/kernels/bench/bench_attention > $L/bench-attention-$b-$r.txt 2>&1
  note "bench_attention $b r$r: $(grep prefill $L/bench-attention-$b-$r.txt | sed 's/.*h\([0-9]*\) d\([0-9]*\) causal, \([a-z.]*\).*: \(.*\) ms.*/d\2 \3 \4/' | tr '\n' ' ')"
done; done
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
eng() { # build label requests prompt extra-args... ; env in E
  local b=$1 label=$2 n=$3 p=$4; shift 4
  env ${E:-X=1} timeout 120 /tmp/$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n --prompt-len $p \
    --max-tokens 128 --max-model-len 4096 "$@" >$L/engine-$b-$label.log 2>&1
  note "bench-engine $b $label: $(grep -E 'output tokens/s' $L/engine-$b-$label.log | tail -1)"
}
for r in 1 2; do for b in base new n1w; do eng fk-$b fp16-b1-r$r 1 128; done; done
for b in base new n1w; do eng fk-$b int4-b1 1 128 --quantization int4; done
for b in base new n1w; do eng fk-$b fp16-n4 4 128; done
for x in none int8; do for b in trbase trnew; do
  t=$L/trace-$b-$x.txt
  E="FK_TRACE_FILE=$t" eng fk-$b $x-trace 1 128 --quantization $x
  python3 kernels/bench/trace_report.py $t > $t.report 2>&1; gzip $t
  note "trace $b $x: $(head -1 $t.report)"; sed -n '/by shape/,$p' $t.report | tee -a $S
done; done
tar czf $OUT/l2.tgz -C $OUT l2 && rm -rf $L
note done
