#!/bin/bash
# Session 5, call 5: where the cascade loses. Builds: old (HEAD), rt (run-time switch, auto), always (compile-time
# cascade on every kernel, no switch read), never (switch compiled out: the cost of reading it). Batch-1 decode at
# 128- and 2,000-token prompts (and 512 for int4); traces at 2,000 tokens with and without the cascade.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary5.txt; L=$OUT/l5; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); old = $(cat .peers/commit) (HEAD), others = working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
rm -rf /tmp/src-old; mkdir /tmp/src-old; tar cf - --exclude=./.deps --exclude=./.peers --exclude=./.git . | tar xf - -C /tmp/src-old
cp -r .peers/old/. /tmp/src-old/ && rm -f /tmp/src-old/kernels/trace.cu /tmp/src-old/kernels/bench/trace_report.py
bld() { local v=$1 src=$2 args=$3; shift 3
  meson setup /tmp/fk-$v $src -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a "-Dcuda_args=$args" >$L/setup-$v.log 2>&1
  ninja -C /tmp/fk-$v -j3 "$@" >$L/build-$v.log 2>&1 || { echo "BUILD FAILED $v" | tee -a $S; tail -20 $L/build-$v.log; }; }
V="old rt always never"
rm -rf /tmp/fk-old /tmp/fk-rt /tmp/fk-always /tmp/fk-never /tmp/fk-tralways /tmp/fk-trnever
bld old /tmp/src-old "" tools/flashkernel &
bld rt . "" tools/flashkernel &
bld always . "-DFK_X_CASCADE_ALWAYS" tools/flashkernel &
bld never . "-DFK_X_CASCADE_NEVER" tools/flashkernel &
bld tralways . "-DFK_TRACE -DFK_X_CASCADE_ALWAYS" tools/flashkernel &
bld trnever . "-DFK_TRACE -DFK_X_CASCADE_NEVER" tools/flashkernel &
wait; wait; note "built"
run() { local v=$1 lab=$2; shift 2
  timeout 90 /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$v-$lab.log 2>&1
  note "$v $lab: $(grep -E 'output tokens/s' $L/$v-$lab.log)"; }
for v in $V; do for q in none int8 int4; do run $v $q-p128 --prompt-len 128 --requests 1 --quantization $q; done; done
for v in $V; do for q in int8 int4; do run $v $q-p2000 --prompt-len 2000 --requests 1 --quantization $q; done; run $v int4-p512 --prompt-len 512 --requests 1 --quantization int4; done
for v in $V; do run $v int4-p128-r2 --prompt-len 128 --requests 1 --quantization int4; done
for v in tralways trnever; do
  FK_TRACE_FILE=$L/trace-$v-p2000.txt run $v int4-p2000 --prompt-len 2000 --requests 1 --quantization int4
  python3 kernels/bench/trace_report.py $L/trace-$v-p2000.txt > $L/report-$v-p2000.txt 2>&1; note "report $v: $(head -1 $L/report-$v-p2000.txt)"
  FK_TRACE_FILE=$L/trace-$v-p128.txt run $v int4-p128 --prompt-len 128 --requests 1 --quantization int4
  python3 kernels/bench/trace_report.py $L/trace-$v-p128.txt > $L/report-$v-p128.txt 2>&1; note "report $v: $(head -1 $L/report-$v-p128.txt)"
done
gzip $L/trace-*.txt
tar czf $OUT/l5.tgz -C $OUT l5 && rm -rf $L
echo; echo "label: $V"
for lab in none-p128 int8-p128 int4-p128 int4-p128-r2 int8-p2000 int4-p2000 int4-p512; do
  printf "%-14s" $lab; for v in $V; do printf " %10s" "$(grep "] $v $lab:" $S | awk '{print $NF}')"; done; echo; done
