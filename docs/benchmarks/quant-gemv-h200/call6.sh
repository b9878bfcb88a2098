#!/bin/bash
# Session 3, call 6: (a) INT8 small kernel at <= 8 tokens capped at 80 registers (3 blocks of 8 warps an SM,
# FK_QLINEAR_INT8_MIN_BLOCKS=3) against the default; (b) the INT4 tiled kernel's range after the dequantization change:
# bench_linear_quant m = 128, 256 and bench-engine int4 at 96 / 128 requests with FK_QUANT_MMA_MAX_M=128 vs default 64.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary.txt; L=/tmp/fk-logs6; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
bld() { local v=$1 args=$2; shift 2; rm -rf /tmp/fk-$v
  meson setup /tmp/fk-$v -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a "-Dcuda_args=$args" >$L/setup-$v.log 2>&1
  ninja -C /tmp/fk-$v -j8 "$@" >$L/build-$v.log 2>&1 || echo "BUILD FAILED $v" | tee -a $S; }
bld base "" tools/flashkernel kernels/bench/bench_linear kernels/bench/bench_linear_quant &
bld mb3 "-DFK_QLINEAR_INT8_MIN_BLOCKS=3" tools/flashkernel kernels/bench/bench_linear &
wait; note "built"
for v in base mb3; do FK_BENCH_ONLY="llama" timeout 100 /tmp/fk-$v/kernels/bench/bench_linear > $L/bl-$v.log 2>&1; note "bench_linear $v rc=$?"; done
paste <(grep "RESULT linear_quant int8" $L/bl-base.log | sed -E 's/RESULT linear_quant (int.) (\S+) (.*) m=([0-9]+): ([0-9.]+) us ([0-9.]+)% of copy.*/\1 \2 \3 m=\4 | \5 \6%/') \
      <(grep "RESULT linear_quant int8" $L/bl-mb3.log | sed -E 's/.*: ([0-9.]+) us ([0-9.]+)% of copy.*/| \1 \2%/') | tee -a $S
for m in 128 256; do FK_BENCH_M=$m timeout 60 /tmp/fk-base/kernels/bench/bench_linear_quant >$L/blq$m.log 2>&1; note "blq m=$m rc=$?"; head -2 $L/blq$m.log | tail -1 | tee -a $S
  grep -v RESULT $L/blq$m.log | awk -v M=$m 'NR>2 && $4==M' | tee -a $S; done
wait
run() { local v=$1 lab=$2 e=$3; shift 3
  env $e /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --prompt-len 128 --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$v-$lab.log 2>&1
  note "$v $lab ($e): $(grep -E 'output tokens/s' $L/$v-$lab.log)"; }
for r in 1 2; do for v in base mb3; do run $v int8-b1-$r X=1 --requests 1 --quantization int8; done; done
for v in base mb3; do for n in 4 8; do run $v int8-b$n X=1 --requests $n --quantization int8; done; done
for n in 96 128; do for e in X=1 FK_QUANT_MMA_MAX_M=128; do run base int4-b$n $e --requests $n --quantization int4; done; done
run base int4-b64 X=1 --requests 64 --quantization int4
run base none-b64 X=1 --requests 64
tar czf $OUT/logs.tgz -C $L .
