#!/bin/bash
# Session 5, call 1: a -DFK_TRACE build (block 0 of each kernel stamps %globaltimer around its PDL wait), batch-1
# decode of bench-1b fp16 / int8 / int4 traced; the untraced build beside it for the trace's cost.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary1.txt; L=$OUT/l1; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)+trace"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
bld() { local v=$1 src=$2 args=$3; shift 3
  meson setup /tmp/fk-$v $src -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a "-Dcuda_args=$args" >$L/setup-$v.log 2>&1
  ninja -C /tmp/fk-$v -j8 "$@" >$L/build-$v.log 2>&1 || { echo "BUILD FAILED $v" | tee -a $S; tail -20 $L/build-$v.log; }; }
rm -rf /tmp/fk-native /tmp/fk-trace
bld native . "" tools/flashkernel &
bld trace . "-DFK_TRACE" tools/flashkernel &
wait; note "built"
run() { local v=$1 lab=$2; shift 2
  timeout 60 /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --prompt-len 128 --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$v-$lab.log 2>&1
  note "$v $lab: $(grep -E 'output tokens/s' $L/$v-$lab.log)"; }
for q in none int8 int4; do
  run native $q --requests 1 --quantization $q
  run trace $q-notrace --requests 1 --quantization $q
  FK_TRACE_FILE=$L/trace-$q.txt run trace $q --requests 1 --quantization $q
  python3 .peers/trace_report.py $L/trace-$q.txt > $L/report-$q.txt 2>&1; note "report $q: $(head -2 $L/report-$q.txt | tr '\n' ' ')"
done
FK_TRACE_FILE=$L/trace-int4head.txt run trace int4head --requests 1 --quantization int4 --quantize-lm-head
python3 .peers/trace_report.py $L/trace-int4head.txt > $L/report-int4head.txt 2>&1
FK_TRACE_FILE=$L/trace-int4-b16.txt run trace int4-b16 --requests 16 --quantization int4
python3 .peers/trace_report.py $L/trace-int4-b16.txt > $L/report-int4-b16.txt 2>&1
gzip $L/trace-*.txt
tar czf $OUT/l1.tgz -C $OUT l1 && rm -rf $L
cat $S
