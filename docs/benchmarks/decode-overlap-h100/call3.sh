#!/bin/bash
# Eighth session, call 3: the small linears (fp16 and quantized) load two batches of W before the PDL wait instead of
# one (pre2 = working tree; pre1 = the same tree with -DFK_LINEAR_PRELOAD=1, the former loop), against HEAD.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary3.txt; L=$OUT/l3; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); old = $(cat .peers/commit) (HEAD), new = working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -f /tmp/bench-1b/config.json ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
rm -rf /tmp/src-old; mkdir /tmp/src-old; tar cf - --exclude=./.deps --exclude=./.peers --exclude=./.git . | tar xf - -C /tmp/src-old
cp -r .peers/old/. /tmp/src-old/
b() { local dir=$1 src=$2 tg=$3; shift 3; rm -rf $dir; ( meson setup $dir $src -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a "$@" >$dir.setup.log 2>&1 &&
  ninja -C $dir -j4 tools/flashkernel $tg >$dir.build.log 2>&1 ) || note "BUILD FAILED $dir"; }
b /tmp/fk-old /tmp/src-old "" & b /tmp/fk-pre1 . "" -Dcuda_args=-DFK_LINEAR_PRELOAD=1 & b /tmp/fk-pre2 . "tests/gpu/test_gpu_ops kernels/bench/bench_linear" &
b /tmp/fk-tr2 . "" -Dcuda_args=-DFK_TRACE &
wait
note "all built"
FK_TEST_FILTER='test_linear*' timeout 120 /tmp/fk-pre2/tests/gpu/test_gpu_ops >$L/ops-linear.log 2>&1; note "test_linear* pre2: exit $? $(grep -E 'PASSED|FAILED' $L/ops-linear.log | tr '\n' ' ')"
FK_TEST_FILTER='test_quant*' timeout 120 /tmp/fk-pre2/tests/gpu/test_gpu_ops >$L/ops-quant.log 2>&1; note "test_quant* pre2: exit $? $(grep -E 'PASSED|FAILED' $L/ops-quant.log | tr '\n' ' ')"
run() { local v=$1 lab=$2; shift 2
  timeout 90 /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$v-$lab.log 2>&1
  note "$v $lab: $(grep -E 'output tokens/s' $L/$v-$lab.log)"; }
VS="old pre1 pre2"
for r in 1 2; do for v in $VS; do
  run $v none-b1-$r --prompt-len 128 --requests 1
  run $v int4-b1-$r --prompt-len 128 --requests 1 --quantization int4
  run $v int8-b1-$r --prompt-len 128 --requests 1 --quantization int8
done; done
for v in $VS; do
  run $v none-b16 --prompt-len 128 --requests 16
  run $v int4-b16 --prompt-len 128 --requests 16 --quantization int4
  run $v none-b4 --prompt-len 128 --requests 4
done
FK_TRACE_FILE=$L/trace.txt timeout 90 /tmp/fk-tr2/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 --requests 1 >$L/trace.log 2>&1
python3 kernels/bench/trace_report.py $L/trace.txt >$OUT/trace-fp16-b1-pre2.txt 2>&1; rm -f $L/trace.txt
note "trace pre2 fp16: $(grep -E 'output tokens/s' $L/trace.log); $(head -1 $OUT/trace-fp16-b1-pre2.txt)"
FK_BENCH_ONLY=llama timeout 150 /tmp/fk-pre2/kernels/bench/bench_linear >$OUT/bench-linear-pre2.txt 2>&1; note "bench_linear pre2: exit $?"
tar czf $OUT/l3.tgz -C $OUT l3
echo; echo "label: $VS"
for lab in none-b1-1 none-b1-2 int4-b1-1 int4-b1-2 int8-b1-1 int8-b1-2 none-b16 int4-b16 none-b4; do
  printf "%-14s" $lab; for v in $VS; do printf " %10s" "$(grep "] $v $lab:" $S | awk '{print $NF}')"; done; echo; done
sed -n 1,20p $OUT/trace-fp16-b1-pre2.txt; tail -11 $OUT/trace-fp16-b1-pre2.txt
grep -E "llama.* (1|8|16) \|" $OUT/bench-linear-pre2.txt
