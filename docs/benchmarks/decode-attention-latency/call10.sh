#!/bin/bash
# Nineteenth session, call 10: decode attention's cache-block arithmetic by shifts where the block size is a power of
# two (new) against 0169cdf's divisions (base). Attention op tests natively and as compute_75 PTX (block sizes 16 and
# 5), bench-engine alternated, then gpu_model, engine_cuda and engine_cuda_sync on new.
set -u
T0=$(date +%s)
S=$OUT/summary10.txt; L=$OUT/l10; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
rm -rf /tmp/base-src; mkdir /tmp/base-src; tar cf - --exclude=./.deps --exclude=./.peers . | tar xf - -C /tmp/base-src
cp .peers/s19/base10_attention_decode.cu /tmp/base-src/kernels/attention_decode.cu
bld() { # dir arch src targets...
  local d=$1 arch=$2 src=$3; shift 3
  rm -rf $d; (cd $src && meson setup $d -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$arch >/dev/null 2>&1) &&
  ninja -C $d -j5 "$@" >$L/build-$(basename $d).log 2>&1; echo "$(basename $d): $(tail -1 $L/build-$(basename $d).log)"
}
bld /tmp/fk-base sm_90a /tmp/base-src tools/flashkernel > $L/b1.txt &
bld /tmp/fk-new sm_90a . tools/flashkernel tests/gpu/test_gpu_ops tests/gpu/test_gpu_model tests/gpu/test_engine_cuda > $L/b2.txt &
bld /tmp/fk-ptx75 compute_75 . tests/gpu/test_gpu_ops > $L/b3.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
for n in new ptx75; do
  FK_TEST_FILTER='test_attention*' timeout 150 /tmp/fk-$n/tests/gpu/test_gpu_ops > $L/test-attn-$n.log 2>&1
  note "attention tests $n: rc $? $(grep -cE 'max error' $L/test-attn-$n.log) cases; $(grep -E 'PASSED|FAILED' $L/test-attn-$n.log | tr '\n' ' ')"
done
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
eng() { # build label requests prompt extra-args... ; env in E
  local b=$1 label=$2 n=$3 p=$4; shift 4
  env ${E:-X=1} timeout 120 /tmp/$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n --prompt-len $p \
    --max-tokens 128 --max-model-len 4096 "$@" >$L/engine-$b-$label.log 2>&1
  note "bench-engine $b $label: $(grep -E 'output tokens/s' $L/engine-$b-$label.log | tail -1)"
}
for r in 1 2; do for b in base new; do eng fk-$b fp16-b1-r$r 1 128; done; done
for q in int8 int4; do for b in base new; do eng fk-$b $q-b1 1 128 --quantization $q; done; done
for n in 4 16; do for b in base new; do eng fk-$b fp16-n$n $n 128; done; done
for b in base new; do eng fk-$b fp16-b1-p2000 1 2000; done
(cd /tmp/fk-new && timeout 200 meson test --no-rebuild gpu_model engine_cuda engine_cuda_sync --print-errorlogs > $L/test-engine-model.log 2>&1); note "gpu_model, engine_cuda, engine_cuda_sync: rc $? $(grep -E '^(Ok|Fail|Skipped|Timeout):' $L/test-engine-model.log | tr -s ' ' | tr '\n' ' ')"
tar czf $OUT/l10.tgz -C $OUT l10 && rm -rf $L
note done
