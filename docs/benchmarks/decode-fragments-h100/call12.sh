#!/bin/bash
# Eleventh session, call 12: silu_mul in 16-byte pieces and the greedy sampler's loads all in flight (working tree)
# against 73f87fc ("old"): their op tests, bench_kernels rows of both, bench-engine fp16 at 1/64/128/256 requests and
# INT4 at 1, alternated.
set -u
T0=$(date +%s)
S=$OUT/summary12.txt; L=$OUT/l12; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); new = $(cat .peers/commit) + working tree, old = $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
rm -rf /tmp/src-old; mkdir -p /tmp/src-old; git archive $(cat .peers/commit) | tar xf - -C /tmp/src-old
b() { local dir=$1 src=$2; shift 2; ( meson setup --wipe $dir $src -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$dir.setup.log 2>&1 &&
  ninja -C $dir -j8 "$@" >$dir.build.log 2>&1 ) || { note "BUILD FAILED $dir"; tail -30 $dir.build.log; }; }
b /tmp/fk-new . tools/flashkernel tests/gpu/test_gpu_ops kernels/bench/bench_kernels &
b /tmp/fk-old /tmp/src-old tools/flashkernel kernels/bench/bench_kernels &
wait
note "built"
(cd /tmp/fk-new && FK_TEST_FILTER='test_linear_silu_mul' timeout 200 ./tests/gpu/test_gpu_ops >$L/test-silu.log 2>&1; echo "rc $?" >>$L/test-silu.log)
(cd /tmp/fk-new && FK_TEST_FILTER='test_sample' timeout 200 ./tests/gpu/test_gpu_ops >$L/test-sample.log 2>&1; echo "rc $?" >>$L/test-sample.log)
note "test_linear_silu_mul: $(grep -E 'PASSED|FAILED' $L/test-silu.log | head -1) $(tail -1 $L/test-silu.log); test_sample: $(grep -E 'PASSED|FAILED' $L/test-sample.log | head -1) $(tail -1 $L/test-sample.log)"
for v in old new; do for o in k_sample k_silu_mul; do /tmp/fk-$v/kernels/bench/bench_kernels --only $o >$L/bk-$v-$o.txt 2>&1; done; done
for o in k_sample k_silu_mul; do echo "== $o old"; grep -E "rows=|n=" $L/bk-old-$o.txt | head -12; echo "== $o new"; grep -E "rows=|n=" $L/bk-new-$o.txt | head -12; done | tee -a $S
run() { local bin=$1 lab=$2; shift 2
  timeout 120 /tmp/fk-$bin/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 "$@" >$L/$lab.log 2>&1
  note "$lab: $(grep -E 'output tokens/s' $L/$lab.log)"; }
for rep in 1 2; do
  for r in 256 128 64; do run old r$r-old-$rep --requests $r --warmup $r; run new r$r-new-$rep --requests $r --warmup $r; done
  run old b1-old-$rep --requests 1; run new b1-new-$rep --requests 1
  run old int4-b1-old-$rep --requests 1 --quantization int4; run new int4-b1-new-$rep --requests 1 --quantization int4
done
tar czf $OUT/l12.tgz -C $OUT l12
