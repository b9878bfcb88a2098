#!/bin/bash
# Call 1: decode attention on the long-context shapes of issue 12 (64 x 4096, 16 x 16k at d128; 64 x 4096 at d64):
# the device's read-only ceiling (read_stream) beside the copy bandwidth; the shipped kernel (2 stages, 8 warps) and
# its build-time variants (stages, warps, L2 prefetch bytes: bench_attention_decode_sSwWpP), alternated twice;
# PyTorch SDPA (flash, cuDNN) in the same call (kernels/bench/peers.py attention).
set -u
T0=$(date +%s)
S=$OUT/summary.txt; L=$OUT/lab; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(git rev-parse --short HEAD 2>/dev/null) + working changes"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
B=/tmp/fk-native
rm -rf $B; meson setup $B -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1 || note "setup failed"
V="s3w8p0 s2w4p0 s3w4p0 s4w4p0 s2w8p256 s3w8p256 s2w8p128"
T="kernels/bench/bench_attention"; for v in $V; do T="$T kernels/bench/bench_attention_decode_$v"; done
ninja -C $B -j16 $T >$L/build.log 2>&1; note "build: $(tail -1 $L/build.log)"
$B/kernels/bench/bench_attention >$L/bench-attention.log 2>&1; note "bench_attention rc $?"
grep -E "device|RESULT (read|decode_attention [0-9])|SWEEP" $L/bench-attention.log | tee -a $S
for r in 1 2; do
  for v in base $V; do
    if [ $v = base ]; then b=$B/kernels/bench/bench_attention; else b=$B/kernels/bench/bench_attention_decode_$v; fi
    timeout 120 $b " ($v r$r)" >$L/var-$v-r$r.log 2>&1
    grep -E "RESULT decode" $L/var-$v-r$r.log | sed 's/ h32\/8//; s/, [0-9]* splits.*//' | tee -a $S
  done
done
python3 kernels/bench/peers.py attention >$L/peers.log 2>&1; grep -E "PEER|Error" $L/peers.log | tee -a $S
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $L
note done
