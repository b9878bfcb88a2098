#!/bin/bash
# Tenth session, call 2: the norm tail (residual add + RMSNorm in the small linears' last block), A/B in one run:
# old = HEAD, new (FK_NORM_TAIL=1 default) and new with FK_NORM_TAIL=0; the op test, gpu_model, engine_cuda;
# the tiled fp16 kernel with 5 stages (bench_linear).
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary2.txt; L=$OUT/l2; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree = $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
mkdir -p /tmp/src-old; git ls-files -co --exclude-standard | tar cf - -T - | tar xf - -C /tmp/src-old
cp -r .peers/old/. /tmp/src-old/
b() { local dir=$1 src=$2 args=$3; shift 3; ( meson setup $dir $src -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a $args >$dir.setup.log 2>&1 &&
  ninja -C $dir -j8 "$@" >$dir.build.log 2>&1 ) || { note "BUILD FAILED $dir"; tail -30 $dir.build.log; }; }
b /tmp/fk-new . "" tools/flashkernel tests/gpu/test_gpu_ops tests/gpu/test_gpu_model tests/gpu/test_engine_cuda kernels/bench/bench_linear &
b /tmp/fk-old /tmp/src-old "" tools/flashkernel &
b /tmp/fk-s5 . "-Dcuda_args=-DFK_QMMA_FP16_STAGES=5" kernels/bench/bench_linear &
wait
note "built"
ls /tmp/fk-new/tests/gpu/
(cd /tmp/fk-new && FK_TEST_FILTER='test_linear_add*' timeout 200 ./tests/gpu/test_gpu_ops >$L/test-lnorm.log 2>&1; echo "rc $?" >>$L/test-lnorm.log)
note "test_linear_add_rms_norm: $(tail -1 $L/test-lnorm.log)"; grep -E "FAILED|ERROR|rror" $L/test-lnorm.log | head | tee -a $S
timeout 250 meson test -C /tmp/fk-new --no-rebuild gpu_model >$L/test-model.log 2>&1; echo "rc $?" >>$L/test-model.log
note "gpu_model: $(grep -E '^ *1/1' $L/test-model.log) $(tail -1 $L/test-model.log)"
wait
run() { local bin=$1 lab=$2; shift 2
  timeout 120 /tmp/fk-$bin/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 "$@" >$L/$lab.log 2>&1
  note "$lab: $(grep -E 'output tokens/s' $L/$lab.log)"; }
for rep in 1 2; do
  for q in none int8 int4; do
    run old $q-b1-old-$rep --requests 1 --quantization $q
    run new $q-b1-new-$rep --requests 1 --quantization $q
    FK_NORM_TAIL=0 run new $q-b1-off-$rep --requests 1 --quantization $q
  done
done
for q in none int4; do run old $q-r16-old --requests 16 --quantization $q; run new $q-r16-new --requests 16 --quantization $q; FK_NORM_TAIL=0 run new $q-r16-off --requests 16 --quantization $q; done
run old int8-r64-old --requests 64 --warmup 64 --quantization int8; run new int8-r64-new --requests 64 --warmup 64 --quantization int8
run new none-r64-new --requests 64 --warmup 64 --quantization none
timeout 250 meson test -C /tmp/fk-new --no-rebuild engine_cuda >$L/test-engine.log 2>&1; echo "rc $?" >>$L/test-engine.log
note "engine_cuda: $(grep -E '^ *1/1' $L/test-engine.log) $(tail -1 $L/test-engine.log)"
cp /tmp/fk-new/meson-logs/testlog.txt $L/ 2>/dev/null
timeout 100 /tmp/fk-s5/kernels/bench/bench_linear s5 >$L/bench_linear_s5.txt 2>&1
grep -E "RESULT linear_small s5 llama-3.2-1b|RESULT linear_small s5 llama-3-8b" $L/bench_linear_s5.txt | grep -E "m=(24|32|64|128):" | tee -a $S
tar czf $OUT/l2.tgz -C $OUT l2
cat $S
