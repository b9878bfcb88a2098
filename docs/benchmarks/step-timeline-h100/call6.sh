#!/bin/bash
# Session 5, call 6: decode attention with its first KV chunks loaded before the PDL wait (all but the query's own
# key) and a merge kernel with its loads in flight together, against HEAD (old), interleaved: batch-1 decode at 128-,
# 512- and 2,000-token prompts, 16 and 64 requests; bench_kernels k_attention_decode rows old/new; traces (new) at
# 128 and 2,000; compute-sanitizer memcheck + racecheck on test_attention_decode.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary6.txt; L=$OUT/l6; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); old = $(cat .peers/commit) (HEAD), new = working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
rm -rf /tmp/src-old; mkdir /tmp/src-old; tar cf - --exclude=./.deps --exclude=./.peers --exclude=./.git . | tar xf - -C /tmp/src-old
cp -r .peers/old/. /tmp/src-old/ && rm -f /tmp/src-old/kernels/trace.cu /tmp/src-old/kernels/bench/trace_report.py
bld() { local v=$1 src=$2 args=$3; shift 3
  meson setup /tmp/fk-$v $src -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a "-Dcuda_args=$args" >$L/setup-$v.log 2>&1
  ninja -C /tmp/fk-$v -j5 "$@" >$L/build-$v.log 2>&1 || { echo "BUILD FAILED $v" | tee -a $S; tail -20 $L/build-$v.log; }; }
rm -rf /tmp/fk-old /tmp/fk-native /tmp/fk-trace
bld old /tmp/src-old "" tools/flashkernel kernels/bench/bench_kernels &
bld native . "" tools/flashkernel tests/gpu/test_gpu_ops kernels/bench/bench_kernels &
bld trace . "-DFK_TRACE" tools/flashkernel &
wait; wait; note "built"
run() { local v=$1 lab=$2; shift 2
  timeout 90 /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$v-$lab.log 2>&1
  note "$v $lab: $(grep -E 'output tokens/s' $L/$v-$lab.log)"; }
for r in 1 2; do for v in old native; do
  for q in none int8 int4; do run $v $q-p128-$r --prompt-len 128 --requests 1 --quantization $q; done
done; done
for v in old native; do for q in none int4; do run $v $q-p512 --prompt-len 512 --requests 1 --quantization $q; run $v $q-p2000 --prompt-len 2000 --requests 1 --quantization $q; done; done
for v in old native; do run $v int8-p2000 --prompt-len 2000 --requests 1 --quantization int8; done
for v in old native; do for q in none int4; do run $v $q-b16 --prompt-len 128 --requests 16 --quantization $q; run $v $q-b64 --prompt-len 128 --requests 64 --warmup 64 --quantization $q; done; done
for v in old native; do /tmp/fk-$v/kernels/bench/bench_kernels --only k_attention_decode --iters 300 --warmup 30 >$L/kernels-$v.txt 2>&1; done
note "bench_kernels k_attention_decode p50 us (old | new):"; paste <(grep -E "^k_attention_decode" $L/kernels-old.txt | cut -c1-120) <(grep -E "^k_attention_decode" $L/kernels-native.txt | awk '{print $0}' | cut -c60-120) | tee -a $S | head -40
for p in 128 2000; do
  FK_TRACE_FILE=$L/trace-p$p.txt run trace int4-p$p --prompt-len $p --requests 1 --quantization int4
  python3 kernels/bench/trace_report.py $L/trace-p$p.txt > $L/report-p$p.txt 2>&1; note "report p$p: $(head -1 $L/report-p$p.txt)"; sed -n '/by shape/,$p' $L/report-p$p.txt | tee -a $S
done
for tool in memcheck racecheck; do
  extra=""; [ $tool = memcheck ] && extra="--leak-check full"
  FK_TEST_FILTER=test_attention_decode timeout 150 compute-sanitizer --tool $tool $extra --error-exitcode 9 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/san-$tool.log 2>&1
  note "compute-sanitizer $tool test_attention_decode: exit $? — $(grep -E 'PASSED|FAILED' $L/san-$tool.log | head -1) $(grep -E 'ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY' $L/san-$tool.log | tr '\n' ' ')"
done
gzip $L/trace-*.txt
tar czf $OUT/l6.tgz -C $OUT l6 && rm -rf $L
echo; echo "label: old new"
for lab in none-p128-1 none-p128-2 int8-p128-1 int8-p128-2 int4-p128-1 int4-p128-2 none-p512 int4-p512 none-p2000 int8-p2000 int4-p2000 none-b16 int4-b16 none-b64 int4-b64; do
  printf "%-14s" $lab; for v in old native; do printf " %10s" "$(grep "] $v $lab:" $S | awk '{print $NF}')"; done; echo; done
