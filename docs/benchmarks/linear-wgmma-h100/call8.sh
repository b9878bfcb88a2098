#!/bin/bash
# Fifteenth session, call 8: the gpu suite as compute_75 PTX only (the T4 path, JIT-compiled by the driver), as
# tests/gpu/run-on-device.sh test builds and runs it (call 7 ran out of time before it).
set -u
T0=$(date +%s)
S=$OUT/summary8.txt; L=$OUT/l8; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
meson setup /tmp/fk-ptx75 -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=compute_75 >$L/setup.log 2>&1 &&
  ninja -C /tmp/fk-ptx75 >$L/build.log 2>&1
note "built: rc $? $(tail -1 $L/build.log)"
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
timeout 480 meson test -C /tmp/fk-ptx75 --suite gpu --print-errorlogs >$L/test.txt 2>&1
note "gpu suite, ptx75: rc $? — $(grep -E '^(Ok|Fail|Skipped|Timeout):' $L/test.txt | tr -s ' ' | tr '\n' ' ')"
grep -E '^ *[0-9]+/[0-9]+ ' $L/test.txt | tee -a $S
cp /tmp/fk-ptx75/meson-logs/testlog.txt $L/ 2>/dev/null
tar czf $OUT/l8.tgz -C $OUT l8 && rm -rf $L
note done
