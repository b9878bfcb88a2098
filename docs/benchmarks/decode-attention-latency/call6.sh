#!/bin/bash
# Nineteenth session, call 6: the committed tree, the gpu suite natively (sm_90a) and as compute_75 PTX, one after
# the other (the builds side by side).
set -u
T0=$(date +%s)
S=$OUT/summary6.txt; L=$OUT/l6; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
bld() { local d=$1 arch=$2; rm -rf $d; meson setup $d -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$arch >/dev/null 2>&1 &&
  ninja -C $d -j8 >$L/build-$(basename $d).log 2>&1; echo "$(basename $d): $(tail -1 $L/build-$(basename $d).log)"; }
bld /tmp/fk-native sm_90a > $L/b1.txt &
bld /tmp/fk-ptx75 compute_75 > $L/b2.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
for n in native ptx75; do
  left=$(( 585 - ($(date +%s) - T0) ))
  note "gpu suite $n, $left s left"
  timeout $left meson test -C /tmp/fk-$n --suite gpu --print-errorlogs >$L/test-$n.log 2>&1; echo "rc $?" >>$L/test-$n.log
  cp /tmp/fk-$n/meson-logs/testlog.txt $L/testlog-$n.txt
  note "gpu suite $n: $(grep -E '^(Ok|Fail|Skipped|Timeout):|^rc' $L/test-$n.log | tr -s ' ' | tr '\n' ' ')"
done
tar czf $OUT/l6.tgz -C $OUT l6 && rm -rf $L
note done
