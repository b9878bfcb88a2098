#!/bin/bash
# Call 11 of 2026-11-26: flashkernel-server on bench-8b with its defaults after dc3fd2a (the token budget from the
# model's size): the ready line, and 256 clients 128/128 and 64 clients 1,024/256 (run-peer-benchmark.sh's closed loop).
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary.txt; L=/tmp/fk-logs; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
[ -f /tmp/bench-8b/model.safetensors.index.json ] || python3 loadtest/make_bench_8b.py /tmp/bench-8b \
  tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk8b.log 2>&1 &
mk=$!
meson setup /tmp/fk-native -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1
ninja -C /tmp/fk-native -j16 server/flashkernel-server loadtest/flashkernel-loadtest >$L/build.log 2>&1 || { note "BUILD FAILED"; exit 1; }
wait $mk
note "built"
FK_SERVERS=flashkernel FK_STEPS=closed FK_CONCURRENCY="256" FK_LONG_CONCURRENCY="64" FK_ROUNDS=1 timeout 400 \
  loadtest/run-peer-benchmark.sh /tmp/fk-native/server/flashkernel-server /tmp/fk-native/loadtest/flashkernel-loadtest \
  /bin/false /tmp/bench-8b /dev/null $OUT/sv8b >$L/serving.log 2>&1
note "rc $?"
grep -E "^ *[0-9]+ |launches" $OUT/sv8b/benchmark.txt | tee -a $S
grep -h "ready in" $OUT/sv8b/server-*.log | tee -a $S
(cd $OUT && tar czf sv8b.tgz --exclude='server-*.log' sv8b && cp sv8b/benchmark.txt sv8b.txt && rm -rf sv8b)
tar czf $OUT/logs.tgz -C $L .
