#!/bin/bash
# Thirteenth session, call 6 (fresh machine): an experiment in linear_small.cu (uncommitted, env-switched in one
# binary). FK_X_EARLY2=1: a warp with a second batch of weights loads it before the PDL wait too (strong loads, which
# ptxas keeps ahead of griddepcontrol.wait), so twice the bytes stream while the kernel in front finishes.
# FK_X_WAVE8=1: a linear whose blocks number between 1 and 2 per SM (bench-1b's q|k|v at one token: 192) runs 8-warp
# blocks, two an SM, so that all of them are resident at once. The linear op tests with both on, then bench-engine
# fp16 at 1 and 16 requests, the four settings alternated.
set -u
T0=$(date +%s)
S=$OUT/summary6.txt; L=$OUT/l6; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit) + linear_small.cu experiment"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
meson setup /tmp/fk-native -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >/dev/null 2>&1 && ninja -C /tmp/fk-native tools/flashkernel tests/gpu/test_gpu_ops >$L/build.log 2>&1
note "built: rc $?"
FK_X_EARLY2=1 FK_X_WAVE8=1 FK_TEST_FILTER="test_linear*" FK_TEST_DEVICE=cuda timeout 200 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/test-linear.log 2>&1
note "test_linear* with both on: rc $? $(grep -cE '^\[       OK' $L/test-linear.log) ok $(grep -E 'PASSED|FAILED' $L/test-linear.log | tr '\n' ' ')"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
note "bench-1b: $(cat /tmp/mk-done 2>/dev/null)"
run() { # label env... : bench-engine fp16, $N requests
  env "${@:2}" timeout 60 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $N \
    --prompt-len 128 --max-tokens 128 --max-model-len 4096 >$L/e.log 2>&1
  note "N=$N $1: $(grep -E 'output tokens/s' $L/e.log)"
}
for r in 1 2; do
  N=1
  run base FK_X_EARLY2=0; run early2 FK_X_EARLY2=1; run wave8 FK_X_WAVE8=1; run both FK_X_EARLY2=1 FK_X_WAVE8=1
done
N=16
run base FK_X_EARLY2=0; run early2 FK_X_EARLY2=1; run wave8 FK_X_WAVE8=1; run both FK_X_EARLY2=1 FK_X_WAVE8=1
note done
