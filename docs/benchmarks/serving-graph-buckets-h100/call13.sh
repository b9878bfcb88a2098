#!/bin/bash
# Twelfth session, call 13 (59931c3, whose code is 0c02de0's): the compute_75 PTX build (the T4 path, JIT-compiled on
# the H100) and the gpu tests that run the changed host code: engine_cuda, engine_cuda_sync, gpu_model.
set -u
T0=$(date +%s)
S=$OUT/summary13.txt; L=/tmp/l13; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
( meson setup --wipe /tmp/fk-ptx75 . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=compute_75 >$L/setup.log 2>&1 &&
  ninja -C /tmp/fk-ptx75 -j15 >$L/build.log 2>&1 ) || { note "BUILD FAILED"; tail -20 $L/build.log; }
note built
( cd /tmp/fk-ptx75 && timeout $((200 - ($(date +%s) - T0))) meson test engine_cuda engine_cuda_sync gpu_model --print-errorlogs >$L/suite.log 2>&1; echo "rc $?" >>$L/suite.log )
note "compute_75: $(grep -E '^(Ok|Fail|Skipped|Timeout):' $L/suite.log | tr -s ' ' | tr '\n' ' ') $(tail -1 $L/suite.log)"
grep -hE "decode graphs:" /tmp/fk-ptx75/meson-logs/testlog.txt | tee -a $S
grep -E "FAIL|LINE" /tmp/fk-ptx75/meson-logs/testlog.txt | head -10 | tee -a $S
