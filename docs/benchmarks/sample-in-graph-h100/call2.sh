#!/bin/bash
# Call 2: the sampling in the decode graph (working tree) against HEAD: engine + model gpu tests natively, bench-1b
# batch 1 alternated (HEAD, new, new with FK_SAMPLE_IN_GRAPH=0), more requests once, then the engine tests as
# compute_75 PTX. The working tree was HEAD plus call2-sample-in-graph.patch. (Its `wait %2` did not wait for the
# native build, so the native engine tests did not run here; call 3a ran them.)
set -u
T0=$(date +%s)
S=$OUT/summary.txt; L=$OUT/lab; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); HEAD $(git rev-parse --short HEAD) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
[ -d /tmp/bench-1b ] && touch /tmp/mk-done
rm -rf /tmp/head-src && mkdir /tmp/head-src && git archive HEAD | tar -x -C /tmp/head-src
bld() { local n=$1 src=$2 arch=$3; shift 3
  rm -rf /tmp/fk-$n; (cd $src && meson setup /tmp/fk-$n -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$arch >/dev/null 2>&1) &&
  ninja -C /tmp/fk-$n -j5 "$@" >$L/build-$n.log 2>&1; echo "$n: $(tail -1 $L/build-$n.log)"; }
bld head /tmp/head-src sm_90a tools/flashkernel > $L/b1.txt & bld new . sm_90a > $L/b2.txt & bld ptx . compute_75 tests/gpu/test_engine_cuda tools/flashkernel > $L/b3.txt & 
wait %2; note "build new: $(cat $L/b2.txt)"
(cd /tmp/fk-new && timeout 200 meson test --no-rebuild --suite gpu engine_cuda engine_cuda_sync --print-errorlogs > $L/test-native.log 2>&1); note "native engine tests: $(grep -E '^(Ok|Fail):' $L/test-native.log | tr -s ' \n' ' ')"
wait; note "builds: $(cat $L/b1.txt $L/b3.txt | tr '\n' ' ')"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
eng() { local label=$1 b=$2 q=$3 n=$4; shift 4
  env "$@" timeout 60 /tmp/fk-$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n \
    --prompt-len 128 --max-tokens 128 --max-model-len 4096 --quantization $q >$L/engine-$label.log 2>&1
  note "$b $q n=$n [$*]: $(grep -E 'output tokens/s' $L/engine-$label.log | tail -1)"; }
for r in 1 2 3; do eng h8-$r head int8 1 X=1; eng n8-$r new int8 1 X=1; eng o8-$r new int8 1 FK_SAMPLE_IN_GRAPH=0; done
for r in 1 2; do for q in none int4; do eng h$q-$r head $q 1 X=1; eng n$q-$r new $q 1 X=1; done; done
for n in 4 16 64; do eng hn$n head none $n X=1; eng nn$n new none $n X=1; done
(cd /tmp/fk-ptx && FK_TEST_DEVICE=cuda timeout 150 meson test --no-rebuild --suite gpu engine_cuda engine_cuda_sync --print-errorlogs > $L/test-ptx.log 2>&1); note "ptx75 engine tests: $(grep -E '^(Ok|Fail):' $L/test-ptx.log | tr -s ' \n' ' ')"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $L
note done
