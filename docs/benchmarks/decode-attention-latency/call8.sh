#!/bin/bash
# Nineteenth session, call 8: decode attention releasing the next kernel (o) once its last chunk has arrived, instead
# of right after its wait (mid: -DFK_DECODE_RELEASE_MID=1), against the committed kernel (final). Alternated.
set -u
T0=$(date +%s)
S=$OUT/summary8.txt; L=$OUT/l8; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
bld() { # dir targets... (extra cuda args in CA)
  local d=$1; shift
  rm -rf $d; meson setup $d -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a ${CA:+"-Dcuda_args=$CA"} >/dev/null 2>&1 &&
  ninja -C $d -j5 "$@" >$L/build-$(basename $d).log 2>&1; echo "$(basename $d): $(tail -1 $L/build-$(basename $d).log)"
}
bld /tmp/fk-final tools/flashkernel > $L/b1.txt &
CA=-DFK_DECODE_RELEASE_MID=1 bld /tmp/fk-mid tools/flashkernel > $L/b2.txt &
CA="-DFK_TRACE -DFK_DECODE_RELEASE_MID=1" bld /tmp/fk-trmid tools/flashkernel > $L/b3.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
eng() { # build label requests prompt extra-args... ; env in E
  local b=$1 label=$2 n=$3 p=$4; shift 4
  env ${E:-X=1} timeout 120 /tmp/$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n --prompt-len $p \
    --max-tokens 128 --max-model-len 4096 "$@" >$L/engine-$b-$label.log 2>&1
  note "bench-engine $b $label: $(grep -E 'output tokens/s' $L/engine-$b-$label.log | tail -1)"
}
for r in 1 2; do for b in final mid; do eng fk-$b fp16-b1-r$r 1 128; done; done
for q in int8 int4; do for b in final mid; do eng fk-$b $q-b1 1 128 --quantization $q; done; done
for b in final mid; do eng fk-$b fp16-n4 4 128; done
t=$L/trace-mid.txt
E="FK_TRACE_FILE=$t" eng fk-trmid fp16-b1-trace 1 128
python3 kernels/bench/trace_report.py $t > $t.report 2>&1; gzip $t
note "trace mid: $(head -1 $t.report)"; sed -n '/by shape/,$p' $t.report | tee -a $S
tar czf $OUT/l8.tgz -C $OUT l8 && rm -rf $L
note done
