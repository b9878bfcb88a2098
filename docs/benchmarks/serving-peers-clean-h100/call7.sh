#!/bin/bash
# Thirteenth session, call 7 (fresh machine): decode attention's shortest split (FK_DECODE_MIN_SPLIT, build time;
# default 256 keys) measured again at batch 1, now that RoPE and the KV store run inside decode attention and its
# keys load before the PDL wait (the fourth session's +1.9 % at 64 keys predates both). Three builds, bench-engine
# fp16 at 1, 4 and 8 requests alternated; test_attention* on the 64-key build.
set -u
T0=$(date +%s)
S=$OUT/summary7.txt; L=$OUT/l7; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
for v in 256 128 64; do
  meson setup /tmp/fk-$v -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a -Dcuda_args=-DFK_DECODE_MIN_SPLIT=$v >/dev/null 2>&1 &&
    ninja -C /tmp/fk-$v tools/flashkernel >$L/build-$v.log 2>&1; note "build $v: rc $?"
done
ninja -C /tmp/fk-64 tests/gpu/test_gpu_ops >>$L/build-64.log 2>&1
FK_TEST_FILTER="test_attention*" FK_TEST_DEVICE=cuda timeout 120 /tmp/fk-64/tests/gpu/test_gpu_ops >$L/test-attention-64.log 2>&1
note "test_attention* (64-key splits): rc $? $(grep -E 'PASSED|FAILED' $L/test-attention-64.log | tr '\n' ' ')"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
note "bench-1b: $(cat /tmp/mk-done 2>/dev/null)"
for r in 1 2; do
  for N in 1 4 8; do
    [ $r = 2 ] && [ $N != 1 ] && continue
    for v in 256 128 64; do
      timeout 60 /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $N \
        --prompt-len 128 --max-tokens 128 --max-model-len 4096 >$L/e.log 2>&1
      note "N=$N min split $v: $(grep -E 'output tokens/s' $L/e.log)"
    done
  done
done
note done
