#!/bin/bash
# Twentieth session, call 4: the final tree. The gpu suite as compute_75 PTX, the attention op tests and the engine
# tests natively, then batch 1 against HEAD (base) once more.
set -u
T0=$(date +%s)
S=$OUT/summary4.txt; L=$OUT/l4; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
rm -rf /tmp/base-src; mkdir /tmp/base-src; tar cf - --exclude=./.deps --exclude=./.peers . | tar xf - -C /tmp/base-src
cp .peers/s20/base/*.cu* .peers/s20/base/model_forward.c /tmp/base-src/kernels/ && mv /tmp/base-src/kernels/model_forward.c /tmp/base-src/src/
bld() { # dir arch src targets...
  local d=$1 arch=$2 src=$3; shift 3
  rm -rf $d; (cd $src && meson setup $d -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$arch >/dev/null 2>&1) &&
  ninja -C $d -j6 "$@" >$L/build-$(basename $d).log 2>&1; echo "$(basename $d): $(tail -1 $L/build-$(basename $d).log)"
}
bld /tmp/fk-ptx75 compute_75 . > $L/b1.txt &
bld /tmp/fk-new sm_90a . tools/flashkernel tests/gpu/test_gpu_ops tests/gpu/test_engine_cuda > $L/b2.txt &
bld /tmp/fk-base sm_90a /tmp/base-src tools/flashkernel > $L/b3.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
timeout 240 meson test -C /tmp/fk-ptx75 --suite gpu --print-errorlogs > $L/test-ptx75.log 2>&1; echo "rc $?" >> $L/test-ptx75.log
cp /tmp/fk-ptx75/meson-logs/testlog.txt $L/testlog-ptx75.txt
note "gpu suite compute_75: $(grep -E '^(Ok|Fail|Skipped|Timeout):|^rc' $L/test-ptx75.log | tr -s ' ' | tr '\n' ' ')"
FK_TEST_FILTER='test_attention*' timeout 60 /tmp/fk-new/tests/gpu/test_gpu_ops > $L/test-attn-new.log 2>&1
note "attention tests native: rc $? $(grep -cE 'max error' $L/test-attn-new.log) cases; $(grep -E 'PASSED|FAILED' $L/test-attn-new.log | tr '\n' ' ')"
for i in $(seq 1 60); do [ -f /tmp/mk-done ] && break; sleep 2; done
eng() { local b=$1 label=$2 n=$3 p=$4; shift 4
  timeout 60 /tmp/$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n --prompt-len $p \
    --max-tokens 128 --max-model-len 4096 "$@" >$L/engine-$b-$label.log 2>&1
  note "bench-engine $b $label: $(grep -E 'output tokens/s' $L/engine-$b-$label.log | tail -1)"; }
for r in 1 2; do for b in base new; do eng fk-$b fp16-b1-r$r 1 128; done; done
tar czf $OUT/l4.tgz -C $OUT l4 && rm -rf $L
note done
