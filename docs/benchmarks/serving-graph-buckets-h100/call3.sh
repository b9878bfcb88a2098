#!/bin/bash
# Twelfth session, call 3: the -DFK_TRACE build of the working tree (decode passes padded to graph buckets) under the
# shipped protocol (one warm-up round, then 512 requests at 256 clients), twice on fresh servers; the kernel timelines
# for the GPU's gaps.
set -u
T0=$(date +%s)
S=$OUT/summary3.txt; L=/tmp/l3; mkdir -p $L $OUT/s
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
( [ -d /tmp/bench-1b ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1
  [ -d /tmp/bench-1b-ascii ] || python3 .peers/make_bench_model_ascii.py /tmp/bench-1b /tmp/bench-1b-ascii >$L/mkascii.log 2>&1 ) &
( meson setup --wipe /tmp/fk-trace . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a -Dcuda_args=-DFK_TRACE >$L/setup.log 2>&1 &&
  ninja -C /tmp/fk-trace -j12 tools/flashkernel server/flashkernel-server loadtest/flashkernel-loadtest >$L/build.log 2>&1 ) || note "BUILD FAILED"
wait
note built
for i in 1 2; do
  FK_TRACE_FILE=$L/trace-$i.txt FK_SERVERS=flashkernel FK_STEPS=closed FK_CONCURRENCY="256" FK_LONG_CONCURRENCY="64" \
    timeout 200 loadtest/run-peer-benchmark.sh /tmp/fk-trace/server/flashkernel-server /tmp/fk-trace/loadtest/flashkernel-loadtest \
    /bin/false /tmp/bench-1b-ascii /dev/null $L/serving-$i >$L/serving-$i.log 2>&1
  note "serving traced $i: rc $?"; grep -E "^ +(64|128|256) |launches per step" $L/serving-$i/benchmark.txt | tee -a $S
  gzip -c $L/trace-$i.txt > $OUT/trace-$i.txt.gz
done
note done
