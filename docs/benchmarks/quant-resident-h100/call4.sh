#!/bin/bash
# Call 4: the committed tree. The gpu suite natively; bench-engine alternated, FK_QUANT_RESIDENT=1 (default) against 0
# on one build at batch 1 (int4, int8, fp16), 2 and 16 requests (int4); timelines of int4 batch 1 both ways.
set -u
T0=$(date +%s)
S=$OUT/summary4.txt; L=$OUT/l4; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
bld() { # dir arch src cuda_args targets...
  local d=$1 arch=$2 src=$3 ca=$4; shift 4
  rm -rf $d; (cd $src && meson setup $d -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$arch "-Dcuda_args=$ca" >/dev/null 2>&1) &&
  ninja -C $d -j10 "$@" >$L/build-$(basename $d).log 2>&1; echo "$(basename $d): $(tail -1 $L/build-$(basename $d).log)"
}
bld /tmp/fk-new sm_90a . "" > $L/b1.txt &
bld /tmp/fk-trnew sm_90a . "-DFK_TRACE" tools/flashkernel > $L/b3.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
timeout 330 meson test -C /tmp/fk-new --suite gpu --print-errorlogs > $L/test-native.log 2>&1; echo "rc $?" >> $L/test-native.log
cp /tmp/fk-new/meson-logs/testlog.txt $L/testlog-native.txt
note "gpu suite native: $(grep -E '^(Ok|Fail|Skipped|Timeout):|^rc' $L/test-native.log | tr -s ' ' | tr '\n' ' ')"
grep -hE "worst logit error|greedy equal" $L/testlog-native.txt | head -20 >> $S
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
eng() { # build label requests prompt extra-args... ; env in E
  local b=$1 label=$2 n=$3 p=$4; shift 4
  env ${E:-X=1} timeout 120 /tmp/$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n --prompt-len $p \
    --max-tokens 128 --max-model-len 4096 "$@" >$L/engine-$b-$label.log 2>&1
  note "bench-engine $b $label [${E:-}]: $(grep -E 'output tokens/s' $L/engine-$b-$label.log | tail -1)"
}
for r in 1 2 3; do for m in 0 1; do E="FK_QUANT_RESIDENT=$m" eng fk-new int4-b1-r$r-m$m 1 128 --quantization int4; done; done
for m in 0 1; do E="FK_QUANT_RESIDENT=$m" eng fk-new int8-b1-m$m 1 128 --quantization int8; done
for m in 0 1; do E="FK_QUANT_RESIDENT=$m" eng fk-new fp16-b1-m$m 1 128; done
for n in 2 16; do for m in 0 1; do E="FK_QUANT_RESIDENT=$m" eng fk-new int4-n$n-m$m $n 128 --quantization int4; done; done
for m in 0 1; do E="FK_QUANT_RESIDENT=$m" eng fk-new int4-b1-p2000-m$m 1 2000 --quantization int4; done
for m in 0 1; do
  t=$L/trace-int4-m$m.txt
  E="FK_QUANT_RESIDENT=$m FK_TRACE_FILE=$t" eng fk-trnew int4-trace-m$m 1 128 --quantization int4
  python3 kernels/bench/trace_report.py $t > $t.report 2>&1
  note "trace int4 m$m: $(head -1 $t.report)"; sed -n '/by shape/,$p' $t.report | tee -a $S
  gzip $t
done
tar czf $OUT/l4.tgz -C $OUT l4 && rm -rf $L
note done
