#!/bin/bash
# Call 7: call 5's code untraced, the fold with the early releases changed (FK_PDL_EARLY: 1 o, 4 q|k|v; the norms'
# bits 2 and 8 have no kernel under the fold, so the default 15 acts as 5): whether o's early release, which now
# launches gate|up's blocks beside o with no norm between, is what the fold loses. bench-1b batch 1, INT8 and INT4,
# alternated in one build.
set -u
T0=$(date +%s)
S=$OUT/summary7.txt; L=$OUT/l7; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
[ -x /tmp/fk-native/tools/flashkernel ] || { rm -rf /tmp/fk-native; meson setup /tmp/fk-native -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >/dev/null 2>&1; }
ninja -C /tmp/fk-native -j16 tools/flashkernel >$L/build.log 2>&1; note "build: $(tail -1 $L/build.log)"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
eng() { # quant fold early(- for the default)
  local e=""; [ "$3" != - ] && e="FK_PDL_EARLY=$3"
  env FK_NORM_FOLD=$2 $e timeout 120 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests 1 \
    --prompt-len 128 --max-tokens 128 --max-model-len 4096 --quantization $1 >$L/engine-$1-$2-$3.log 2>&1
  note "bench-engine $1 b1 FK_NORM_FOLD=$2 FK_PDL_EARLY=$3: $(grep -E 'output tokens/s' $L/engine-$1-$2-$3.log | tail -1)"
}
for q in int8 int4; do for fe in 0:- 1:- 1:4 1:1 1:0; do eng $q ${fe%:*} ${fe#*:}; done; done
tar czf $OUT/l7.tgz -C $OUT l7 && rm -rf $L
note done
