#!/bin/bash
# Fourth call: piece graphs recorded at engine creation: the server A/B first, then the native gpu suite.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary.txt; L=/tmp/fk-logs; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
meson setup /tmp/fk-native -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1
{ python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &&
  python3 .peers/make_bench_model_ascii.py /tmp/bench-1b /tmp/bench-1b-ascii >$L/mkascii.log 2>&1; } &
ninja -C /tmp/fk-native -j16 tests/gpu/test_gpu_ops tests/gpu/test_gpu_model tests/gpu/test_engine_cuda tools/flashkernel \
  server/flashkernel-server loadtest/flashkernel-loadtest >$L/build.log 2>&1 || { note "BUILD FAILED"; tail -20 $L/build.log; exit 1; }
wait
note "built"
for g in on off; do
  a=""; [ $g = off ] && a=--no-mixed-graphs
  mkdir -p $OUT/sv-$g
  FK_SERVER_ARGS="$a" FK_SERVERS=flashkernel FK_STEPS=closed FK_CONCURRENCY="16 64 256" FK_LONG_CONCURRENCY=64 timeout 60 \
    loadtest/run-peer-benchmark.sh /tmp/fk-native/server/flashkernel-server /tmp/fk-native/loadtest/flashkernel-loadtest \
    /bin/false /tmp/bench-1b-ascii /dev/null $OUT/sv-$g >$L/serving-$g.log 2>&1
  note "server, mixed graphs $g (rc $?):"; grep -E "^ *[0-9]+ |launches" $OUT/sv-$g/benchmark.txt | tee -a $S
  grep -h "ready in" $OUT/sv-$g/server-*.log | tee -a $S
done
(cd $OUT && tar czf serving-ab3.tgz --exclude='server-*.log' sv-* && rm -rf sv-*)
timeout $((200 - ($(date +%s) - T0))) meson test -C /tmp/fk-native --no-rebuild --suite gpu --print-errorlogs >$L/test.log 2>&1
note "gpu suite native: rc $? $(grep -E '^(Ok|Fail|Timeout):' $L/test.log | tr -s ' ' | tr '\n' ' ')"
grep -E "FAIL|LINE|launches per step" /tmp/fk-native/meson-logs/testlog.txt | head -20 | tee -a $S
tar czf $OUT/logs.tgz -C $L .
