#!/bin/bash
# Twenty-first session, call 7: the final tree exactly: the gpu suite natively (sm_90a) and as compute_75 PTX.
set -u
T0=$(date +%s)
S=$OUT/summary7.txt; L=$OUT/l7; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
bld() { # dir arch
  rm -rf $1; meson setup $1 -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$2 >/dev/null 2>&1 &&
  ninja -C $1 -j8 >$L/build-$(basename $1).log 2>&1; echo "$(basename $1): $(tail -1 $L/build-$(basename $1).log)"
}
bld /tmp/fk-new sm_90a > $L/b1.txt &
bld /tmp/fk-new75 compute_75 > $L/b2.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
for b in new new75; do
  timeout 270 meson test -C /tmp/fk-$b --no-rebuild --suite gpu --print-errorlogs > $L/test-$b.log 2>&1; echo "rc $?" >> $L/test-$b.log
  cp /tmp/fk-$b/meson-logs/testlog.txt $L/testlog-$b.txt
  note "gpu suite $b: $(grep -E '^(Ok|Fail|Skipped|Timeout):|^rc' $L/test-$b.log | tr -s ' ' | tr '\n' ' ')"
done
tar czf $OUT/l7.tgz -C $OUT l7 && rm -rf $L
note done
