#!/bin/bash
# Session 5, call 2: every kernel releases its dependents before its PDL wait (-DFK_PDL_EARLY: the launch cascades
# as far as SM resources allow; pre-wait reads are weights and step indices only) against HEAD, interleaved; traces
# of both; the gpu suite on the early build.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary2.txt; L=$OUT/l2; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)+trace/early knobs"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
bld() { local v=$1 src=$2 args=$3; shift 3
  meson setup /tmp/fk-$v $src -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a "-Dcuda_args=$args" >$L/setup-$v.log 2>&1
  ninja -C /tmp/fk-$v -j4 "$@" >$L/build-$v.log 2>&1 || { echo "BUILD FAILED $v" | tee -a $S; tail -20 $L/build-$v.log; }; }
rm -rf /tmp/fk-native /tmp/fk-early /tmp/fk-trace /tmp/fk-trearly
bld native . "" tools/flashkernel &
bld early . "-DFK_PDL_EARLY" tools/flashkernel tests/gpu/test_gpu_ops tests/gpu/test_gpu_model tests/gpu/test_engine_cuda &
bld trace . "-DFK_TRACE" tools/flashkernel &
bld trearly . "-DFK_TRACE -DFK_PDL_EARLY" tools/flashkernel &
wait; note "built"
run() { local v=$1 lab=$2; shift 2
  timeout 60 /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --prompt-len 128 --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$v-$lab.log 2>&1
  note "$v $lab: $(grep -E 'output tokens/s' $L/$v-$lab.log)"; }
for r in 1 2; do for v in native early; do for q in none int8 int4; do run $v $q-b1-$r --requests 1 --quantization $q; done; done; done
for v in native early; do run $v int4head-b1 --requests 1 --quantization int4 --quantize-lm-head; done
for v in native early; do for q in none int4; do run $v $q-b16 --requests 16 --quantization $q; run $v $q-b64 --requests 64 --warmup 64 --quantization $q; done; done
for v in trace trearly; do for q in none int4; do
  FK_TRACE_FILE=$L/trace-$v-$q.txt run $v $q --requests 1 --quantization $q
  python3 .peers/trace_report.py $L/trace-$v-$q.txt > $L/report-$v-$q.txt 2>&1; note "report $v $q: $(head -2 $L/report-$v-$q.txt | tr '\n' ' ')"
done; done
( cd /tmp/fk-early && timeout 240 meson test --suite gpu --no-rebuild --print-errorlogs gpu_ops gpu_model engine_cuda engine_cuda_sync >$L/test-early.log 2>&1 ); note "gpu suite (early build): exit $? $(grep -E '^(Ok|Fail|Timeout)' $L/test-early.log | tr '\n' ' ')"
gzip $L/trace-*.txt
tar czf $OUT/l2.tgz -C $OUT l2 && rm -rf $L
cat $S
