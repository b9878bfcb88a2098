#!/bin/bash
# Twelfth session, call 11 (0c02de0): the engine tests on the GPU (both step modes; the profile test replays decode
# graphs' mark classes) and gpu_model, natively; flashkernel-server's start-up log with --decode-graphs first-use and
# with its default.
set -u
T0=$(date +%s)
S=$OUT/summary11.txt; L=/tmp/l11; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
( meson setup --wipe /tmp/fk-new . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1 &&
  ninja -C /tmp/fk-new -j14 >$L/build.log 2>&1 ) || { note "BUILD FAILED"; tail -20 $L/build.log; }
note built
( cd /tmp/fk-new && timeout 400 meson test engine_cuda engine_cuda_sync gpu_model --print-errorlogs >$L/suite.log 2>&1; echo "rc $?" >>$L/suite.log )
note "engine_cuda, engine_cuda_sync, gpu_model: $(grep -E '^(Ok|Fail|Skipped):' $L/suite.log | tr -s ' ' | tr '\n' ' ') $(tail -1 $L/suite.log)"
grep -hE "decode graphs:|profile" /tmp/fk-new/meson-logs/testlog.txt | head -8 | tee -a $S
grep -E "FAIL|LINE" /tmp/fk-new/meson-logs/testlog.txt | head -10 | tee -a $S
for mode in first-use default; do
  a=""; [ $mode = first-use ] && a="--decode-graphs first-use"
  /tmp/fk-new/server/flashkernel-server --device cuda --model tests/fixtures/models/tiny-llama3 --port 8123 $a >$L/srv-$mode.log 2>&1 &
  P=$!; for _ in $(seq 1 300); do grep -q 'ready$' $L/srv-$mode.log && break; sleep 0.1; done
  note "server $mode: $(grep -o '[0-9]* decode graphs recorded; ready in [0-9.]* s' $L/srv-$mode.log)"
  kill -TERM $P; wait $P
done
note done
