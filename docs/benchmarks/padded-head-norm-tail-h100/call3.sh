#!/bin/bash
# Tenth session, call 3: the norm tail letting the next kernel launch only from the tail's block. A/B: old = HEAD,
# new (tail), off (FK_NORM_TAIL=0); the op test; traces of new and off (fp16 b1, int4 16 requests).
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary3.txt; L=$OUT/l3; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree = $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
rm -rf /tmp/src-old; mkdir -p /tmp/src-old; git ls-files -co --exclude-standard | tar cf - -T - | tar xf - -C /tmp/src-old
cp -r .peers/old/. /tmp/src-old/
b() { local dir=$1 src=$2 args=$3; shift 3; ( meson setup --wipe $dir $src -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a $args >$dir.setup.log 2>&1 &&
  ninja -C $dir -j8 "$@" >$dir.build.log 2>&1 ) || { note "BUILD FAILED $dir"; tail -30 $dir.build.log; }; }
b /tmp/fk-new . "" tools/flashkernel tests/gpu/test_gpu_ops &
[ -x /tmp/fk-old/tools/flashkernel ] || b /tmp/fk-old /tmp/src-old "" tools/flashkernel &
b /tmp/fk-trace . "-Dcuda_args=-DFK_TRACE" tools/flashkernel &
wait
note "built"
(cd /tmp/fk-new && FK_TEST_FILTER='test_linear_add*' timeout 200 ./tests/gpu/test_gpu_ops >$L/test-lnorm.log 2>&1; echo "rc $?" >>$L/test-lnorm.log)
note "test_linear_add_rms_norm: $(tail -1 $L/test-lnorm.log)"; grep -E "FAILED|ERROR|rror" $L/test-lnorm.log | head | tee -a $S
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
tr() { local lab=$1; shift
  FK_TRACE_FILE=$L/trace.txt timeout 90 /tmp/fk-trace/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 "$@" >$L/trace-$lab.log 2>&1
  note "traced $lab: $(grep -E 'output tokens/s' $L/trace-$lab.log)"
  python3 kernels/bench/trace_report.py $L/trace.txt >$OUT/trace-$lab.txt 2>&1; rm -f $L/trace.txt; }
tr fp16-b1-new --requests 1
FK_NORM_TAIL=0 tr fp16-b1-off --requests 1
tr int4-r16-new --requests 16 --quantization int4
FK_NORM_TAIL=0 tr int4-r16-off --requests 16 --quantization int4
tar czf $OUT/l3.tgz -C $OUT l3
for f in $OUT/trace-*.txt; do echo "== $f"; tail -25 $f; done
cat $S
