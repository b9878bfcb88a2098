#!/bin/bash
# Eighteenth session, call 6: the committed default (early release: fp16 the attention norm, q|k|v and the MLP norm;
# quantized o too). Timelines of the default and of FK_PDL_EARLY=0 (fp16 and INT4 batch 1), then the gpu suite,
# natively and as compute_75 PTX, one after the other.
set -u
T0=$(date +%s)
S=$OUT/summary6.txt; L=$OUT/l6; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit)"
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
CA=-DFK_TRACE bld /tmp/fk-trace sm_90a tools/flashkernel > $L/b3.txt &
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
for q in none int4; do for k in def 0; do
  t=$L/trace-$q-$k.txt
  E="$([ $k = def ] || echo FK_PDL_EARLY=$k) FK_TRACE_FILE=$t" eng fk-trace $q-b1-trace-$k 1 128 --quantization $q
  python3 kernels/bench/trace_report.py $t > $t.report 2>&1; gzip $t
  note "trace $q $k: $(head -1 $t.report)"; sed -n '/by shape/,$p' $t.report | tee -a $S
done; done
eng fk-native fp16-b1-default 1 128
for n in native ptx75; do
  left=$(( 585 - ($(date +%s) - T0) ))
  note "gpu suite $n, $left s left"
  timeout $left meson test -C /tmp/fk-$n --suite gpu --print-errorlogs >$L/test-$n.log 2>&1; echo "rc $?" >>$L/test-$n.log
  cp /tmp/fk-$n/meson-logs/testlog.txt $L/testlog-$n.txt
  note "gpu suite $n: $(grep -E '^(Ok|Fail|Skipped|Timeout):|^rc' $L/test-$n.log | tr -s ' ' | tr '\n' ' ')"
done
tar czf $OUT/l6.tgz -C $OUT l6 && rm -rf $L
note done
