#!/bin/bash
# Eleventh session, call 10: (1) the decode-attention experiment's split-pair variants at 64-96 sequences;
# (2) FK_TRACE timelines of bench-engine fp16 at 256 and 64 requests (the GPU's gaps between steps).
set -u
T0=$(date +%s)
S=$OUT/summary10.txt; L=$OUT/l10; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
( meson setup /tmp/fk-trace . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a -Dcuda_args=-DFK_TRACE >$L/setup.log 2>&1 &&
  ninja -C /tmp/fk-trace -j12 tools/flashkernel >$L/build.log 2>&1 ) || note "BUILD FAILED" &
nvcc -O3 -std=c++17 -arch=sm_90a -Ikernels -Iinclude -o /tmp/de .peers/exp/decode_exp.cu kernels/pdl.cu kernels/attention_decode_fragments.cu 2>/dev/null || note "nvcc failed"
for a in "129 256 64" "129 256 96" "1000 1100 64"; do for c in w4s2 r1d1 r4d1 r8d1 r8d2 r4d2n4 r8d1m2; do
  /tmp/de $a $c | grep -E "^[rw][0-9]" | sed "s/^/$a /" | tee -a $S; done; done
wait
note "built"
tr() { local lab=$1; shift
  FK_TRACE_FILE=$L/trace.txt timeout 90 /tmp/fk-trace/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 "$@" >$L/trace-$lab.log 2>&1
  note "traced $lab: $(grep -E 'output tokens/s' $L/trace-$lab.log)"
  python3 kernels/bench/trace_report.py $L/trace.txt >$L/trace-$lab.txt 2>&1; gzip $L/trace.txt; mv $L/trace.txt.gz $L/raw-$lab.txt.gz; }
tr r256 --requests 256 --warmup 256
tr r64 --requests 64 --warmup 64
for t in r256 r64; do head -5 $L/trace-$t.txt; tail -25 $L/trace-$t.txt; done | tee -a $S
tar czf $OUT/l10.tgz -C $OUT l10
