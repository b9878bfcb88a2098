#!/bin/bash
# Seventeenth session, call 3: the kept form. The one-batch kernel (q|k|v, o, the head at <= 8 tokens) and, at one token
# tile without split-K, the most warps per block (16, 8, 4) with which the whole grid is resident at once (gate|up:
# 4 warps). old = the same tree with -DFK_LINEAR_ONE_BATCH=0 -DFK_LINEAR_ONE_WAVE=0 (HEAD's launched kernels).
# Then the gpu suite, natively and as compute_75 PTX, side by side.
set -u
T0=$(date +%s)
S=$OUT/summary3.txt; L=$OUT/l3; mkdir -p $L
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
bld /tmp/fk-native sm_90a > $L/b1.txt &
bld /tmp/fk-ptx75 compute_75 > $L/b2.txt &
CA="-DFK_LINEAR_ONE_BATCH=0 -DFK_LINEAR_ONE_WAVE=0" bld /tmp/fk-old sm_90a tools/flashkernel > $L/b3.txt &
CA=-DFK_TRACE bld /tmp/fk-trace sm_90a tools/flashkernel > $L/b4.txt &
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
for r in 1 2 3; do for b in fk-old fk-native; do eng $b fp16-b1-r$r 1 128; done; done
for n in 4 8 16; do for b in fk-old fk-native; do eng $b fp16-$n $n 128; done; done
for b in fk-old fk-native; do eng $b fp16-b1-p2000 1 2000; eng $b int8-b1 1 128 --quantization int8; done
E=FK_TRACE_FILE=$L/trace-new-b1.txt eng fk-trace fp16-b1-trace 1 128
python3 kernels/bench/trace_report.py $L/trace-new-b1.txt > $L/trace-new-b1-report.txt 2>&1; gzip $L/trace-new-b1.txt
note "trace new fp16 b1: $(head -1 $L/trace-new-b1-report.txt)"; sed -n '/by shape/,$p' $L/trace-new-b1-report.txt | tee -a $S
left=$(( 575 - ($(date +%s) - T0) ))
note "gpu suites, $left s left"
for n in native ptx75; do
  ( timeout $left meson test -C /tmp/fk-$n --suite gpu --print-errorlogs >$L/test-$n.log 2>&1; echo "rc $?" >>$L/test-$n.log
    cp /tmp/fk-$n/meson-logs/testlog.txt $L/testlog-$n.txt ) &
done
wait
for n in native ptx75; do note "gpu suite $n: $(grep -E '^(Ok|Fail|Skipped|Timeout):|^rc' $L/test-$n.log | tr -s ' ' | tr '\n' ' ')"; done
tar czf $OUT/l3.tgz -C $OUT l3 && rm -rf $L
note done
