#!/bin/bash
# Sixteenth session, call 2: the residual stream's norms fused into the one-token linears (k_linear_small_fused:
# RMSNorm in q|k|v's and gate|up's prologue, the residual add in o's and down's epilogue). bench-engine with
# FK_FUSED_NORM=0 (the norm kernels, as before) against 1, alternated, same binary; the -DFK_TRACE timeline of
# both at batch 1; then the op, model and engine tests natively and the fused op test as compute_75 PTX.
set -u
T0=$(date +%s)
S=$OUT/summary2.txt; L=$OUT/l2; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
bld() { # dir arch targets... (extra meson args in EXTRA)
  local d=$1 arch=$2; shift 2
  rm -rf $d; meson setup $d -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$arch ${EXTRA:-} >/dev/null 2>&1 &&
  ninja -C $d -j6 "$@" >$L/build-$(basename $d).log 2>&1; echo "$(basename $d): $(tail -1 $L/build-$(basename $d).log)"
}
bld /tmp/fk-new sm_90a tools/flashkernel tests/gpu/test_gpu_ops tests/gpu/test_gpu_model tests/gpu/test_engine_cuda > $L/b1.txt &
EXTRA=-Dcuda_args=-DFK_TRACE bld /tmp/fk-trace sm_90a tools/flashkernel > $L/b3.txt &
bld /tmp/fk-t75 compute_75 tests/gpu/test_gpu_ops > $L/b4.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
note "model: $(cat /tmp/mk-done 2>/dev/null)"
eng() { # build label requests prompt extra-args... ; env in E
  local b=$1 label=$2 n=$3 p=$4; shift 4
  env ${E:-X=1} timeout 120 /tmp/$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n --prompt-len $p \
    --max-tokens 128 --max-model-len 4096 "$@" >$L/engine-$b-$label.log 2>&1
  note "bench-engine $b $label: $(grep -E 'output tokens/s' $L/engine-$b-$label.log | tail -1) | $(grep -E 'launches per step' $L/engine-$b-$label.log)"
}
for r in 1 2 3; do
  E=FK_FUSED_NORM=0 eng fk-new unfused-b1-r$r 1 128
  E=FK_FUSED_NORM=1 eng fk-new fused-b1-r$r 1 128
done
for f in 0 1; do E=FK_FUSED_NORM=$f eng fk-new fuse$f-b1-p2000 1 2000; done
for f in 0 1; do E=FK_FUSED_NORM=$f eng fk-new fuse$f-4req 4 128; done
for f in 0 1; do
  E="FK_FUSED_NORM=$f FK_TRACE_FILE=$L/trace-fuse$f.txt" eng fk-trace fuse$f-b1-trace 1 128
  python3 kernels/bench/trace_report.py $L/trace-fuse$f.txt > $L/trace-fuse$f-report.txt 2>&1; gzip $L/trace-fuse$f.txt
  note "trace FK_FUSED_NORM=$f b1: $(head -1 $L/trace-fuse$f-report.txt)"; sed -n '/by shape/,$p' $L/trace-fuse$f-report.txt | tee -a $S
done
left() { echo $(( 575 - ($(date +%s) - T0) )); }
tst() { # build binary filter label
  local t=$(left); [ $t -gt 200 ] && t=200
  [ $t -lt 15 ] && { note "$4: skipped, no time left"; return; }
  FK_TEST_DEVICE=cuda FK_TEST_FILTER="$3" timeout $t /tmp/$1/tests/gpu/$2 >$L/t-$4.txt 2>&1
  note "$4 ($2 $3): rc $? $(grep -E 'PASSED|FAILED' $L/t-$4.txt | tr '\n' ' ')"
}
tst fk-new test_gpu_ops 'test_fused*' native-fused
tst fk-new test_engine_cuda 'test_profile*' native-engine-profile
tst fk-new test_gpu_model '*' native-model
tst fk-t75 test_gpu_ops 'test_fused*' t75-fused
tst fk-new test_engine_cuda 'test_batch_invariance_llama' native-engine-invariance
tst fk-new test_gpu_ops 'test_linear*' native-linear
tar czf $OUT/l2.tgz -C $OUT l2 && rm -rf $L
note done
