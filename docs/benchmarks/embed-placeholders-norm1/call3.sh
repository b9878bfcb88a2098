#!/bin/bash
# Twenty-first session, call 3: the embedding with layer 0's norm1 in one kernel (embed_rms_norm; new) against HEAD
# (base: placeholder ids read by embed). The gpu suite natively on new first, then bench-engine alternated, then a
# timeline of new at fp16 batch 1 (call 1's trnew is base's).
set -u
T0=$(date +%s)
S=$OUT/summary3.txt; L=$OUT/l3; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
rm -rf /tmp/base-src; mkdir /tmp/base-src; tar cf - --exclude=./.deps --exclude=./.peers . | tar xf - -C /tmp/base-src
cp -r .peers/s21/base/. /tmp/base-src/
bld() { # dir arch src cuda_args targets...
  local d=$1 arch=$2 src=$3 ca=$4; shift 4
  rm -rf $d; (cd $src && meson setup $d -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$arch "-Dcuda_args=$ca" >/dev/null 2>&1) &&
  ninja -C $d -j4 "$@" >$L/build-$(basename $d).log 2>&1; echo "$(basename $d): $(tail -1 $L/build-$(basename $d).log)"
}
bld /tmp/fk-base sm_90a /tmp/base-src "" tools/flashkernel > $L/b1.txt &
bld /tmp/fk-new sm_90a . "" > $L/b2.txt &
bld /tmp/fk-trnew sm_90a . "-DFK_TRACE" tools/flashkernel > $L/b4.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
timeout 300 meson test -C /tmp/fk-new --suite gpu --print-errorlogs > $L/test-native.log 2>&1; echo "rc $?" >> $L/test-native.log
cp /tmp/fk-new/meson-logs/testlog.txt $L/testlog-native.txt
note "gpu suite native: $(grep -E '^(Ok|Fail|Skipped|Timeout):|^rc' $L/test-native.log | tr -s ' ' | tr '\n' ' ')"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
eng() { # build label requests prompt extra-args... ; env in E
  local b=$1 label=$2 n=$3 p=$4; shift 4
  env ${E:-X=1} timeout 120 /tmp/$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n --prompt-len $p \
    --max-tokens 128 --max-model-len 4096 "$@" >$L/engine-$b-$label.log 2>&1
  note "bench-engine $b $label: $(grep -E 'output tokens/s' $L/engine-$b-$label.log | tail -1)"
}
for r in 1 2 3 4; do for b in base new; do eng fk-$b fp16-b1-r$r 1 128; done; done
for r in 1 2; do for q in int8 int4; do for b in base new; do eng fk-$b $q-b1-r$r 1 128 --quantization $q; done; done; done
for n in 4 16 64; do for b in base new; do eng fk-$b fp16-n$n $n 128; done; done
for b in trnew; do
  t=$L/trace-$b.txt
  E="FK_TRACE_FILE=$t" eng fk-$b fp16-trace 1 128
  python3 kernels/bench/trace_report.py $t > $t.report 2>&1
  note "trace $b: $(head -1 $t.report)"; sed -n '/by shape/,$p' $t.report | tee -a $S
  gzip $t
done
tar czf $OUT/l3.tgz -C $OUT l3 && rm -rf $L
note done
