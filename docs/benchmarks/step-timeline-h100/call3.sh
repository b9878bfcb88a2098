#!/bin/bash
# Session 5, call 3: which kernels should release their dependents before their PDL wait. Variants (compile-time):
# native (HEAD: every kernel releases after its wait), all (-DFK_PDL_EARLY), small (norm, RoPE, decode attention
# early), norm (norms only), ropeattn (RoPE + attention only). Interleaved bench-engine runs.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary3.txt; L=$OUT/l3; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)+knobs"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
bld() { local v=$1 src=$2 args=$3; shift 3
  meson setup /tmp/fk-$v $src -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a "-Dcuda_args=$args" >$L/setup-$v.log 2>&1
  ninja -C /tmp/fk-$v -j3 "$@" >$L/build-$v.log 2>&1 || { echo "BUILD FAILED $v" | tee -a $S; tail -20 $L/build-$v.log; }; }
V="native all small norm ropeattn"
rm -rf /tmp/fk-native /tmp/fk-all /tmp/fk-small /tmp/fk-norm /tmp/fk-ropeattn
bld native . "" tools/flashkernel &
bld all . "-DFK_PDL_EARLY" tools/flashkernel &
bld small . "-DFK_EARLY_NORM -DFK_EARLY_ROPE -DFK_EARLY_ATTN" tools/flashkernel &
bld norm . "-DFK_EARLY_NORM" tools/flashkernel &
bld ropeattn . "-DFK_EARLY_ROPE -DFK_EARLY_ATTN" tools/flashkernel &
wait; note "built"
run() { local v=$1 lab=$2; shift 2
  timeout 60 /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --prompt-len 128 --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$v-$lab.log 2>&1
  note "$v $lab: $(grep -E 'output tokens/s' $L/$v-$lab.log)"; }
for v in $V; do for q in none int8 int4; do run $v $q-b1 --requests 1 --quantization $q; done; done
for v in $V; do run $v int4-b4 --requests 4 --quantization int4; run $v int4-b8 --requests 8 --quantization int4; done
for v in $V; do run $v none-b16 --requests 16 --quantization none; run $v int4-b16 --requests 16 --quantization int4; done
for v in $V; do for q in none int4; do run $v $q-b1-r2 --requests 1 --quantization $q; done; done
tar czf $OUT/l3.tgz -C $OUT l3 && rm -rf $L
echo; echo "variant: tokens/s per run label"
for lab in none-b1 none-b1-r2 int8-b1 int4-b1 int4-b1-r2 int4-b4 int4-b8 none-b16 int4-b16; do
  printf "%-12s" $lab; for v in $V; do printf " %10s" "$(grep "] $v $lab:" $S | awk '{print $NF}')"; done; echo; done
