#!/bin/bash
# Thirty-third session, call 2: the native gpu suite (sm_90a) on 0ec7fb3's code, with llama.cpp's build (the issue-13
# peer) started first under nice in its own session, so that it goes on into call 3. The peer's tarball here is
# ../shared/peers' one with tools/ui/src, tools/ui/docs, tools/ui/package-lock.json and tools/mtmd's test media taken
# out (not built with -DLLAMA_BUILD_UI=OFF). Even so it does not travel beside .deps under 64 MiB: a call before this
# one carries .peers alone and starts the build (the same line as below); this call starts it only if that did not.
# Then the compute_75 PTX build, for call 3. LIMIT (seconds, default 570).
set -u
T0=$(date +%s); LIMIT=${LIMIT:-570}
S=$OUT/summary2.txt; L=$OUT/l2; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
[ -d /tmp/llama.cpp ] || setsid nice -n 19 sh -c ".peers/build-llama-cpp.sh /tmp/llama.cpp >/tmp/llama-build.log 2>&1" </dev/null >/dev/null 2>&1 &
mkdir -p /tmp/peers-keep && cp .peers/*.py .peers/*.sh /tmp/peers-keep/
prefix=/tmp/fk-deps
deploy/offline-deps.sh unpack .deps $prefix >/dev/null || exit 1
export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu
build() { # name arch
    [ -f /tmp/fk-$1/build.ninja ] || meson setup /tmp/fk-$1 -Ddep_prefix=$prefix -Dcuda=enabled -Dcuda-arch=$2 >$L/setup-$1.log 2>&1
    ninja -C /tmp/fk-$1 >$L/build-$1.log 2>&1
}
build native sm_90a || { note "native build FAILED"; tail -30 $L/build-native.log; exit 1; }
note "native built"
timeout $(( $(left) - 40 )) meson test -C /tmp/fk-native --suite gpu --print-errorlogs >$L/test-native.log 2>&1
note "gpu suite native: rc=$? — $(grep -E '^(Ok|Fail|Skipped|Timeout):' $L/test-native.log | tr -s ' ' | tr '\n' ' ')"
grep -E '^ *[0-9]+/[0-9]+ ' $L/test-native.log | tee -a $S
cp /tmp/fk-native/meson-logs/testlog.txt $L/testlog-native.txt
grep -hE "worst logit error|greedy equal" $L/testlog-native.txt | head -20 | tee -a $S
setsid nice -n 10 sh -c "meson setup /tmp/fk-ptx75 -Ddep_prefix=$prefix -Dcuda=enabled -Dcuda-arch=compute_75 >/tmp/ptx75-setup.log 2>&1 && ninja -C /tmp/fk-ptx75 >/tmp/ptx75-build.log 2>&1; echo \$? >/tmp/ptx75-done" </dev/null >/dev/null 2>&1 &
note "llama.cpp build: $(tail -c 300 /tmp/llama.cpp/build.log 2>/dev/null | tr '\n' ' ' | tail -c 120)"
tar czf $OUT/l2.tgz -C $OUT l2 && rm -rf $L
cat $S
