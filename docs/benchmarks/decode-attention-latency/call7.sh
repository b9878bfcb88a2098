#!/bin/bash
# Nineteenth session, call 7: the committed kernel (final) against 938d9c3's (base) in the step, alternated: bench-1b
# fp16 batch 1 (2 rounds), INT8 and INT4 batch 1, fp16 4 / 16 / 64 requests and a 2,000-token prompt; bench-8b
# batch 1 (head dim 128); transformers generate() on bench-1b as the outside peer (kernels/bench/peers.py).
set -u
T0=$(date +%s)
S=$OUT/summary7.txt; L=$OUT/l7; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
rm -rf /tmp/base-src; mkdir /tmp/base-src; tar cf - --exclude=./.deps --exclude=./.peers . | tar xf - -C /tmp/base-src
cp .peers/s19/base_attention_decode.cu /tmp/base-src/kernels/attention_decode.cu
bld() { # dir src targets...
  local d=$1 src=$2; shift 2
  rm -rf $d; (cd $src && meson setup $d -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >/dev/null 2>&1) &&
  ninja -C $d -j7 "$@" >$L/build-$(basename $d).log 2>&1; echo "$(basename $d): $(tail -1 $L/build-$(basename $d).log)"
}
bld /tmp/fk-base /tmp/base-src tools/flashkernel > $L/b1.txt &
bld /tmp/fk-final . tools/flashkernel > $L/b2.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
eng() { # build label requests prompt extra-args... ; env in E
  local b=$1 label=$2 n=$3 p=$4; shift 4
  env ${E:-X=1} timeout 120 /tmp/$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n --prompt-len $p \
    --max-tokens 128 --max-model-len 4096 "$@" >$L/engine-$b-$label.log 2>&1
  note "bench-engine $b $label: $(grep -E 'output tokens/s' $L/engine-$b-$label.log | tail -1)"
}
for r in 1 2; do for b in base final; do eng fk-$b fp16-b1-r$r 1 128; done; done
for q in int8 int4; do for b in base final; do eng fk-$b $q-b1 1 128 --quantization $q; done; done
for n in 4 16 64; do for b in base final; do eng fk-$b fp16-n$n $n 128; done; done
for b in base final; do eng fk-$b fp16-b1-p2000 1 2000; done
timeout 150 python3 loadtest/make_bench_8b.py /tmp/bench-8b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk8.log 2>&1
note "bench-8b made: rc $?"
for b in base final; do
  timeout 150 /tmp/fk-$b/tools/flashkernel bench-engine --model /tmp/bench-8b --device cuda --requests 1 --prompt-len 128 \
    --max-tokens 128 --max-model-len 4096 > $L/engine8-$b.log 2>&1
  note "bench-8b $b b1: $(grep -E 'output tokens/s' $L/engine8-$b.log | tail -1)"
done
timeout 120 python3 kernels/bench/peers.py generate /tmp/bench-1b > $L/peer-generate.log 2>&1
note "peer: $(grep -E 'PEER|Error' $L/peer-generate.log | tr '\n' ' ')"
tar czf $OUT/l7.tgz -C $OUT l7 && rm -rf $L
note done
