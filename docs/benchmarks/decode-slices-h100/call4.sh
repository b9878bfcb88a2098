#!/bin/bash
# Fourteenth session, call 4: the slices policy in the whole step. bench-engine fp16 on bench-1b at 16, 32, 48, 64, 96,
# 128, 256 requests (--warmup N) and batch 1, new (this tree) against old (HEAD~1's four changed files), alternated.
set -u
T0=$(date +%s)
S=$OUT/summary4.txt; L=$OUT/l4; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -f /tmp/bench-1b/model.safetensors ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
[ -f /tmp/bench-1b/model.safetensors ] && echo 0 >/tmp/mk-done
meson setup /tmp/fk-new -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >/dev/null 2>&1 &&
  ninja -C /tmp/fk-new tools/flashkernel >$L/build.log 2>&1
note "new built: rc $?"
rm -rf /tmp/old-tree && mkdir /tmp/old-tree && cp -r $(ls -A | grep -vE '^(\.deps|\.peers|\.git)$') /tmp/old-tree/ &&
  cp .peers/s14/old/attention_decode.cu .peers/s14/old/attention_decode_fragments.cu .peers/s14/old/kernels.h /tmp/old-tree/kernels/ &&
  cp .peers/s14/old/backend_cuda.c /tmp/old-tree/src/
# the old tree's bench_attention and tests use the new API: build only flashkernel there
(cd /tmp/old-tree && meson setup /tmp/fk-old -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >/dev/null 2>&1 &&
  ninja -C /tmp/fk-old tools/flashkernel >$L/old-build.log 2>&1); note "old built: rc $?"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
note "model: $(cat /tmp/mk-done 2>/dev/null)"
eng() { # build N round
  local b=$1 n=$2 r=$3 w=""
  [ $n -gt 1 ] && w="--warmup $n"
  timeout 120 /tmp/fk-$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n $w --prompt-len 128 \
    --max-tokens 128 --max-model-len 4096 >$L/engine-$b-$n-$r.log 2>&1
  note "bench-engine $n requests $b ($r): $(grep -E 'output tokens/s' $L/engine-$b-$n-$r.log | tail -1)"
}
for n in 64 32 48 96 128; do for r in 1 2; do eng old $n $r; eng new $n $r; done; done
for n in 16 256 1; do eng old $n 1; eng new $n 1; done
tar czf $OUT/l4.tgz -C $OUT l4
rm -rf $L
note done
