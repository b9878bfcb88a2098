#!/bin/bash
# Call 6: timelines of call 5's code (the working tree as call 5 ran it; the committed code differs only in the policy of call 8): bench-1b
# batch 1, INT8 and INT4, and INT4 at 4 requests, FK_NORM_FOLD=0 and 1.
set -u
T0=$(date +%s)
S=$OUT/summary6.txt; L=$OUT/l6; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
rm -rf /tmp/fk-tr; meson setup /tmp/fk-tr -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a "-Dcuda_args=-DFK_TRACE" >/dev/null 2>&1 &&
  ninja -C /tmp/fk-tr -j16 tools/flashkernel >$L/build.log 2>&1; note "build: $(tail -1 $L/build.log)"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
for qn in int8:1 int4:1 int4:4; do for f in 0 1; do
  q=${qn%:*}; n=${qn#*:}; t=$OUT/trace-$q-n$n-fold$f.txt
  env FK_NORM_FOLD=$f FK_TRACE_FILE=$L/raw-$q-$f.txt timeout 120 /tmp/fk-tr/tools/flashkernel bench-engine --model /tmp/bench-1b \
    --device cuda --requests $n --prompt-len 128 --max-tokens 128 --max-model-len 4096 --quantization $q >$L/engine-$q-$f.log 2>&1
  note "traced bench-engine $q n=$n FK_NORM_FOLD=$f: $(grep -E 'output tokens/s' $L/engine-$q-$f.log | tail -1)"
  python3 kernels/bench/trace_report.py $L/raw-$q-$f.txt > $t 2>&1
  note "trace $q n=$n fold $f: $(head -1 $t)"; sed -n '/by shape/,$p' $t | tee -a $S
done; done
tar czf $OUT/l6.tgz -C $OUT l6 && rm -rf $L
note done
