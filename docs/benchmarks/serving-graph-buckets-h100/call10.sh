#!/bin/bash
# Twelfth session, call 10 (2c2d526, fresh machine): flashkernel-server alone under run-peer-benchmark.sh's default
# closed-loop levels (1/16/64/256 at 128/128, 64 at 1,024/256), twice on fresh servers, then the 64/128/256 levels
# of calls 2 and 4 once: was call 9's 68.1k at 256 clients (ITL p50 2.36 ms) the code or that run?
set -u
T0=$(date +%s)
S=$OUT/summary10.txt; L=/tmp/l10; mkdir -p $L $OUT/s
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit); $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
( [ -d /tmp/bench-1b ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1
  [ -d /tmp/bench-1b-ascii ] || python3 .peers/make_bench_model_ascii.py /tmp/bench-1b /tmp/bench-1b-ascii >$L/mkascii.log 2>&1 ) &
( meson setup --wipe /tmp/fk-new . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1 &&
  ninja -C /tmp/fk-new -j12 tools/flashkernel server/flashkernel-server loadtest/flashkernel-loadtest >$L/build.log 2>&1 ) || note "BUILD FAILED"
wait
note "built; load $(cut -d' ' -f1-3 /proc/loadavg)"
srv() { local tag=$1; shift
  env "$@" FK_SERVERS=flashkernel FK_STEPS=closed timeout 200 loadtest/run-peer-benchmark.sh /tmp/fk-new/server/flashkernel-server \
    /tmp/fk-new/loadtest/flashkernel-loadtest /bin/false /tmp/bench-1b-ascii /dev/null $L/serving-$tag >$L/serving-$tag.log 2>&1
  note "serving $tag: rc $?"; grep -E "^ +(1|16|64|128|256) |launches per step" $L/serving-$tag/benchmark.txt | tee -a $S
  cp $L/serving-$tag/benchmark.txt $OUT/s/serving-$tag.txt; grep -h "ready in" $L/serving-$tag/server-*.log | sed 's/.*; \([0-9]* decode\)/\1/' | tee -a $S; }
srv default-1
srv default-2
srv levels-64-128-256 FK_CONCURRENCY="64 128 256"
note done
