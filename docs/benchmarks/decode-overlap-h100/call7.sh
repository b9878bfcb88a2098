#!/bin/bash
# Eighth session, call 7: how many k-steps of its first batch the fp16 small linear loads before the PDL wait
# (FK_LINEAR_PRELOAD_STEPS 0, 1, 2; the default 4 = the whole batch, as HEAD): fp16 decode at 1 and 16 requests,
# and a traced step with 0.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary7.txt; L=$OUT/l7; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); old = $(cat .peers/commit) (HEAD), variants = working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -f /tmp/bench-1b/config.json ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
b() { local dir=$1; shift; rm -rf $dir; ( meson setup $dir . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a "$@" >$dir.setup.log 2>&1 &&
  ninja -C $dir -j3 tools/flashkernel >$dir.build.log 2>&1 ) || note "BUILD FAILED $dir"; }
b /tmp/fk-p4 & b /tmp/fk-p0 -Dcuda_args=-DFK_LINEAR_PRELOAD_STEPS=0 & b /tmp/fk-p1 -Dcuda_args=-DFK_LINEAR_PRELOAD_STEPS=1 &
b /tmp/fk-p2 -Dcuda_args=-DFK_LINEAR_PRELOAD_STEPS=2 & b /tmp/fk-t0 -Dcuda_args="-DFK_TRACE -DFK_LINEAR_PRELOAD_STEPS=0" &
wait
note "all built"
run() { local v=$1 lab=$2; shift 2
  timeout 90 /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$v-$lab.log 2>&1
  note "$v $lab: $(grep -E 'output tokens/s' $L/$v-$lab.log)"; }
VS="p4 p0 p1 p2"
for r in 1 2; do for v in $VS; do run $v none-b1-$r --prompt-len 128 --requests 1; done; done
for v in $VS; do run $v none-b16 --prompt-len 128 --requests 16; done
FK_TRACE_FILE=$L/trace.txt timeout 90 /tmp/fk-t0/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 --requests 1 >$L/trace.log 2>&1
python3 kernels/bench/trace_report.py $L/trace.txt >$OUT/trace-fp16-b1-p0.txt 2>&1; rm -f $L/trace.txt
note "trace p0 fp16: $(grep -E 'output tokens/s' $L/trace.log); $(head -1 $OUT/trace-fp16-b1-p0.txt)"
tar czf $OUT/l7.tgz -C $OUT l7
echo; echo "label: $VS"
for lab in none-b1-1 none-b1-2 none-b16; do
  printf "%-14s" $lab; for v in $VS; do printf " %10s" "$(grep "] $v $lab:" $S | awk '{print $NF}')"; done; echo; done
sed -n 1,20p $OUT/trace-fp16-b1-p0.txt; tail -11 $OUT/trace-fp16-b1-p0.txt
