#!/bin/bash
# Third call: flashkernel-server on bench-1b-ascii with and without mixed-step graphs, launches per step from /metrics.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary.txt; L=/tmp/fk-logs; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
[ -d /tmp/fk-native ] || meson setup /tmp/fk-native -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1
[ -f /tmp/bench-1b-ascii/model.safetensors ] || { python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &&
  python3 .peers/make_bench_model_ascii.py /tmp/bench-1b /tmp/bench-1b-ascii >$L/mkascii.log 2>&1; } &
ninja -C /tmp/fk-native -j14 server/flashkernel-server loadtest/flashkernel-loadtest >$L/build.log 2>&1 || note "BUILD FAILED"
wait
note "built"
for g in on off on2; do
  a=""; [ $g = off ] && a=--no-mixed-graphs
  mkdir -p $OUT/sv-$g
  FK_SERVER_ARGS="$a" FK_SERVERS=flashkernel FK_STEPS=closed FK_CONCURRENCY="16 64 256" FK_LONG_CONCURRENCY=64 timeout 90 \
    loadtest/run-peer-benchmark.sh /tmp/fk-native/server/flashkernel-server /tmp/fk-native/loadtest/flashkernel-loadtest \
    /bin/false /tmp/bench-1b-ascii /dev/null $OUT/sv-$g >$L/serving-$g.log 2>&1
  note "server, mixed graphs $g (rc $?):"; grep -E "^ *[0-9]+ |launches" $OUT/sv-$g/benchmark.txt | tee -a $S
  [ $(( $(date +%s) - T0 )) -lt 150 ] || break
done
(cd $OUT && tar czf serving-ab2.tgz --exclude='server-*.log' sv-* && rm -rf sv-*)
tar czf $OUT/logs.tgz -C $L .
