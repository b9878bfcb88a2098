#!/bin/bash
# Call 10: whole-step bench-1b at 64 requests, interleaved: HEAD, HEAD with FK_QMMA_LATE_TRIGGER=1, 219b150's kernel.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary.txt; L=/tmp/fk-logs10; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
mk=$!
rm -rf /tmp/old-src && mkdir /tmp/old-src && cp -r kernels src include tools server common meson.build meson_options.txt deploy tests loadtest /tmp/old-src/ 2>/dev/null
(cd /tmp/old-src && patch -R -p1 < "$OLDPWD/.peers/new_vs_old.patch" >/dev/null) || { note "patch failed"; }
[ -d /tmp/fk-native ] || meson setup /tmp/fk-native -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1
meson setup /tmp/fk-late -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a "-Dcuda_args=-DFK_QMMA_LATE_TRIGGER=1" >$L/setup-late.log 2>&1
meson setup /tmp/fk-old /tmp/old-src -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup-old.log 2>&1 || (cd /tmp/old-src && meson setup /tmp/fk-old -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup-old.log 2>&1)
for b in native late old; do ninja -C /tmp/fk-$b -j16 tools/flashkernel kernels/bench/bench_linear_quant >$L/build-$b.log 2>&1 || { note "BUILD $b FAILED"; tail -20 $L/build-$b.log | tee -a $S; }; done
note "built"
wait $mk
run() { local b=$1 lab=$2; shift 2
  /tmp/fk-$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --prompt-len 128 --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$b-$lab.log 2>&1
  note "$b $lab: $(grep -E 'output tokens/s' $L/$b-$lab.log)"; }
for r in 1 2; do for q in int8 int4; do for b in native late old; do run $b $q-n64-r$r --requests 64 --quantization $q; done; done; done
for b in native late; do
  FK_BENCH_ONLY=gate_up timeout 60 /tmp/fk-$b/kernels/bench/bench_linear_quant >$L/blq-$b.log 2>&1
  note "bench $b"; grep -v RESULT $L/blq-$b.log | awk 'NR>2 && ($4==64||$4==128){print $1,$2,$3,$4,"fp16",$6,"tiled",$8}' | tee -a $S
done
tar czf $OUT/logs.tgz -C $L .
