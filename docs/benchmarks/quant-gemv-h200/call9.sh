#!/bin/bash
# Session 3, call 9: the quantized small kernel with fewer k splits (FK_QLINEAR_WARPS_PER_SM=4: 1B down runs 128
# blocks, no split-K, instead of 256 in two splits) against the default (8): bench_linear and whole-step decode.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary.txt; L=/tmp/fk-logs9; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
bld() { local v=$1 args=$2; shift 2; rm -rf /tmp/fk-$v
  meson setup /tmp/fk-$v -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a "-Dcuda_args=$args" >$L/setup-$v.log 2>&1
  ninja -C /tmp/fk-$v -j8 "$@" >$L/build-$v.log 2>&1 || echo "BUILD FAILED $v" | tee -a $S; }
bld base "" tools/flashkernel kernels/bench/bench_linear &
bld wps4 "-DFK_QLINEAR_WARPS_PER_SM=4" tools/flashkernel kernels/bench/bench_linear &
wait; note "built"
for v in base wps4; do FK_BENCH_ONLY="llama" timeout 100 /tmp/fk-$v/kernels/bench/bench_linear > $L/bl-$v.log 2>&1; note "bench_linear $v rc=$?"; done
paste <(grep "RESULT linear_quant " $L/bl-base.log | sed -E 's/RESULT linear_quant (int.) (\S+) (.*) m=([0-9]+): ([0-9.]+) us ([0-9.]+)% of copy.*/\1 \2 \3 m=\4 | \5 \6%/') \
      <(grep "RESULT linear_quant " $L/bl-wps4.log | sed -E 's/.*: ([0-9.]+) us ([0-9.]+)% of copy.*/| \1 \2%/') | grep -v "m=4 " | tee -a $S
grep -E "splits" $L/bl-wps4.log | grep -E "int8|int4" | grep -E " 1 \|" | awk '{print $1,$2,$3,$4,$NF,$(NF-1)}' | head -20 | tee -a $S
wait
run() { local v=$1 lab=$2; shift 2
  /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --prompt-len 128 --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$v-$lab.log 2>&1
  note "$v $lab: $(grep -E 'output tokens/s' $L/$v-$lab.log)"; }
for r in 1 2; do for v in base wps4; do for q in int8 int4; do run $v $q-b1-$r --requests 1 --quantization $q; done; done; done
for v in base wps4; do for q in int8 int4; do run $v $q-b16 --requests 16 --quantization $q; done; done
tar czf $OUT/logs.tgz -C $L .
