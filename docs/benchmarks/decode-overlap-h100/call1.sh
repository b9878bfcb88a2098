#!/bin/bash
# Eighth session, call 1: decode attention's first chunks loaded before the PDL wait (rope_store passes) and the small
# linear's split rule spreading 9-16-token tiles over the SMs (working tree) against HEAD: A/B decode, bench_linear
# (1B and 8B shapes), a traced fp16 batch-1 step.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary1.txt; L=$OUT/l1; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); old = $(cat .peers/commit) (HEAD), new = working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
rm -rf /tmp/src-old; mkdir /tmp/src-old; tar cf - --exclude=./.deps --exclude=./.peers --exclude=./.git . | tar xf - -C /tmp/src-old
cp -r .peers/old/. /tmp/src-old/
b() { local dir=$1 src=$2; shift 2; ( meson setup $dir $src -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a "$@" >$dir.setup.log 2>&1 &&
  ninja -C $dir -j5 tools/flashkernel kernels/bench/bench_linear >$dir.build.log 2>&1 ) || note "BUILD FAILED $dir"; }
b /tmp/fk-old /tmp/src-old & b /tmp/fk-new . & b /tmp/fk-trace . -Dcuda_args=-DFK_TRACE &
wait
note "all built"
run() { local v=$1 lab=$2; shift 2
  timeout 90 /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$v-$lab.log 2>&1
  note "$v $lab: $(grep -E 'output tokens/s' $L/$v-$lab.log)"; }
for r in 1 2; do for v in old new; do
  run $v none-b1-$r --prompt-len 128 --requests 1
  run $v int4-b1-$r --prompt-len 128 --requests 1 --quantization int4
  run $v int8-b1-$r --prompt-len 128 --requests 1 --quantization int8
done; done
for v in old new; do
  run $v none-b16 --prompt-len 128 --requests 16
  run $v none-b12 --prompt-len 128 --requests 12
  run $v int4-b16 --prompt-len 128 --requests 16 --quantization int4
  run $v none-b64 --prompt-len 128 --requests 64 --warmup 64
  run $v none-b1-p2000 --prompt-len 2000 --requests 1
done
for v in old new; do
  FK_BENCH_ONLY=llama timeout 150 /tmp/fk-$v/kernels/bench/bench_linear >$OUT/bench-linear-$v.txt 2>&1; note "bench_linear $v: exit $?"
done
FK_TRACE_FILE=$L/trace.txt timeout 90 /tmp/fk-trace/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 --requests 1 >$L/trace.log 2>&1
python3 kernels/bench/trace_report.py $L/trace.txt >$OUT/trace-fp16-b1-new.txt 2>&1; rm -f $L/trace.txt
note "trace new fp16: $(grep -E 'output tokens/s' $L/trace.log); $(head -1 $OUT/trace-fp16-b1-new.txt)"
tar czf $OUT/l1.tgz -C $OUT l1
echo; echo "label: old new"
for lab in none-b1-1 none-b1-2 int4-b1-1 int4-b1-2 int8-b1-1 int8-b1-2 none-b16 none-b12 int4-b16 none-b64 none-b1-p2000; do
  printf "%-14s" $lab; for v in old new; do printf " %10s" "$(grep "] $v $lab:" $S | awk '{print $NF}')"; done; echo; done
for v in old new; do grep -E " (12|16) \|" $OUT/bench-linear-$v.txt | grep -v int | awk -v v=$v '{print v, $0}'; done
sed -n 1,20p $OUT/trace-fp16-b1-new.txt; tail -11 $OUT/trace-fp16-b1-new.txt
