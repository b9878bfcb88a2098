#!/bin/bash
# Tenth session, call 7: flashkernel-server at HEAD (padded heads) and at 37ee0b8 (old: the head in passes of our
# kernel up to 256 tokens), the same load tester, bench-1b-ascii, closed loop 64/128/256 clients at 128/128 and 64 at
# 1,024/256; bench-engine at the same loads for the server/engine ratio.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary7.txt; L=$OUT/l7; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
( [ -d /tmp/bench-1b ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1
  python3 .peers/make_bench_model_ascii.py /tmp/bench-1b /tmp/bench-1b-ascii >$L/mkascii.log 2>&1 ) &
rm -rf /tmp/src-old; mkdir -p /tmp/src-old; git ls-files -co --exclude-standard | tar cf - -T - | tar xf - -C /tmp/src-old
cp -r .peers/old/. /tmp/src-old/
b() { local dir=$1 src=$2; shift 2; ( meson setup --wipe $dir $src -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$dir.setup.log 2>&1 &&
  ninja -C $dir -j8 "$@" >$dir.build.log 2>&1 ) || { note "BUILD FAILED $dir"; tail -30 $dir.build.log; }; }
b /tmp/fk-new . tools/flashkernel server/flashkernel-server loadtest/flashkernel-loadtest &
b /tmp/fk-old /tmp/src-old tools/flashkernel server/flashkernel-server &
wait
note "built; models: $(ls /tmp/bench-1b-ascii | tr '\n' ' ')"
for v in new old; do
  FK_SERVERS=flashkernel FK_STEPS=closed FK_CONCURRENCY="64 128 256" FK_LONG_CONCURRENCY="64" \
    timeout 240 loadtest/run-peer-benchmark.sh /tmp/fk-$v/server/flashkernel-server /tmp/fk-new/loadtest/flashkernel-loadtest \
    /bin/false /tmp/bench-1b-ascii /dev/null $L/serving-$v >$L/serving-$v.log 2>&1
  note "serving $v: rc $?"
  grep -E "output tokens/s|TTFT|^\\\$|concurrency" $L/serving-$v/benchmark.txt | grep -vE "^#" | head -40 > $L/serving-$v-short.txt
done
for v in new old; do for r in 64 128 256; do
  timeout 120 /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b-ascii --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 --requests $r --warmup $r >$L/engine-$v-r$r.log 2>&1
  note "engine $v $r requests: $(grep -E 'output tokens/s' $L/engine-$v-r$r.log)"; done; done
tar czf $OUT/l7.tgz -C $OUT l7
cat $S
for v in new old; do echo "== $v"; grep -E "output tokens/s|ttft|TTFT" $L/serving-$v/benchmark.txt | head -20; done
