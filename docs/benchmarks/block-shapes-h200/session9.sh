#!/bin/bash
# Call 5 of 2026-11-26 (final commit): both builds (native sm_90a, compute_75 PTX), then llama.cpp's build in the
# background (for call 6), the gpu suite on both builds in turn, and the bench-1b model.
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
  meson setup /tmp/fk-$n -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$a >$L/setup-$n.log 2>&1
  ninja -C /tmp/fk-$n -j16 >$L/build-$n.log 2>&1 || { note "BUILD $n FAILED"; grep -A5 error $L/build-$n.log | head; }
  note "built $n"
done
[ -f /tmp/llama.cpp/done ] || setsid sh -c ".peers/build-llama-cpp.sh /tmp/llama.cpp >/tmp/llama-build.log 2>&1" </dev/null >/dev/null 2>&1 &
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
mk=$!
for n in native ptx75; do
  timeout $((570 - ($(date +%s) - T0))) meson test -C /tmp/fk-$n --no-rebuild --suite gpu --print-errorlogs >$L/test-$n.log 2>&1
  note "gpu suite $n: rc $? $(grep -E '^(Ok|Fail|Timeout):' $L/test-$n.log | tr -s ' ' | tr '\n' ' ')"
  grep -E "^[0-9]+/[0-9]+ " $L/test-$n.log | tee -a $S
  cp /tmp/fk-$n/meson-logs/testlog.txt $L/testlog-$n.txt
done
wait $mk
note "llama.cpp build: $(cat /tmp/llama.cpp/done 2>/dev/null || echo running); $(tail -1 /tmp/llama-build.log 2>/dev/null)"
tar czf $OUT/logs.tgz -C $L .
