#!/bin/bash
# Nineteenth session, call 1: decode attention's splits merged in a thread block cluster (FK_DECODE_CLUSTER_MIN_SPLIT:
# 0 = the merge kernel as before; 128 the new default; 64). Builds (native, compute_75, trace); the decode attention
# op tests on both; bench-engine A/B alternated; kernel timelines of fp16 batch 1 with 0 and 128.
set -u
T0=$(date +%s)
S=$OUT/summary1.txt; L=$OUT/l1; mkdir -p $L
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
bld /tmp/fk-native sm_90a tools/flashkernel tests/gpu/test_gpu_ops > $L/b1.txt &
bld /tmp/fk-ptx75 compute_75 tests/gpu/test_gpu_ops > $L/b2.txt &
CA=-DFK_TRACE bld /tmp/fk-trace sm_90a tools/flashkernel > $L/b3.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
for n in native ptx75; do
  FK_TEST_FILTER='test_attention_decode*' timeout 120 /tmp/fk-$n/tests/gpu/test_gpu_ops > $L/test-attn-$n.log 2>&1
  note "attention decode tests $n: rc $? $(grep -cE 'max error' $L/test-attn-$n.log) cases; $(grep -E '^\[  (PASSED|FAILED) \]' $L/test-attn-$n.log | tr '\n' ' ')"
done
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
note "model: $(cat /tmp/mk-done 2>/dev/null)"
eng() { # build label requests prompt extra-args... ; env in E
  local b=$1 label=$2 n=$3 p=$4; shift 4
  env ${E:-X=1} timeout 120 /tmp/$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n --prompt-len $p \
    --max-tokens 128 --max-model-len 4096 "$@" >$L/engine-$b-$label.log 2>&1
  note "bench-engine $b $label: $(grep -E 'output tokens/s' $L/engine-$b-$label.log | tail -1)"
}
for r in 1 2; do for c in 0 128 64; do E=FK_DECODE_CLUSTER_MIN_SPLIT=$c eng fk-native fp16-b1-c$c-r$r 1 128; done; done
for q in int4 int8; do for c in 0 128; do E=FK_DECODE_CLUSTER_MIN_SPLIT=$c eng fk-native $q-b1-c$c 1 128 --quantization $q; done; done
for n in 4 8; do for c in 0 128; do E=FK_DECODE_CLUSTER_MIN_SPLIT=$c eng fk-native fp16-n$n-c$c $n 128; done; done
for c in 0 128; do E=FK_DECODE_CLUSTER_MIN_SPLIT=$c eng fk-native fp16-b1-p2000-c$c 1 2000; done
for c in 0 128; do
  t=$L/trace-fp16-c$c.txt
  E="FK_DECODE_CLUSTER_MIN_SPLIT=$c FK_TRACE_FILE=$t" eng fk-trace fp16-b1-trace-c$c 1 128
  python3 kernels/bench/trace_report.py $t > $t.report 2>&1; gzip $t
  note "trace c$c: $(head -1 $t.report)"; sed -n '/by shape/,$p' $t.report | tee -a $S
done
tar czf $OUT/l1.tgz -C $OUT l1 && rm -rf $L
note done
