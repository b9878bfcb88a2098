#!/bin/bash
# Tenth session, call 9: (1) cuBLASLt's heuristic algorithms timed for the decode linears at m = 32..256 against
# cublasGemmEx's default (.peers/exp/lt_algos.cu, an experiment); (2) INT8/INT4 at 128/256 requests with the padded head
# (U = 256: the old routing) and bench-engine --profile at 256 requests, fp16, at HEAD.
# (.peers/exp/lt_algos.cu is call9-lt_algos.cu in this folder.)
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary9.txt; L=$OUT/l9; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
( meson setup /tmp/fk-new . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1 &&
  ninja -C /tmp/fk-new -j14 tools/flashkernel >$L/build.log 2>&1 ) || note "BUILD FAILED" &
nvcc -O2 -std=c++17 -arch=sm_90a .peers/exp/lt_algos.cu -lcublasLt -lcublas -o /tmp/lt_algos >$L/nvcc.log 2>&1 || note "nvcc failed"
wait
note "built"
timeout 200 /tmp/lt_algos >$L/lt_algos.txt 2>&1; note "lt_algos rc $?"
cat $L/lt_algos.txt | tee -a $S
run() { local lab=$1; shift
  timeout 150 /tmp/fk-new/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 "$@" >$L/$lab.log 2>&1
  note "$lab: $(grep -E 'output tokens/s' $L/$lab.log)"; }
for q in int8 int4; do for r in 256 128; do
  FK_SMALL_LINEAR_UNALIGNED_MAX_M=256 run $q-r$r-u256 --requests $r --warmup $r --quantization $q
  run $q-r$r-new --requests $r --warmup $r --quantization $q
done; done
run fp16-r256-profile --requests 256 --warmup 256 --profile
sed -n '/profile/,$p' $L/fp16-r256-profile.log | head -30 | tee -a $S
tar czf $OUT/l9.tgz -C $OUT l9
