#!/bin/bash
# This session's device run: builds, the gpu suite (native + compute_75 PTX), bench-engine A/B of mixed-step
# graphs, flashkernel-server closed loop, then bench-8b bench-engine if time is left. Summary in $OUT/summary.txt.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary.txt; L=/tmp/fk-logs; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader); commit $(cat .peers/commit)"
TG="tests/gpu/test_gpu_ops tests/gpu/test_gpu_model tests/gpu/test_engine_cuda tools/flashkernel server/flashkernel-server loadtest/flashkernel-loadtest"
for v in native:sm_90a ptx75:compute_75; do
  n=${v%%:*}; a=${v#*:}
  meson setup /tmp/fk-$n -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$a >$L/setup-$n.log 2>&1 || note "setup $n FAILED"
done
( ninja -C /tmp/fk-ptx75 -j6 $TG >$L/build-ptx75.log 2>&1; echo $? >/tmp/ptx75.rc ) &
python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &&
  python3 .peers/make_bench_model_ascii.py /tmp/bench-1b /tmp/bench-1b-ascii >$L/mkascii.log 2>&1 &
ninja -C /tmp/fk-native -j12 $TG >$L/build-native.log 2>&1 || { note "BUILD native FAILED"; tail -30 $L/build-native.log; }
note "native built"
suite() { # name
  timeout ${2:-420} meson test -C /tmp/fk-$1 --no-rebuild --suite gpu --print-errorlogs >$L/test-$1.log 2>&1; r=$?
  note "gpu suite $1: rc $r $(grep -E '^(Ok|Fail|Timeout):' $L/test-$1.log | tr -s ' ' | tr '\n' ' ')"
  [ $r = 0 ] || grep -E "FAIL|LINE|rror|expected|differ" /tmp/fk-$1/meson-logs/testlog.txt | head -30 | tee -a $S
}
suite native &
NAT=$!
while [ ! -f /tmp/ptx75.rc ]; do sleep 2; done
note "ptx75 build rc $(cat /tmp/ptx75.rc)"
suite ptx75 360
wait
tar czf $OUT/logs.tgz -C $L .
B=/tmp/fk-native/tools/flashkernel
be() { # label args...
  local lab=$1; shift
  timeout 120 $B bench-engine --device cuda --max-model-len 4096 "$@" >$L/be-$lab.log 2>&1
  note "bench-engine $lab: $(grep -E 'output tokens/s|launches per step' $L/be-$lab.log | tr '\n' ' ')"
}
for n in 64 256; do
  for g in on off; do a=""; [ $g = off ] && a=--no-mixed-graphs
    be "n$n-p128-$g" --model /tmp/bench-1b-ascii --requests $n --prompt-len 128 --max-tokens 128 $a; done; done
for g in on off; do a=""; [ $g = off ] && a=--no-mixed-graphs
  be "n64-p1024-$g" --model /tmp/bench-1b-ascii --requests 64 --prompt-len 1024 --max-tokens 256 $a; done
[ $(( $(date +%s) - T0 )) -lt 480 ] && bash .peers/serve.sh
tar czf $OUT/logs.tgz -C $L .
