#!/bin/bash
# Call 3: why the fold loses: timelines (-DFK_TRACE builds, FK_TRACE_FILE, kernels/bench/trace_report.py) of bench-1b
# batch 1, INT8 and INT4, FK_NORM_FOLD=0 and 1, on the tree with call2-norm-fold-v1.patch applied (call 2's code).
set -u
T0=$(date +%s)
S=$OUT/summary3.txt; L=$OUT/l3; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + call2-norm-fold-v1.patch"
git apply docs/benchmarks/norm-fold/call2-norm-fold-v1.patch || { note "patch does not apply"; exit 1; }
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
rm -rf /tmp/fk-tr; meson setup /tmp/fk-tr -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a "-Dcuda_args=-DFK_TRACE" >/dev/null 2>&1 &&
  ninja -C /tmp/fk-tr -j16 tools/flashkernel >$L/build.log 2>&1; note "build: $(tail -1 $L/build.log)"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
for q in int8 int4; do for f in 0 1; do
  t=$OUT/trace-$q-fold$f.txt
  env FK_NORM_FOLD=$f FK_TRACE_FILE=$L/raw-$q-$f.txt timeout 120 /tmp/fk-tr/tools/flashkernel bench-engine --model /tmp/bench-1b \
    --device cuda --requests 1 --prompt-len 128 --max-tokens 128 --max-model-len 4096 --quantization $q >$L/engine-$q-$f.log 2>&1
  note "traced bench-engine $q FK_NORM_FOLD=$f: $(grep -E 'output tokens/s' $L/engine-$q-$f.log | tail -1)"
  python3 kernels/bench/trace_report.py $L/raw-$q-$f.txt > $t 2>&1
  note "trace $q fold $f: $(head -1 $t)"; sed -n '/by shape/,$p' $t | tee -a $S
done; done
tar czf $OUT/l3.tgz -C $OUT l3 && rm -rf $L
note done
