#!/bin/bash
# Second call: gpu_model alone on the compute_75 PTX build; the server with and without mixed-step graphs; bench-8b.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary.txt; L=/tmp/fk-logs; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
for v in native:sm_90a ptx75:compute_75; do
  n=${v%%:*}; a=${v#*:}
  [ -d /tmp/fk-$n ] || meson setup /tmp/fk-$n -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$a >$L/setup-$n.log 2>&1 || note "setup $n FAILED"
done
( ninja -C /tmp/fk-ptx75 -j6 tests/gpu/test_gpu_model tools/flashkernel >$L/build-ptx75.log 2>&1; echo $? >/tmp/ptx75.rc ) &
[ -f /tmp/bench-1b-ascii/model.safetensors ] || { python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &&
  python3 .peers/make_bench_model_ascii.py /tmp/bench-1b /tmp/bench-1b-ascii >$L/mkascii.log 2>&1; } &
ninja -C /tmp/fk-native -j10 tools/flashkernel server/flashkernel-server loadtest/flashkernel-loadtest >$L/build-native.log 2>&1 || note "BUILD native FAILED"
wait
note "built (ptx75 rc $(cat /tmp/ptx75.rc))"
timeout 240 meson test -C /tmp/fk-ptx75 --no-rebuild --print-errorlogs gpu_model >$L/test-ptx75-model.log 2>&1
note "ptx75 gpu_model alone: rc $? $(grep -E '^(Ok|Fail|Timeout):' $L/test-ptx75-model.log | tr -s ' ' | tr '\n' ' ')"
grep -hE "perplexity on the GPU|worst logit|greedy equal" /tmp/fk-ptx75/meson-logs/testlog.txt | tee -a $S
( python3 loadtest/make_bench_8b.py /tmp/bench-8b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk8b.log 2>&1; echo $? >/tmp/mk8b.rc ) &
for g in on off; do
  a=""; [ $g = off ] && a=--no-mixed-graphs
  mkdir -p $OUT/sv-$g
  FK_SERVER_ARGS="$a" FK_SERVERS=flashkernel FK_STEPS=closed FK_CONCURRENCY="64 256" FK_LONG_CONCURRENCY=64 timeout 120 \
    loadtest/run-peer-benchmark.sh /tmp/fk-native/server/flashkernel-server /tmp/fk-native/loadtest/flashkernel-loadtest \
    /bin/false /tmp/bench-1b-ascii /dev/null $OUT/sv-$g >$L/serving-$g.log 2>&1
  note "server, mixed graphs $g (rc $?):"; grep -E "^ *[0-9]+ " $OUT/sv-$g/benchmark.txt | tee -a $S
  curl -s localhost:18080/metrics >/dev/null 2>&1
done
(cd $OUT && tar czf serving-ab.tgz --exclude='server-*.log' sv-on sv-off && rm -rf sv-on sv-off)
while [ ! -f /tmp/mk8b.rc ]; do sleep 2; done
note "bench-8b made: rc $(cat /tmp/mk8b.rc) $(tail -1 $L/mk8b.log)"
mkdir -p $OUT/sv8b
FK_SERVERS=flashkernel FK_STEPS=closed FK_CONCURRENCY="1 16 64 256" FK_LONG_CONCURRENCY="1 16 64" FK_ROUNDS=1 timeout $((420 - ($(date +%s) - T0))) \
  loadtest/run-peer-benchmark.sh /tmp/fk-native/server/flashkernel-server /tmp/fk-native/loadtest/flashkernel-loadtest \
  /bin/false /tmp/bench-8b /dev/null $OUT/sv8b >$L/serving-8b.log 2>&1
note "bench-8b server (rc $?):"; grep -E "^\\$|^ *[0-9]+ " $OUT/sv8b/benchmark.txt | tee -a $S
grep -hE "weights|KV|kv" $OUT/sv8b/server-*.log | head -5 | tee -a $S
(cd $OUT && tar czf serving-8b.tgz --exclude='server-*.log' sv8b && rm -rf sv8b)
tar czf $OUT/logs.tgz -C $L .
