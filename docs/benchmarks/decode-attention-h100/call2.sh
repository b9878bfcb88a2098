#!/bin/bash
# Call 2: FK_DECODE_PREFETCH=128 as the decode kernel's default (call 1: 95.0-95.2 % of copy at 64 x 4096 and
# 16 x 16k, d128) against a8a3aed (the kernel with no hint, built from git archive a8a3aed), alternated:
# bench_attention's decode rows (and the variants without the hint, with 4 warps, 3 stages, 256 bytes), then bench-engine on bench-1b where decode attention is a larger share of the step
# (64 requests at 1,024/256) and where it is small (batch 1, 64 requests at 128/128); then the scheduler sweep the
# on-paper model asks for (tests/gpu/run-on-device.sh sched-sweep, with this tree).
set -u
T0=$(date +%s)
S=$OUT/summary.txt; L=$OUT/lab; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(git rev-parse --short HEAD 2>/dev/null) + working changes"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
rm -rf /tmp/head-src && mkdir /tmp/head-src && git archive a8a3aed | tar x -C /tmp/head-src
bld() { local n=$1 src=$2 j=$3; shift 3
  rm -rf /tmp/fk-$n; (cd $src && meson setup /tmp/fk-$n -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >/dev/null 2>&1) &&
  ninja -C /tmp/fk-$n -j$j "$@" >$L/build-$n.log 2>&1; echo "$n: $(tail -1 $L/build-$n.log)"; }
V="s2w8p0 s2w4p128 s3w8p128 s2w8p256"; VT=""; for v in $V; do VT="$VT kernels/bench/bench_attention_decode_$v"; done
bld native . 10 tools/flashkernel kernels/bench/bench_attention $VT server/flashkernel-server loadtest/flashkernel-loadtest >$L/b1.txt &
bld head /tmp/head-src 6 tools/flashkernel kernels/bench/bench_attention >$L/b2.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
for r in 1 2; do for b in head native; do
  /tmp/fk-$b/kernels/bench/bench_attention " ($b r$r)" >$L/attn-$b-r$r.log 2>&1
  grep -E "RESULT decode" $L/attn-$b-r$r.log | sed 's/ h32\/8//; s/, [0-9]* blocks//' | tee -a $S
done; done
for v in $V; do /tmp/fk-native/kernels/bench/bench_attention_decode_$v " ($v)" >$L/attn-$v.log 2>&1
  grep -E "RESULT decode" $L/attn-$v.log | sed 's/ h32\/8//; s/, [0-9]* splits.*//' | tee -a $S; done
for i in $(seq 1 120); do [ -f /tmp/mk-done ] && break; sleep 2; done
eng() { local b=$1 q=$2 n=$3 p=$4 o=$5 r=$6
  timeout 90 /tmp/fk-$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n --warmup $n \
    --prompt-len $p --max-tokens $o --max-model-len 4096 --quantization $q >$L/engine-$b-$q-$n-$p-r$r.log 2>&1
  note "$b $q n=$n $p/$o r$r: $(grep -E 'output tokens/s' $L/engine-$b-$q-$n-$p-r$r.log | tail -1)"; }
for r in 1 2; do for b in head native; do
  eng $b none 64 1024 256 $r; eng $b none 64 128 128 $r; eng $b none 1 128 128 $r; eng $b int8 1 128 128 $r
done; done
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $L
echo "$(git rev-parse --short HEAD)" >.peers/commit
OUT=$OUT/sweep FK_SWEEP_TOKENS="256 384 512 1024 4096" FK_SWEEP_SHAPES="64:128:1024:256 64:128:128:128" timeout $(( 590 - ($(date +%s) - T0) )) \
  tests/gpu/run-on-device.sh sched-sweep >/dev/null 2>&1
note "sched-sweep rc $?"
