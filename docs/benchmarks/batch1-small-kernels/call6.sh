#!/bin/bash
# Session 4, call 6: decode attention's splits merged by the last split to finish (no merge kernel) against HEAD
# (old): attention + linear op tests native and compute_75, bench_kernels k_attention_decode rows, batch-1 decode
# with a 2,000-token prompt (16 splits a layer), and 64-key splits (FK_DECODE_MIN_SPLIT=64) at the 128-token prompt.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary6.txt; L=/tmp/l6; rm -rf $L; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
rm -rf /tmp/src-old; mkdir /tmp/src-old; tar cf - --exclude=./.deps --exclude=./.peers --exclude=./.git . | tar xf - -C /tmp/src-old
cp -r .peers/old6/kernels /tmp/src-old/
bld() { local v=$1 src=$2 arch=$3 args=$4; shift 4
  meson setup /tmp/fk-$v $src -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$arch "-Dcuda_args=$args" >$L/setup-$v.log 2>&1
  ninja -C /tmp/fk-$v -j4 "$@" >$L/build-$v.log 2>&1 || { echo "BUILD FAILED $v" | tee -a $S; tail -20 $L/build-$v.log | tee -a $S; }; }
rm -rf /tmp/fk-old /tmp/fk-new /tmp/fk-s64 /tmp/fk-p75
bld old /tmp/src-old sm_90a "" tools/flashkernel kernels/bench/bench_kernels &
bld new . sm_90a "" tools/flashkernel tests/gpu/test_gpu_ops kernels/bench/bench_kernels &
bld s64 . sm_90a "-DFK_DECODE_MIN_SPLIT=64" tools/flashkernel &
bld p75 . compute_75 "" tests/gpu/test_gpu_ops &
wait; note "built"
for v in new p75; do for t in "test_attention*" test_linear test_quant_linear; do
  FK_TEST_FILTER="$t" timeout 120 /tmp/fk-$v/tests/gpu/test_gpu_ops >$L/test-$v-${t%\*}.log 2>&1
  note "$v $t rc=$?: $(grep -E 'PASSED|FAILED' $L/test-$v-${t%\*}.log | tr '\n' ' ')"; grep -E "ERROR|FAIL|differ" $L/test-$v-${t%\*}.log | head -5 | tee -a $S
done; done
for v in old new; do timeout 60 /tmp/fk-$v/kernels/bench/bench_kernels --only k_attention_decode --iters 300 --warmup 30 >$L/bk-$v.log 2>&1; note "bench_kernels $v rc=$?"; done
echo "== k_attention_decode p50 us: config | old | new" | tee -a $S
paste -d'|' <(grep "^k_attention_decode" $L/bk-old.log | sed -E 's/^(\S+)\s+(model=\S+ \S+ \S+)\s+([0-9.]+).*/\2|\3/') <(grep "^k_attention_decode" $L/bk-new.log | sed -E 's/^(\S+)\s+(model=\S+ \S+ \S+)\s+([0-9.]+).*/\3/') | tee -a $S
wait
run() { local v=$1 lab=$2; shift 2
  timeout 60 /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --requests 1 "$@" >$L/$v-$lab.log 2>&1
  note "$v $lab: $(grep -E 'output tokens/s' $L/$v-$lab.log)"; }
for r in 1 2; do for v in old new; do for q in none int4; do run $v $q-p2000-$r --prompt-len 2000 --quantization $q; done; done; done
for v in new s64; do for q in none int4; do run $v $q-p128 --prompt-len 128 --quantization $q; done; done
tar czf $OUT/l6.tgz -C $L .
