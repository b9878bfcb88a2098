#!/bin/bash
# Fifteenth session, call 5: the shipped policy (wgmma on unsplit fp16 linears of 17-64 tokens) against cuBLAS
# (FK_WGMMA_LINEAR_MAX_M=0) in bench-engine fp16 at 17-64 requests, alternated; the split path with 4 stages at 64;
# compute-sanitizer memcheck and racecheck on bench_linear's wgmma calls (split and unsplit shapes).
set -u
T0=$(date +%s)
S=$OUT/summary5.txt; L=$OUT/l5; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
meson setup /tmp/fk-native -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >/dev/null 2>&1
ninja -C /tmp/fk-native tools/flashkernel kernels/bench/bench_linear >$L/build.log 2>&1
note "built: $(tail -1 $L/build.log)"
B=/tmp/fk-native/kernels/bench/bench_linear
for tool in memcheck racecheck; do
  for c in "llama-3.2-1b o:64" "llama-3.2-1b o:24" "llama-3.2-1b gate_up:64"; do
    FK_BENCH_ONLY="${c%%:*}" FK_BENCH_M=${c##*:} timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 $B >$L/san-$tool-${c##* }.txt 2>&1
    note "$tool ${c}: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $L/san-$tool-${c##* }.txt | tr '\n' ' ')"
  done
done
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
note "model: $(cat /tmp/mk-done 2>/dev/null)"
eng() { # label N env...
  local label=$1 n=$2; shift 2
  env "$@" timeout 120 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n --warmup $n --prompt-len 128 \
    --max-tokens 128 --max-model-len 4096 >$L/engine-$label-$n.log 2>&1
  note "bench-engine $n requests $label: $(grep -E 'output tokens/s' $L/engine-$label-$n.log | tail -1)"
}
for r in 1 2; do eng cublas 64 FK_WGMMA_LINEAR_MAX_M=0; eng default 64 X=1; done
eng split-s4 64 FK_WGMMA_LINEAR_SPLITS=1 FK_WGMMA_LINEAR_STAGES=4
for n in 17 24 32 48; do eng cublas $n FK_WGMMA_LINEAR_MAX_M=0; eng default $n X=1; done
tar czf $OUT/l5.tgz -C $OUT l5 && rm -rf $L
note done
