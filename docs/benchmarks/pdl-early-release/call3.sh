#!/bin/bash
# Eighteenth session, call 3 (same machine as call 2 if warm): more masks. Quantized: 11 (o, MLP norm, attention norm)
# against 0 and 3, 9, 10, 15 at batch 1, and 11 at 4 and 16 requests and a 2,000-token prompt; fp16: 10 and 6.
set -u
T0=$(date +%s)
S=$OUT/summary3.txt; L=$OUT/l3; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
if [ ! -x /tmp/fk-native/tools/flashkernel ]; then
  rm -rf /tmp/fk-native; meson setup /tmp/fk-native -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >/dev/null 2>&1 && ninja -C /tmp/fk-native -j14 tools/flashkernel > $L/build.log 2>&1
fi
note "build: $(ls -la /tmp/fk-native/tools/flashkernel)"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
eng() { # build label requests prompt extra-args... ; env in E
  local b=$1 label=$2 n=$3 p=$4; shift 4
  env ${E:-X=1} timeout 120 /tmp/$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n --prompt-len $p \
    --max-tokens 128 --max-model-len 4096 "$@" >$L/engine-$b-$label.log 2>&1
  note "bench-engine $b $label: $(grep -E 'output tokens/s' $L/engine-$b-$label.log | tail -1)"
}
for q in int4 int8; do
  for k in 0 11 9 10 15 3; do E=FK_PDL_EARLY=$k eng fk-native $q-b1-e$k 1 128 --quantization $q; done
  for k in 11 0; do for n in 4 16; do E=FK_PDL_EARLY=$k eng fk-native $q-$n-e$k $n 128 --quantization $q; done
    E=FK_PDL_EARLY=$k eng fk-native $q-b1-p2000-e$k 1 2000 --quantization $q; done
done
for k in 2 10 6 0 2 10; do E=FK_PDL_EARLY=$k eng fk-native fp16-b1-e$k 1 128; done
tar czf $OUT/l3.tgz -C $OUT l3 && rm -rf $L
note done
