#!/bin/bash
# Twentieth session, call 1: fast_exp2 in the attention kernels' softmax and merges, cache_blocks in the fragments and
# prefill kernels, decode's mask only in the last chunk (new) against HEAD (base); 16 warps / 1 stage at batch 1 (w16).
set -u
T0=$(date +%s)
S=$OUT/summary1.txt; L=$OUT/l1; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
rm -rf /tmp/base-src; mkdir /tmp/base-src; tar cf - --exclude=./.deps --exclude=./.peers . | tar xf - -C /tmp/base-src
cp .peers/s20/base/*.cu* /tmp/base-src/kernels/
bld() { # dir arch src cuda_args targets...
  local d=$1 arch=$2 src=$3 ca=$4; shift 4
  rm -rf $d; (cd $src && meson setup $d -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$arch "-Dcuda_args=$ca" >/dev/null 2>&1) &&
  ninja -C $d -j4 "$@" >$L/build-$(basename $d).log 2>&1; echo "$(basename $d): $(tail -1 $L/build-$(basename $d).log)"
}
bld /tmp/fk-base sm_90a /tmp/base-src "" tools/flashkernel kernels/bench/bench_attention > $L/b1.txt &
bld /tmp/fk-new sm_90a . "" tools/flashkernel kernels/bench/bench_attention tests/gpu/test_gpu_ops > $L/b2.txt &
bld /tmp/fk-w16 sm_90a . "-DFK_DECODE_WARPS=16 -DFK_DECODE_STAGES=1 -DFK_DECODE_NEXT_ONE_STAGE=1" tools/flashkernel tests/gpu/test_gpu_ops > $L/b3.txt &
bld /tmp/fk-ptx75 compute_75 . "" tests/gpu/test_gpu_ops > $L/b4.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
for n in new w16 ptx75; do
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
for r in 1 2; do for b in base new w16; do eng fk-$b fp16-b1-r$r 1 128; done; done
for q in int8 int4; do for b in base new w16; do eng fk-$b $q-b1 1 128 --quantization $q; done; done
for n in 4 16; do for b in base new w16; do eng fk-$b fp16-n$n $n 128; done; done
for b in base new; do eng fk-$b fp16-n64 64 128; done
for b in base new w16; do eng fk-$b fp16-b1-p2000 1 2000; done
for b in base new; do timeout 120 /tmp/fk-$b/kernels/bench/bench_attention > $L/bench-attention-$b.txt 2>&1; note "bench_attention $b rc $?"; done
paste <(cut -c1-100 $L/bench-attention-base.txt) <(cut -c1-100 $L/bench-attention-new.txt) | head -40 >> $S
tar czf $OUT/l1.tgz -C $OUT l1 && rm -rf $L
note done
