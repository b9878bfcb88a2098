#!/bin/bash
# Call 2: FK_STREAM_PREFETCH=128 as the default (call 1: bench-1b batch 1 INT8 1,586 -> 1,622 tokens/s, fp16
# 1,158 -> 1,195). The gpu suite on it, natively and as compute_75 PTX (tests/gpu/run-on-device.sh test, which
# includes the SASS wait-order check); then the engine at batch 1 against the same tree built with
# -Dcuda_args=-DFK_STREAM_PREFETCH=0 (call 1's baseline, e229b3b's code), alternated while the call's time lasts
# (the session's device budget was nearly spent: the script stops itself at ~520 s).
set -u
T0=$(date +%s)
S=$OUT/summary.txt; L=$OUT/lab; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -f /tmp/bench-1b/model.safetensors ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1" </dev/null >/dev/null 2>&1 &
( rm -rf /tmp/fk-p0; meson setup /tmp/fk-p0 -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a \
    -Dcuda_args=-DFK_STREAM_PREFETCH=0 >$L/setup-p0.log 2>&1 && ninja -C /tmp/fk-p0 -j4 tools/flashkernel >$L/build-p0.log 2>&1 ) &
OUT=$OUT/test timeout 380 tests/gpu/run-on-device.sh test >$L/test.log 2>&1; note "run-on-device.sh test rc $?"
grep -E "gpu suite|BUILD|wait_order|worst" $OUT/test/summary.txt | tee -a $S
wait
note "baseline build: $(tail -1 $L/build-p0.log)"
for i in $(seq 1 60); do [ -f /tmp/bench-1b/model.safetensors ] && ! pgrep -f make_bench_model >/dev/null && break; sleep 2; done
eng() { local d=$1 b=$2 q=$3 r=$4
  timeout 60 $d/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests 1 --warmup 1 \
    --prompt-len 128 --max-tokens 128 --max-model-len 4096 --quantization $q >$L/engine-$b-$q-r$r.log 2>&1
  note "$b $q n=1 r$r: $(grep -E 'output tokens/s' $L/engine-$b-$q-r$r.log | tail -1)"; }
for r in 1 2; do for q in int8 none; do
  [ $(( $(date +%s) - T0 )) -lt 500 ] || break 2
  eng /tmp/fk-p0 p0 $q $r; eng /tmp/fk-native p128-default $q $r
done; done
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $L
note done
