#!/bin/bash
# Nineteenth session, call 4: decode attention's warp merge without bank conflicts (only the G real rows, column pairs
# swizzled) and chunk STAGES - 1 started right after the wait. Builds: base (HEAD's kernel), mg (the merge only:
# -DFK_DECODE_NEXT_AFTER_WAIT=0), new (both), a trace build of new, compute_75 op tests. bench-engine alternated.
set -u
T0=$(date +%s)
S=$OUT/summary4.txt; L=$OUT/l4; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
rm -rf /tmp/base-src; mkdir /tmp/base-src; tar cf - --exclude=./.deps --exclude=./.peers . | tar xf - -C /tmp/base-src
cp .peers/s19/base_attention_decode.cu /tmp/base-src/kernels/attention_decode.cu
bld() { # dir arch src targets... (extra cuda args in CA)
  local d=$1 arch=$2 src=$3; shift 3
  rm -rf $d; (cd $src && meson setup $d -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$arch ${CA:+"-Dcuda_args=$CA"} >/dev/null 2>&1) &&
  ninja -C $d -j3 "$@" >$L/build-$(basename $d).log 2>&1; echo "$(basename $d): $(tail -1 $L/build-$(basename $d).log)"
}
bld /tmp/fk-base sm_90a /tmp/base-src tools/flashkernel > $L/b1.txt &
CA=-DFK_DECODE_NEXT_AFTER_WAIT=0 bld /tmp/fk-mg sm_90a . tools/flashkernel > $L/b2.txt &
bld /tmp/fk-new sm_90a . tools/flashkernel tests/gpu/test_gpu_ops > $L/b3.txt &
CA=-DFK_TRACE bld /tmp/fk-tr sm_90a . tools/flashkernel > $L/b4.txt &
bld /tmp/fk-ptx75 compute_75 . tests/gpu/test_gpu_ops > $L/b5.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
for n in new ptx75; do
  FK_TEST_FILTER='test_attention*' timeout 150 /tmp/fk-$n/tests/gpu/test_gpu_ops > $L/test-attn-$n.log 2>&1
  note "attention tests $n: rc $? $(grep -cE 'max error' $L/test-attn-$n.log) cases; $(grep -E 'PASSED|FAILED' $L/test-attn-$n.log | tr '\n' ' ')"
done
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
eng() { # build label requests prompt extra-args... ; env in E
  local b=$1 label=$2 n=$3 p=$4; shift 4
  env ${E:-X=1} timeout 120 /tmp/$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n --prompt-len $p \
    --max-tokens 128 --max-model-len 4096 "$@" >$L/engine-$b-$label.log 2>&1
  note "bench-engine $b $label: $(grep -E 'output tokens/s' $L/engine-$b-$label.log | tail -1)"
}
for r in 1 2; do for b in base mg new; do eng fk-$b fp16-b1-r$r 1 128; done; done
for q in int4 int8; do for b in base new; do eng fk-$b $q-b1 1 128 --quantization $q; done; done
for n in 4 16; do for b in base new; do eng fk-$b fp16-n$n $n 128; done; done
for b in base new; do eng fk-$b fp16-b1-p2000 1 2000; done
for x in none int4; do
  t=$L/trace-$x.txt
  E="FK_TRACE_FILE=$t" eng fk-tr $x-trace 1 128 --quantization $x
  python3 kernels/bench/trace_report.py $t > $t.report 2>&1; gzip $t
  note "trace $x: $(head -1 $t.report)"; sed -n '/by shape/,$p' $t.report | tee -a $S
done
tar czf $OUT/l4.tgz -C $OUT l4 && rm -rf $L
note done
