#!/bin/bash
# Sixth session (2026-11-26), call 1: L2 prefetch of the weights after each attention (FK_L2_PREFETCH mask), A/B by env in one build.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary1.txt; L=$OUT/l1; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree = $(cat .peers/commit) + working changes"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
( meson setup /tmp/fk-native . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup-n.log 2>&1 &&
  ninja -C /tmp/fk-native -j8 tools/flashkernel >$L/build-n.log 2>&1 ) || note "BUILD FAILED native" &
( meson setup /tmp/fk-trace . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a -Dcuda_args=-DFK_TRACE >$L/setup-t.log 2>&1 &&
  ninja -C /tmp/fk-trace -j8 tools/flashkernel >$L/build-t.log 2>&1 ) || note "BUILD FAILED trace" &
wait
note "built"
run() { local p=$1 lab=$2; shift 2
  FK_L2_PREFETCH=$p timeout 90 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/p$p-$lab.log 2>&1
  note "p$p $lab: $(grep -E 'output tokens/s' $L/p$p-$lab.log)"; }
for r in 1 2; do for p in 0 3 7 15; do
  run $p int4-b1-$r --prompt-len 128 --requests 1 --quantization int4
  run $p none-b1-$r --prompt-len 128 --requests 1
done; done
for p in 0 3 15; do
  run $p int8-b1 --prompt-len 128 --requests 1 --quantization int8
  run $p int4-b16 --prompt-len 128 --requests 16 --quantization int4
  run $p none-b16 --prompt-len 128 --requests 16
  run $p int4-b1-p2000 --prompt-len 2000 --requests 1 --quantization int4
  run $p none-b4 --prompt-len 128 --requests 4
done
FK_L2_PREFETCH_MB=40 run 3 none-b1-mb40 --prompt-len 128 --requests 1
FK_L2_PREFETCH_MB=40 run 15 int4-b1-mb40 --prompt-len 128 --requests 1 --quantization int4
FK_L2_PREFETCH_MB=12 run 15 int4-b1-mb12 --prompt-len 128 --requests 1 --quantization int4
for p in 0 15; do
  FK_L2_PREFETCH=$p FK_TRACE_FILE=$L/trace-p$p.txt timeout 90 /tmp/fk-trace/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 --requests 1 --quantization int4 >$L/trace-p$p.log 2>&1
  python3 kernels/bench/trace_report.py $L/trace-p$p.txt >$L/trace-p$p-report.txt 2>&1
  note "trace p$p: $(grep -E 'output tokens/s' $L/trace-p$p.log)"
done
tar czf $OUT/l1.tgz -C $OUT l1 && cp $L/trace-*-report.txt $OUT/ ; rm -rf $L
echo; grep -E "\] p" $S | sed 's/^\[[0-9]*s\] //'
