#!/bin/bash
# Call 10 of 2026-11-26: --max-num-batched-tokens on bench-8b (issue 14: the 4,096 default, chosen on the 1B model,
# gave an 8B model ITL p99 ~104 ms): loadtest/run-sched-sweep.sh at T = 512 .. 4096, 256 clients 128/128 and 64
# clients 1,024/256.
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
note "built; $(tail -1 $L/mk8b.log 2>/dev/null)"
cat /tmp/bench-8b/*.safetensors >/dev/null 2>&1 # into the page cache once, so that every server start reads it alike
note "model cached"
FK_SWEEP_TOKENS="512 1024 2048 4096" FK_SWEEP_SHAPES="256:256:128:128 64:64:1024:256" timeout $((570 - ($(date +%s) - T0))) \
  loadtest/run-sched-sweep.sh /tmp/fk-native/server/flashkernel-server /tmp/fk-native/loadtest/flashkernel-loadtest \
  /tmp/bench-8b $OUT/sweep8b >$L/sweep.log 2>&1
note "sweep rc $?"
sed -n '/^# output tokens\/s/,$p' $OUT/sweep8b/sweep.txt | tee -a $S
grep -h "ready in\|loaded in" $OUT/sweep8b/server-*.log | tee -a $S
(cd $OUT/sweep8b && tar czf ../sweep8b.tgz . && mv sweep.txt ../sweep8b.txt && cd .. && rm -rf sweep8b)
tar czf $OUT/logs.tgz -C $L .
