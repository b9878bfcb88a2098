#!/bin/bash
# Seventeenth session, call 2: gate|up's block shape at one token on top of call 1's one-batch form: at most 8 or 4
# warps for SiLU·mul (two or more blocks an SM, so one block's reduction and exit hide behind another's loads), or
# the one-batch form for gate|up (all 128 KB of a block requested before the wait, one block an SM).
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
  ninja -C $d -j5 "$@" >$L/build-$(basename $d).log 2>&1; echo "$(basename $d): $(tail -1 $L/build-$(basename $d).log)"
}
bld /tmp/fk-new sm_90a tools/flashkernel > $L/b1.txt &
CA=-DFK_LINEAR_SILU_MAX_WARPS=8 bld /tmp/fk-s8 sm_90a tools/flashkernel tests/gpu/test_gpu_ops > $L/b2.txt &
CA=-DFK_LINEAR_SILU_MAX_WARPS=4 bld /tmp/fk-s4 sm_90a tools/flashkernel > $L/b3.txt &
CA=-DFK_LINEAR_ONE_SILU=1 bld /tmp/fk-os sm_90a tools/flashkernel tests/gpu/test_gpu_ops > $L/b4.txt &
CA="-DFK_TRACE -DFK_LINEAR_SILU_MAX_WARPS=8" bld /tmp/fk-trace-s8 sm_90a tools/flashkernel > $L/b5.txt &
CA="-DFK_TRACE -DFK_LINEAR_ONE_SILU=1" bld /tmp/fk-trace-os sm_90a tools/flashkernel > $L/b6.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
note "model: $(cat /tmp/mk-done 2>/dev/null)"
eng() { # build label requests prompt extra-args... ; env in E
  local b=$1 label=$2 n=$3 p=$4; shift 4
  env ${E:-X=1} timeout 120 /tmp/$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n --prompt-len $p \
    --max-tokens 128 --max-model-len 4096 "$@" >$L/engine-$b-$label.log 2>&1
  note "bench-engine $b $label: $(grep -E 'output tokens/s' $L/engine-$b-$label.log | tail -1)"
}
for r in 1 2; do for b in fk-new fk-s8 fk-s4 fk-os; do eng $b fp16-b1-r$r 1 128; done; done
for n in 4 16; do for b in fk-new fk-s8 fk-s4 fk-os; do eng $b fp16-$n $n 128; done; done
for t in s8 os; do
  E=FK_TRACE_FILE=$L/trace-$t-b1.txt eng fk-trace-$t fp16-b1-trace 1 128
  python3 kernels/bench/trace_report.py $L/trace-$t-b1.txt > $L/trace-$t-b1-report.txt 2>&1; gzip $L/trace-$t-b1.txt
  note "trace $t fp16 b1: $(head -1 $L/trace-$t-b1-report.txt)"; sed -n '/by shape/,$p' $L/trace-$t-b1-report.txt | tee -a $S
done
left() { echo $(( 500 - ($(date +%s) - T0) )); }
tst() { # build filter label
  local t=$(left); [ $t -gt 100 ] && t=100
  [ $t -lt 20 ] && { note "$3: skipped, no time left"; return; }
  FK_TEST_FILTER="$2" timeout $t /tmp/$1/tests/gpu/test_gpu_ops >$L/ops-$3.txt 2>&1
  note "$3 ($2): rc $? $(grep -E 'PASSED|FAILED' $L/ops-$3.txt | tr '\n' ' ')"
}
tst fk-s8 'test_linear_silu*' s8-silu
tst fk-os 'test_linear_silu*' os-silu
tar czf $OUT/l2.tgz -C $OUT l2 && rm -rf $L
note done
