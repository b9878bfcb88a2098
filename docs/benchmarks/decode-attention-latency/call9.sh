#!/bin/bash
# Nineteenth session, call 9: Nsight Compute on decode attention inside bench-1b's fp16 batch-1 step (a graph node:
# ncu serializes it, so no PDL overlap), full set with warp-state sampling per SASS instruction, for the next session.
set -u
T0=$(date +%s)
S=$OUT/summary9.txt; L=$OUT/l9; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
rm -rf /tmp/fk-li; meson setup /tmp/fk-li -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a -Dcuda_args=-lineinfo >/dev/null 2>&1 && ninja -C /tmp/fk-li -j14 tools/flashkernel > $L/build.log 2>&1
note "build: $(tail -1 $L/build.log)"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout 300 $ncu --clock-control none --set full --import-source yes --kernel-name regex:decode_split_kernel \
  --launch-skip 320 --launch-count 2 -f -o $L/attn /tmp/fk-li/tools/flashkernel bench-engine --model /tmp/bench-1b \
  --device cuda --requests 1 --prompt-len 128 --max-tokens 64 --max-model-len 4096 > $L/ncu-run.log 2>&1
note "ncu: rc $? $(tail -2 $L/ncu-run.log | tr '\n' ' ')"
$ncu -i $L/attn.ncu-rep --page details --csv > $L/details.csv 2>&1
$ncu -i $L/attn.ncu-rep --page source --csv --print-source sass > $L/source-sass.csv 2>&1
$ncu -i $L/attn.ncu-rep --page details 2>&1 | grep -E "Duration|Elapsed Cycles|SM Frequency|Memory Throughput|Registers|Achieved Occupancy|Stall|Warp Cycles Per Issued|Block Limit|Grid Size|Dynamic Shared" | head -40 | tee -a $S
ls -la $L | tee -a $S
tar czf $OUT/l9.tgz -C $OUT l9 && rm -rf $L
note done
