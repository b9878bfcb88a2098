#!/bin/bash
# Session 5, call 9: decode attention's block shape in the whole step: HEAD (2 stages, 8 warps) against build-time
# variants (FK_DECODE_WARPS=4; FK_DECODE_STAGES=3 with 8 and 4 warps), interleaved: batch 1, 16 and 64 at 128-token
# prompts, 64 at 512, 1 at 2,000; bench_kernels k_attention_decode rows of each.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary9.txt; L=$OUT/l9; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
bld() { local v=$1 src=$2 args=$3; shift 3
  meson setup /tmp/fk-$v $src -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a "-Dcuda_args=$args" >$L/setup-$v.log 2>&1
  ninja -C /tmp/fk-$v -j4 "$@" >$L/build-$v.log 2>&1 || { echo "BUILD FAILED $v" | tee -a $S; tail -20 $L/build-$v.log; }; }
V="base w4 s3w8 s3w4"
rm -rf /tmp/fk-base /tmp/fk-w4 /tmp/fk-s3w8 /tmp/fk-s3w4
bld base . "" tools/flashkernel kernels/bench/bench_kernels &
bld w4 . "-DFK_DECODE_WARPS=4" tools/flashkernel kernels/bench/bench_kernels &
bld s3w8 . "-DFK_DECODE_STAGES=3" tools/flashkernel kernels/bench/bench_kernels &
bld s3w4 . "-DFK_DECODE_STAGES=3 -DFK_DECODE_WARPS=4" tools/flashkernel kernels/bench/bench_kernels &
wait; wait; note "built"
run() { local v=$1 lab=$2; shift 2
  timeout 90 /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$v-$lab.log 2>&1
  note "$v $lab: $(grep -E 'output tokens/s' $L/$v-$lab.log)"; }
for r in 1 2; do for v in $V; do
  run $v none-b64-$r --prompt-len 128 --requests 64 --warmup 64
  run $v int4-b64-$r --prompt-len 128 --requests 64 --warmup 64 --quantization int4
done; done
for v in $V; do
  run $v none-b1 --prompt-len 128 --requests 1
  run $v int4-b1 --prompt-len 128 --requests 1 --quantization int4
  run $v none-b16 --prompt-len 128 --requests 16
  run $v none-b64-p512 --prompt-len 512 --requests 64 --warmup 64
  run $v int4-b1-p2000 --prompt-len 2000 --requests 1 --quantization int4
done
for v in $V; do /tmp/fk-$v/kernels/bench/bench_kernels --only k_attention_decode --iters 300 --warmup 30 >$L/kernels-$v.txt 2>&1; done
note "bench_kernels k_attention_decode p50 us per variant ($V):"
paste <(grep -E "^k_attention_decode" $L/kernels-base.txt | awk "{print \$2, \$3, \$4}") \
  <(grep -E "^k_attention_decode" $L/kernels-base.txt | awk "{print \$5}") <(grep -E "^k_attention_decode" $L/kernels-w4.txt | awk "{print \$5}") \
  <(grep -E "^k_attention_decode" $L/kernels-s3w8.txt | awk "{print \$5}") <(grep -E "^k_attention_decode" $L/kernels-s3w4.txt | awk "{print \$5}") | tee -a $S
tar czf $OUT/l9.tgz -C $OUT l9 && rm -rf $L
echo; echo "label: $V"
for lab in none-b64-1 none-b64-2 int4-b64-1 int4-b64-2 none-b1 int4-b1 none-b16 none-b64-p512 int4-b1-p2000; do
  printf "%-14s" $lab; for v in $V; do printf " %10s" "$(grep "] $v $lab:" $S | awk '{print $NF}')"; done; echo; done
