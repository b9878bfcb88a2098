#!/bin/bash
# Sixteenth session, call 1: decode attention with all its stages' chunks loaded before the PDL wait (a 256-key
# context read whole while the QKV linear finishes), old (HEAD's attention_decode.cu) against new, alternated;
# the attention and linear op tests natively (new, with d198ba1's probe) and as compute_75 PTX (one stage);
8 wgmma stages against 6 at 64 requests; fp16 b1 trace of new.
set -u
T0=$(date +%s)
S=$OUT/summary1.txt; L=$OUT/l1; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
rm -rf /tmp/oldsrc && mkdir -p /tmp/oldsrc && cp -r . /tmp/oldsrc/ && cp .peers/s16/old/attention_decode.cu /tmp/oldsrc/kernels/
bld() { # dir src arch targets... (extra meson args in EXTRA)
  local d=$1 src=$2 arch=$3; shift 3
  ( cd $src && meson setup $d -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$arch ${EXTRA:-} >/dev/null 2>&1 ) &&
  ninja -C $d -j6 "$@" >$L/build-$(basename $d).log 2>&1; echo "$(basename $d): $(tail -1 $L/build-$(basename $d).log)"
}
bld /tmp/fk-new $PWD sm_90a tools/flashkernel tests/gpu/test_gpu_ops > $L/b1.txt &
bld /tmp/fk-old /tmp/oldsrc sm_90a tools/flashkernel > $L/b2.txt &
EXTRA=-Dcuda_args=-DFK_TRACE bld /tmp/fk-trace $PWD sm_90a tools/flashkernel > $L/b3.txt &
bld /tmp/fk-t75 $PWD compute_75 tests/gpu/test_gpu_ops > $L/b4.txt &
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
for r in 1 2; do
  for b in fk-old fk-new; do
    eng $b fp16-b1-r$r 1 128
    eng $b int8-b1-r$r 1 128 --quantization int8
    eng $b int4-b1-r$r 1 128 --quantization int4
  done
done
for b in fk-old fk-new fk-old fk-new; do eng $b fp16-16-$RANDOM 16 128; done
for b in fk-old fk-new; do eng $b fp16-b1-p2000 1 2000; eng $b int4-b1-p2000 1 2000 --quantization int4; done
for b in fk-old fk-new; do eng $b fp16-64 64 128 --warmup 64; done
E=FK_TRACE_FILE=$L/trace-new-b1.txt eng fk-trace fp16-b1-trace 1 128
python3 kernels/bench/trace_report.py $L/trace-new-b1.txt > $L/trace-new-b1-report.txt 2>&1; gzip $L/trace-new-b1.txt
note "trace new fp16 b1: $(head -1 $L/trace-new-b1-report.txt)"; sed -n '/by shape/,$p' $L/trace-new-b1-report.txt | tee -a $S
for r in 1 2; do
  E=FK_WGMMA_LINEAR_STAGES=6 eng fk-new stages6-64-r$r 64 128 --warmup 64
  E=FK_WGMMA_LINEAR_STAGES=8 eng fk-new stages8-64-r$r 64 128 --warmup 64
done
left() { echo $(( 560 - ($(date +%s) - T0) )); }
tst() { # build filter label
  local t=$(left); [ $t -gt 150 ] && t=150
  [ $t -lt 20 ] && { note "$3: skipped, no time left"; return; }
  FK_TEST_FILTER="$2" timeout $t /tmp/$1/tests/gpu/test_gpu_ops >$L/ops-$3.txt 2>&1
  note "$3 ($2): rc $? $(grep -E 'PASSED|FAILED' $L/ops-$3.txt | tr '\n' ' ')"
}
tst fk-new 'test_attention*' native-attention
tst fk-t75 'test_attention_decode*' t75-attention-decode
tst fk-new 'test_linear*' native-linear
tar czf $OUT/l1.tgz -C $OUT l1 && rm -rf $L
note done
