#!/bin/bash
# Call 3: why the sampling in the graph did not gain: FK_PROBE=1 drops the graph's wait for the rows' upload (a
# timing probe only), 2 records pass_done after the graph as well (the index upload then waits for the graph's end).
# HEAD with call 1's probe beside it. (Call 3a ran this script before the fix of the patch path and with the native
# engine tests instead of HEAD's arms.) .peers/probe.patch and probe2.patch are this folder's call1-probe.patch and
# call3-probe.patch; the working tree was HEAD plus call2-sample-in-graph.patch.
set -u
T0=$(date +%s)
S=$OUT/summary.txt; L=$OUT/lab; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); HEAD $(git rev-parse --short HEAD) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
[ -d /tmp/bench-1b ] && touch /tmp/mk-done
rm -rf /tmp/probe-src && mkdir /tmp/probe-src && git ls-files -z | xargs -0 cp -d --parents -t /tmp/probe-src && P=$PWD/.peers/probe2.patch; (cd /tmp/probe-src && patch -p1 -s < $P) || note "patch failed"
bld() { local n=$1 src=$2 arch=$3; shift 3
  rm -rf /tmp/fk-$n; (cd $src && meson setup /tmp/fk-$n -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$arch >/dev/null 2>&1) &&
  ninja -C /tmp/fk-$n -j8 "$@" >$L/build-$n.log 2>&1; echo "$n: $(tail -1 $L/build-$n.log)"; }
rm -rf /tmp/old-src && mkdir /tmp/old-src && git archive HEAD | tar -x -C /tmp/old-src && P1=$PWD/.peers/probe.patch && (cd /tmp/old-src && patch -p1 -s < $P1) || note "patch old failed"
bld probe /tmp/probe-src sm_90a tools/flashkernel > $L/b1.txt & bld old /tmp/old-src sm_90a tools/flashkernel > $L/b3.txt & wait
note "builds: $(cat $L/b1.txt $L/b3.txt | tr '\n' ' ')"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
eng() { local label=$1 b=$2 q=$3 n=$4; shift 4
  env "$@" timeout 60 /tmp/fk-$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n \
    --prompt-len 128 --max-tokens 128 --max-model-len 4096 --quantization $q >$L/engine-$label.log 2>&1
  note "$b $q n=$n [$*]: $(grep -E 'output tokens/s' $L/engine-$label.log | tail -1)"; }
for r in 1 2 3; do eng p0-$r probe int8 1 X=1; eng p1-$r probe int8 1 FK_PROBE=1; eng p2-$r probe int8 1 FK_PROBE=2; eng p3-$r probe int8 1 FK_PROBE=3; eng o0-$r old int8 1 X=1; eng o3-$r old int8 1 FK_PROBE=3; done
true
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $L
note done
