#!/bin/bash
# Twelfth session, call 2: decode passes padded to graph buckets. Builds "new" (the working tree) and "old" (HEAD's
# model_forward.c and model.h), the new tree's gpu suite (native), then flashkernel-server new vs old alternated twice
# (bench-1b-ascii, closed loop 64/128/256 at 128/128 and 64 at 1,024/256, one warm-up round each as shipped), and
# bench-engine new/old at 256, 64 and 1 requests.
set -u
T0=$(date +%s)
S=$OUT/summary2.txt; L=/tmp/l2; mkdir -p $L $OUT/s
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
( [ -d /tmp/bench-1b ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1
  [ -d /tmp/bench-1b-ascii ] || python3 .peers/make_bench_model_ascii.py /tmp/bench-1b /tmp/bench-1b-ascii >$L/mkascii.log 2>&1 ) &
rm -rf /tmp/src-old; mkdir -p /tmp/src-old; git ls-files -co --exclude-standard | tar cf - -T - | tar xf - -C /tmp/src-old
cp -r .peers/old/. /tmp/src-old/
b() { local dir=$1 src=$2; shift 2; ( meson setup --wipe $dir $src -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$dir.setup.log 2>&1 &&
  ninja -C $dir -j8 "$@" >$dir.build.log 2>&1 ) || { note "BUILD FAILED $dir"; tail -30 $dir.build.log; }; }
b /tmp/fk-new . &
b /tmp/fk-old /tmp/src-old tools/flashkernel server/flashkernel-server &
wait
note "built"
for i in 1 2; do for v in old new; do
  FK_SERVERS=flashkernel FK_STEPS=closed FK_CONCURRENCY="64 128 256" FK_LONG_CONCURRENCY="64" \
    timeout 240 loadtest/run-peer-benchmark.sh /tmp/fk-$v/server/flashkernel-server /tmp/fk-new/loadtest/flashkernel-loadtest \
    /bin/false /tmp/bench-1b-ascii /dev/null $L/serving-$v-$i >$L/serving-$v-$i.log 2>&1
  note "serving $v $i: rc $?"; grep -E "^ +(64|128|256) " $L/serving-$v-$i/benchmark.txt | tee -a $S
  cp $L/serving-$v-$i/benchmark.txt $OUT/s/serving-$v-$i.txt
done; done
for r in 256 64 1; do for v in old new; do
  timeout 120 /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b-ascii --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 --requests $r --warmup $r >$L/engine-$v-$r.log 2>&1
  note "engine $v $r requests: $(grep -E 'output tokens/s' $L/engine-$v-$r.log)"
done; done
( cd /tmp/fk-new && timeout $((560 - ($(date +%s) - T0))) meson test --suite gpu --print-errorlogs >$L/suite.log 2>&1; echo "rc $?" >>$L/suite.log )
note "gpu suite native: $(grep -E '^(Ok|Fail|Skipped):' $L/suite.log | tr -s ' ' | tr '\n' ' ') $(tail -1 $L/suite.log)"
grep -hE "diverged|launches per step|worst logit|greedy equal" /tmp/fk-new/meson-logs/testlog.txt | head -20 | tee -a $S
grep -E "FAIL|fail_msg|LINE" /tmp/fk-new/meson-logs/testlog.txt | head -10 | tee -a $S
note done
